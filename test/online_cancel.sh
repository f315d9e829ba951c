#!/usr/bin/env bash
# Cancelling an online index move held up by a long transaction (TAP output,
# run by scripts/test with prove, against the lab): REINDEX CONCURRENTLY
# waits for every transaction older than it, and meanwhile holds SHARE
# UPDATE EXCLUSIVE on the table with an invalid copy of the index that
# every write keeps up to date. storlab.cancel() must stop that rebuild on
# the server (its backend, by pid), drop the invalid copy and be done within
# about a second; and the move's record says what the rebuild itself wrote
# and how long it took.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

source scripts/pg-env.sh
DB=storlab_online_cancel
sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
# shellcheck source=test/tap.sh
source test/tap.sh

if ! "$PG_BIN/psql" -X -q -At -d postgres -c "SELECT 1" >/dev/null 2>&1; then
  echo "Bail out! cannot reach the lab's server (PGHOST=${PGHOST:-unset}, PGPORT=${PGPORT:-unset})"
  exit 1
fi
echo "1..9"
"$PG_BIN/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" 2>/dev/null
sql -c "CREATE EXTENSION storlab" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" \
    -c "CREATE TABLE t (id int PRIMARY KEY, v int)" \
    -c "INSERT INTO t SELECT g, g % 1000 FROM generate_series(1, 200000) g" \
    -c "CREATE INDEX t_v ON t (v)" >/dev/null

# A move with nothing in its way: its record holds the rebuild's own WAL
# (pg_stat_statements) and duration (psql's \timing), not the server's WAL
# or a multiple of the worker's poll.
job=$(sql -c "SELECT storlab.move_indexes_online('t', 'lab_ram')")
sql -c "CALL storlab.wait($job)" >/dev/null
is "$(sql -c "SELECT count(*) FILTER (WHERE wal_bytes > 0 AND wal_bytes < 50 * 1024 * 1024) || '/' || count(*)
               FROM storlab.relocations WHERE label = 'move_indexes_online'")" "2/2" \
  "an online move records the WAL its own rebuilds wrote (each under 50 MB for a 200 000-row table)"
is "$(sql -c "SELECT bool_and(abs(duration_s * 4 - round(duration_s * 4)) > 1e-6 OR duration_s < 0.25)
               FROM storlab.relocations WHERE label = 'move_indexes_online'")" t \
  "and each rebuild's own duration, not a multiple of the worker's 250 ms poll"
sql -c "ALTER INDEX t_pkey SET TABLESPACE pg_default" -c "ALTER INDEX t_v SET TABLESPACE pg_default" >/dev/null

# An old snapshot (no lock on the table): REINDEX CONCURRENTLY waits for it.
"$PG_BIN/psql" -X -q -d "$DB" -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "SELECT 1" -c "SELECT pg_sleep(60)" \
  >/dev/null 2>&1 &
holder=$!
until_true "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)' AND state = 'active')"
job=$(sql -c "SELECT storlab.move_indexes_online('t', 'lab_ram')")
waiting="SELECT EXISTS (SELECT FROM pg_stat_activity
                         WHERE application_name LIKE 'storlab job % (online index move)'
                           AND query LIKE 'REINDEX%' AND wait_event_type = 'Lock')"
until_true "$waiting"
is "$(sql -c "$waiting")" t "the online move's REINDEX CONCURRENTLY waits for the old transaction"

t0=$(ms)
sql -c "SELECT storlab.cancel($job)" >/dev/null
done_query="SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE query LIKE 'REINDEX%' AND state <> 'idle')
               AND (SELECT status FROM storlab.jobs WHERE id = $job) = 'cancelled'
               AND NOT EXISTS (SELECT FROM pg_index WHERE indrelid = 't'::regclass AND NOT indisvalid)
               AND NOT EXISTS (SELECT FROM pg_locks WHERE relation = 't'::regclass AND mode = 'ShareUpdateExclusiveLock')"
until_true "$done_query" 100
took=$(($(ms) - t0))
is "$(sql -c "SELECT status FROM storlab.jobs WHERE id = $job")" cancelled "cancel(): the job reads cancelled"
is "$(sql -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'REINDEX%' AND state <> 'idle'")" 0 \
  "and no REINDEX CONCURRENTLY runs on for it on the server"
is "$(sql -c "SELECT count(*) FROM pg_index WHERE indrelid = 't'::regclass AND NOT indisvalid")" 0 \
  "its invalid copy is dropped"
is "$(sql -c "SELECT count(*) FROM pg_locks WHERE relation = 't'::regclass AND mode = 'ShareUpdateExclusiveLock'")" 0 \
  "no SHARE UPDATE EXCLUSIVE lock is left on the table"
is "$((took < 2000))" 1 "all of that within 2 s of the cancel (${took} ms), while the old transaction still runs"
is "$(kill -0 $holder 2>/dev/null && echo running)" running "(the old transaction was still there)"

kill $holder 2>/dev/null
wait $holder 2>/dev/null
"$PG_BIN/psql" -X -q -d postgres -c "DROP DATABASE $DB WITH (FORCE)" 2>/dev/null
