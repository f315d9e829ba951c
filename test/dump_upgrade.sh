#!/usr/bin/env bash
# Stored results are the user's data (TAP output, run by scripts/test with prove):
#   1. pg_dump / pg_restore of a database keeps every stored probe, move, job,
#      run and progress row, and the sequences go on after the restored ids;
#      a pruned database restores cleanly, with its prunes' log and the
#      horizon undo_batch respects; the restored rows keep the node that
#      measured them, while storlab.nodes is not carried: the restore is a
#      node of its own, minted at its first write;
#   2. a server on each earlier release (0.1.0 .. 0.11.0; the last one alone
#      with STORLAB_UPGRADE_FROM_LAST=1) with stored results
#      runs ALTER EXTENSION storlab UPDATE: the rows are intact, and the
#      extension's objects are exactly a fresh install's, as
#      pg_dump --schema-only --binary-upgrade prints them.
#   3. EXECUTE granted on a function an update makes anew is granted on the new one.
# Needs the lab (PGHOST, PGPORT, PGUSER) and, for part 2, a writable
# extension folder for the old install scripts (root); without it part 2 is skipped.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

source scripts/pg-env.sh
EXT_DIR=$("$PG_BIN/pg_config" --sharedir)/extension
OLDS=(0.1.0 0.2.0 0.3.0 0.4.0 0.5.0 0.6.0 0.7.0 0.8.0 0.9.0 0.10.0 0.11.0)
# every old release's install script is at hand (parts 3 and 4 install
# 0.4.0 and 0.7.0); the updates of part 2 run from the last release alone
# with STORLAB_UPGRADE_FROM_LAST=1 (make test on the majors other than the
# default one: the chain from every release is the same SQL on each)
ALL_OLDS=("${OLDS[@]}")
if [[ ${STORLAB_UPGRADE_FROM_LAST:-0} == 1 ]]; then OLDS=("${OLDS[-1]}"); fi
NEW=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
WORK=$(mktemp -d)
# The old releases' install scripts copied into EXT_DIR below go again at
# exit (those that were not there before): no package owns them, so they
# would outlive the installation they were copied into.
added=()
for old in "${ALL_OLDS[@]}"; do [[ -e $EXT_DIR/storlab--$old.sql ]] || added+=("$EXT_DIR/storlab--$old.sql"); done
trap 'rm -rf "$WORK"; rm -f "${added[@]}"' EXIT

sql() { local db=$1; shift; "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
# shellcheck source=test/tap.sh
source test/tap.sh
fresh_db() {
  sql postgres -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" 2>/dev/null
}

# Every results table, as count and checksum of its rows in key order.
fingerprint() {
  sql "$1" <<'SQL'
SELECT string_agg(t || '=' || v, ' ' ORDER BY t) FROM (
  SELECT 'probes' t, count(*) || ':' || md5(coalesce(string_agg(p::text, '|' ORDER BY id), '')) v FROM storlab.probes p
  UNION ALL SELECT 'relocations', count(*) || ':' || md5(coalesce(string_agg(r::text, '|' ORDER BY id), '')) FROM storlab.relocations r
  UNION ALL SELECT 'jobs', count(*) || ':' || md5(coalesce(string_agg(j::text, '|' ORDER BY id), '')) FROM storlab.jobs j
  UNION ALL SELECT 'bench_runs', count(*) || ':' || md5(coalesce(string_agg(b::text, '|' ORDER BY id), '')) FROM storlab.bench_runs b
  UNION ALL SELECT 'bench_progress', count(*) || ':' || md5(coalesce(string_agg(g::text, '|' ORDER BY run_id, t_s), '')) FROM storlab.bench_progress g
  UNION ALL SELECT 'experiments', count(*) || ':' || md5(coalesce(string_agg(e::text, '|' ORDER BY id), '')) FROM storlab.experiment_records e
  UNION ALL SELECT 'experiment_sizes', count(*) || ':' || md5(coalesce(string_agg(z::text, '|' ORDER BY experiment_id, fillfactor, layout, relation_name), '')) FROM storlab.experiment_sizes z
  UNION ALL SELECT 'baselines', count(*) || ':' || md5(coalesce(string_agg(b::text, '|' ORDER BY id), '')) FROM storlab.baselines b
  UNION ALL SELECT 'baseline_probes', count(*) || ':' || md5(coalesce(string_agg(l::text, '|' ORDER BY baseline_id, probe_id), '')) FROM storlab.baseline_probes l
  UNION ALL SELECT 'prunes', count(*) || ':' || md5(coalesce(string_agg(p::text, '|' ORDER BY id), '')) FROM storlab.prunes p
) x
SQL
}

# Across an update, a table may gain columns and have columns renamed: its
# rows are intact when every value at every column position it had before is
# unchanged. `shapes` lists each results table (by oid, which a rename keeps)
# with its last column position; `values_at` checksums those columns.
shapes() {
  sql "$1" -c "SELECT string_agg(c.oid || ':' || (SELECT max(attnum) FROM pg_attribute WHERE attrelid = c.oid AND NOT attisdropped), ',' ORDER BY c.oid)
                 FROM pg_class c WHERE c.relnamespace = 'storlab'::regnamespace AND c.relkind = 'r'"
}
values_at() {
  sql "$1" -v shapes="$2" <<'SQL'
SELECT string_agg(q, ' UNION ALL ' ORDER BY q) AS checksums FROM (
  SELECT format('SELECT %s::oid AS rel, count(*) AS n, md5(coalesce(string_agg(ROW(%s)::text, %L ORDER BY ROW(%s)::text), %L)) AS sum FROM %s t',
                c.oid, a.cols, '|', a.cols, '', c.oid::regclass) AS q
    FROM (SELECT split_part(x, ':', 1)::oid AS rel, split_part(x, ':', 2)::int AS last
            FROM unnest(string_to_array(:'shapes', ',')) x) s
    JOIN pg_class c ON c.oid = s.rel
   CROSS JOIN LATERAL (SELECT string_agg('t.' || quote_ident(pa.attname), ', ' ORDER BY pa.attnum) AS cols
                         FROM pg_attribute pa WHERE pa.attrelid = c.oid AND pa.attnum BETWEEN 1 AND s.last
                          AND NOT pa.attisdropped) a) x \gset
SELECT string_agg(rel || '=' || n || ':' || sum, ' ' ORDER BY rel) FROM (:checksums) y;
SQL
}

# A probe and a move, made by the functions (unchanged since 0.1.0).
store_probe_and_move() {
  sql "$1" <<'SQL'
SET client_min_messages = warning;
SELECT (storlab.probe('lab_ram', 'randwrite', duration => '200 ms', file_size => 1048576, direct => false)).id;
CREATE SCHEMA scratch;
CREATE TABLE scratch.moved (id int PRIMARY KEY, v text);
SELECT count(*) FROM storlab.move('scratch.moved', 'lab_ram');
DROP SCHEMA scratch CASCADE;
SQL
}

# One of each kind of stored result: a probe, a move, a pgbench init and
# run, an experiment (its runs, sizes and moves).
store_results() {
  store_probe_and_move "$1"
  sql "$1" <<'SQL'
SET client_min_messages = warning;
SELECT storlab.bench_init(scale => 1) AS init \gset
CALL storlab.wait(:init);
CALL storlab.bench('select-only', 1, 1, '2 s');
CALL storlab.experiment('dump', '{"ram": {"indexes": "lab_ram"}, "disk": {"indexes": "lab_disk"}}', 'select-only',
                        '{1}', 1, '1 s', 1, '0 s', 1);
DROP TABLE pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history, storlab_bench_append;
SET storlab.suite_file_size = '4MB';
SELECT storlab.baseline('dump', '{lab_ram}', '100 ms', 2);
SQL
}

# The results an older server holds: a move, and a probe and the job, run
# and progress rows as its library wrote them (today's library writes
# today's tables, and its probe() takes today's arguments). 0.1.0 keeps
# jobs in storlab.jobs, later ones in storlab.job_records.
store_old_results() {
  sql "$1" <<'SQL'
SET client_min_messages = warning;
CREATE SCHEMA scratch;
CREATE TABLE scratch.moved (id int PRIMARY KEY, v text);
SELECT count(*) FROM storlab.move('scratch.moved', 'lab_ram');
DROP SCHEMA scratch CASCADE;
INSERT INTO storlab.probes (tablespace, location, workload, block_size, workers, direct, sync_method, writes_per_sync,
                            file_size, duration_s, ops, bytes, iops, mib_s, lat_mean_us, lat_p50_us, lat_p90_us,
                            lat_p99_us, lat_p999_us, lat_max_us, histogram, env, label, system_identifier, hostname,
                            started_at, suite)
VALUES ('lab_ram', '/dev/shm/x/pgsql_tmp', 'randwrite', 8192, 1, false, 'none', 1, 1048576, 0.2, 1000, 8192000,
        5000, 39.06, 190.5, 180.0, 250.0, 400.0, 900.0, 1500.0, '\x00', '{"kind": "tablespace"}', NULL,
        (SELECT system_identifier FROM pg_control_system()), 'lab', clock_timestamp(), 'standard');
SQL
  local jobs=storlab.job_records
  [[ $(sql "$1" -c "SELECT to_regclass('storlab.job_records') IS NULL") == t ]] && jobs=storlab.jobs
  sql "$1" -v jobs="$jobs" <<'SQL'
WITH j AS (
  INSERT INTO :jobs (kind, status, args, worker_pid, started_at, finished_at)
  VALUES ('bench', 'done', '{"script": "select-only", "clients": 1, "jobs": 1, "duration_s": 2.0, "options": {}}',
          4242, clock_timestamp() - interval '3 s', clock_timestamp())
  RETURNING id),
r AS (
  INSERT INTO storlab.bench_runs (id, job_id, script, clients, jobs, duration_s, scale, fillfactor, tps, transactions,
                                  lat_avg_ms, options, system_identifier, hostname, started_at, finished_at)
  SELECT id, id, 'select-only', 1, 1, 2.0, 1, 100, 5000, 10000, 0.2, '{}',
         (SELECT system_identifier FROM pg_control_system()), 'lab', clock_timestamp() - interval '3 s', clock_timestamp()
    FROM j RETURNING id)
INSERT INTO storlab.bench_progress (run_id, t_s, tps, lat_avg_ms, lat_max_ms, failures)
SELECT id, 1, 5000, 0.2, 1.5, 0 FROM r;
SQL
}

old_kinds="SELECT (SELECT count(*) FROM storlab.probes) > 0 AND (SELECT count(*) FROM storlab.relocations) > 0
                  AND (SELECT count(*) FROM storlab.jobs) > 0 AND (SELECT count(*) FROM storlab.bench_runs) > 0
                  AND (SELECT count(*) FROM storlab.bench_progress) > 0"
all_kinds="$old_kinds AND (SELECT count(*) FROM storlab.experiment_records) > 0
                      AND (SELECT count(*) FROM storlab.experiment_sizes) > 0
                      AND (SELECT count(*) FROM storlab.bench_runs WHERE experiment_id IS NOT NULL) > 0
                      AND (SELECT count(*) FROM storlab.baseline_probes) > 0"

# every comparison below would pass with two empty sides: no server, no test
if ! "$PG_BIN/psql" -X -q -At -d postgres -c "SELECT 1" >/dev/null 2>&1; then
  echo "Bail out! cannot reach the lab's server (PGHOST=${PGHOST:-unset}, PGPORT=${PGPORT:-unset})"
  exit 1
fi
echo "1..$((10 + 8 * ${#OLDS[@]}))"

# 1. pg_dump and pg_restore
fresh_db storlab_dump_src
sql storlab_dump_src -c "CREATE EXTENSION storlab" >/dev/null
store_results storlab_dump_src >/dev/null
# a probe and the first move made a year ago, then pruned
first_batch=$(sql storlab_dump_src -c "SELECT min(batch_id) FROM storlab.relocations")
sql storlab_dump_src -c "UPDATE storlab.probes SET started_at = started_at - interval '400 days' WHERE id = (SELECT min(id) FROM storlab.probes)" \
  -c "UPDATE storlab.relocations SET moved_at = moved_at - interval '400 days' WHERE batch_id = $first_batch" \
  -c "CALL storlab.prune('365 days')" >/dev/null
is "$(sql storlab_dump_src -c "SELECT probes = 1 AND relocations > 0 AND relocation_batches_upto = $first_batch AND finished_at IS NOT NULL FROM storlab.prunes")" t \
  "storlab.prune deleted the year-old probe and move"
before=$(fingerprint storlab_dump_src)
is "$(sql storlab_dump_src -c "$all_kinds")" t "the source database holds probes, moves, a job, a run and its progress rows, an experiment, a baseline"
# every result row names the node that measured it: the source's one node
src_node=$(sql storlab_dump_src -c "SELECT node_id FROM storlab.node")
is "$(sql storlab_dump_src -c "SELECT (SELECT count(*) FROM storlab.nodes) = 1
        AND NOT EXISTS (SELECT FROM storlab.probes WHERE node_id IS DISTINCT FROM '$src_node')
        AND NOT EXISTS (SELECT FROM storlab.baselines WHERE node_id IS DISTINCT FROM '$src_node')
        AND NOT EXISTS (SELECT FROM storlab.bench_runs WHERE node_id IS DISTINCT FROM '$src_node')
        AND NOT EXISTS (SELECT FROM storlab.experiment_records WHERE node_id IS DISTINCT FROM '$src_node')")" t \
  "every probe, baseline, run and experiment of the source names its node ($src_node)"
"$PG_BIN/pg_dump" -Fc -f "$WORK/src.dump" storlab_dump_src
fresh_db storlab_dump_dst
"$PG_BIN/pg_restore" -d storlab_dump_dst "$WORK/src.dump"
is "$(fingerprint storlab_dump_dst)" "$before" "pg_restore brings back every stored row, unchanged"
is "$(sql storlab_dump_dst -c "SELECT count(*) || ' ' || count(*) FILTER (WHERE node_id = '$src_node') FROM storlab.nodes")" "1 0" \
  "and storlab.nodes holds only the node its CREATE EXTENSION minted, not the source's: the restore is not the source's node (the rows keep their node_id, as compared above)"
undo_state=$(sql storlab_dump_dst \
  -c "CREATE FUNCTION pg_temp.state(q text) RETURNS text LANGUAGE plpgsql AS \$\$ BEGIN EXECUTE q; RETURN 'no error'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE; END \$\$" \
  -c "SELECT pg_temp.state('SELECT * FROM storlab.undo_batch($first_batch)')")
is "$undo_state" 22023 "the prunes' log came back with its horizon: undo_batch of the pruned batch is refused (22023)"
old_max=$(sql storlab_dump_dst -c "SELECT max(id) FROM storlab.probes")
new_id=$(sql storlab_dump_dst -c "SET client_min_messages = warning" \
  -c "SELECT (storlab.probe('lab_ram', 'randwrite', duration => '100 ms', file_size => 1048576, direct => false)).id")
after_ids=$([[ -n $old_max && -n $new_id ]] && ((new_id > old_max)) && echo t)
is "$after_ids" t "new probes after a restore get new ids (the sequence's position was dumped too)"
is "$(sql storlab_dump_dst -c "SELECT p.node_id = n.node_id AND n.node_id <> '$src_node'
        AND (SELECT count(*) FROM storlab.nodes) = 1
        AND (SELECT count(*) FROM storlab.probes WHERE node_id = '$src_node') = (SELECT count(*) FROM storlab.probes) - 1
      FROM storlab.probes p, storlab.node n WHERE p.id = ${new_id:-0}")" t \
  "the restore's first write made it a node of its own: its new probe names it, the restored ones the source's"
sql postgres -c "DROP DATABASE storlab_dump_src" -c "DROP DATABASE storlab_dump_dst"

# 2. ALTER EXTENSION storlab UPDATE from each earlier release
update_from() {
  local OLD=$1
  fresh_db storlab_upgrade
  sql storlab_upgrade -c "CREATE EXTENSION storlab VERSION '$OLD'" >/dev/null
  is "$(sql storlab_upgrade -c "SELECT extversion FROM pg_extension WHERE extname = 'storlab'")" "$OLD" "a database on storlab $OLD"
  store_old_results storlab_upgrade >/dev/null
  is "$(sql storlab_upgrade -c "$old_kinds")" t "it holds probes, moves, a job, a run and its progress rows"
  old_shapes=$(shapes storlab_upgrade)
  before=$(values_at storlab_upgrade "$old_shapes")
  tables=$(tr ',' '\n' <<<"$old_shapes" | grep -c .)
  is "$(wc -w <<<"$before" | tr -d ' ')" "$tables" "checksums of its $tables results tables, taken before the update"
  sql storlab_upgrade -c "ALTER EXTENSION storlab UPDATE" >/dev/null
  is "$(sql storlab_upgrade -c "SELECT extversion FROM pg_extension WHERE extname = 'storlab'")" "$NEW" "ALTER EXTENSION storlab UPDATE reaches $NEW"
  is "$(values_at storlab_upgrade "$old_shapes")" "$before" "every stored row is intact after the update (every value at every column it had)"

  fresh_db storlab_fresh
  sql storlab_fresh -c "CREATE EXTENSION storlab" >/dev/null
  # Extension members appear in a dump only in binary-upgrade mode; leave out
  # what differs by nature: oids, relfrozenxid, sequence positions.
  objects() {
    "$PG_BIN/pg_dump" --schema-only --binary-upgrade "$1" \
      | grep -v -e '^--' -e '^$' -e 'binary_upgrade_' -e '^\\restrict' -e '^\\unrestrict' -e 'pg_catalog.setval(' \
      | awk '/^UPDATE pg_catalog.pg_class$/ { skip = 3 } skip > 0 { skip--; next } { print }'
  }
  objects storlab_upgrade >"$WORK/updated.sql"
  objects storlab_fresh >"$WORK/fresh.sql"
  if diff -u "$WORK/fresh.sql" "$WORK/updated.sql" >"$WORK/diff"; then
    tap ok "the updated extension's objects equal a fresh $NEW install's ($(grep -c . "$WORK/fresh.sql") lines of pg_dump)"
  else
    tap fail "the updated extension's objects equal a fresh $NEW install's"
    sed 's/^/#   /' "$WORK/diff" | head -60
  fi
  config="SELECT string_agg(c::regclass::text, ',' ORDER BY c::regclass::text) FROM pg_extension e, unnest(e.extconfig) c WHERE e.extname = 'storlab'"
  is "$(sql storlab_upgrade -c "$config")" "$(sql storlab_fresh -c "$config")" "and the same tables and sequences are registered for pg_dump"
  is "$(sql storlab_fresh -c "SELECT count(*) FROM pg_extension e, unnest(e.extconfig) c WHERE e.extname = 'storlab'")" 25 \
    "twenty-five of them: eighteen tables (eight of them the fleet's), seven sequences (one the fleet's)"
  sql postgres -c "DROP DATABASE storlab_upgrade" -c "DROP DATABASE storlab_fresh"
}

if ! for old in "${ALL_OLDS[@]}"; do cp "sql/versions/storlab--$old.sql" "$EXT_DIR/" || exit 1; done 2>/dev/null; then
  for ((i = 9; i <= 10 + 8 * ${#OLDS[@]}; i++)); do echo "ok $i # skip cannot install the old releases' scripts into $EXT_DIR (not root)"; done
  exit 0
fi
for old in "${OLDS[@]}"; do update_from "$old"; done

# 4. Between a newer package and ALTER EXTENSION UPDATE: this library over
#    0.7.0's tables. A reader either answers or says the extension must be
#    updated, with the statement (55000), never PostgreSQL's bare
#    "relation ... does not exist" (42P01, 42703, 42883).
fresh_db storlab_behind
sql storlab_behind -c "CREATE EXTENSION storlab VERSION '0.7.0'" >/dev/null
behind=$(sql storlab_behind -v VERBOSITY=verbose -c "SET client_min_messages = warning" -c "SET storlab.suite_file_size = '4MB'" \
  -c "CREATE FUNCTION pg_temp.state(q text) RETURNS text LANGUAGE plpgsql AS \$\$ BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || CASE WHEN SQLERRM LIKE '%ALTER EXTENSION storlab UPDATE%' THEN ' (names ALTER EXTENSION storlab UPDATE)' ELSE ': ' || SQLERRM END; END \$\$" \
  -c "SELECT string_agg(f || ' ' || pg_temp.state('SELECT count(*) FROM storlab.' || f), '; ' ORDER BY f)
        FROM unnest(ARRAY['compare_tablespaces(duration => ''20 ms'')', 'recommend()', 'tablespaces()']) f" 2>&1)
is "$(grep -cE '(42P01|42703|42883|XX000)' <<<"$behind")" 0 \
  "over 0.7.0's tables, before ALTER EXTENSION UPDATE, compare_tablespaces(), recommend() and tablespaces() answer or name the update, never a bare 42P01 nor an internal error XX000 ($behind)"
sql postgres -c "DROP DATABASE storlab_behind" >/dev/null

# 3. An update that makes probe() anew keeps what a DBA granted on the old one.
fresh_db storlab_grants
sql storlab_grants -c "CREATE EXTENSION storlab VERSION '0.4.0'" \
    -c "DROP ROLE IF EXISTS storlab_granted_prober" -c "CREATE ROLE storlab_granted_prober" \
    -c "GRANT EXECUTE ON FUNCTION storlab.probe(name, text, integer, interval, integer, bigint, boolean, text, text) TO storlab_granted_prober" \
    -c "ALTER EXTENSION storlab UPDATE" >/dev/null
is "$(sql storlab_grants -c "SELECT has_function_privilege('storlab_granted_prober',
      'storlab.probe(name, text, integer, interval, integer, bigint, boolean, text, text, integer, text, real, integer)', 'EXECUTE')
      AND NOT has_function_privilege('public', 'storlab.probe(name, text, integer, interval, integer, bigint, boolean, text, text, integer, text, real, integer)', 'EXECUTE')")" \
  t "EXECUTE granted on 0.4.0's probe() is granted on the one each update makes anew (0.5.0's, 0.12.0's), and still not to PUBLIC"
sql postgres -c "DROP DATABASE storlab_grants" -c "DROP ROLE storlab_granted_prober" >/dev/null
