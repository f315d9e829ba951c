#!/usr/bin/env bash
# An experiment outlives a server crash (TAP output, run by scripts/test with
# prove): a server is stopped with -m immediate while an experiment
# measures; after the restart the experiment shows as failed (its worker is
# gone), experiment_resume() continues it, and it ends with every measured
# run once. The crash happens on a throwaway lab cluster of its own
# (STORLAB_CRASH_LAB_DIR, STORLAB_CRASH_LAB_PORT), never the lab the other
# suites use; it is removed at the end.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

source scripts/pg-env.sh
export STORLAB_LAB_DIR=${STORLAB_CRASH_LAB_DIR:-/var/tmp/storlab-crash}
export STORLAB_LAB_PORT=${STORLAB_CRASH_LAB_PORT:-54359}
sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
as_owner() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
# shellcheck source=test/tap.sh
source test/tap.sh
# polls (up to 90 s) until the query answers t
until_true() {
  local i
  for ((i = 0; i < 900; i++)); do
    [[ $(sql -c "$1" 2>/dev/null) == t ]] && return 0
    sleep 0.1
  done
  return 1
}

trap 'scripts/lab stop >/dev/null 2>&1' EXIT
if ! scripts/lab start >/dev/null 2>&1; then
  echo "Bail out! could not start a throwaway lab cluster in $STORLAB_LAB_DIR"
  exit 1
fi
eval "$(scripts/lab env)"
export PGHOST PGPORT PGUSER PGDATABASE

echo "1..5"
id=$(sql -c "SET client_min_messages = warning" -c "SELECT storlab.experiment_start('restart',
  '[{\"name\": \"disk\", \"indexes\": \"lab_disk\"}, {\"name\": \"ram\", \"indexes\": \"lab_ram\"}]',
  'select-only', '{1}', 1, '2 s', 2, '0 s', 1)")
until_true "SELECT current_action LIKE '%repetition 1/2, layout disk, clients 1: measured run' FROM storlab.experiments WHERE id = $id"
is "$?" 0 "the experiment measures its first run"

# RUST_BACKTRACE from a developer's shell would put a backtrace in every error
as_owner env -u RUST_BACKTRACE "$PG_BIN/pg_ctl" -D "$STORLAB_LAB_DIR/data" -m immediate -w -t 60 \
  -l "$STORLAB_LAB_DIR/log/server.log" restart >/dev/null
until_true "SELECT true"
is "$(sql -c "SELECT status FROM storlab.experiments WHERE id = $id")" failed \
  "after an immediate restart the experiment shows as failed: its worker is gone"

is "$(sql -c "SELECT storlab.experiment_resume($id)")" "$id" "experiment_resume() takes it up again"
until_true "SELECT status IN ('done', 'failed', 'cancelled') FROM storlab.experiments WHERE id = $id"
is "$(sql -c "SELECT status || coalesce(': ' || error, '') FROM storlab.experiments WHERE id = $id")" "done" "and it finishes"
is "$(sql -c "SELECT string_agg(experiment_layout || ' ' || repetition, ', ' ORDER BY id) FROM storlab.bench_runs
               WHERE experiment_id = $id AND NOT warmup AND tps IS NOT NULL")" \
  "disk 1, ram 1, ram 2, disk 2" "with each measured run once, in alternating order"
