#!/usr/bin/env bash
# pg_upgrade keeps storlab (TAP output, run by scripts/test with prove when
# PG=15). A throwaway cluster of PG (15 by default) with storlab gets stored
# results of every kind, cheaply: probes, a standard suite, a baseline,
# moves, a pgbench job with its run and progress rows, an experiment, and a
# fleet: a second database of the cluster with results of each kind, added
# through postgres_fdw and synced, so that every fleet table holds rows. It is
# upgraded with pg_upgrade (--check, then --copy, as the postgres OS user) to
# each newer supported major that has the same storlab installed, and there:
#   1. the extension has the same version, pg_upgrade asks for no update of
#      it, and its objects (grants included) are a fresh CREATE EXTENSION's
#      there, as pg_dump --schema-only --binary-upgrade prints them;
#   2. every table of the storlab schema has the same rows (count and md5 of
#      its rows in key order, one test a table) and every sequence of it the
#      same position;
#   3. the functions that read stored results give the same answers
#      (experiment_report, probe_latency, run_latency, chart_svg) and the
#      moves' relation oids still name the moved relations;
#   4. the functions that write work, and their ids go on after the old ones:
#      a probe, a move, a benchmark job in the new major's worker; the
#      standard suite, a baseline taken before the upgrade compared with
#      today's figures, a move made before the upgrade undone;
#   5. the upgraded cluster is a new node (a new system identifier): its
#      storlab.node names another node_id than before, the new rows carry
#      it, the old ones keep theirs; and the fleet follows its member there
#      (its foreign server pointed at the new port): a sync reads it as a
#      new node under the same name and copies nothing twice.
# A newer major without the same storlab (not installed, another version, a
# different install script or no library) is skipped with its reason, never
# failed, as is one whose pg_upgrade fails for every table whatever the
# extension (below); each skip is a line "ok N # skip upgrade to PostgreSQL
# M: REASON", which scripts/test shows in its summary.
#
# Environment: STORLAB_UPGRADE_DIR (/var/tmp/storlab-upgrade), the folder of
# the throwaway clusters and their tablespaces, removed at exit (kept, the
# servers stopped, with STORLAB_UPGRADE_KEEP=1);
# STORLAB_UPGRADE_PORT (54391), the old cluster's port, the new one's is the
# next; STORLAB_UPGRADE_TO ("17 18": the supported majors above PG).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

source scripts/pg-env.sh
FROM=$PG
OLD_BIN=$PG_BIN
WORK=${STORLAB_UPGRADE_DIR:-/var/tmp/storlab-upgrade}
OLD_PORT=${STORLAB_UPGRADE_PORT:-54391}
NEW_PORT=$((OLD_PORT + 1))
SOCK=$WORK/sock
DB=storlab_upgrade
# the fleet's member: another database of the same cluster
MEMBER=storlab_upgrade_member
if [[ -n ${STORLAB_UPGRADE_TO:-} ]]; then
  read -ra TARGETS <<<"$STORLAB_UPGRADE_TO"
else
  TARGETS=()
  for m in $(scripts/pg supported); do ((m > FROM)) && TARGETS+=("$m"); done
fi
# the lab's connection (scripts/test exports it) must not reach these
# clusters, nor pg_upgrade's
unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGOPTIONS PGSERVICE PGPASSFILE

# ---- which majors can be upgraded to -------------------------------------

control_of() { echo "$("$1/pg_config" --sharedir)/extension/storlab.control"; }
default_version() { sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$1" 2>/dev/null; }
script_of() { echo "$("$1/pg_config" --sharedir)/extension/storlab--$2.sql"; }

# "ok" or "skip: REASON" for upgrading FROM to major $1
target_status() {
  local to=$1 bin have want
  bin=$(scripts/pg bindir "$to" 2>/dev/null) || { echo "skip: $to is not a supported major"; return; }
  if [[ ! -x $bin/postgres || ! -x $bin/pg_upgrade || ! -x $bin/pg_config ]]; then
    echo "skip: PostgreSQL $to is not installed (scripts/pg provide $to)"; return
  fi
  want=$(default_version "$(control_of "$OLD_BIN")")
  have=$(default_version "$(control_of "$bin")")
  if [[ -z $want ]]; then echo "skip: storlab is not installed for $FROM (make install PG=$FROM)"; return; fi
  if [[ -z $have ]]; then echo "skip: storlab is not installed for $to (make install PG=$to)"; return; fi
  if [[ $have != "$want" ]]; then
    echo "skip: storlab $want is installed for $FROM but $have for $to (install one build into both)"; return
  fi
  # pgrx writes the source line of each object as a comment: only
  # statements count
  if ! cmp -s <(grep -v '^--' "$(script_of "$OLD_BIN" "$want")") <(grep -v '^--' "$(script_of "$bin" "$want")"); then
    echo "skip: storlab $want for $FROM and for $to come from different builds (their storlab--$want.sql differ)"; return
  fi
  if [[ ! -f $("$bin/pg_config" --pkglibdir)/storlab.so ]]; then
    echo "skip: storlab's library is missing for $to (make install PG=$to)"; return
  fi
  echo ok
}

# ---- helpers -------------------------------------------------------------

# shellcheck source=test/tap.sh
source test/tap.sh
as_owner() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
# Row text with the output settings pinned: the checksums compare values,
# not a session's TimeZone or DateStyle. No column type of storlab's tables
# prints differently on 15, 17 and 18 under these (float8 has printed the
# shortest exact text since 12; jsonb, numeric, bytea, arrays, timestamptz
# in UTC are unchanged), so a row's text is equal where its values are.
# A statement that hangs (a job that never ends) fails instead.
PINNED="-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=postgres -c extra_float_digits=1 -c bytea_output=hex -c statement_timeout=300s"
# sql BIN PORT [psql args]: a query in $DB of that cluster
sql() {
  local bin=$1 port=$2; shift 2
  PGOPTIONS=$PINNED "$bin/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$port" -U postgres -d "$DB" "$@"
}
old() { sql "$OLD_BIN" "$OLD_PORT" "$@"; }
new() { sql "$NEW_BIN" "$NEW_PORT" "$@"; }
# the same in the member's database (psql takes the last -d)
old_member() { old -d "$MEMBER" "$@"; }
# The same settings for every cluster (pg_upgrade reads each one's own):
# the lab's preload, a private socket folder, no TCP.
make_cluster() { # BIN DATA PORT
  local bin=$1 data=$2 port=$3
  # checksums on both sides (18's initdb turns them on by default, and
  # pg_upgrade wants old and new alike); 17 runs on its root's glibc and
  # wants the machine's compiled C.UTF-8, as the lab uses everywhere
  as_owner "$bin/initdb" --no-sync -D "$data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 -k \
    >"$WORK/initdb-$(basename "$(dirname "$data")").log" 2>&1 || return 1
  cat >>"$data/postgresql.conf" <<CONF

# storlab pg_upgrade test
port = $port
listen_addresses = ''
unix_socket_directories = '$SOCK'
shared_preload_libraries = 'pg_stat_statements'
max_wal_size = 1GB
logging_collector = off
CONF
}
start() { # BIN DATA
  # RUST_BACKTRACE from a developer's shell would put a backtrace in every error
  as_owner env -u RUST_BACKTRACE "$1/pg_ctl" -D "$2" -l "$2/../server.log" -w -t 120 start >/dev/null
}
stop() { # BIN DATA
  [[ -f $2/postmaster.pid ]] || return 0
  as_owner "$1/pg_ctl" -D "$2" -m fast -w -t 120 stop >/dev/null 2>&1 \
    || as_owner "$1/pg_ctl" -D "$2" -m immediate -w stop >/dev/null 2>&1
}
# stops whatever server still runs on a data folder of ours, then removes all
cleanup() {
  local d bin
  for d in "$WORK"/*/data; do
    [[ -f $d/postmaster.pid ]] || continue
    bin=$(sed -n 's/^# bin: //p' "$d/../bin" 2>/dev/null)
    [[ -n $bin ]] || bin=$OLD_BIN
    as_owner "$bin/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1 || true
  done
  if [[ ${STORLAB_UPGRADE_KEEP:-0} == 1 && ${1:-} == exit ]]; then echo "# kept $WORK" >&2; else rm -rf "$WORK"; fi
}
# a run's md5 of a query's whole output (or its error)
answer() { # old|new QUERY
  local out
  if out=$("$1" -c "$2" 2>&1); then echo "$(grep -c . <<<"$out") lines, md5 $(md5sum <<<"$out" | cut -c1-32)"
  else echo "$out" | grep -m1 ERROR; fi
}
# every table of the schema: "name rows:md5", rows in primary-key order
# (the row's text, in C order, where there is no key)
fingerprints() { # old|new
  "$1" <<'SQL'
SELECT format('SELECT %L, count(*), md5(coalesce(string_agg(x::text, %L ORDER BY %s), %L)) FROM %s x',
              c.relname, '|', coalesce(k.cols, 'x::text COLLATE "C"'), '', c.oid::regclass)
  FROM pg_class c
  LEFT JOIN LATERAL (
    SELECT string_agg('x.' || quote_ident(a.attname), ', ' ORDER BY u.ord) AS cols
      FROM pg_index i
     CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY u(attnum, ord)
      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = u.attnum
     WHERE i.indrelid = c.oid AND i.indisprimary) k ON true
 WHERE c.relnamespace = 'storlab'::regnamespace AND c.relkind IN ('r', 'p')
 ORDER BY c.relname \gexec
SQL
}
sequences() { # old|new
  "$1" <<'SQL'
SELECT format('SELECT %L, last_value, is_called FROM %s', c.relname, c.oid::regclass)
  FROM pg_class c WHERE c.relnamespace = 'storlab'::regnamespace AND c.relkind = 'S'
 ORDER BY c.relname \gexec
SQL
}
# which relation each move's oid names now
relocated() { # old|new
  "$1" -c "SELECT string_agg(r.id || '=' || coalesce(c.oid::regclass::text, '(none)'), ' ' ORDER BY r.id)
             FROM storlab.relocations r LEFT JOIN pg_class c ON c.oid = r.relation"
}

# ---- the old cluster -----------------------------------------------------

if [[ $WORK != /?*/?* ]]; then echo "Bail out! STORLAB_UPGRADE_DIR must be a folder of its own, not '$WORK'"; exit 1; fi
cleanup
trap 'cleanup exit' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$WORK"/{old,ts/a,ts/b,sock}
# postgres must reach its folders; pg_upgrade writes into its working folder
chmod 755 "$WORK"
chown postgres: "$WORK" "$WORK"/{old,ts/a,ts/b,sock} 2>/dev/null
chmod 700 "$WORK"/ts/a "$WORK"/ts/b "$WORK/sock"
echo "# bin: $OLD_BIN" >"$WORK/old/bin"

ready=() skipped=()
for to in "${TARGETS[@]}"; do
  s=$(target_status "$to")
  if [[ $s == ok ]]; then ready+=("$to"); else skipped+=("$to: ${s#skip: }"); fi
done
if ((${#ready[@]} == 0)); then
  reasons=$(printf '%s; ' "${skipped[@]}")
  echo "1..0 # skip no newer major to upgrade $FROM to: ${reasons%; }"
  exit 0
fi

started=$SECONDS
if ! make_cluster "$OLD_BIN" "$WORK/old/data" "$OLD_PORT" || ! start "$OLD_BIN" "$WORK/old/data"; then
  echo "Bail out! could not make a PostgreSQL $FROM cluster in $WORK/old"
  cat "$WORK"/initdb-old.log "$WORK/old/server.log" 2>/dev/null | tail -20 | sed 's/^/# /'
  exit 1
fi
"$OLD_BIN/psql" -X -q -h "$SOCK" -p "$OLD_PORT" -U postgres -d postgres -c "CREATE DATABASE $DB" \
  -c "CREATE DATABASE $MEMBER" >/dev/null
# One of each kind of stored result, small: 1 MB probe files, 100 ms suites.
# First the fleet's member: the results the fleet copies (probes, a
# baseline and its probes, a run, an experiment), on the tablespaces the
# collector's database makes below.
if ! old_member >"$WORK/populate-member.log" 2>&1 <<SQL
SET client_min_messages = warning;
CREATE EXTENSION storlab;
CREATE TABLESPACE up_a LOCATION '$WORK/ts/a';
CREATE TABLESPACE up_b LOCATION '$WORK/ts/b';
SET storlab.suite_file_size = '4MB';
SELECT storlab.baseline('member', '{up_b}', '100 ms', 2);
SELECT storlab.bench_init(scale => 1) AS init \gset
CALL storlab.wait(:init);
CALL storlab.bench('select-only', 1, 1, '1 s');
CALL storlab.experiment('member', '{"a": {"indexes": "up_a"}, "b": {"indexes": "up_b"}}', 'select-only',
                        '{1}', 1, '1 s', 1, '0 s', 1);
SQL
then
  echo "Bail out! storing results in the PostgreSQL $FROM cluster's member database failed"
  sed 's/^/# /' "$WORK/populate-member.log" | tail -20
  exit 1
fi
if ! old >"$WORK/populate.log" 2>&1 <<SQL
SET client_min_messages = warning;
CREATE EXTENSION pg_stat_statements;
CREATE EXTENSION storlab;
SET storlab.suite_file_size = '4MB';
SELECT (storlab.probe('pg_default', 'randwrite', duration => '200 ms', file_size => 1048576, direct => false)).id;
SELECT (storlab.probe('up_a', 'randread', duration => '200 ms', file_size => 1048576, label => 'before the upgrade')).id;
SELECT (storlab.probe('pg_wal', 'wal', duration => '200 ms', file_size => 1048576)).id;
CREATE TABLE upgrade_moved (id int PRIMARY KEY, v text);
INSERT INTO upgrade_moved SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
CREATE TABLE upgrade_moved_later (id int PRIMARY KEY, v text);
INSERT INTO upgrade_moved_later SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
SELECT count(*) FROM storlab.move('upgrade_moved', 'up_a');
SELECT storlab.bench_init(scale => 1) AS init \gset
CALL storlab.wait(:init);
CALL storlab.bench('select-only', 1, 1, '2 s');
CALL storlab.experiment('upgrade', '{"a": {"indexes": "up_a"}, "b": {"indexes": "up_b"}}', 'select-only',
                        '{1}', 1, '1 s', 1, '0 s', 1);
SELECT storlab.baseline('upgrade', '{up_a}', '100 ms', 2);
-- a prune that finds nothing that old still logs itself in storlab.prunes
CALL storlab.prune('1000 years');
SELECT count(*) FROM storlab.compare_tablespaces(duration => '100 ms');
-- this database is the fleet's collector: the member added over its
-- socket, and its results copied (a sync's error is a row: raised here)
CREATE EXTENSION postgres_fdw;
SELECT storlab.fleet_add('member', 'host=$SOCK port=$OLD_PORT dbname=$MEMBER') IS NOT NULL AS added;
DO \$\$ DECLARE failed text; BEGIN
  SELECT string_agg(s.error, '; ') INTO failed FROM storlab.fleet_sync() s WHERE s.error IS NOT NULL;
  IF failed IS NOT NULL THEN RAISE EXCEPTION 'fleet_sync: %', failed; END IF;
END \$\$;
SQL
then
  echo "Bail out! storing results in the PostgreSQL $FROM cluster failed"
  sed 's/^/# /' "$WORK/populate.log" | tail -20
  exit 1
fi

kinds=$(old -c "SELECT format('%s probes (%s of the standard suite), %s moves, %s jobs, %s runs, %s progress rows, %s experiment, %s baseline, %s prune, %s node; copied from the fleet''s member: %s probes, %s baseline, %s run(s), %s experiment',
                  (SELECT count(*) FROM storlab.probes), (SELECT count(*) FROM storlab.probes WHERE suite = 'standard'),
                  (SELECT count(*) FROM storlab.relocations), (SELECT count(*) FROM storlab.job_records),
                  (SELECT count(*) FROM storlab.bench_runs), (SELECT count(*) FROM storlab.bench_progress),
                  (SELECT count(*) FROM storlab.experiment_records), (SELECT count(*) FROM storlab.baselines),
                  (SELECT count(*) FROM storlab.prunes), (SELECT count(*) FROM storlab.nodes),
                  (SELECT count(*) FROM storlab.fleet_probes), (SELECT count(*) FROM storlab.fleet_baselines),
                  (SELECT count(*) FROM storlab.fleet_bench_runs), (SELECT count(*) FROM storlab.fleet_experiments))")
# What must come through: taken once, compared on every target.
VERSION=$(old -c "SELECT extversion FROM pg_extension WHERE extname = 'storlab'")
FINGERPRINTS=$(fingerprints old)
is "$(awk -F'|' '$2 == 0 { print $1 }' <<<"$FINGERPRINTS" | paste -sd' ')" "" \
  "PostgreSQL $FROM with storlab $VERSION: every table of the storlab schema holds rows ($kinds)"
SEQUENCES=$(sequences old)
RELOCATED=$(relocated old)
EXP=$(old -c "SELECT max(id) FROM storlab.experiment_records")
RUN=$(old -c "SELECT max(id) FROM storlab.bench_runs WHERE experiment_id IS NULL")
PROBE=$(old -c "SELECT min(id) FROM storlab.probes")
BATCH=$(old -c "SELECT batch_id FROM storlab.relocations WHERE relation = 'upgrade_moved'::regclass")
# the table and its primary key
BATCH_MOVES=$(old -c "SELECT count(*) FROM storlab.relocations WHERE batch_id = $BATCH")
declare -A max_before=(
  [probe]=$(old -c "SELECT max(id) FROM storlab.probes")
  [relocation]=$(old -c "SELECT max(id) FROM storlab.relocations")
  [batch]=$(old -c "SELECT max(batch_id) FROM storlab.relocations")
  [job]=$(old -c "SELECT max(id) FROM storlab.job_records")
  [baseline]=$(old -c "SELECT max(id) FROM storlab.baselines")
)
STANDARD=$(old -c "SELECT count(*) FROM storlab.probes WHERE suite = 'standard'")
# the nodes: this database's, the member's (as the collector saw it)
NODE=$(old -c "SELECT node_id FROM storlab.node")
NODES=$(old -c "SELECT string_agg(node_id::text, ',' ORDER BY node_id) FROM storlab.nodes")
MEMBER_NODE=$(old -c "SELECT node_id FROM storlab.fleet_members WHERE name = 'member'")
declare -A QUERIES=(
  [experiment_report]="SELECT r FROM storlab.experiment_report($EXP) WITH ORDINALITY r ORDER BY ordinality"
  [chart_svg experiment]="SELECT storlab.chart_svg('experiment', $EXP)"
  [chart_svg run]="SELECT storlab.chart_svg('run', $RUN)"
  [chart_svg probe]="SELECT storlab.chart_svg('probe', $PROBE)"
  [chart_svg tablespaces]="SELECT storlab.chart_svg('tablespaces')"
  # probes and runs measured alike (probe_latency and run_latency merge no
  # other): the baseline's random reads on up_a, the bench run
  [probe_latency]="SELECT l FROM storlab.probe_latency(ARRAY(SELECT id FROM storlab.probes WHERE tablespace = 'up_a' AND workload = 'randread' AND workers = 1 AND iodepth = 1 AND suite = 'standard')) l"
  [run_latency]="SELECT l FROM storlab.run_latency(ARRAY(SELECT id FROM storlab.bench_runs WHERE experiment_id IS NULL AND tps IS NOT NULL)) l"
  [experiments view]="SELECT e FROM storlab.experiments e ORDER BY id"
  [jobs view]="SELECT j FROM storlab.jobs j ORDER BY id"
)
declare -A ANSWERS=()
for q in "${!QUERIES[@]}"; do ANSWERS[$q]=$(answer old "${QUERIES[$q]}"); done
stop "$OLD_BIN" "$WORK/old/data"
echo "# PostgreSQL $FROM cluster with stored results: $((SECONDS - started)) s"

# ---- each newer major ----------------------------------------------------

upgrade_to() {
  local to=$1 started=$SECONDS target="PostgreSQL $FROM to $1"
  NEW_BIN=$(scripts/pg bindir "$to")
  local data=$WORK/new/data
  rm -rf "$WORK/new" "$WORK"/ts/*/PG_"$to"_* && mkdir -p "$WORK/new" && chown postgres: "$WORK/new" 2>/dev/null
  echo "# bin: $NEW_BIN" >"$WORK/new/bin"
  if ! make_cluster "$NEW_BIN" "$data" "$NEW_PORT"; then
    tap fail "$target: initdb"; sed 's/^/# /' "$WORK/initdb-new.log" | tail -20
    return
  fi
  # pg_upgrade as postgres, in a folder it may write to (its logs go into
  # the new data folder's pg_upgrade_output.d, kept on failure)
  local up=("$NEW_BIN/pg_upgrade" -b "$OLD_BIN" -B "$NEW_BIN" -d "$WORK/old/data" -D "$data"
            -p "$OLD_PORT" -P "$NEW_PORT" -U postgres --socketdir "$SOCK" --copy)
  if (cd "$WORK/new" && as_owner "${up[@]}" --check) >"$WORK/new/check.log" 2>&1; then
    tap ok "$target: pg_upgrade --check passes"
  else
    tap fail "$target: pg_upgrade --check passes"; sed 's/^/# /' "$WORK/new/check.log" | tail -30
  fi
  if ! (cd "$WORK/new" && as_owner "${up[@]}") >"$WORK/new/upgrade.log" 2>&1; then
    # 15.20 and 17.12 keep a version of every column in its attoptions
    # (pg_attver), which their pg_dump knows; a new major's pg_dump that
    # does not copies it into an ALTER TABLE its server rejects, for any
    # table at all: not storlab's to test
    if grep -qs 'unrecognized parameter "pg_attver"' "$data"/pg_upgrade_output.d/*/log/*.log; then
      n=$((n + 1))
      echo "ok $n # skip upgrade to PostgreSQL $to: pg_upgrade fails for every table here, storlab's or not:" \
        "$("$OLD_BIN/postgres" --version | awk '{ print $3 }') keeps column versions in attoptions (pg_attver)," \
        "which $("$NEW_BIN/postgres" --version | awk '{ print $3 }')'s pg_dump copies and its server rejects (unrecognized parameter)"
      return
    fi
    tap fail "$target: pg_upgrade --copy"
    sed 's/^/# /' "$WORK/new/upgrade.log" | tail -30
    find "$data/pg_upgrade_output.d" -name '*.log' -exec tail -n 15 {} + 2>/dev/null | sed 's/^/# /'
    return
  fi
  tap ok "$target: pg_upgrade --copy"
  if ! start "$NEW_BIN" "$data"; then
    tap fail "$target: the upgraded cluster starts"; tail -20 "$WORK/new/server.log" | sed 's/^/# /'
    return
  fi

  # 1. the extension
  is "$(new -c "SELECT extversion FROM pg_extension WHERE extname = 'storlab'")" "$VERSION" \
    "$target: storlab is still $VERSION"
  is "$(grep -iE 'EXTENSION "?storlab"? UPDATE' "$WORK/new/update_extensions.sql" 2>/dev/null)" "" \
    "$target: pg_upgrade asks for no ALTER EXTENSION storlab UPDATE"
  "$NEW_BIN/psql" -X -q -h "$SOCK" -p "$NEW_PORT" -U postgres -d postgres -c "CREATE DATABASE storlab_fresh" >/dev/null
  PGOPTIONS=$PINNED "$NEW_BIN/psql" -X -q -h "$SOCK" -p "$NEW_PORT" -U postgres -d storlab_fresh \
    -c "SET client_min_messages = warning" -c "CREATE EXTENSION storlab" >/dev/null
  # extension members appear in a dump only in binary-upgrade mode; leave
  # out what differs by nature: oids, relfrozenxid, sequence positions
  objects() {
    "$NEW_BIN/pg_dump" -h "$SOCK" -p "$NEW_PORT" -U postgres --schema-only --binary-upgrade -n storlab -e storlab "$1" \
      | grep -v -e '^--' -e '^$' -e 'binary_upgrade_' -e '^\\restrict' -e '^\\unrestrict' -e 'pg_catalog.setval(' \
      | awk '/^UPDATE pg_catalog.pg_class$/ { skip = 3 } skip > 0 { skip--; next } { print }'
  }
  objects "$DB" >"$WORK/new/upgraded.sql"
  objects storlab_fresh >"$WORK/new/fresh.sql"
  if [[ -s $WORK/new/fresh.sql ]] && diff -u "$WORK/new/fresh.sql" "$WORK/new/upgraded.sql" >"$WORK/new/objects.diff"; then
    tap ok "$target: storlab's objects and grants are a fresh CREATE EXTENSION's on $to ($(grep -c . "$WORK/new/fresh.sql") lines of pg_dump)"
  else
    tap fail "$target: storlab's objects and grants are a fresh CREATE EXTENSION's on $to"
    sed 's/^/#   /' "$WORK/new/objects.diff" | head -60
  fi

  # 2. every row, every sequence
  local have line name
  have=$(fingerprints new)
  while IFS= read -r line; do
    name=${line%%|*}
    is "$(grep -m1 "^$name|" <<<"$have")" "$line" "$target: storlab.$name keeps its rows ($(cut -d'|' -f2 <<<"$line") rows, md5 of each in key order)"
  done <<<"$FINGERPRINTS"
  is "$(cut -d'|' -f1 <<<"$have" | paste -sd' ')" "$(cut -d'|' -f1 <<<"$FINGERPRINTS" | paste -sd' ')" \
    "$target: the same tables in the storlab schema"
  is "$(sequences new)" "$SEQUENCES" "$target: every storlab sequence where it was ($(grep -c . <<<"$SEQUENCES") sequences)"

  # 3. the same answers from stored results
  local q keys
  mapfile -t keys < <(printf '%s\n' "${!QUERIES[@]}" | sort)
  for q in "${keys[@]}"; do
    is "$(answer new "${QUERIES[$q]}")" "${ANSWERS[$q]}" "$target: $q gives the same answer over the old rows"
  done
  is "$(relocated new)" "$RELOCATED" "$target: every move's relation oid names the same relation as before"

  # 4. the functions that write, and the ids after the old ones
  local id ids out
  id=$(new -c "SET client_min_messages = warning" \
        -c "SELECT (storlab.probe('up_a', 'randwrite', duration => '200 ms', file_size => 1048576, direct => false)).id" 2>&1)
  is "$( [[ $id =~ ^[0-9]+$ ]] && ((id > max_before[probe])) && echo "a new id after ${max_before[probe]}" || echo "$id")" \
    "a new id after ${max_before[probe]}" "$target: a new probe is stored, its id after the old ones"
  ids=$(new -c "SET client_min_messages = warning" \
        -c "SELECT min(id) || ' ' || min(batch_id) FROM storlab.move('upgrade_moved_later', 'up_b')" 2>&1)
  is "$( [[ $ids =~ ^[0-9]+\ [0-9]+$ ]] && ((${ids% *} > max_before[relocation] && ${ids#* } > max_before[batch])) && echo after || echo "$ids")" \
    after "$target: a new move is stored, its id and batch after the old ones (relocation ${max_before[relocation]}, batch ${max_before[batch]})"
  out=$(new -c "SET client_min_messages = warning" -c "CALL storlab.bench('select-only', 1, 1, '1 s')" 2>&1)
  is "$( [[ $out =~ ^[0-9]+$ ]] && ((out > max_before[job])) \
         && new -c "SELECT CASE WHEN tps > 0 AND (SELECT count(*) FROM storlab.bench_progress WHERE run_id = $out) > 0
                               THEN 'a run with tps and progress rows' ELSE 'tps ' || coalesce(tps::text, 'NULL') END
                      FROM storlab.bench_runs WHERE id = $out" || echo "$out")" \
    "a run with tps and progress rows" "$target: a benchmark job runs in $to's worker, its id after the old ones (${max_before[job]})"
  out=$(new -c "SET storlab.suite_file_size = '4MB'" \
        -c "SELECT count(*) FROM storlab.compare_tablespaces('1 day', '100 ms')" 2>"$WORK/new/notices")
  [[ -n $out ]] || out=$(grep -m1 ERROR "$WORK/new/notices")
  is "$out" "$(($(new -c "SELECT count(*) FROM pg_tablespace WHERE spcname <> 'pg_global'") + 1))" \
    "$target: compare_tablespaces() answers for every tablespace and pg_wal"
  local standard
  standard=$(new -c "SELECT count(*) FROM storlab.probes WHERE suite = 'standard'")
  if [[ $standard == "$STANDARD" ]]; then ok=ok; else ok=fail; fi
  # storlab.server_identities, copied by pg_upgrade, keeps the old
  # identifier this server's: its rows stay its own
  tap "$ok" "$target: compare_tablespaces() takes the standard suite measured minutes before the upgrade (no new probe; $((standard - STANDARD)) made)"
  [[ $ok == fail ]] && echo "#   have: $standard standard-suite probes; want: $STANDARD"
  out=$(new -c "SET storlab.suite_file_size = '4MB'" -c "SELECT storlab.baseline('after the upgrade', '{up_b}', '100 ms', 2)" 2>&1)
  is "$( [[ $out =~ ^[0-9]+$ ]] && ((out > max_before[baseline])) && echo after || echo "$out")" after \
    "$target: a new baseline is stored, its id after the old ones (${max_before[baseline]})"
  out=$(new -c "SET storlab.suite_file_size = '4MB'" \
        -c "SELECT count(*) || ' figures' FROM storlab.regressions('upgrade', NULL, 1000, '100 ms', 2)" 2>"$WORK/new/notices")
  is "${out:-$(grep -m1 ERROR "$WORK/new/notices")}" "14 figures" "$target: regressions() compares today's figures with a baseline taken before the upgrade"
  if grep -q 'another server' "$WORK/new/notices"; then ok=fail; else ok=ok; fi
  tap "$ok" "$target: and does not call the same server another one"
  [[ $ok == fail ]] && grep 'another server' "$WORK/new/notices" | sed 's/^/#   /'
  out=$(new -c "SELECT count(*) || ' ' || min(to_tablespace) FROM storlab.undo_batch($BATCH)" 2>&1)
  if [[ $out == "$BATCH_MOVES pg_default" ]]; then ok=ok; else ok=fail; fi
  tap "$ok" "$target: undo_batch() takes back a move made before the upgrade"
  [[ $ok == fail ]] && echo "$out" | sed 's/^/#   /'

  # 5. a new node; the fleet follows its member
  local node
  node=$(new -c "SELECT node_id FROM storlab.node" 2>&1)
  is "$( [[ -n $node && $node != "$NODE" ]] && echo "another node" || echo "${node:-no node}")" "another node" \
    "$target: the upgraded cluster is a new node: storlab.node names another node_id than before ($NODE)"
  is "$(new -c "SELECT string_agg(DISTINCT coalesce(node_id::text, 'NULL'), ',') FROM storlab.probes WHERE id > ${max_before[probe]}")" \
    "$node" "$target: the probes stored after the upgrade carry the new node"
  is "$(new -c "SELECT count(*) FROM storlab.nodes WHERE node_id = ANY ('{$NODES}') OR node_id = '$node'")" \
    "$(($(tr ',' '\n' <<<"$NODES" | grep -c .) + 1))" \
    "$target: storlab.nodes keeps the old cluster's nodes, and has the new one beside them"
  out=$(new -c "ALTER SERVER storlab_fleet_member OPTIONS (SET port '$NEW_PORT')" \
        -c "SELECT string_agg(s.table_name || ' ' || s.rows_copied || coalesce(' ' || s.error, ''), ', ' ORDER BY s.table_name)
              FROM storlab.fleet_sync() s" 2>&1)
  is "$out" "baseline_probes 0, baselines 0, bench_runs 0, experiments 0, probes 0" \
    "$target: a sync of the fleet's member after the upgrade copies nothing twice"
  out=$(new -c "SELECT node_id FROM storlab.fleet_members WHERE name = 'member'" 2>&1)
  is "$( [[ -n $out && $out != "$MEMBER_NODE" ]] && echo "another node" || echo "${out:-no node}")" "another node" \
    "$target: and reads the member as the new node it is ($MEMBER_NODE before)"
  is "$(new -c "SELECT string_agg(DISTINCT server, ',') FROM storlab.fleet_probes")" member \
    "$target: its rows of before the upgrade are still shown under its name"

  stop "$NEW_BIN" "$data"
  # the new cluster's folders in the shared tablespaces go with it
  [[ ${STORLAB_UPGRADE_KEEP:-0} == 1 ]] || rm -rf "$WORK/new" "$WORK"/ts/*/PG_"$to"_*
  echo "# upgrade to PostgreSQL $to: $((SECONDS - started)) s"
}

for to in "${ready[@]}"; do upgrade_to "$to"; done
for s in "${skipped[@]}"; do
  n=$((n + 1)); echo "ok $n # skip upgrade to PostgreSQL ${s%%:*}:${s#*:}"
done
echo "1..$n"
