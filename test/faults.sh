#!/usr/bin/env bash
# Faults (TAP output, run by scripts/test with prove), on a throwaway lab
# cluster of its own (STORLAB_FAULTS_LAB_DIR, STORLAB_FAULTS_LAB_PORT), never
# the lab the other suites use, since it kills and stops its server:
#   1. DROP EXTENSION storlab while a benchmark runs: the job's worker and
#      its pgbench are gone within seconds, and so is the job's folder; while
#      move_indexes_online rebuilds: no worker, no invalid index;
#   2. SIGKILL of a job's worker mid-benchmark: after the automatic restart
#      the job reads failed with a reason, no pgbench survives, no job folder
#      or scratch file remains, pgbench's rows are all there and amcheck
#      passes on every index; mid-experiment: the experiment says where it
#      stopped, the run that was measuring gets an end and an invalid mark,
#      and keeps them when the experiment is resumed;
#   2a. a job whose creating transaction stays open 72 s: its worker waits
#      for the COMMIT past the minute it gives a job without a creator, and
#      the job runs after it (on a second throwaway cluster, beside the
#      rest: the rest kills and restarts the first one's server);
#   3. SIGKILL of a backend mid-probe: no scratch file and no probe row;
#      mid-move: the table and storlab.relocations agree, every row there;
#      mid-move_indexes_online (the REINDEX CONCURRENTLY's backend): the
#      job's worker comes back after the restart, no invalid index remains,
#      each index is moved and recorded or unmoved and unrecorded;
#   3d. SIGKILL of an online table move's worker while pg_repack waits
#      after its copy: its objects are removed after the restart, the table
#      is where it was;
#   4. pg_ctl stop -m fast and -m immediate mid-benchmark: after the start,
#      the job has ended, left nothing behind, and pgbench's tables are whole;
#   3a. io_uring switched off (kernel.io_uring_disabled = 2, as root): a
#      queued probe fails with 0A000, psync probes still work, and the
#      suite's queued randread runs as 32 psync workers with a NOTICE;
#   5. statement_timeout stops tablespaces() in the middle of a walk over
#      300 000 files;
#   6. at the end DROP TABLESPACE succeeds on every lab tablespace: no file
#      of storlab's keeps one alive.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

source scripts/pg-env.sh
export PG_BIN
export STORLAB_LAB_DIR=${STORLAB_FAULTS_LAB_DIR:-/var/tmp/storlab-faults}
export STORLAB_LAB_PORT=${STORLAB_FAULTS_LAB_PORT:-54369}
DATA=$STORLAB_LAB_DIR/data
sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
as_owner() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
# shellcheck source=test/tap.sh
source test/tap.sh
# polls (up to 60 s) until the query answers t in the database
until_true() { # database, query
  local i
  for ((i = 0; i < 600; i++)); do
    [[ $(sql -d "$1" -c "$2" 2>/dev/null) == t ]] && return 0
    sleep 0.1
  done
  return 1
}
# live ones (a pgbench killed with its worker is a zombie until init reaps
# it) of this cluster's (its jobs run pgbench in the data folder's temp
# folder; other servers on the machine may run theirs)
pgbench_processes() {
  local pid stat n=0
  while read -r pid stat; do
    [[ $stat == Z* ]] && continue
    [[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$DATA"/* ]] && n=$((n + 1))
  done < <(ps -C pgbench -o pid=,stat=)
  echo "$n"
}
# job folders and probe scratch files anywhere below the data folder and the tablespaces
debris() {
  find -L "$DATA" -maxdepth 6 \( -name 'pgsql_tmp_storlab*' \) 2>/dev/null | wc -l
}
job_workers() { sql -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'storlab job'"; }
restart_settled() { until_true postgres "SELECT true"; }
# pgbench's rows all there and amcheck passing on its indexes: bt_index_check
# raises an ERROR on a corrupt index, so the count is only printed when all
# of them pass
pgbench_whole() { # what happened
  is "$(sql -d "$DB" -c "SELECT count(*) FROM pgbench_accounts")" 100000 "$1: pgbench's rows are all there"
  is "$(sql -d "$DB" -c "SELECT count(*) FROM (SELECT bt_index_check(i.indexrelid, true)
                           FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                           JOIN pg_am a ON a.oid = c.relam
                          WHERE a.amname = 'btree' AND c.relname LIKE 'pgbench%') checked")" 3 \
    "$1: amcheck passes on every pgbench index (heapallindexed)"
}
start_run() { # database, seconds -> job id, once pgbench runs
  local id
  id=$(sql -d "$1" -c "SELECT storlab.bench_start('select-only', 1, 1, '$2 s')")
  until_true "$1" "SELECT (SELECT status FROM storlab.jobs WHERE id = $id) = 'running'" >/dev/null
  for ((i = 0; i < 100; i++)); do [[ $(pgbench_processes) -gt 0 ]] && break; sleep 0.1; done
  echo "$id"
}

# 2a's cluster: STORLAB_LAB_DIR-late on the port 5 above
LATE_DIR=$STORLAB_LAB_DIR-late
LATE_PORT=$((STORLAB_LAB_PORT + 5))
late_lab() { STORLAB_LAB_DIR=$LATE_DIR STORLAB_LAB_PORT=$LATE_PORT scripts/lab "$@"; }
late_sql() { (eval "$(late_lab env)"; sql -h "$PGHOST" -p "$PGPORT" "$@"); }
stop_labs() { scripts/lab stop >/dev/null 2>&1; late_lab stop >/dev/null 2>&1; }
trap stop_labs EXIT
if ! scripts/lab start >/dev/null 2>&1 || ! late_lab start >/dev/null 2>&1; then
  echo "Bail out! could not start throwaway lab clusters in $STORLAB_LAB_DIR and $LATE_DIR"
  exit 1
fi
eval "$(scripts/lab env)"
export PGHOST PGPORT PGUSER
DB=$PGDATABASE
unset PGDATABASE
sql -d "$DB" -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS amcheck" \
    -c "CALL storlab.wait(storlab.bench_init(scale => 1, tablespace => 'lab_disk', index_tablespace => 'lab_ram'))" >/dev/null

# 2a. a job whose creating transaction stays open 72 s, on the second
# cluster while the rest runs: 66 s in, its worker still waits (a job
# without a creator to ask is given up after a minute); after the COMMIT
# the job runs, and a CALL storlab.wait at once sees it done. Its TAP lines
# come at the end.
LATE_DB=$(eval "$(late_lab env)"; echo "$PGDATABASE")
late_sql -d "$LATE_DB" -c "SET client_min_messages = warning" -c "CALL storlab.wait(storlab.bench_init(scale => 1))" >/dev/null
late_out=$(mktemp)
late_sql -d "$LATE_DB" >"$late_out" 2>&1 <<'EOF' &
BEGIN;
SELECT storlab.bench_start('select-only', 1, 1, '1 s') AS late \gset
SELECT pg_sleep(72);
COMMIT;
CALL storlab.wait(:late);
SELECT 'late job: ' || status || coalesce(': ' || error, '') FROM storlab.jobs WHERE id = :late;
EOF
late_pid=$!
late_workers=$(mktemp)
(sleep 66; late_sql -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'storlab job'" >"$late_workers" 2>&1) &
late_check_pid=$!

echo "1..45"

# 1. DROP EXTENSION mid-job
sql -d postgres -c "CREATE DATABASE faults_drop" >/dev/null
sql -d faults_drop -c "SET client_min_messages = warning" -c "CREATE EXTENSION storlab" \
    -c "CALL storlab.wait(storlab.bench_init(scale => 1))" >/dev/null
start_run faults_drop 30 >/dev/null
is "$(pgbench_processes)" 1 "a benchmark runs in a second database"
sql -d faults_drop -c "DROP EXTENSION storlab CASCADE" >/dev/null
sleep 3
is "$(pgbench_processes):$(job_workers)" "0:0" "DROP EXTENSION storlab: its worker and pgbench are gone within 3 s"
is "$(debris)" 0 "and the job's folder with them"
# and while move_indexes_online rebuilds: the rebuild stops, its invalid
# copy is dropped, and the worker (one the postmaster would restart after a
# crash) is not started again for the ERRORs of a dropped extension
sql -d faults_drop -c "SET client_min_messages = warning" -c "CREATE EXTENSION storlab" \
    -c "CREATE TABLE faults_drop_idx AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 1000000) g" \
    -c "CREATE INDEX faults_drop_idx_v ON faults_drop_idx (v)" >/dev/null
sql -d faults_drop -c "SELECT storlab.move_indexes_online('faults_drop_idx', 'lab_ext4')" >/dev/null
until_true faults_drop "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE query LIKE 'REINDEX%faults_drop_idx%')" >/dev/null
sql -d faults_drop -c "DROP EXTENSION storlab CASCADE" >/dev/null
sleep 4
is "$(job_workers):$(sql -d faults_drop -c "SELECT count(*) FROM pg_index WHERE NOT indisvalid")" "0:0" \
  "DROP EXTENSION mid-move_indexes_online: no worker 4 s later, and no invalid index"
is "$(debris)" 0 "and no job folder"
sql -d postgres -c "DROP DATABASE faults_drop" >/dev/null

# 2. SIGKILL of a job's worker mid-benchmark
job=$(start_run "$DB" 30)
pid=$(sql -d "$DB" -c "SELECT worker_pid FROM storlab.jobs WHERE id = $job")
kill -KILL "$pid"
sleep 1
restart_settled
is "$(sql -d "$DB" -c "SELECT status FROM storlab.jobs WHERE id = $job")" failed \
  "SIGKILL of the worker: after the restart the job reads failed"
like_reason=$(sql -d "$DB" -c "SELECT error LIKE '%worker%' FROM storlab.jobs WHERE id = $job")
is "$like_reason" t "with a reason that names its worker"
sleep 1
is "$(pgbench_processes)" 0 "no pgbench survives its worker"
is "$(debris)" 0 "no job folder remains (the postmaster cleared the temp folders)"
pgbench_whole "SIGKILL of the worker"

# 2b. SIGKILL of an experiment's worker while a run measures
exp=$(sql -d "$DB" -c "SET client_min_messages = warning" -c "SELECT storlab.experiment_start('faults',
  '[{\"name\": \"disk\", \"tables\": \"lab_disk\", \"indexes\": \"lab_disk\"}]',
  'select-only', '{1}', 1, '20 s', 1, '0 s', 1)")
until_true "$DB" "SELECT current_action LIKE '%measured run' FROM storlab.experiment_records WHERE id = $exp" >/dev/null
for ((i = 0; i < 100; i++)); do [[ $(pgbench_processes) -gt 0 ]] && break; sleep 0.1; done
pid=$(sql -d "$DB" -c "SELECT worker_pid FROM storlab.jobs WHERE id = $exp")
kill -KILL "$pid"
sleep 1
restart_settled
is "$(sql -d "$DB" -c "SELECT status || ': ' || current_action FROM storlab.experiments WHERE id = $exp")" \
  "failed: failed at step 3 of 3 (repetition 1/1, layout disk, clients 1: measured run): its worker exited before finishing it; pgbench's relations were last placed as layout disk (storlab.layout() shows where they are now)" \
  "SIGKILL of an experiment's worker: the experiment says where it stopped, not that it runs"
sql -d "$DB" -c "SELECT storlab.job_status($exp)" >/dev/null
is "$(sql -d "$DB" -c "SELECT count(*) FILTER (WHERE finished_at IS NOT NULL AND invalid LIKE 'its job''s worker exited before the run finished%')
                         || '/' || count(*) FROM storlab.bench_runs WHERE experiment_id = $exp")" "1/1" \
  "the run it measured has an end, and is marked invalid, saying why"
is "$(sql -d "$DB" -c "SELECT current_action LIKE 'failed at step 3 of 3 %its worker exited%' FROM storlab.experiment_records WHERE id = $exp")" t \
  "and the stored experiment row says where it stopped"
killed_end=$(sql -d "$DB" -c "SELECT finished_at FROM storlab.bench_runs WHERE experiment_id = $exp")
sql -d "$DB" -c "SELECT storlab.experiment_resume($exp)" >/dev/null
until_true "$DB" "SELECT status IN ('done', 'failed', 'cancelled') FROM storlab.experiments WHERE id = $exp" >/dev/null
is "$(sql -d "$DB" -c "SELECT status FROM storlab.experiments WHERE id = $exp")" done "resumed, the experiment finishes"
is "$(sql -d "$DB" -c "SELECT finished_at = '$killed_end' FROM storlab.bench_runs WHERE experiment_id = $exp AND tps IS NULL")" t \
  "the killed run keeps its own end, not the resumed job's"
is "$(sql -d "$DB" -c "SELECT count(*) FROM storlab.experiment_report($exp) WHERE runs = 1")" 1 \
  "and the report pools the resumed run only"

# 3. SIGKILL of a backend mid-probe
before=$(sql -d "$DB" -c "SELECT count(*) FROM storlab.probes")
sql -d "$DB" -c "SELECT storlab.probe('lab_disk', 'randwrite', duration => '20 s', file_size => 16777216)" >/dev/null 2>&1 &
probe_client=$!
for ((i = 0; i < 100; i++)); do
  probe_pid=$(sql -d "$DB" -c "SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT storlab.probe(%' AND pid <> pg_backend_pid()")
  [[ -n $probe_pid ]] && break
  sleep 0.1
done
sleep 1
kill -KILL "$probe_pid"
wait "$probe_client" 2>/dev/null
restart_settled
is "$(sql -d "$DB" -c "SELECT count(*) FROM storlab.probes")" "$before" "SIGKILL mid-probe: no probe row"
is "$(debris)" 0 "and no scratch file"

# 3a. io_uring switched off for the whole machine, for a moment
uring_sysctl=/proc/sys/kernel/io_uring_disabled
if [[ -w $uring_sysctl ]]; then
  uring_was=$(cat "$uring_sysctl")
  trap 'echo "$uring_was" >"$uring_sysctl"; stop_labs' EXIT
  echo 2 >"$uring_sysctl"
  is "$(sql -d "$DB" -c "SELECT storlab.probe('lab_ram', iodepth => 32, duration => '100 ms')" 2>&1 | grep -o 'ERROR:  engine io_uring cannot run on lab_ram')" \
    "ERROR:  engine io_uring cannot run on lab_ram" "io_uring switched off: a queued probe fails, saying so"
  is "$(sql -d "$DB" -c "\set VERBOSITY verbose" -c "SELECT storlab.probe('lab_ram', iodepth => 32, duration => '100 ms')" 2>&1 | grep -o '0A000')" \
    0A000 "with SQLSTATE 0A000"
  is "$(sql -d "$DB" -c "SET storlab.suite_file_size = '8MB'" -c "SELECT string_agg(format('%s/%s/%s/%s', workload, workers, iodepth, engine), ' ' ORDER BY id) FROM storlab.profile('lab_ram', '100 ms') WHERE iodepth > 1 OR workers > 1" 2>&1 | grep -v '^NOTICE:  storlab: profiling ' | tr '\n' ' ')" \
    "NOTICE:  storlab: randread on lab_ram: io_uring is not available to this server: io_uring_setup failed: Operation not permitted (os error 1) (kernel.io_uring_disabled = 2); it runs as 32 psync workers instead randread/32/1/psync " \
    "and the suite's queued randread runs as 32 psync workers, with a NOTICE"
  echo "$uring_was" >"$uring_sysctl"
  trap stop_labs EXIT
else
  for what in "a queued probe fails" "with 0A000" "the suite falls back to psync"; do
    echo "ok $((n += 1)) # SKIP io_uring cannot be switched off without root: $what"
  done
fi

# 3b. SIGKILL of a backend mid-move: the move is one transaction, so after
# the restart the table is whole where it was and no move is recorded, or
# the move committed and is recorded: never one without the other
sql -d "$DB" -c "CREATE TABLE faults_big AS SELECT g AS id, repeat('x', 200) AS v FROM generate_series(1, 1500000) g" >/dev/null
sql -d "$DB" -c "SET client_min_messages = warning" -c "SELECT count(*) FROM storlab.move('faults_big', 'lab_ext4')" >/dev/null 2>&1 &
move_client=$!
for ((i = 0; i < 100; i++)); do
  move_pid=$(sql -d "$DB" -c "SELECT pid FROM pg_stat_activity WHERE query LIKE '%storlab.move(%' AND pid <> pg_backend_pid()")
  [[ -n $move_pid ]] && break
  sleep 0.05
done
sleep 0.3
kill -KILL "$move_pid"
wait "$move_client" 2>/dev/null
restart_settled
state=$(sql -d "$DB" -c "SELECT coalesce(t.spcname, 'default') || ', ' ||
                              (SELECT count(*) FROM storlab.relocations WHERE relation_name = 'faults_big')
                          FROM pg_class c LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace
                         WHERE c.relname = 'faults_big'")
case $state in
  "default, 0" | "lab_ext4, 1") tap ok "SIGKILL mid-move: the table and the history agree ($state)" ;;
  *) tap fail "SIGKILL mid-move: the table and the history agree"; echo "#   have: $state" ;;
esac
is "$(sql -d "$DB" -c "SELECT count(*) FROM faults_big")" 1500000 "and every row is there"
sql -d "$DB" -c "DROP TABLE faults_big" >/dev/null

# 3c. SIGKILL of the backend rebuilding an index for move_indexes_online:
# REINDEX CONCURRENTLY commits in phases, and cut short leaves an invalid
# copy (_ccnew or _ccold). The job's worker, started again by the postmaster
# after the crash restart, drops it, records the rebuilds that completed,
# and ends the job failed, saying so
sql -d "$DB" -c "CREATE TABLE faults_idx AS SELECT g AS id, g % 1000 AS k, md5(g::text) AS v FROM generate_series(1, 1500000) g" \
    -c "ALTER TABLE faults_idx ADD PRIMARY KEY (id)" -c "CREATE INDEX faults_idx_k ON faults_idx (k)" \
    -c "CREATE INDEX faults_idx_v ON faults_idx (v)" >/dev/null
job=$(sql -d "$DB" -c "SELECT storlab.move_indexes_online('faults_idx', 'lab_ext4')")
reindexing() { sql -d "$DB" -c "SELECT pid FROM pg_stat_activity WHERE query LIKE 'REINDEX%faults_idx%' LIMIT 1"; }
# once the first index is moved and recorded, somewhere in a later
# rebuild, at a phase that differs from run to run
until_true "$DB" "SELECT EXISTS (SELECT FROM storlab.relocations WHERE relation_name LIKE '%faults_idx%')" >/dev/null
sleep "0.$((RANDOM % 5))"
# (between two rebuilds no REINDEX runs for a moment: the next one is killed)
for ((i = 0; i < 200; i++)); do
  pid=$(reindexing)
  [[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null && break
  sleep 0.02
done
sleep 1
restart_settled
until_true "$DB" "SELECT (SELECT error LIKE 'the server restarted%' FROM storlab.job_records WHERE id = $job)" ||
  echo "# the job's worker did not come back: $(sql -d "$DB" -c "SELECT status, error FROM storlab.job_records WHERE id = $job")"
is "$(sql -d "$DB" -c "SELECT status FROM storlab.jobs WHERE id = $job")" failed \
  "SIGKILL mid-REINDEX CONCURRENTLY: the job reads failed"
echo "# $(sql -d "$DB" -c "SELECT error FROM storlab.jobs WHERE id = $job")"
is "$(sql -d "$DB" -c "SELECT count(*) FROM pg_index WHERE NOT indisvalid")" 0 \
  "no invalid index remains (the restarted worker dropped the interrupted rebuild's copy)"
is "$(sql -d "$DB" -c "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                         LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace
                        WHERE i.indrelid = 'faults_idx'::regclass
                          AND (t.spcname IS NOT DISTINCT FROM 'lab_ext4') <> EXISTS (
                                SELECT FROM storlab.relocations r
                                 WHERE r.relation_name = format('%I.%I', current_schema, c.relname)
                                   AND r.label = 'move_indexes_online')")" 0 \
  "each index is moved and recorded, or where it was and unrecorded ($(sql -d "$DB" -c "SELECT count(*) FROM storlab.relocations WHERE relation_name LIKE '%faults_idx%'") of 3 moved)"
is "$(sql -d "$DB" -c "SELECT count(*) FROM (SELECT bt_index_check(i.indexrelid, true) FROM pg_index i
                        WHERE i.indrelid = 'faults_idx'::regclass) checked"):$(sql -d "$DB" -c "SELECT count(*) FROM faults_idx")" \
  "3:1500000" "amcheck passes on the table's 3 indexes, and every row is there"
is "$(debris)" 0 "no job folder remains"
sql -d "$DB" -c "DROP TABLE faults_idx" >/dev/null

# 3d. SIGKILL of a move_online job's worker while pg_repack runs, after its
# copy (an old transaction holds it in its log replay, with its trigger on
# the table, its log table, its copy and its type in place): pg_repack dies
# with its worker, the postmaster restarts, and the job's worker, started
# again, removes what pg_repack left; the table is where it was, whole
sql -d "$DB" -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS pg_repack" \
    -c "CREATE TABLE faults_rep (id int PRIMARY KEY, v text)" \
    -c "INSERT INTO faults_rep SELECT g, md5(g::text) FROM generate_series(1, 200000) g" >/dev/null
PGAPPNAME=faults_old "$PG_BIN/psql" -X -q -d "$DB" -c "BEGIN" -c "SELECT txid_current()" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
until_true "$DB" "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'faults_old' AND backend_xid IS NOT NULL)" >/dev/null
job=$(sql -d "$DB" -c "SET client_min_messages = warning" \
          -c "SELECT count(*) FROM storlab.move('faults_rep', 'lab_ext4', online => true)" \
          -c "SELECT max(id) FROM storlab.jobs WHERE kind = 'move_online'" | tail -1)
until_true "$DB" "SELECT (SELECT detail->>'phase' FROM storlab.jobs WHERE id = $job) LIKE 'log replay: waiting%'" ||
  echo "# pg_repack did not reach its log replay: $(sql -d "$DB" -c "SELECT status, error, detail FROM storlab.jobs WHERE id = $job")"
kill -KILL "$(sql -d "$DB" -c "SELECT worker_pid FROM storlab.jobs WHERE id = $job")"
sleep 1
restart_settled
until_true "$DB" "SELECT (SELECT error LIKE 'the server restarted%' FROM storlab.job_records WHERE id = $job)" ||
  echo "# the job's worker did not come back: $(sql -d "$DB" -c "SELECT status, error FROM storlab.job_records WHERE id = $job")"
echo "# $(sql -d "$DB" -c "SELECT error FROM storlab.jobs WHERE id = $job")"
is "$(sql -d "$DB" -c "SELECT status FROM storlab.jobs WHERE id = $job")" failed \
  "SIGKILL of a move_online worker mid-pg_repack: the job reads failed, saying the server restarted"
is "$(sql -d "$DB" -c "SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'faults_rep'::regclass AND tgname = 'repack_trigger')
                          + (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                              WHERE n.nspname = 'repack' AND c.relname ~ '^(log|table)_')
                          + (SELECT count(*) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
                              WHERE n.nspname = 'repack' AND t.typname ~ '^pk_')")" 0 \
  "the restarted worker removed pg_repack's trigger, log table, copy and type"
is "$(sql -d "$DB" -c "SELECT coalesce(t.spcname, 'pg_default') FROM pg_class c LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace
                        WHERE c.oid = 'faults_rep'::regclass"):$(sql -d "$DB" -c "SELECT count(*) FROM faults_rep"):$(sql -d "$DB" -c "SELECT count(*) FROM storlab.relocations WHERE relation = 'faults_rep'::regclass")" \
  "pg_default:200000:0" "the table is where it was, every row there, no move recorded"
sql -d "$DB" -c "DROP TABLE faults_rep" >/dev/null

# 4. pg_ctl stop -m fast mid-benchmark
job=$(start_run "$DB" 30)
as_owner env -u RUST_BACKTRACE "$PG_BIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >/dev/null
is "$(pgbench_processes)" 0 "pg_ctl stop -m fast mid-benchmark: pgbench stops with the server"
as_owner env -u RUST_BACKTRACE "$PG_BIN/pg_ctl" -D "$DATA" -w -t 60 -l "$STORLAB_LAB_DIR/log/server.log" start >/dev/null
restart_settled
is "$(sql -d "$DB" -c "SELECT status IN ('failed', 'cancelled') FROM storlab.jobs WHERE id = $job")" t \
  "after the start the job has ended ($(sql -d "$DB" -c "SELECT status FROM storlab.jobs WHERE id = $job"))"
is "$(debris)" 0 "and left no folder"

# 4b. pg_ctl stop -m immediate mid-benchmark: no shutdown checkpoint, the
# start replays the WAL
job=$(start_run "$DB" 30)
as_owner env -u RUST_BACKTRACE "$PG_BIN/pg_ctl" -D "$DATA" -m immediate -w -t 60 stop >/dev/null
sleep 1
is "$(pgbench_processes)" 0 "pg_ctl stop -m immediate mid-benchmark: pgbench stops with the server"
as_owner env -u RUST_BACKTRACE "$PG_BIN/pg_ctl" -D "$DATA" -w -t 60 -l "$STORLAB_LAB_DIR/log/server.log" start >/dev/null
restart_settled
is "$(sql -d "$DB" -c "SELECT status || ': ' || error FROM storlab.jobs WHERE id = $job")" \
  "failed: the job's worker exited before finishing it (an error in the worker, a crash or a server restart: the server log says which)" \
  "after the start the job reads failed, with a reason"
is "$(debris)" 0 "and left no folder"
pgbench_whole "pg_ctl stop -m immediate"

# 5. tablespaces() walks every file of a tablespace: over 300 000 files it
# takes a while, and a statement_timeout stops it mid-walk, not after
ram=$(sql -d "$DB" -c "SELECT location FROM storlab.tablespaces() WHERE tablespace = 'lab_ram'")
python3 -c '
import os, sys
d = os.path.join(sys.argv[1], "storlab_faults_files")
os.makedirs(d)
for i in range(300000):
    os.close(os.open(os.path.join(d, str(i)), os.O_CREAT | os.O_WRONLY, 0o600))
' "$ram"
ms() { date +%s%3N; }
t0=$(ms); sql -d "$DB" -c "SELECT count(*) FROM storlab.tablespaces()" >/dev/null; full=$(($(ms) - t0))
t0=$(ms)
state=$(sql -d "$DB" -c "SET statement_timeout = '50ms'" -c "SELECT count(*) FROM storlab.tablespaces()" 2>&1 | grep -o 'canceling statement due to statement timeout')
cut=$(($(ms) - t0))
is "$state" "canceling statement due to statement timeout" "statement_timeout cancels tablespaces() over 300 000 files"
is "$((cut * 2 < full))" 1 "mid-walk: after ${cut} ms, where the whole walk takes ${full} ms"
rm -rf "$ram/storlab_faults_files"

# 2a's results
wait "$late_check_pid"
is "$(cat "$late_workers")" 1 "66 s into the creating transaction, the job's worker still waits for it"
wait "$late_pid"
is "$(grep '^late job' "$late_out")" "late job: done" "after the COMMIT the job runs, and CALL storlab.wait sees it done"
rm -f "$late_out" "$late_workers"

# 6. every lab tablespace can be dropped
sql -d postgres -c "DROP DATABASE $DB" >/dev/null
failed=""
for ts in $(sql -d postgres -c "SELECT spcname FROM pg_tablespace WHERE spcname LIKE 'lab%'"); do
  sql -d postgres -c "DROP TABLESPACE $ts" >/dev/null 2>&1 || failed+="$ts "
done
is "$failed" "" "DROP TABLESPACE succeeds on every lab tablespace afterwards"
