#!/usr/bin/env bash
# A fleet of real servers (TAP output, run by scripts/test with prove): a
# collector database gathers storlab's results from several PostgreSQL
# clusters through postgres_fdw (sql/catalog/fleet.sql).
#   - two throwaway clusters of PG ("one" on port 54401, "two" on 54402),
#     each with storlab, a baseline, a probe and a pgbench run of its own;
#   - the lab (PGHOST, PGPORT: scripts/test exports it) as the third server:
#     a member database with a baseline of its own ("lab"), and the
#     collector's database;
#   - the collector adds the three, syncs every row once (the counts equal
#     the members' own), compares them (compare_fleet, compare_servers),
#     copies nothing the second time and exactly the new rows later; a
#     member stopped mid-way gives one error row while the others sync, and
#     syncs again once up;
#   - a pg_basebackup clone of "one" (port 54403), taken while one runs
#     pgbench, is a node of its own: the sync copies only the rows it wrote,
#     the inherited ones stay under "one", once each, and the run the clone
#     holds unfinished does not overwrite the one one finished;
#   - a baseline of "one" checked on the collector's server
#     (regressions(..., server => 'one'));
#   - a member on storlab 0.5.0 (a database of the lab; skipped when its
#     install script cannot be copied into the extension folder): added with
#     a NULL node_id, its probes copied under fleet_legacy_node(); a second
#     such database of the same cluster is a member of its own; the same
#     database under a second name is refused (42710), and, removed with its
#     results kept, added again under another name it takes them along;
#   - a reinstall of storlab on a member (of another cluster than the
#     collector's) is read right through the collector's cached
#     postgres_fdw session: the new install's node, the new probe under it;
#   - a collector updated from 0.8.0, the last release without the
#     fleet's foreign keys (sql/versions; skipped
#     without its script) keeps a copied baseline's links and drops those to
#     copies deleted by hand, and a baseline's probe cannot be deleted;
#   - bad input against real servers: an unreachable server (08001), a
#     database without storlab (42704) and a member's database under a
#     second name (42710) leave nothing behind, and a password
#     given in a conninfo shows nowhere: not in fleet_servers, not in an
#     error (message, detail, hint, context), not in a notice.
# Every cluster it made is stopped and removed at exit, also after a
# failure, and its databases in the lab dropped. About 22 s on 2 cores.
#
# Environment: STORLAB_FLEET_DIR (/var/tmp/storlab-fleet), the folder of the
# throwaway clusters (a server a killed run left there is stopped first),
# removed at exit (kept, the servers stopped, with STORLAB_FLEET_KEEP=1);
# STORLAB_FLEET_PORT (54401): the first throwaway cluster's port; the
# second, the clone, a standby and an unused port follow it (+1, +2, +3, +8).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

source scripts/pg-env.sh
# shellcheck source=test/tap.sh
source test/tap.sh
# this build's storlab version, as fleet_servers lists it
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
T0=$SECONDS
PORT_ONE=${STORLAB_FLEET_PORT:-54401}
PORT_TWO=$((PORT_ONE + 1))
PORT_CLONE=$((PORT_ONE + 2))
PORT_STANDBY=$((PORT_ONE + 3))
PORT_NONE=$((PORT_ONE + 8))   # nothing listens there
MEMBER_DB=storlab_fleet_member
COLLECTOR=storlab_fleet_collector
LAB_MEMBER=storlab_fleet_member
OLD_DB=storlab_fleet_old
TWIN_DB=storlab_fleet_old_twin
UPDATED_DB=storlab_fleet_updated
PREVIOUS=0.8.0  # the last release without the fleet's foreign keys: a collector updated from it
OLD_VERSION=0.5.0
# the version this tree builds, as every member and the collector run it
VERSION=$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n 1)
CANARY=s3cret-canary
EXT_DIR=$("$PG_BIN/pg_config" --sharedir)/extension
WORK=${STORLAB_FLEET_DIR:-/var/tmp/storlab-fleet}
SOCK=$WORK/sock

as_owner() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
# the lab's databases (its env), and a throwaway cluster's
lab() { local db=$1; shift; "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
on() { local port=$1; shift; "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$port" -U postgres -d "$MEMBER_DB" "$@"; }
# the collector; what it prints on stderr (notices, errors) is kept to be
# searched for the password
collector() { lab "$COLLECTOR" "$@" 2>>"$WORK/collector.err"; }
conninfo() { echo "host=$SOCK port=$1 dbname=${2:-$MEMBER_DB} user=postgres${3:+ password=$3}"; }
skip() { n=$((n + 1)); echo "ok $n # skip $1"; }

# ---- clusters ------------------------------------------------------------

make_cluster() { # NAME PORT
  local dir=$WORK/$1
  install -d -o "$(stat -c %U "$SOCK")" -m 700 "$dir" || return 1
  as_owner "$PG_BIN/initdb" --no-sync -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
    || return 1
  cat >>"$dir/data/postgresql.conf" <<CONF

# storlab fleet test
port = $2
listen_addresses = ''
unix_socket_directories = '$SOCK'
logging_collector = off
fsync = off
CONF
}
start() { # NAME
  # RUST_BACKTRACE from a developer's shell would put a backtrace in every error
  as_owner env -u RUST_BACKTRACE "$PG_BIN/pg_ctl" -D "$WORK/$1/data" -l "$WORK/$1/server.log" -w -t 60 start >/dev/null
}
stop() { # NAME
  [[ -f $WORK/$1/data/postmaster.pid ]] || return 0
  as_owner "$PG_BIN/pg_ctl" -D "$WORK/$1/data" -m fast -w -t 60 stop >/dev/null 2>&1 \
    || as_owner "$PG_BIN/pg_ctl" -D "$WORK/$1/data" -m immediate -w -t 60 stop >/dev/null 2>&1
}

# The old releases' install scripts copied into EXT_DIR go again at exit
# when they were not there before: no package owns them.
added=()
for v in "$OLD_VERSION" "$PREVIOUS"; do [[ -e $EXT_DIR/storlab--$v.sql ]] || added+=("$EXT_DIR/storlab--$v.sql"); done
drop_databases() {
  lab postgres -c "DROP DATABASE IF EXISTS $COLLECTOR WITH (FORCE)" -c "DROP DATABASE IF EXISTS $OLD_DB WITH (FORCE)" \
    -c "DROP DATABASE IF EXISTS $LAB_MEMBER WITH (FORCE)" -c "DROP DATABASE IF EXISTS $TWIN_DB WITH (FORCE)" \
    -c "DROP DATABASE IF EXISTS $UPDATED_DB WITH (FORCE)" >/dev/null 2>&1
}
cleanup() {
  local d
  for d in "$WORK"/*/data; do [[ -d $d ]] && stop "$(basename "$(dirname "$d")")"; done
  drop_databases
  ((${#added[@]} == 0)) || rm -f "${added[@]}"
  if [[ ${STORLAB_FLEET_KEEP:-0} == 1 ]]; then echo "# kept $WORK (servers stopped)" >&2; else rm -rf "$WORK"; fi
}
if [[ $WORK != /?*/?* ]]; then echo "Bail out! STORLAB_FLEET_DIR must be a folder of its own, not '$WORK'"; exit 1; fi
STORLAB_FLEET_KEEP=0 cleanup
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# every check below would pass against servers that hold nothing
if ! lab postgres -c "SELECT 1" >/dev/null 2>&1; then
  echo "Bail out! cannot reach the lab's server (PGHOST=${PGHOST:-unset}, PGPORT=${PGPORT:-unset})"
  exit 1
fi
if [[ ! -f $EXT_DIR/postgres_fdw.control ]]; then
  echo "1..0 # skip postgres_fdw is not installed for PostgreSQL $PG ($EXT_DIR)"
  exit 0
fi

mkdir -p "$SOCK"
chmod 755 "$WORK"
[[ $(id -u) -eq 0 ]] && chown postgres: "$SOCK"
chmod 700 "$SOCK"
for c in one:$PORT_ONE two:$PORT_TWO; do
  if ! make_cluster "${c%%:*}" "${c#*:}" || ! start "${c%%:*}"; then
    echo "Bail out! could not make and start the throwaway cluster ${c%%:*} on port ${c#*:} (see $WORK/${c%%:*})"
    exit 1
  fi
  "$PG_BIN/psql" -X -q -h "$SOCK" -p "${c#*:}" -U postgres -d postgres -c "CREATE DATABASE $MEMBER_DB" \
    && on "${c#*:}" -c "CREATE EXTENSION storlab" || { echo "Bail out! no storlab in cluster ${c%%:*}"; exit 1; }
done
drop_databases
lab postgres -c "CREATE DATABASE $COLLECTOR" -c "CREATE DATABASE $LAB_MEMBER" >/dev/null
lab "$LAB_MEMBER" -c "CREATE EXTENSION storlab" >/dev/null
lab "$COLLECTOR" -c "CREATE EXTENSION postgres_fdw" -c "CREATE EXTENSION storlab" >/dev/null

# ---- each member's own results -------------------------------------------

# a baseline of pg_default (the standard suite twice), a probe, and
# pgbench's tables (scale 1)
results() { # psql command...
  "$@" <<'SQL'
SET client_min_messages = warning;
SET storlab.suite_file_size = '4MB';
SELECT storlab.baseline('b', ARRAY['pg_default']::name[], '200 ms', 2);
SELECT (storlab.probe('pg_default', 'randwrite', duration => '200 ms', file_size => 1048576)).id;
SELECT storlab.bench_init(scale => 1) AS init \gset
CALL storlab.wait(:init);
SQL
}
results on "$PORT_ONE" >"$WORK/one/results.log" 2>&1 & one_pid=$!
results on "$PORT_TWO" >"$WORK/two/results.log" 2>&1 & two_pid=$!
lab "$LAB_MEMBER" -c "SET client_min_messages = warning" -c "SET storlab.suite_file_size = '4MB'" \
  -c "SELECT storlab.baseline('l', ARRAY['pg_default']::name[], '200 ms', 2)" >"$WORK/lab-results.log" 2>&1 & lab_pid=$!
wait "$one_pid"; one_rc=$?
wait "$two_pid"; two_rc=$?
# and a pgbench run each: one's is cloned (pg_basebackup, started later on
# its own port) while it runs, so that the clone holds it unfinished
on "$PORT_TWO" -c "SET client_min_messages = warning" -c "CALL storlab.bench('select-only', 1, 1, '2 s')" \
  >>"$WORK/two/results.log" 2>&1 & two_pid=$!
RUN_ONE=$(on "$PORT_ONE" -c "SELECT storlab.bench_start('select-only', 1, 1, '4 s')" 2>>"$WORK/one/results.log")
for ((i = 0; i < 100; i++)); do
  [[ $(on "$PORT_ONE" -c "SELECT started_at IS NOT NULL FROM storlab.bench_runs WHERE id = ${RUN_ONE:-0}") == t ]] && break
  sleep 0.1
done
install -d -o "$(stat -c %U "$SOCK")" -m 700 "$WORK/clone"
if as_owner "$PG_BIN/pg_basebackup" -h "$SOCK" -p "$PORT_ONE" -U postgres -D "$WORK/clone/data" -c fast -X stream \
     >"$WORK/clone/basebackup.log" 2>&1 \
   && [[ $(on "$PORT_ONE" -c "SELECT finished_at IS NULL FROM storlab.bench_runs WHERE id = ${RUN_ONE:-0}") == t ]]; then
  tap ok "pg_basebackup clones one while one runs pgbench"
else
  tap fail "pg_basebackup clones one while one runs pgbench"
  sed 's/^/#   /' "$WORK/clone/basebackup.log"
fi
on "$PORT_ONE" -c "CALL storlab.wait(${RUN_ONE:-0})" >>"$WORK/one/results.log" 2>&1 || one_rc=$?
wait "$two_pid" || two_rc=$?
wait "$lab_pid"; lab_rc=$?

node_of() { "$@" -c "SELECT node_id FROM storlab.node"; }
NODE_ONE=$(node_of on "$PORT_ONE")
NODE_TWO=$(node_of on "$PORT_TWO")
NODE_LAB=$(node_of lab "$LAB_MEMBER")
is "$(printf '%s\n' "$NODE_ONE" "$NODE_TWO" "$NODE_LAB" | grep -c '^[0-9a-f-]\{36\}$') $(printf '%s\n' "$NODE_ONE" "$NODE_TWO" "$NODE_LAB" | sort -u | wc -l)" \
  "3 3" "each server's storlab.node names a node of its own: three different node_ids"
held="SELECT format('%s baseline, %s probes, %s finished bench run', (SELECT count(*) FROM storlab.baselines),
                    (SELECT count(*) FROM storlab.probes), (SELECT count(*) FROM storlab.bench_runs WHERE tps IS NOT NULL AND finished_at IS NOT NULL))"
is "$one_rc $(on "$PORT_ONE" -c "$held") / $two_rc $(on "$PORT_TWO" -c "$held") / $lab_rc $(lab "$LAB_MEMBER" -c "$held")" \
  "0 1 baseline, 13 probes, 1 finished bench run / 0 1 baseline, 13 probes, 1 finished bench run / 0 1 baseline, 12 probes, 0 finished bench run" \
  "each member measured its own: the throwaway clusters a baseline (12 probes), a probe and a pgbench run, the lab's member database a baseline"
for f in "$WORK"/one/results.log "$WORK"/two/results.log "$WORK/lab-results.log"; do
  grep -q ERROR "$f" && sed 's/^/#   /' "$f"
done

# ---- the collector adds the three and syncs ------------------------------

add() { # NAME CONNINFO: the node_id fleet_add returns
  collector -v name="$1" -v conninfo="$2" <<<"SELECT storlab.fleet_add(:'name', :'conninfo')"
}
is "$(add one "$(conninfo "$PORT_ONE")") $(add two "$(conninfo "$PORT_TWO" "" "$CANARY")") $(add lab "host=$PGHOST port=$PGPORT dbname=$LAB_MEMBER user=postgres")" \
  "$NODE_ONE $NODE_TWO $NODE_LAB" "fleet_add returns each server's node_id, as its storlab.node shows it"
is "$(collector -c "SELECT string_agg(format('%s: %s, storlab %s, PostgreSQL %s', name, CASE WHEN node_id IS NULL THEN 'no node' ELSE 'a node' END, storlab_version,
                                           split_part(server_version, '.', 1)), '; ' ORDER BY name) FROM storlab.fleet_servers")" \
  "lab: a node, storlab $VERSION, PostgreSQL $PG; one: a node, storlab $VERSION, PostgreSQL $PG; two: a node, storlab $VERSION, PostgreSQL $PG" \
  "storlab.fleet_servers lists the three with their node, storlab version and PostgreSQL major"
is "$(collector -c "SELECT conninfo FROM storlab.fleet_servers WHERE name = 'two'")" "host=$SOCK port=$PORT_TWO dbname=$MEMBER_DB user=postgres" \
  "fleet_servers shows a conninfo without the password it was given"

# a sync's rows kept in a table of the collector's, to be read in several checks
sync() { # TABLE [NAME]
  collector -v t="$1" -v name="${2:-}" <<<"CREATE TABLE :t AS SELECT * FROM storlab.fleet_sync(nullif(:'name', ''))"
}
# per table (in name order): a member's own rows, what a sync copied of
# it, what the collector holds of it
tables="baseline_probes baselines bench_runs experiments probes"
member_counts() { # psql command...
  "$@" -c "SELECT string_agg(t || '=' || n, ' ' ORDER BY t) FROM (VALUES
             ('baseline_probes', (SELECT count(*) FROM storlab.baseline_probes)), ('baselines', (SELECT count(*) FROM storlab.baselines)),
             ('bench_runs', (SELECT count(*) FROM storlab.bench_runs)), ('experiments', (SELECT count(*) FROM storlab.experiments)),
             ('probes', (SELECT count(*) FROM storlab.probes))) c(t, n)"
}
copied() { # SYNC_TABLE SERVER
  collector -v t="$1" -v s="$2" <<<"SELECT string_agg(table_name || '=' || rows_copied, ' ' ORDER BY table_name) FROM :t WHERE server = :'s'"
}
collected() { # SERVER
  collector -v s="$1" <<<"SELECT string_agg(t || '=' || n, ' ' ORDER BY t) FROM (VALUES
             ('baseline_probes', (SELECT count(*) FROM storlab.fleet_baseline_probes WHERE server = :'s')),
             ('baselines', (SELECT count(*) FROM storlab.fleet_baselines WHERE server = :'s')),
             ('bench_runs', (SELECT count(*) FROM storlab.fleet_bench_runs WHERE server = :'s')),
             ('experiments', (SELECT count(*) FROM storlab.fleet_experiments WHERE server = :'s')),
             ('probes', (SELECT count(*) FROM storlab.fleet_probes WHERE server = :'s'))) c(t, n)"
}
# what a sync copied, leaving out the tables where it copied nothing
copied_any() { # SYNC_TABLE
  collector -v t="$1" <<<"SELECT coalesce(string_agg(server || coalesce(' ' || table_name || ' ' || rows_copied, ': ' || error), '; '
                                                     ORDER BY server, table_name), 'nothing')
                            FROM :t WHERE rows_copied <> 0 OR error IS NOT NULL"
}

sync sync1
is "$(collector -c "SELECT count(*) || ' rows, ' || count(error) || ' errors' FROM sync1")" "15 rows, 0 errors" \
  "the first fleet_sync() reads every member: a row per server and table (three times five), no error"
m_one=$(member_counts on "$PORT_ONE")
m_two=$(member_counts on "$PORT_TWO")
m_lab=$(member_counts lab "$LAB_MEMBER")
is "$(copied sync1 one) | $(collected one)" "$m_one | $m_one" "it copied every row of one, table by table: rows_copied and the collector's rows equal one's own counts ($m_one)"
is "$(copied sync1 two) | $(collected two)" "$m_two | $m_two" "and every row of two ($m_two)"
is "$(copied sync1 lab) | $(collected lab)" "$m_lab | $m_lab" "and every row of the lab's member database ($m_lab)"
is "$(collector -c "SELECT count(*) FROM storlab.fleet_probes WHERE node_id IS DISTINCT FROM CASE server WHEN 'one' THEN '$NODE_ONE'::uuid
                                       WHEN 'two' THEN '$NODE_TWO'::uuid WHEN 'lab' THEN '$NODE_LAB'::uuid END")" 0 \
  "each copied probe is keyed by the node of the server that measured it"
is "$(collector -c "SELECT string_agg(DISTINCT server || ' ' || tablespace, ', ') FROM storlab.compare_fleet(servers => ARRAY['one', 'two', 'lab'])")" \
  "lab pg_default, one pg_default, two pg_default" \
  "compare_fleet(servers => ARRAY['one', 'two', 'lab']) shows the tablespaces of all three servers side by side"

is "$(collector -c "SELECT format('%s figures, %s of them of two probes a side; %s', count(*) FILTER (WHERE tablespace = 'pg_default'),
                                   count(*) FILTER (WHERE tablespace = 'pg_default' AND a_n = 2 AND b_n = 2),
                                   string_agg(workload || ' ' || metric || ': ' || verdict, ', ' ORDER BY metric) FILTER (WHERE tablespace IS NULL))
                      FROM storlab.compare_servers('one', 'two')" | sed 's/^\([0-9]*\) figures, \1 of them/N figures, N of them/')" \
  "N figures, N of them of two probes a side; pgbench select-only, 1 client lat_avg_ms: cannot test: fewer than two figures on a side, pgbench select-only, 1 client tps: cannot test: fewer than two figures on a side" \
  "compare_servers('one', 'two') compares the two baselines' figures of pg_default, and their pgbench runs (one each: no test)"

sync sync2
is "$(collector -c "SELECT count(*) || ' rows, ' || sum(rows_copied) || ' copied, ' || count(error) || ' errors' FROM sync2")" \
  "15 rows, 0 copied, 0 errors" "a second fleet_sync() copies nothing: no row is copied twice"

on "$PORT_TWO" -c "SET client_min_messages = warning" \
  -c "SELECT (storlab.probe('pg_default', 'randread', duration => '100 ms', file_size => 1048576)).id" \
  -c "SELECT (storlab.probe('pg_default', 'seqwrite', duration => '100 ms', file_size => 1048576)).id" >/dev/null
sync sync3
is "$(copied_any sync3)" "two probes 2" "two new probes on two: the next sync copies exactly those two rows"

# ---- a member down mid-way ------------------------------------------------

stop two
on "$PORT_ONE" -c "SET client_min_messages = warning" \
  -c "SELECT (storlab.probe('pg_default', 'randread', duration => '100 ms', file_size => 1048576)).id" >/dev/null
sync sync4
is "$(collector -c "SELECT string_agg(server || ' ' || coalesce(table_name, '(no table)') || ' ' || rows_copied || ' ' || (error IS NOT NULL), ', ' ORDER BY server, table_name)
                      FROM sync4 WHERE server = 'two' OR rows_copied <> 0 OR error IS NOT NULL")" \
  "one probes 1 false, two (no table) 0 true" \
  "two stopped: fleet_sync() gives one row for it, with an error, and still copies one's new probe"
is "$(collector -c "SELECT count(*) FROM sync4 WHERE server IN ('one', 'lab') AND error IS NULL")" 10 \
  "one and the lab sync as usual, table by table"
err=$(collector -c "SELECT error FROM sync4 WHERE server = 'two'")
is "$( [[ $err == *"could not connect"*"(SQLSTATE 08001)"* ]] && echo 08001)" 08001 \
  "the error says that two could not be reached (SQLSTATE 08001)"
[[ $err == *"(SQLSTATE 08001)"* ]] || echo "#   error: $err"
is "$(collector -c "SELECT string_agg(name || ': ' || (last_error IS NOT NULL) || ', ' || (last_attempt > last_sync), '; ' ORDER BY name) FROM storlab.fleet_servers")" \
  "lab: false, false; one: false, false; two: true, true" \
  "fleet_servers keeps two's error, and its last sync stays older than its last attempt"
start two
sync sync5
is "$(collector -c "SELECT count(*) || ' rows, ' || count(error) || ' errors' FROM sync5 WHERE server = 'two'") $(copied_any sync5)" "5 rows, 0 errors nothing" \
  "two started again: it syncs, with nothing new to copy"
is "$(collector -c "SELECT count(last_error) || ' errors, ' || count(*) FILTER (WHERE last_sync >= last_attempt) || ' synced' FROM storlab.fleet_servers")" \
  "0 errors, 3 synced" "and fleet_servers clears its error"

# ---- a clone of one -------------------------------------------------------

if echo "port = $PORT_CLONE" >>"$WORK/clone/data/postgresql.conf" && start clone; then
  tap ok "the clone of one starts on port $PORT_CLONE"
else
  tap fail "the clone of one starts on port $PORT_CLONE"
  sed 's/^/#   /' "$WORK/clone/server.log" 2>/dev/null | tail -20
fi
NODE_CLONE=$(node_of on "$PORT_CLONE")
sysid() { "$@" -c "SELECT system_identifier FROM storlab.node"; }
is "$( [[ $NODE_CLONE =~ ^[0-9a-f-]{36}$ && $NODE_CLONE != "$NODE_ONE" ]] && echo new) $( [[ $(sysid on "$PORT_CLONE") == "$(sysid on "$PORT_ONE")" ]] && echo same)" \
  "new same" "the clone's storlab.node names a new node, though its system identifier is one's"
on "$PORT_CLONE" -c "SET client_min_messages = warning" -c "SET storlab.suite_file_size = '4MB'" \
  -c "SELECT storlab.baseline('c', ARRAY['pg_default']::name[], '200 ms', 2)" >/dev/null
is "$(add clone "$(conninfo "$PORT_CLONE")")" "$NODE_CLONE" "fleet_add returns the clone's node_id"
sync sync6 clone
own=$(on "$PORT_CLONE" -c "SELECT string_agg(t || '=' || n, ' ' ORDER BY t) FROM (VALUES
        ('baseline_probes', (SELECT count(*) FROM storlab.baseline_probes bp JOIN storlab.baselines b ON b.id = bp.baseline_id WHERE b.node_id = '$NODE_CLONE')),
        ('baselines', (SELECT count(*) FROM storlab.baselines WHERE node_id = '$NODE_CLONE')),
        ('bench_runs', (SELECT count(*) FROM storlab.bench_runs WHERE node_id = '$NODE_CLONE')),
        ('experiments', (SELECT count(*) FROM storlab.experiments WHERE node_id = '$NODE_CLONE')),
        ('probes', (SELECT count(*) FROM storlab.probes WHERE node_id = '$NODE_CLONE'))) c(t, n)")
is "$(copied sync6 clone) | $(collected clone)" "$own | $own" \
  "the clone's sync copies only the rows the clone wrote itself ($own), not those it inherited from one"
m_one=$(member_counts on "$PORT_ONE")
is "$(collected one) | $(collector -c "SELECT count(*) FROM storlab.fleet_probes WHERE node_id = '$NODE_ONE'")" \
  "$m_one | $(on "$PORT_ONE" -c "SELECT count(*) FROM storlab.probes")" \
  "the inherited rows stay under one, once each: one's rows in the collector still equal one's own counts"
run="SELECT coalesce(finished_at::text, 'unfinished') || ', tps ' || coalesce(tps::text, 'NULL') FROM storlab.bench_runs WHERE id = $RUN_ONE"
is "$(on "$PORT_CLONE" -c "$run") | $(collector -c "SELECT server || ': ' || coalesce(finished_at::text, 'unfinished') || ', tps ' || coalesce(tps::text, 'NULL')
                                                     FROM storlab.fleet_bench_runs WHERE node_id = '$NODE_ONE' AND id = $RUN_ONE")" \
  "unfinished, tps NULL | one: $(on "$PORT_ONE" -c "$run")" \
  "the run one measured while it was cloned, unfinished in the clone, stays in the collector as one finished it"
# (probed_at: the stamp of the row's oldest figure, a probe of that node)
is "$(collector -c "SELECT string_agg(c.server || ' ' || (SELECT string_agg(DISTINCT f.node_id::text, ',') FROM storlab.fleet_probes f
                                                           WHERE f.started_at = c.probed_at), ', ' ORDER BY c.server)
                      FROM storlab.compare_fleet(servers => ARRAY['one', 'clone']) c WHERE c.tablespace = 'pg_default'")" \
  "clone $NODE_CLONE, one $NODE_ONE" \
  "compare_fleet shows the clone's own baseline under the clone, one's probes (which the clone inherited) under one"

# ---- one's baseline checked on another server ------------------------------

out=$(lab "$COLLECTOR" -c "SET storlab.suite_file_size = '4MB'" \
  -c "SELECT count(*) > 0 AND bool_and(tablespace = 'pg_default') FROM storlab.regressions('b', server => 'one',
        tablespaces => ARRAY['pg_default']::name[], duration => '200 ms', repetitions => 2)" 2>&1)
echo "$out" >>"$WORK/collector.err"
is "$(grep -v NOTICE <<<"$out")" t \
  "regressions('b', server => 'one') measures the collector's server now and judges it against one's copied baseline: rows for pg_default"
[[ $(grep -v NOTICE <<<"$out") == t ]] || sed 's/^/#   /' <<<"$out"
is "$(grep -c 'baseline "b" of fleet server "one"' <<<"$out")" 1 "with a notice that this server is checked against another server's baseline"

# ---- removing a member ----------------------------------------------------

collector -c "SELECT storlab.fleet_remove('clone', keep_results => false)" >/dev/null
is "$(collector -c "SELECT (SELECT count(*) FROM pg_foreign_server WHERE srvname = 'storlab_fleet_clone') || ' ' ||
                           (SELECT count(*) FROM pg_namespace WHERE nspname = 'storlab_fleet_clone') || ' ' ||
                           (SELECT count(*) FROM storlab.fleet_probes WHERE server = 'clone') || ' ' ||
                           (SELECT count(*) FROM storlab.fleet_nodes WHERE node_id = '$NODE_CLONE')") | $(collected one)" \
  "0 0 0 0 | $m_one" \
  "fleet_remove('clone', keep_results => false) drops its foreign server, schema and rows, and leaves one's rows alone"
stop clone

# ---- a standby of one -------------------------------------------------------

# (pg_basebackup -R: it starts in recovery, streaming from one)
install -d -o "$(stat -c %U "$SOCK")" -m 700 "$WORK/standby"
if as_owner "$PG_BIN/pg_basebackup" -h "$SOCK" -p "$PORT_ONE" -U postgres -D "$WORK/standby/data" -c fast -X stream -R \
     >"$WORK/standby/basebackup.log" 2>&1 \
   && echo "port = $PORT_STANDBY" >>"$WORK/standby/data/postgresql.conf" && start standby; then
  # Replicas share their primary's system identifier and every stored row:
  # a standby names its own measurements by a node of its own place.
  NODE_STANDBY=$(on "$PORT_STANDBY" -c "SELECT node_id FROM storlab.node")
  is "$(on "$PORT_STANDBY" -c "SELECT (node_id IS NOT NULL AND node_id <> '$NODE_ONE') || ' ' || in_recovery || ' ' || (node_id = storlab.node_id())
                               FROM storlab.node")" "true true true" \
    "a standby of one names a node of its own, not one's (storlab.node, storlab.node_id(); in recovery)"
  is "$(add standby "$(conninfo "$PORT_STANDBY")")" "$NODE_STANDBY" "fleet_add takes a standby, under that node"
  before_copies=$(collector -c "SELECT count(*) FROM storlab.fleet_probes")
  is "$(collector -c "SELECT count(*) || ' ' || coalesce(sum(rows_copied), 0) || ' ' || count(error) FROM storlab.fleet_sync('standby')") $(collector -c "SELECT count(*) FROM storlab.fleet_probes") $(grep -c 'fleet server "standby" is a hot standby: it stores nothing of its own' "$WORK/collector.err")" \
    "0 0 0 $before_copies 1" "fleet_sync copies nothing of a standby (its tables are one's, copied from one) and says so"
  collector -c "CREATE EXTENSION IF NOT EXISTS dblink" >/dev/null
  is "$(collector -c "SELECT count(*) || ' ' || bool_and(node_id = '$NODE_STANDBY') || ' ' || bool_and(server = 'standby') || ' ' || bool_and(ops > 0)
                        || ' ' || count(DISTINCT workload) || ' ' || (max(id) - min(id)) FROM storlab.fleet_measure('standby', '{pg_default}', '100 ms')")" "6 true true true 5 5" \
    "fleet_measure runs the standard suite on the standby's pg_default through dblink: six probes, kept under the standby's own node, numbered one after another"
  is "$(collector -c "SELECT count(*) FILTER (WHERE server = 'standby' AND randread_iops > 0) FROM storlab.compare_fleet()") $(on "$PORT_STANDBY" -c "SELECT count(*) FROM storlab.probes WHERE node_id = '$NODE_STANDBY'")" \
    "1 0" "compare_fleet shows the standby's pg_default beside the others; the standby stored nothing"
  is "$(collector -c "CREATE FUNCTION pg_temp.state(q text) RETURNS text LANGUAGE plpgsql AS \$\$ BEGIN EXECUTE q; RETURN 'no error'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE; END \$\$" \
                 -c "SELECT pg_temp.state(\$\$SELECT count(*) FROM storlab.fleet_measure('one', '{pg_default}', '100 ms')\$\$)")" \
    "55000" "fleet_measure of a primary is refused (55000): its figures are stored there, and fleet_sync copies them"
  collector -c "SELECT storlab.fleet_remove('standby', keep_results => false)" >/dev/null
  stop standby
else
  tap fail "a standby of one starts on port $PORT_STANDBY"
  sed 's/^/#   /' "$WORK/standby/basebackup.log" "$WORK/standby/server.log" 2>/dev/null | tail -20
fi

# ---- a member on an older storlab -------------------------------------------

old_tests=6
if ! cp "sql/versions/storlab--$OLD_VERSION.sql" "$EXT_DIR/" 2>/dev/null; then
  for ((i = 0; i < old_tests; i++)); do skip "cannot install storlab $OLD_VERSION's script into $EXT_DIR (not root?)"; done
elif ! lab postgres -c "CREATE DATABASE $OLD_DB" >/dev/null \
     || ! lab "$OLD_DB" -c "CREATE EXTENSION storlab VERSION '$OLD_VERSION'" >/dev/null 2>"$WORK/old.err"; then
  for ((i = 0; i < old_tests; i++)); do skip "CREATE EXTENSION storlab VERSION '$OLD_VERSION' failed: $(head -1 "$WORK/old.err")"; done
else
  # probes as that release's library wrote them (today's probe() writes
  # today's columns)
  old_probes() { # DATABASE
    lab "$1" >/dev/null <<'SQL'
INSERT INTO storlab.probes (tablespace, location, workload, block_size, workers, direct, sync_method, writes_per_sync,
                            file_size, duration_s, ops, bytes, iops, mib_s, lat_mean_us, lat_p50_us, lat_p90_us,
                            lat_p99_us, lat_p999_us, lat_max_us, histogram, env, label, system_identifier, hostname,
                            started_at, suite)
SELECT 'pg_default', '/var/lib/x/pgsql_tmp', w, 8192, 1, true, 'none', 1, 1048576, 0.2, 1000, 8192000,
       5000, 39.06, 190.5, 180.0, 250.0, 400.0, 900.0, 1500.0, '\x00', '{"kind": "tablespace"}', NULL,
       (SELECT system_identifier FROM pg_control_system()), 'old', clock_timestamp(), 'standard'
  FROM unnest(ARRAY['randread', 'randwrite']) w;
SQL
  }
  old_probes "$OLD_DB"
  is "$(collector -v c="host=$PGHOST port=$PGPORT dbname=$OLD_DB user=postgres" <<<"SELECT storlab.fleet_add('old', :'c') IS NULL")" t \
    "fleet_add of a server on storlab $OLD_VERSION works, and returns NULL: that release has no node"
  is "$(collector -c "SELECT storlab_version || ', node ' || coalesce(node_id::text, 'NULL') FROM storlab.fleet_servers WHERE name = 'old'")" \
    "$OLD_VERSION, node NULL" "fleet_servers shows its storlab version"
  sync sync7 old
  is "$(collector -c "SELECT count(error) || ' errors' FROM sync7") $(copied_any sync7)" "0 errors old probes 2" \
    "fleet_sync('old') copies its two probes"
  sysid_lab=$(lab "$OLD_DB" -c "SELECT system_identifier FROM pg_control_system()")
  is "$(collector -c "SELECT count(*) FILTER (WHERE node_id = storlab.fleet_legacy_node($sysid_lab, '$OLD_DB')) || ' of ' || count(*) FROM storlab.fleet_probes WHERE server = 'old'")" \
    "2 of 2" "keyed by fleet_legacy_node(system_identifier, database): the node of rows written before 0.8.0"
  sync sync8 old
  is "$(copied_any sync8)" nothing "a second sync of it copies nothing"
  # a second database of the same cluster on 0.5.0: its rows have no node
  # either, the same system identifier, and the same ids
  lab postgres -c "CREATE DATABASE $TWIN_DB" >/dev/null
  lab "$TWIN_DB" -c "CREATE EXTENSION storlab VERSION '$OLD_VERSION'" >/dev/null
  old_probes "$TWIN_DB"
  collector -v c="host=$PGHOST port=$PGPORT dbname=$TWIN_DB user=postgres" <<<"SELECT storlab.fleet_add('old_twin', :'c')" >/dev/null
  sync sync9 old_twin
  is "$(copied_any sync9)" "old_twin probes 2" \
    "a second database on $OLD_VERSION in the same cluster: its two probes are copied too (rows without a node_id are keyed by system identifier and database)"
  old_ok=1
fi

# ---- bad input, against real servers -------------------------------------

# SQLSTATE, then message, detail, hint and context of fleet_add's error (its
# arguments passed as variables: the context then quotes no value)
try="CREATE FUNCTION pg_temp.try(name text, conninfo text) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE st text; m text; d text; h text; c text;
BEGIN
  PERFORM storlab.fleet_add(name, conninfo);
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT, c = PG_EXCEPTION_CONTEXT;
  RETURN concat_ws(E'\n', st, m, d, h, c);
END \$\$"
attempt() { # NAME CONNINFO: the error's text
  collector -v name="$1" -v conninfo="$2" <<<"$try;
SELECT pg_temp.try(:'name', :'conninfo');"
}
left_of() { # NAME: what a refused fleet_add left behind
  collector -v s="$1" <<<"SELECT format('%s foreign server, %s user mapping, %s schema, %s member',
      (SELECT count(*) FROM pg_foreign_server WHERE srvname = 'storlab_fleet_' || :'s'),
      (SELECT count(*) FROM pg_user_mappings WHERE srvname = 'storlab_fleet_' || :'s'),
      (SELECT count(*) FROM pg_namespace WHERE nspname = 'storlab_fleet_' || :'s'),
      (SELECT count(*) FROM storlab.fleet_members WHERE name = :'s'))"
}
nothing="0 foreign server, 0 user mapping, 0 schema, 0 member"
e=$(attempt gone "$(conninfo "$PORT_NONE")")
is "$(head -1 <<<"$e") | $(left_of gone)" "08001 | $nothing" \
  "fleet_add of a server nothing listens for fails with 08001 and leaves nothing behind"
[[ $(head -1 <<<"$e") == 08001 ]] || sed 's/^/#   /' <<<"$e"
e=$(attempt bare "$(conninfo "$PORT_ONE" postgres)")
is "$(head -1 <<<"$e") | $(left_of bare)" "42704 | $nothing" \
  "fleet_add of a database without storlab fails with 42704 and leaves nothing behind"
[[ $(head -1 <<<"$e") == 42704 ]] || sed 's/^/#   /' <<<"$e"
e=$(attempt one_again "$(conninfo "$PORT_ONE")")
is "$(head -1 <<<"$e") | $(left_of one_again) | $(collected one)" "42710 | $nothing | $(member_counts on "$PORT_ONE")" \
  "fleet_add of one's database under a second name fails with 42710, leaves nothing, and one keeps its rows"
[[ $(head -1 <<<"$e") == 42710 ]] || sed 's/^/#   /' <<<"$e"
e=$(attempt secret "$(conninfo "$PORT_NONE" "" "$CANARY")")
is "$(head -1 <<<"$e") $(grep -c -- "$CANARY" <<<"$e") | $(left_of secret)" "08001 0 | $nothing" \
  "a refused fleet_add with a password: the password is in none of the error's message, detail, hint and context"
[[ $e == *"$CANARY"* ]] && sed 's/^/#   /' <<<"$e"
out=$(lab "$COLLECTOR" -v VERBOSITY=verbose -v c="$(conninfo "$PORT_NONE" "" "$CANARY")" 2>&1 <<<"SET client_min_messages = debug5;
SELECT storlab.fleet_add('secret', :'c');")
is "$(grep -c ERROR <<<"$out") $(grep -c -- "$CANARY" <<<"$out")" "1 0" \
  "nor in what psql prints of that error (VERBOSITY verbose) and of the debug messages before it"
out=$(collector -c "SET client_min_messages = debug5" -c "SELECT count(*) FROM storlab.fleet_sync('two')" 2>&1)
is "$(grep -c -- "$CANARY" <<<"$out") $(collector -c "SELECT count(*) FROM storlab.fleet_servers s WHERE s::text LIKE '%$CANARY%'")" "0 0" \
  "two, added with a password: no sync's messages (notices and debug) and no row of fleet_servers shows it"
is "$(grep -c -- "$CANARY" "$WORK/collector.err")" 0 "and no notice or error the collector printed in this whole test"

# ---- one server under two names ------------------------------------------

# A server on storlab before 0.8.0 has no node: it is the legacy node of its
# system identifier and database, and is one member as a node is.
if [[ ${old_ok:-0} == 1 ]]; then
  e=$(attempt old_again "host=$PGHOST port=$PGPORT dbname=$OLD_DB user=postgres")
  is "$(head -1 <<<"$e") | $(left_of old_again)" "42710 | $nothing" \
    "a server on storlab $OLD_VERSION added again under a second name is refused (42710), leaving nothing: its rows would be the first one's, and removing the first would delete them for good"
  [[ $(head -1 <<<"$e") == 42710 ]] || sed 's/^/#   /' <<<"$e"
  collector -c "SELECT storlab.fleet_remove('old')" >/dev/null
  add old_again "host=$PGHOST port=$PGPORT dbname=$OLD_DB user=postgres" >/dev/null
  sync sync10 old_again
  is "$(collector -c "SELECT count(*) FILTER (WHERE server = 'old_again') || ' of ' || count(*) FROM storlab.fleet_probes
                        WHERE node_id = storlab.fleet_legacy_node($sysid_lab, '$OLD_DB')")" "2 of 2" \
    "removed with its results kept and added again under another name, it takes its kept results along"
else
  for ((i = 0; i < 2; i++)); do skip "no member on storlab $OLD_VERSION"; done
fi

# ---- a reinstall seen through the collector's cached session ---------------

# A collector's session to a member (postgres_fdw keeps it) outlives a
# reinstall of storlab there: the member's session must name the new
# install's node. (The member is in another cluster than the collector, so
# nothing invalidates the collector's caches meanwhile.)
RE_DB=storlab_fleet_re
re() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT_TWO" -U postgres -d "$RE_DB" "$@"; }
fdw_pid="SELECT coalesce(string_agg(pid::text, ','), 'none') FROM pg_stat_activity WHERE datname = '$RE_DB' AND application_name = 'postgres_fdw'"
"$PG_BIN/psql" -X -q -h "$SOCK" -p "$PORT_TWO" -U postgres -d postgres -c "CREATE DATABASE $RE_DB" \
  && re -c "CREATE EXTENSION storlab"
add re "$(conninfo "$PORT_TWO" "$RE_DB")" >/dev/null
collector >/dev/null <<SQL
SELECT count(error) FROM storlab.fleet_sync('re');
\\! $PG_BIN/psql -X -q -At -h $SOCK -p $PORT_TWO -U postgres -d $RE_DB -c "$fdw_pid" >$WORK/re.before
\\! $PG_BIN/psql -X -q -At -h $SOCK -p $PORT_TWO -U postgres -d $RE_DB -c 'SET client_min_messages = warning' -c 'DROP EXTENSION storlab' -c 'CREATE EXTENSION storlab' -c "SELECT (storlab.probe('pg_default', 'randread', duration => '100 ms', file_size => 1048576)).id" >/dev/null
SELECT count(error) FROM storlab.fleet_sync('re');
\\! $PG_BIN/psql -X -q -At -h $SOCK -p $PORT_TWO -U postgres -d $RE_DB -c "$fdw_pid" >$WORK/re.after
SQL
is "$(cat "$WORK/re.after" 2>/dev/null)" "$(cat "$WORK/re.before" 2>/dev/null)" \
  "the collector's session to the member is the same before and after the reinstall there (postgres_fdw kept it)"
RE_NODE=$(re -c "SELECT string_agg(node_id::text, ',') FROM storlab.nodes")
is "$(collector -c "SELECT node_id FROM storlab.fleet_members WHERE name = 're'") | $(collector -c "SELECT string_agg(DISTINCT node_id::text, ',') FROM storlab.fleet_probes WHERE server = 're'")" \
  "$RE_NODE | $RE_NODE" \
  "through it the collector reads the new install's node, the one its storlab.nodes holds, and copies the new probe under it"

# ---- a collector updated from the last release without foreign keys -------

# Copies deleted by hand under $PREVIOUS may have left links of a copied
# baseline to probes (or baselines) that are gone: the update drops those
# (they refer to nothing) and keeps the rest, so that the foreign keys that
# now keep a baseline's probes can hold.
if [[ ! -f sql/versions/storlab--$PREVIOUS.sql ]] || ! cp "sql/versions/storlab--$PREVIOUS.sql" "$EXT_DIR/" 2>/dev/null; then
  for ((i = 0; i < 2; i++)); do skip "no install script of storlab $PREVIOUS to copy into $EXT_DIR"; done
else
  lab postgres -c "CREATE DATABASE $UPDATED_DB" >/dev/null
  node=00000000-0000-0000-0000-000000000001
  lab "$UPDATED_DB" >/dev/null <<SQL
SET client_min_messages = warning;
CREATE EXTENSION storlab VERSION '$PREVIOUS';
INSERT INTO storlab.fleet_probes (id, node_id, server, tablespace, location, workload, block_size, workers, direct, sync_method,
                                  writes_per_sync, file_size, duration_s, ops, bytes, iops, mib_s, lat_mean_us, lat_p50_us,
                                  lat_p90_us, lat_p99_us, lat_p999_us, lat_max_us, histogram, env, system_identifier, hostname,
                                  started_at, iodepth, engine)
SELECT i, '$node', 'm', 'pg_default', '/x', 'randread', 8192, 1, true, 'none', 1, 1048576, 0.1, 1, 8192, 10, 0.1, 1, 1, 1, 1, 1, 1,
       '\\x00', '{}', 1, 'h', now(), 1, 'psync' FROM generate_series(1, 2) i;
INSERT INTO storlab.fleet_baselines (id, node_id, server, label, tablespaces, duration_s, repetitions, system_identifier, hostname, taken_at)
VALUES (1, '$node', 'm', 'b', '{pg_default}', 0.1, 2, 1, 'h', now());
-- to probe 1 (kept), to a probe deleted by hand, and of a baseline deleted by hand
INSERT INTO storlab.fleet_baseline_probes (baseline_id, probe_id, repetition, node_id, server)
VALUES (1, 1, 1, '$node', 'm'), (1, 3, 2, '$node', 'm'), (7, 2, 1, '$node', 'm');
ALTER EXTENSION storlab UPDATE;
SQL
  is "$(lab "$UPDATED_DB" -c "SELECT extversion || ': ' || (SELECT string_agg(baseline_id || '/' || probe_id, ' ') FROM storlab.fleet_baseline_probes)
                                FROM pg_extension WHERE extname = 'storlab'")" "$VERSION: 1/1" \
    "a collector updated from $PREVIOUS keeps a copied baseline's link to its probe, and drops those to copies deleted by hand"
  is "$(lab "$UPDATED_DB" -c "DELETE FROM storlab.fleet_probes WHERE id = 1" 2>&1 | grep -c fleet_baseline_probes_probe_fkey)" 1 \
    "and a copied baseline's probe can no longer be deleted under it"
fi

echo "# fleet of $PG: $((SECONDS - T0)) s"
echo "1..$n"
