#!/usr/bin/env bash
# Online table moves through pg_repack (TAP output, run by scripts/test with
# prove, against the lab), in a database of their own:
#   1. pgbench_accounts (scale 10, a million rows) moved to another
#      tablespace and back (restore_layout) while a tpcb-like pgbench writes
#      to it: no failed transaction, no transaction slower than the
#      lock_timeout given, every row there and every balance agreeing with
#      pgbench_history, table and index where each move said, both moves
#      recorded as online with the writers' longest wait;
#   2. a transaction in the way of pg_repack's exclusive lock (at its
#      setup, at its swap): the job stops pg_repack after its attempts were
#      queued for 1 s, not after lock_timeout (its retries hold up every
#      writer that arrives), fails with 55P03, the table where it was,
#      pg_repack's objects removed once the holder lets go, no session
#      cancelled; cancel() after the copy, while pg_repack waits for an
#      older transaction, and the waiting CALL cancelled (statement_timeout,
#      pg_cancel_backend): cancelled within seconds, nothing left behind;
#   3. a holder that outlasts lock_timeout: pg_repack's objects are named,
#      with the statement that removes them, and the next online move of
#      the table removes them first;
#   4. short transactions one after another in the way of each attempt
#      (a busy, slow machine): pg_repack's attempts are queued for more
#      than 1 s in all, yet each transaction lets go, so the move is done;
#   5. an autovacuum of the table in the way: 55P03, the error names the
#      autovacuum worker and says what to do;
#   6. DDL from another session (lock_timeout 0) queued behind pg_repack's
#      lock, pgbench writing: an ALTER TABLE during the copy, a TRUNCATE
#      while pg_repack waits for an older transaction: the job stops
#      pg_repack after lock_timeout, 55P03 naming the statement, the DDL
#      goes through, nothing left, no writer slower than lock_timeout + 1 s;
#   7. a DELETE of every row whose transaction holds up the swap: 55P03,
#      the writers' row-lock waits counted, pg_repack's objects removed
#      once the DELETE's transaction ends, without another call;
#   8. apply_layout online with indexes elsewhere, REINDEX CONCURRENTLY held
#      up by an older snapshot: 55P03 naming it and what moved; undo_batch
#      takes the moved part back.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

source scripts/pg-env.sh
DB=storlab_online_move
# the calls' NOTICEs (which job moves what) are for people
export PGOPTIONS="-c client_min_messages=warning"
TARGET=lab_disk
sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
# shellcheck source=test/tap.sh
source test/tap.sh
# a session that holds what its statements take until released (by its
# name: a backend in pg_sleep does not notice its client go away)
hold() { # name, psql's -c options
  local name=$1
  shift
  PGAPPNAME=$name "$PG_BIN/psql" -X -q -d "$DB" "$@" -c "SELECT pg_sleep(120)" >/dev/null 2>&1 &
}
release() {
  sql -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '$1'" >/dev/null
  until_true "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = '$1')" 50
}
holding() { sql -c "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = '$1')"; }
phase_is() { until_true "SELECT (SELECT detail->>'phase' FROM storlab.jobs WHERE id = $1) LIKE '$2'" "${3:-300}"; }
# pg_repack's objects on a table: its trigger, its log table, its copy, its type
debris() {
  sql -c "SELECT count(*) FROM pg_trigger WHERE tgrelid = '$1'::regclass AND tgname = 'repack_trigger'" \
      -c "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'repack' AND c.relname ~ '^(log|table)_'" \
      -c "SELECT count(*) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
           WHERE n.nspname = 'repack' AND t.typname ~ '^pk_'" | paste -sd' '
}
where() { sql -c "SELECT coalesce(t.spcname, 'pg_default') FROM pg_class c LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace WHERE c.oid = '$1'::regclass"; }

if ! "$PG_BIN/psql" -X -q -At -d postgres -c "SELECT 1" >/dev/null 2>&1; then
  echo "Bail out! cannot reach the lab's server (PGHOST=${PGHOST:-unset}, PGPORT=${PGPORT:-unset})"
  exit 1
fi
if [[ ! -x $PG_BIN/pg_repack ]]; then
  echo "Bail out! no pg_repack in $PG_BIN: make deps PG=$PG installs it"
  exit 1
fi
echo "1..54"
work=$(mktemp -d /tmp/storlab-online-move.XXXXXX)
chmod 755 "$work"
cleanup() {
  jobs -p | xargs -r kill 2>/dev/null
  wait 2>/dev/null
  "$PG_BIN/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" 2>/dev/null
  [[ -n ${naptime_set:-} ]] && "$PG_BIN/psql" -X -q -d postgres -c "ALTER SYSTEM RESET autovacuum_naptime" -c "SELECT pg_reload_conf()" >/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
"$PG_BIN/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" 2>/dev/null
sql -c "CREATE EXTENSION storlab" -c "CREATE EXTENSION pg_repack" >/dev/null
(cd "$work" && "$PG_BIN/pgbench" -i -s 10 -q "$DB" >/dev/null 2>&1)
# pgbench -i vacuums before its COPY's million inserts reach the statistics,
# so the table is due for an autovacuum (n_ins_since_vacuum); with pg_repack
# 1.4 one may start during a move and hold up its swap (docs/relocate.md).
# Vacuumed here: this part is about pgbench's writers.
sql -c "VACUUM pgbench_accounts"
is "$(sql -c "SELECT n_ins_since_vacuum < 1000 FROM pg_stat_user_tables WHERE relid = 'pgbench_accounts'::regclass")" t \
  "pgbench_accounts is not due for an autovacuum"

# ---- 1. a busy table moves and comes back -------------------------------
before=$(sql -c "SELECT clock_timestamp()")
(cd "$work" && "$PG_BIN/pgbench" -c 4 -j 2 -T 16 --log --log-prefix="$work/tx" "$DB" >"$work/pgbench.out" 2>&1) &
bench=$!
sleep 2
job=$(sql -c "SELECT relation_name FROM storlab.move('pgbench_accounts', '$TARGET', lock_timeout => '2s', online => true)" \
      -c "SELECT max(id) FROM storlab.jobs WHERE kind = 'move_online'" | tail -1)
sql -c "CALL storlab.wait($job)" >/dev/null 2>"$work/wait.err"
is "$(sql -c "SELECT status FROM storlab.jobs WHERE id = $job")" done "an online move of pgbench_accounts while pgbench writes: done $(tr '\n' ' ' <"$work/wait.err") $(sql -c "SELECT detail->>'error_detail' FROM storlab.jobs WHERE id = $job")"
is "$(where pgbench_accounts) $(where pgbench_accounts_pkey)" "$TARGET $TARGET" "the table and its index are in $TARGET"
is "$(sql -c "SELECT string_agg(kind || ':' || online || ':' || (writers_blocked_s IS NOT NULL), ' ' ORDER BY id)
               FROM storlab.relocations WHERE batch_id = (SELECT (args->>'batch')::bigint FROM storlab.jobs WHERE id = $job)")" \
  "table:true:true index:true:false" "recorded: the table and its index, online, with the writers' longest wait for the table"
back=$(sql -c "SELECT count(*) FROM storlab.restore_layout('$before', lock_timeout => '2s', online => true)" \
       -c "SELECT max(id) FROM storlab.jobs WHERE kind = 'move_online'" | tail -1)
sql -c "CALL storlab.wait($back)" >/dev/null 2>"$work/wait.err"
is "$(sql -c "SELECT status FROM storlab.jobs WHERE id = $back")" done "restore_layout(online => true) moves them back while pgbench writes $(tr '\n' ' ' <"$work/wait.err") $(sql -c "SELECT detail->>'error_detail' FROM storlab.jobs WHERE id = $back")"
is "$(where pgbench_accounts) $(where pgbench_accounts_pkey)" "pg_default pg_default" "the table and its index are in pg_default again"
is "$(sql -c "SELECT bool_and(online) AND count(*) = 2 FROM storlab.relocations WHERE label LIKE 'restore_layout since %'")" t \
  "and the way back is recorded, online"
is "$(kill -0 $bench 2>/dev/null && echo running)" running "pgbench was still writing when both moves were done"
wait $bench
bench_rc=$?
is "$bench_rc $(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$work/pgbench.out")" "0 0" \
  "pgbench ended with no failed transaction ($(grep -m1 '^tps' "$work/pgbench.out"))"
# transactions that started while a move's job ran, and the slowest of all
window=$(sql -c "SELECT string_agg(extract(epoch FROM started_at)::numeric(20,3) || ' ' || extract(epoch FROM finished_at)::numeric(20,3), ' ')
                  FROM storlab.jobs WHERE id IN ($job, $back)")
read -r s1 e1 s2 e2 <<<"$window"
read -r during slowest <<<"$(cat "$work"/tx.* | awk -v s1="$s1" -v e1="$e1" -v s2="$s2" -v e2="$e2" '
  { end = $5 + $6 / 1e6; start = end - $3 / 1e6
    if ((start >= s1 && start <= e1) || (start >= s2 && start <= e2)) n++
    if ($3 > max) max = $3 }
  END { printf "%d %d\n", n, max / 1000 }')"
is "$((during > 100))" 1 "writes went on during the moves: $during transactions started while their jobs ran"
is "$((slowest < 2000))" 1 "no transaction waited past the lock_timeout given (2 s): the slowest took ${slowest} ms"
is "$(sql -c "SELECT count(*) FROM pgbench_accounts")" 1000000 "every row is there"
is "$(sql -c "SELECT (SELECT sum(abalance) FROM pgbench_accounts) = (SELECT coalesce(sum(delta), 0) FROM pgbench_history)
                 AND (SELECT sum(bbalance) FROM pgbench_branches) = (SELECT coalesce(sum(delta), 0) FROM pgbench_history)
                 AND (SELECT sum(tbalance) FROM pgbench_tellers) = (SELECT coalesce(sum(delta), 0) FROM pgbench_history)
                 AND (SELECT count(*) FROM pgbench_history) > 0")" t \
  "every balance agrees with pgbench_history: no committed write was lost or doubled"
is "$(debris pgbench_accounts)" "0 0 0" "no trigger, log table, copy or type of pg_repack is left"

# ---- 2. a transaction in the way, cancel ---------------------------------
sql -c "CREATE TABLE c (id int PRIMARY KEY, v text)" -c "INSERT INTO c SELECT g, md5(g::text) FROM generate_series(1, 20000) g" >/dev/null
# not due for an autovacuum either (see part 1; part 5 is about one)
sql -c "VACUUM c"
start_move() { sql -c "SELECT count(*) FROM storlab.move('c', '${2:-$TARGET}', lock_timeout => '${1:-30s}', online => true)" \
                   -c "SELECT max(id) FROM storlab.jobs WHERE kind = 'move_online'" | tail -1; }
like() { if [[ $1 == *"$2"* ]]; then tap ok "$3"; else tap fail "$3"; printf '#   have: %s\n#   want: *%s*\n' "$1" "$2"; fi; }
# the job's end, how long after $2 (ms) it came, and its error
ended() { until_true "SELECT status IN ('done', 'failed', 'cancelled') FROM storlab.jobs WHERE id = $1" 600; echo "$(($(ms) - $2))"; }

# A session holds ACCESS SHARE (a long report): pg_repack's first exclusive
# lock queues behind it, and every writer arriving meanwhile would queue
# behind pg_repack's retries for the whole lock_timeout (30 s here). The job
# stops pg_repack once that one transaction kept its attempts queued for
# 1 s: 55P03, the table where it was, the report not cancelled.
hold holder -c "BEGIN" -c "LOCK TABLE c IN ACCESS SHARE MODE"
until_true "SELECT EXISTS (SELECT FROM pg_locks WHERE relation = 'c'::regclass AND mode = 'AccessShareLock' AND granted)"
t0=$(ms)
job=$(start_move)
took=$(ended "$job" "$t0")
is "$(sql -c "SELECT status || ' ' || (detail->>'error_sqlstate') FROM storlab.jobs WHERE id = $job") $((took < 6000))" "failed 55P03 1" \
  "a long transaction in the way of pg_repack's first lock: the job fails with 55P03 in ${took} ms, not after lock_timeout (30 s)"
like "$(sql -c "SELECT error FROM storlab.jobs WHERE id = $job")" "was queued for over 1000 ms behind a transaction that does not let go" \
  "saying that pg_repack's lock was queued too long, and why that matters"
is "$(where c) $(debris c) $(holding holder)" "pg_default 0 0 0 t" "the table is where it was, nothing of pg_repack's is left, the report still runs"
release holder

# an old transaction: pg_repack copied and waits for it before its swap
hold old -c "BEGIN" -c "SELECT txid_current()"
until_true "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE datname = current_database() AND backend_xid IS NOT NULL AND application_name = 'old')"
job=$(start_move)
phase_is "$job" 'log replay: waiting%'
is "$(sql -c "SELECT detail->>'phase' FROM storlab.jobs WHERE id = $job") $(sql -c "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'c'::regclass AND tgname = 'repack_trigger'")" \
  "log replay: waiting for transactions older than the copy 1" "the job shows pg_repack waiting for an older transaction, its trigger on the table"
t0=$(ms)
sql -c "SELECT storlab.cancel($job)" >/dev/null
took=$(ended "$job" "$t0")
is "$(sql -c "SELECT status FROM storlab.jobs WHERE id = $job") $((took < 5000))" "cancelled 1" \
  "cancel() after the copy, while pg_repack waits for older transactions: cancelled in ${took} ms"
is "$(where c) $(debris c)" "pg_default 0 0 0" "and the table is where it was, without pg_repack's trigger, log table, copy or type"

# The waiting CALL cancelled, by statement_timeout and by
# pg_cancel_backend: the job stops as with cancel() (docs/bench.md), in
# the same phase.
job=$(start_move)
phase_is "$job" 'log replay: waiting%'
t0=$(ms)
sql -c "SET statement_timeout = '1s'" -c "CALL storlab.wait($job)" >/dev/null 2>"$work/wait.err"
took=$(ended "$job" "$t0")
is "$(sql -c "SELECT status FROM storlab.jobs WHERE id = $job") $((took < 6000)) $(where c) $(debris c)" "cancelled 1 pg_default 0 0 0" \
  "CALL storlab.wait cancelled by statement_timeout (1 s) while pg_repack waits: the job is cancelled in ${took} ms, the table where it was, nothing left"
job=$(start_move)
phase_is "$job" 'log replay: waiting%'
PGAPPNAME=waiter "$PG_BIN/psql" -X -q -d "$DB" -c "CALL storlab.wait($job)" >/dev/null 2>&1 &
until_true "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'waiter' AND query LIKE 'CALL storlab.wait%')"
t0=$(ms)
sql -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'waiter'" >/dev/null
took=$(ended "$job" "$t0")
is "$(sql -c "SELECT status FROM storlab.jobs WHERE id = $job") $((took < 5000)) $(where c) $(debris c)" "cancelled 1 pg_default 0 0 0" \
  "and by pg_cancel_backend: cancelled in ${took} ms, the table where it was, nothing left"

# The old transaction, and a newer one holding ACCESS SHARE: once the old
# one ends, pg_repack's swap queues behind the newer one; the job stops it
# after 1 s of queueing, and removes pg_repack's objects once the holder
# lets go (two seconds later).
job=$(start_move)
phase_is "$job" 'log replay: waiting%'
hold newer -c "BEGIN" -c "SELECT count(*) FROM c"
until_true "SELECT EXISTS (SELECT FROM pg_locks WHERE relation = 'c'::regclass AND mode = 'AccessShareLock' AND granted)"
release old
phase_is "$job" 'swap%'
is "$(sql -c "SELECT detail->>'phase' FROM storlab.jobs WHERE id = $job")" "swap: taking the exclusive lock to swap the files" \
  "the job shows pg_repack waiting for the lock of its swap"
sleep 2
release newer
ended "$job" 0 >/dev/null
is "$(sql -c "SELECT status || ' ' || (detail->>'error_sqlstate') FROM storlab.jobs WHERE id = $job")" "failed 55P03" \
  "its swap queued behind a transaction that does not let go: 55P03"
is "$(where c) $(debris c)" "pg_default 0 0 0" "the table is where it was, and pg_repack's objects went once the holder let go"

# ---- 3. a holder that outlasts lock_timeout -------------------------------
# pg_repack's objects stay until it lets go, said so with the statement that
# removes them; the next online move of the table removes them first.
hold old -c "BEGIN" -c "SELECT txid_current()"
until_true "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE datname = current_database() AND backend_xid IS NOT NULL AND application_name = 'old')"
job=$(start_move 2s)
phase_is "$job" 'log replay: waiting%'
hold newer -c "BEGIN" -c "SELECT count(*) FROM c"
until_true "SELECT EXISTS (SELECT FROM pg_locks WHERE relation = 'c'::regclass AND mode = 'AccessShareLock' AND granted)"
release old
sql -c "CALL storlab.wait($job)" >/dev/null 2>"$work/wait.err"
is "$(sql -c "SELECT sqlstate FROM storlab.job_status($job)")" 55P03 "a swap that cannot lock fails the job with 55P03"
like "$(cat "$work/wait.err")" "could not lock table public.c without holding up its writers" "CALL storlab.wait says which table, and why"
like "$(sql -c "SELECT error FROM storlab.jobs WHERE id = $job") $(sql -c "SELECT detail->>'error_detail' FROM storlab.jobs WHERE id = $job")" \
  "repack.repack_drop('public.c'::regclass, 4)" "and that pg_repack's objects wait for the lock holder, with the statement that removes them"
is "$(where c) $(holding newer)" "pg_default t" "the table is where it was, and no session was cancelled: the lock holder still runs"
release newer
is "$(sql -c "SELECT count(*) FROM storlab.relocations WHERE relation = 'c'::regclass")" 0 "no move of it is recorded"
job=$(start_move 5s)
sql -c "CALL storlab.wait($job)" >/dev/null 2>"$work/wait.err"
is "$(sql -c "SELECT status FROM storlab.jobs WHERE id = $job") $(where c) $(debris c)" "done $TARGET 0 0 0" \
  "once the holder let go, the next online move removes what the first left and moves the table $(cat "$work/wait.err")"

# ---- 4. short transactions, one after another, in the way ----------------
# Three sessions each hold ACCESS SHARE on c for 0.7 s at a time, one
# transaction after another, started apart: each of pg_repack's attempts at
# its exclusive locks finds some of them in the way, so its first attempts
# (100 ms, 200 ms, ...) time out, over a second in all, behind transactions
# that each let go within 0.7 s. That is no transaction "that does not let
# go": the job lets pg_repack retry, and the move is done.
churn() {
  PGAPPNAME=churn "$PG_BIN/psql" -X -q -d "$DB" \
    -c "DO \$\$ BEGIN LOOP LOCK TABLE c IN ACCESS SHARE MODE; PERFORM pg_sleep(0.7); COMMIT; END LOOP; END \$\$" >/dev/null 2>&1 &
}
churn; sleep 0.25; churn; sleep 0.25; churn
until_true "SELECT count(*) = 3 FROM pg_locks WHERE relation = 'c'::regclass AND mode = 'AccessShareLock' AND granted"
job=$(start_move 5s pg_default)
sql -c "CALL storlab.wait($job)" >/dev/null 2>"$work/wait.err"
is "$(sql -c "SELECT status FROM storlab.jobs WHERE id = $job") $(where c) $(holding churn)" "done pg_default t" \
  "short transactions in the way of every attempt: the move is done, no session cancelled $(tr '\n' ' ' <"$work/wait.err")"
queued=$(sql -c "SELECT lock_wait_s FROM storlab.relocations WHERE relation = 'c'::regclass AND kind = 'table' ORDER BY id DESC LIMIT 1")
is "$(awk -v q="$queued" 'BEGIN { print (q + 0 > 1) ? "t" : "f" }')" t \
  "pg_repack's attempts were queued ${queued:-no} s in all, more than the 1 s one transaction may keep them queued"
release churn
is "$(debris c)" "0 0 0" "and nothing of pg_repack's is left"

# ---- 5. an autovacuum in the way ------------------------------------------
# pgbench_accounts made due for a slow autovacuum (its dead rows from part 1
# over a threshold of 0), and the launcher made to look every second: the
# move's first exclusive lock queues behind the worker, which PostgreSQL
# cancels only for a lock that waits deadlock_timeout. The job stops after
# 1 s and names it, with what to do.
sql -c "ALTER TABLE pgbench_accounts SET (autovacuum_vacuum_threshold = 0, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_cost_delay = 50)"
naptime_set=1
"$PG_BIN/psql" -X -q -d postgres -c "ALTER SYSTEM SET autovacuum_naptime = '1s'" -c "SELECT pg_reload_conf()" >/dev/null
until_true "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND datname = current_database() AND query LIKE '%pgbench_accounts%')" 600
job=$(sql -c "SELECT relation_name FROM storlab.move('pgbench_accounts', '$TARGET', lock_timeout => '5s', online => true)" \
      -c "SELECT max(id) FROM storlab.jobs WHERE kind = 'move_online'" | tail -1)
sql -c "CALL storlab.wait($job)" >/dev/null 2>&1
is "$(sql -c "SELECT status || ' ' || (detail->>'error_sqlstate') FROM storlab.jobs WHERE id = $job") $(where pgbench_accounts)" "failed 55P03 pg_default" \
  "an autovacuum of the table in the way of pg_repack's lock: 55P03, the table where it was"
like "$(sql -c "SELECT detail->>'error_detail' FROM storlab.jobs WHERE id = $job")" "(autovacuum worker). An autovacuum of the table is in the way" \
  "the error names the autovacuum worker, and says to VACUUM the table and move it again"
"$PG_BIN/psql" -X -q -d postgres -c "ALTER SYSTEM RESET autovacuum_naptime" -c "SELECT pg_reload_conf()" >/dev/null
naptime_set=
sql -c "ALTER TABLE pgbench_accounts RESET (autovacuum_vacuum_threshold, autovacuum_vacuum_scale_factor, autovacuum_vacuum_cost_delay)"
until_true "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND datname = current_database())" 600
sql -c "VACUUM pgbench_accounts"

# ---- 6. DDL from another session queued behind pg_repack -------------------
# A migration's ALTER TABLE or TRUNCATE (lock_timeout 0, as most run) queues
# for ACCESS EXCLUSIVE behind the lock pg_repack holds from its setup to
# its swap, and every writer queues behind it. Once it has been queued
# lock_timeout (2 s) the job stops pg_repack, so that it goes through:
# 55P03 naming the session and its statement, the table where it was,
# nothing of pg_repack's left, no writer slower than lock_timeout + 1 s.
slowest() { cat "$1".* 2>/dev/null | awk '{ if ($3 > max) max = $3 } END { printf "%d\n", max / 1000 }'; }
(cd "$work" && "$PG_BIN/pgbench" -c 4 -j 2 -T 12 --log --log-prefix="$work/ddl" "$DB" >"$work/bench-ddl.out" 2>&1) &
bench=$!
sleep 1
job=$(sql -c "SELECT relation_name FROM storlab.move('pgbench_accounts', '$TARGET', lock_timeout => '2s', online => true)" \
      -c "SELECT max(id) FROM storlab.jobs WHERE kind = 'move_online'" | tail -1)
phase_is "$job" 'copy'
t0=$(ms)
PGAPPNAME=migration PGOPTIONS="-c lock_timeout=0" "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$DB" \
  -c "ALTER TABLE pgbench_accounts ADD COLUMN note text" >"$work/alter.out" 2>&1 &
alter=$!
took=$(ended "$job" "$t0")
wait $alter
alter_rc=$?
is "$(sql -c "SELECT status || ' ' || (detail->>'error_sqlstate') FROM storlab.jobs WHERE id = $job") $((took < 6000))" "failed 55P03 1" \
  "an ALTER TABLE queued behind pg_repack during the copy: the job stops it, 55P03 in ${took} ms"
like "$(sql -c "SELECT error FROM storlab.jobs WHERE id = $job")" "ALTER TABLE pgbench_accounts ADD COLUMN note text" \
  "the error names the session's statement"
like "$(sql -c "SELECT detail->>'error_detail' FROM storlab.jobs WHERE id = $job")" "the table's writers waited for a lock" \
  "and its detail how long the writers waited"
is "$alter_rc $(sql -c "SELECT count(*) FROM pg_attribute WHERE attrelid = 'pgbench_accounts'::regclass AND attname = 'note'") $(where pgbench_accounts) $(debris pgbench_accounts)" \
  "0 1 pg_default 0 0 0" "the ALTER went through, the table is where it was, nothing of pg_repack's is left $(cat "$work/alter.out")"
wait $bench
is "$(($(slowest "$work/ddl") < 3000))" 1 \
  "no writer waited past lock_timeout + 1 s: the slowest transaction took $(slowest "$work/ddl") ms ($(grep -m1 '^tps' "$work/bench-ddl.out"))"

# A TRUNCATE while pg_repack waits for an older transaction (which takes as
# long as that transaction does): the same.
sql -c "CREATE TABLE d (id int PRIMARY KEY, v int)" -c "INSERT INTO d SELECT g, 0 FROM generate_series(1, 100000) g" -c "VACUUM d" >/dev/null
printf '\\set id random(1, 100000)\nUPDATE d SET v = v + 1 WHERE id = :id;\n' >"$work/d.sql"
hold old -c "BEGIN" -c "SELECT txid_current()"
until_true "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE datname = current_database() AND backend_xid IS NOT NULL AND application_name = 'old')"
job=$(sql -c "SELECT count(*) FROM storlab.move('d', '$TARGET', lock_timeout => '2s', online => true)" \
          -c "SELECT max(id) FROM storlab.jobs WHERE kind = 'move_online'" | tail -1)
phase_is "$job" 'log replay: waiting%'
(cd "$work" && "$PG_BIN/pgbench" -n -c 2 -j 2 -T 8 -f "$work/d.sql" --log --log-prefix="$work/trunc" "$DB" >"$work/bench-trunc.out" 2>&1) &
bench=$!
sleep 1
t0=$(ms)
PGAPPNAME=migration PGOPTIONS="-c lock_timeout=0" "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$DB" -c "TRUNCATE d" >"$work/truncate.out" 2>&1 &
trunc=$!
took=$(ended "$job" "$t0")
wait $trunc
trunc_rc=$?
is "$(sql -c "SELECT status || ' ' || (detail->>'error_sqlstate') FROM storlab.jobs WHERE id = $job") $((took < 6000))" "failed 55P03 1" \
  "a TRUNCATE queued behind pg_repack while it waits for an older transaction: 55P03 in ${took} ms"
like "$(sql -c "SELECT error FROM storlab.jobs WHERE id = $job")" "TRUNCATE d" "naming the TRUNCATE"
is "$trunc_rc $(sql -c "SELECT count(*) FROM d") $(where d) $(debris d) $(holding old)" "0 0 pg_default 0 0 0 t" \
  "the TRUNCATE went through, the table is where it was, nothing left, the old transaction untouched $(cat "$work/truncate.out")"
wait $bench
is "$(($(slowest "$work/trunc") < 3000))" 1 "no writer waited past lock_timeout + 1 s: the slowest took $(slowest "$work/trunc") ms"
release old

# ---- 7. every row deleted during a move ------------------------------------
# A DELETE of every row, its transaction open while pg_repack wants its
# swap: the job stops pg_repack (55P03), and the writers' waits for the
# deleted rows (transaction-id locks) count in what it says they waited.
# pg_repack's trigger and log table cannot be removed while the DELETE's
# transaction holds its lock; once it ends they go, with no further call.
sql -c "INSERT INTO d SELECT g, 0 FROM generate_series(1, 100000) g" -c "VACUUM d" >/dev/null
hold old -c "BEGIN" -c "SELECT txid_current()"
until_true "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE datname = current_database() AND backend_xid IS NOT NULL AND application_name = 'old')"
job=$(sql -c "SELECT count(*) FROM storlab.move('d', '$TARGET', lock_timeout => '2s', online => true)" \
          -c "SELECT max(id) FROM storlab.jobs WHERE kind = 'move_online'" | tail -1)
phase_is "$job" 'log replay: waiting%'
(cd "$work" && "$PG_BIN/pgbench" -n -c 2 -j 2 -T 12 -f "$work/d.sql" "$DB" >"$work/bench-del.out" 2>&1) &
bench=$!
PGAPPNAME=deleter "$PG_BIN/psql" -X -q -d "$DB" -c "BEGIN" -c "DELETE FROM d" -c "SELECT pg_sleep(6)" -c "COMMIT" >/dev/null 2>&1 &
deleter=$!
until_true "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'deleter' AND query = 'SELECT pg_sleep(6)')"
sleep 1
release old
ended "$job" 0 >/dev/null
is "$(sql -c "SELECT status || ' ' || (detail->>'error_sqlstate') FROM storlab.jobs WHERE id = $job") $(where d)" "failed 55P03 pg_default" \
  "the swap queued behind the DELETE's transaction: 55P03, the table where it was"
waited=$(sql -c "SELECT substring(detail->>'error_detail' FROM 'the table''s writers waited for a lock ([0-9.]+) s at most') FROM storlab.jobs WHERE id = $job")
is "$(awk -v w="$waited" 'BEGIN { print (w + 0 >= 1) ? "t" : "f" }')" t \
  "the writers' waits for the deleted rows count: they waited ${waited:-?} s at most"
like "$(sql -c "SELECT detail->>'error_detail' FROM storlab.jobs WHERE id = $job")" "repack.repack_drop('public.d'::regclass, 4)" \
  "pg_repack's objects are named while the DELETE's transaction holds its lock"
wait $deleter
until_true "SELECT NOT EXISTS (SELECT FROM pg_trigger WHERE tgrelid = 'd'::regclass AND tgname = 'repack_trigger')" 150
is "$(debris d)" "0 0 0" "once the DELETE's transaction ended, pg_repack's objects were removed without another call"
wait $bench

# ---- 8. apply_layout online, indexes elsewhere, an old snapshot ------------
# Tables to one tablespace through pg_repack, then each index to another by
# REINDEX CONCURRENTLY, which waits for every older transaction (of any
# table). One that outlives lock_timeout: 55P03 naming it, saying what moved
# and what did not, and undo_batch takes the moved part back.
sql -c "CREATE SCHEMA lay" -c "CREATE TABLE lay.f (id int PRIMARY KEY, v int)" -c "CREATE INDEX f_v ON lay.f (v)" \
    -c "INSERT INTO lay.f SELECT g, g FROM generate_series(1, 20000) g" -c "VACUUM lay.f" >/dev/null
hold old -c "BEGIN" -c "SELECT txid_current()"
until_true "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE datname = current_database() AND backend_xid IS NOT NULL AND application_name = 'old')"
job=$(sql -c "SELECT count(*) FROM storlab.apply_layout('$TARGET', 'lab_ram', 'lay', lock_timeout => '2s', online => true)" \
          -c "SELECT max(id) FROM storlab.jobs WHERE kind = 'move_online'" | tail -1)
phase_is "$job" 'log replay: waiting%'
hold snapshot -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "SELECT count(*) FROM pg_class"
until_true "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'snapshot' AND query LIKE 'SELECT pg_sleep%')"
snapshot_pid=$(sql -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'snapshot'")
release old
sql -c "CALL storlab.wait($job)" >/dev/null 2>"$work/wait.err"
is "$(sql -c "SELECT status || ' ' || coalesce(detail->>'error_sqlstate', 'none') FROM storlab.jobs WHERE id = $job")" "failed 55P03" \
  "REINDEX CONCURRENTLY held up by an older transaction past lock_timeout: 55P03 $(tr '\n' ' ' <"$work/wait.err")"
error=$(sql -c "SELECT error || ' / ' || (detail->>'error_detail') FROM storlab.jobs WHERE id = $job")
like "$error" "pid $snapshot_pid" "the error names the transaction in the way"
like "$error" "moved: table lay.f to $TARGET" "and says what moved"
batch=$(sql -c "SELECT (args->>'batch') FROM storlab.jobs WHERE id = $job")
like "$error" "storlab.undo_batch($batch, online => true)" "and how to take it back"
release snapshot
undo=$(sql -c "SELECT count(*) FROM storlab.undo_batch($batch, lock_timeout => '5s', online => true)" \
           -c "SELECT max(id) FROM storlab.jobs WHERE kind = 'move_online'" | tail -1)
sql -c "CALL storlab.wait($undo)" >/dev/null 2>"$work/wait.err"
is "$(where lay.f) $(where lay.f_pkey) $(where lay.f_v) $(debris lay.f)" "pg_default pg_default pg_default 0 0 0" \
  "undo_batch(online => true) takes the moved part back $(tr '\n' ' ' <"$work/wait.err")"
