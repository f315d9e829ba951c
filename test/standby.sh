#!/usr/bin/env bash
# storlab on a hot standby, and readers that assign no transaction id (TAP
# output, run by scripts/test with prove). A throwaway lab cluster of its own
# (STORLAB_STANDBY_LAB_DIR, STORLAB_STANDBY_LAB_PORT) is the primary, with
# stored probes, a baseline, an experiment's runs and a move; a streaming
# replica of it made with pg_basebackup -R (its tablespaces mapped to
# folders of its own: it measures its own storage) runs on the next port.
#   - on the primary, readers assign no transaction id (50 calls of
#     tablespaces() use none), and a probe in a READ ONLY transaction is
#     refused at the call with 25006, without waiting for another session's
#     probe of the same device;
#   - on the standby, every reader answers from the replicated rows (the
#     same answer as the primary's); probe, profile, fsync_cost, check,
#     regressions and compare_tablespaces measure the standby's own storage
#     and return the figures without storing them, with a NOTICE; every path
#     that writes is refused with 25006 before it does anything.
# Everything it made is removed at the end.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

source scripts/pg-env.sh
export STORLAB_LAB_DIR=${STORLAB_STANDBY_LAB_DIR:-/var/tmp/storlab-standby}
export STORLAB_LAB_PORT=${STORLAB_STANDBY_LAB_PORT:-54386}
REPLICA=$STORLAB_LAB_DIR-replica
REPLICA_PORT=$((STORLAB_LAB_PORT + 1))
REPLICA_RAM=/dev/shm/storlab-standby-$REPLICA_PORT
as_owner() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
# shellcheck source=test/tap.sh
source test/tap.sh

cleanup() {
  [[ -d $REPLICA/data ]] && as_owner "$PG_BIN/pg_ctl" -D "$REPLICA/data" -m immediate -w stop >/dev/null 2>&1
  rm -rf "$REPLICA" "$REPLICA_RAM"
  scripts/lab stop >/dev/null 2>&1
}
trap cleanup EXIT
cleanup
if ! scripts/lab start >/dev/null 2>&1; then
  echo "Bail out! could not start a throwaway lab cluster in $STORLAB_LAB_DIR"
  exit 1
fi
eval "$(scripts/lab env)"
export PGHOST PGPORT PGUSER PGDATABASE
primary() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
sql() { primary "$@"; }
standby() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -p "$REPLICA_PORT" "$@"; }
# SQLSTATE and message of a statement that must fail (VERBOSITY verbose:
# "ERROR:  25006: cannot ..."), or "no error"
fails() {
  local out
  if out=$("$@" -v VERBOSITY=verbose 2>&1); then echo "no error"; return; fi
  sed -n 's/^\(psql:[^ ]* \)\?ERROR:  \([0-9A-Z]\{5\}\): \(.*\)$/\2: \3/p' <<<"$out" | head -n 1
}

# ---- the primary's stored results -------------------------------------
# (small scratch files: the suites here prove where figures go, not what
# they are; the standby takes the setting along in postgresql.auto.conf)
# (LOAD first: before 16, ALTER SYSTEM refuses a parameter whose module the
# session has not loaded, and every probe then made its default-sized file)
primary -c "LOAD 'storlab'" -c "ALTER SYSTEM SET storlab.suite_file_size = '16MB'" -c "SELECT pg_reload_conf()" >/dev/null \
  || { echo "Bail out! could not set storlab.suite_file_size on the primary"; exit 1; }
primary >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT storlab.probe('lab_ram', 'randread', duration => '0.2 s', file_size => 16777216, label => 'fixture');
SELECT count(*) FROM storlab.profile('lab_ram', duration => '0.1 s', precision_pct => NULL, repetitions => 2);
SELECT storlab.baseline('fixture', '{lab_ram}', '0.1 s', 2);
CREATE TABLE moved (id int PRIMARY KEY);
SELECT count(*) FROM storlab.move('moved', 'lab_disk');
-- an experiment's stored runs (as sql/sequential.sql keeps them: known
-- figures, no job ran them)
INSERT INTO storlab.job_records (id, kind, status, args) OVERRIDING SYSTEM VALUE
VALUES (9105, 'experiment', 'done',
  '{"kind": "experiment", "name": "on a standby", "layouts": [
      {"name": "base", "placement": {"tables": "lab_disk", "indexes": "lab_disk", "temp": null, "settings": []}},
      {"name": "ram",  "placement": {"tables": "lab_ram",  "indexes": "lab_ram",  "temp": null, "settings": []}}],
    "script": "tpcb-like", "clients": [4], "jobs": 2, "duration_s": 10, "repetitions": 3, "warmup_s": 2,
    "scale": 1, "fillfactors": [100], "order": "alternating", "lock_timeout_ms": 5000, "run": {}}');
INSERT INTO storlab.experiment_records (id, name, steps_total, system_identifier, hostname)
VALUES (9105, 'on a standby', 14, 0, 'fixture');
INSERT INTO storlab.bench_runs (id, job_id, experiment_id, experiment_layout, fillfactor, repetition, warmup,
                                script, clients, jobs, duration_s, tps, system_identifier, hostname)
SELECT 9200 + row_number() OVER (), 9105, 9105, layout, 100, rep, false, 'tpcb-like', 4, 2, 10, tps, 0, 'fixture'
  FROM (VALUES ('base', 1, 100.0), ('ram', 1, 150.0), ('base', 2, 104.0), ('ram', 2, 149.0),
               ('base', 3, 98.0), ('ram', 3, 155.0)) v(layout, rep, tps);
SQL

echo "1..14"

# ---- readers assign no transaction id (on the primary) ----------------
xmax() { primary -c "SELECT pg_snapshot_xmax(pg_current_snapshot())"; }
before=$(xmax)
for _ in $(seq 50); do primary -c "SELECT count(*) FROM storlab.tablespaces()" >/dev/null; done
is "$(($(xmax) - before))" 0 "50 calls of tablespaces() on the primary use no transaction id"

READERS=(
  "SELECT count(*) FROM storlab.tablespaces()"
  "SELECT count(*) FROM storlab.layout()"
  "SELECT count(*) FROM storlab.recommend()"
  "SELECT count(*) FROM storlab.experiment_report(9105)"
  "SELECT count(*) FROM storlab.experiment_io(9105)"
  "SELECT length(storlab.chart_svg('experiment', 9105)) > 0"
  "SELECT length(storlab.chart_svg('tablespaces')) > 0"
  "SELECT length(storlab.chart_svg('probe', (SELECT min(id) FROM storlab.probes WHERE label = 'fixture'))) > 0"
  "SELECT count(*) FROM storlab.compare_samples('{1,2,3}', '{2,3,4}')"
  "SELECT count(*) FROM storlab.job_status(9105)"
  "SELECT count(*) FROM storlab.probe_latency(ARRAY(SELECT id FROM storlab.probes WHERE label = 'fixture'))"
  "SELECT count(*) FROM storlab.compare_fleet()"
  "SELECT count(*) FROM storlab.scripts()"
  "SELECT storlab.node_id() IS NOT NULL"
  "SELECT count(*) FROM storlab.experiments"
)
assigned=()
for q in "${READERS[@]}"; do
  got=$(primary -c "BEGIN" -c "$q" -c "SELECT pg_current_xact_id_if_assigned() IS NULL" -c "COMMIT" 2>&1 | tail -n 1)
  [[ $got == t ]] || assigned+=("$q: $got")
done
is "${assigned[*]:-none}" none "each reader, in a transaction of its own, leaves it without a transaction id"

# ---- an error names the SQL function that raised it --------------------
# (the server log's LOCATION line with log_error_verbosity = verbose, and
# psql's with VERBOSITY verbose: every one said error.rs:38 before)
is "$(primary -v VERBOSITY=verbose -c "SELECT storlab.probe('no_such_tablespace')" 2>&1 | sed -n 's/^LOCATION:  \([^,]*\), \([^:]*\):[0-9]*.*/\1 \2/p')" \
  "storlab.probe probe.rs" "an error's location names the SQL function that raised it, and the line"

# ---- a probe in a READ ONLY transaction is refused at the call ----------
# another session's probe holds lab_disk's device for 3 s; a read-only
# probe of the same device must not wait for it to be refused
primary -c "SELECT storlab.probe('lab_disk', 'randread', duration => '3 s', file_size => 16777216, label => 'holder')" \
  >/dev/null 2>&1 &
holder=$!
until_true "SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND database = 0 AND granted)" 50
t0=$(ms)
got=$(fails primary -c "BEGIN READ ONLY" -c "SELECT storlab.probe('lab_disk', duration => '2 s')")
took=$(($(ms) - t0))
is "$got" "25006: cannot store a probe's figures in a read-only transaction" \
  "a probe in a READ ONLY transaction is refused with 25006"
if ((took < 1000)); then tap ok "at the call, in $took ms: no probe ran and no other session's probe was waited for"
else tap fail "at the call, in $took ms: no probe ran and no other session's probe was waited for"; fi
wait "$holder"

# ---- the replica -------------------------------------------------------
primary -c "CHECKPOINT" >/dev/null
mapping=()
while IFS='|' read -r name location; do
  case $name in
    lab_ram) mapping+=("--tablespace-mapping=$location=$REPLICA_RAM") ;;
    *) mapping+=("--tablespace-mapping=$location=$REPLICA/ts/$name") ;;
  esac
done < <(primary -c "SELECT spcname, pg_tablespace_location(oid) FROM pg_tablespace WHERE pg_tablespace_location(oid) <> ''")
mkdir -p "$REPLICA" "$REPLICA_RAM"
chown postgres: "$REPLICA" "$REPLICA_RAM" 2>/dev/null
chmod 700 "$REPLICA_RAM"
if ! as_owner "$PG_BIN/pg_basebackup" -h "$PGHOST" -p "$PGPORT" -U postgres -D "$REPLICA/data" -R -X stream \
       --checkpoint=fast "${mapping[@]}" >"$REPLICA/basebackup.log" 2>&1; then
  echo "Bail out! pg_basebackup failed: $(tail -n 3 "$REPLICA/basebackup.log")"
  exit 1
fi
# A standby that measures its storage runs statements of minutes (the
# suite on every tablespace): replay may wait for them, as on a reporting
# standby, rather than cancel them on a conflict with the primary's vacuum
# (docs/safety.md, "On a standby").
cat >>"$REPLICA/data/postgresql.conf" <<CONF
port = $REPLICA_PORT
hot_standby = on
max_standby_streaming_delay = -1
CONF
if ! as_owner env -u RUST_BACKTRACE "$PG_BIN/pg_ctl" -D "$REPLICA/data" -w -t 60 -l "$REPLICA/server.log" start >/dev/null; then
  echo "Bail out! the replica did not start: $(tail -n 5 "$REPLICA/server.log")"
  exit 1
fi
caught_up() {
  local lsn i
  lsn=$(primary -c "SELECT pg_current_wal_lsn()")
  for ((i = 0; i < 300; i++)); do
    [[ $(standby -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'" 2>/dev/null) == t ]] && return 0
    sleep 0.1
  done
  return 1
}
caught_up
is "$(standby -c "SELECT pg_is_in_recovery()")" t "a streaming replica of the primary is in recovery and has replayed its WAL"

# ---- every reader answers on the standby, as on the primary ------------
# (tablespaces() describes each server's own folders: compared by name)
SAME=(
  "SELECT string_agg(kind || ' ' || tablespace, ', ' ORDER BY kind, tablespace) FROM storlab.tablespaces()"
  "SELECT string_agg(relation::text || ' ' || tablespace, ', ' ORDER BY 1) FROM storlab.layout()"
  "SELECT string_agg(topic || ': ' || coalesce(target, '-') || ': ' || advice, ', ' ORDER BY topic, target, advice) FROM storlab.recommend()"
  "SELECT string_agg(layout || ' ' || runs || ' ' || round(tps_mean::numeric, 3) || ' ' || coalesce(p_value::text, '-'), ', ' ORDER BY layout) FROM storlab.experiment_report(9105)"
  "SELECT count(*) FROM storlab.experiment_io(9105)"
  "SELECT md5(storlab.chart_svg('experiment', 9105))"
  "SELECT status || ' ' || coalesce(error, '-') FROM storlab.job_status(9105)"
  "SELECT string_agg(percentile || ' ' || round(lat_us::numeric, 3), ', ' ORDER BY percentile) FROM storlab.probe_latency(ARRAY(SELECT id FROM storlab.probes WHERE label = 'fixture'))"
  "SELECT count(*) FROM storlab.compare_fleet()"
  "SELECT count(*) FROM storlab.scripts()"
  "SELECT count(*) || ' ' || string_agg(label, ',' ORDER BY label) FROM storlab.baselines"
  "SELECT md5(storlab.chart_svg('tablespaces'))"
)
differ=()
for q in "${SAME[@]}"; do
  p=$(primary -c "$q" 2>&1); s=$(standby -c "$q" 2>&1)
  [[ $p == "$s" && $s != *ERROR* ]] || differ+=("$q: primary '$p', standby '$s'")
done
is "${differ[*]:-none}" none "every reader answers on the standby from the replicated rows, as the primary does"
is "$(standby -c "SELECT storlab.node_id() IS NOT NULL AND storlab.node_id() <> (SELECT node_id FROM storlab.nodes LIMIT 1)
                    AND storlab.node_id() = (SELECT node_id FROM storlab.node)")|$(standby -c "SELECT storlab.node_id()")" \
  "t|$(standby -c "SELECT storlab.node_id()")" \
  "on a standby node_id() names a node of its own place, not its primary's, the same in every session"
is "$(standby -c "CALL storlab.prune('1 second', dry_run => true)" 2>&1 | tr '\n' ' ' | grep -c ERROR)|$(standby -c "SELECT probes >= 0 FROM storlab.fleet_prune('1 second', dry_run => true)" 2>&1)" "0|t" \
  "CALL prune(dry_run => true) and fleet_prune(dry_run => true) count on a standby"

# ---- measuring the standby's own storage -------------------------------
regressions_rows=$(primary -c "SELECT count(*) FROM storlab.regressions('fixture', duration => '0.1 s', repetitions => 2)" 2>/dev/null)
caught_up
stored_before=$(standby -c "SELECT count(*) FROM storlab.probes")
out=$(standby -c "SELECT id < 0, tablespace, ops > 0, node_id = storlab.node_id() FROM storlab.probe('lab_ram', 'randread', duration => '0.2 s', file_size => 16777216)" 2>&1)
is "$(grep -c 'hot standby: its own storage is measured' <<<"$out")|$(tail -n 1 <<<"$out")" "1|t|lab_ram|t|t" \
  "probe() on a standby measures its own storage, says so, and returns the row under a session id below 0 and the standby's own node"
got=$(standby <<'SQL' 2>&1
SET client_min_messages = warning;
SELECT 'profile ' || count(*) FILTER (WHERE id < 0) || '/' || count(*) FROM storlab.profile('lab_ram', duration => '0.1 s', precision_pct => NULL);
SELECT 'fsync_cost ' || (count(*) > 0) FROM storlab.fsync_cost('lab_ram', '0.1 s');
SELECT 'latency ' || count(*) FILTER (WHERE lat_us > 0) FROM storlab.probe_latency(ARRAY(SELECT id FROM storlab.profile('lab_ram', duration => '0.1 s', precision_pct => NULL) WHERE workload = 'randread' AND iodepth = 1));
SELECT 'check ' || (measured > 0) || ' ' || (SELECT bool_and(i < 0) FROM unnest(probe_ids) i) FROM storlab.check('lab_ram', 'randread', 'iops', '>', 1, '0.1 s', 2);
SELECT 'regressions ' || count(*) FROM storlab.regressions('fixture', duration => '0.1 s', repetitions => 2);
SELECT 'compare ' || count(*) FILTER (WHERE randread_iops > 0 AND wal_commit_p50_us > 0) || '/' || count(*) FROM storlab.compare_tablespaces(duration => '0.1 s');
SQL
)
want="profile 6/6|fsync_cost true|latency 4|check true true|regressions $regressions_rows|compare $(standby -c "SELECT count(*) || '/' || count(*) FROM storlab.tablespaces()")"
is "$(tr '\n' '|' <<<"$got" | sed 's/|$//')" "$want" \
  "profile, fsync_cost, check, regressions and compare_tablespaces measure the standby's storage and return figures (probe_latency reads them in the session)"
caught_up
is "$(standby -c "SELECT count(*) FROM storlab.probes")" "$stored_before" "and nothing is stored: the standby's probes table is the primary's"

# ---- every path that writes is refused, before it does anything --------
WRITERS=(
  "SELECT storlab.move('moved', 'pg_default')"
  "SELECT storlab.move('moved', 'pg_default', dry_run => true)"
  "SELECT storlab.apply_layout('lab_ram', 'lab_ram')"
  "SELECT storlab.restore_layout(now() - interval '1 hour')"
  "SELECT storlab.undo_batch(1)"
  "SELECT storlab.move_indexes_online('moved', 'lab_ram')"
  "SELECT storlab.bench_init(1)"
  "SELECT storlab.bench_start()"
  "SELECT storlab.experiment_start('x', '{\"a\": {}, \"b\": {}}')"
  "SELECT storlab.experiment_resume(9105)"
  "SELECT storlab.baseline('standby')"
  "SELECT storlab.drop_baseline('fixture')"
  "SELECT storlab.cancel(9105)"
  "CALL storlab.prune('1 day')"
  "SELECT storlab.fleet_add('replica', 'dbname=x')"
  "SELECT storlab.fleet_remove('replica')"
  "SELECT * FROM storlab.fleet_prune('1 day')"
  "CALL storlab.measure_tablespaces(max_age => '1 millisecond', duration => '0.1 s')"
)
wrong=()
for q in "${WRITERS[@]}"; do
  got=$(fails standby -c "$q")
  [[ $got == "25006: cannot "*" on a hot standby" ]] || wrong+=("$q: $got")
done
is "${wrong[*]:-none}" none "moves, jobs, experiments, baselines, cancel, prune, measure_tablespaces and the fleet's writers are refused with 25006 on a standby"
is "$(fails standby -c "SELECT storlab.fleet_sync()")" "25006: cannot sync the fleet on a hot standby" \
  "and so is the fleet's collector"
