#!/usr/bin/env bash
# A storage-bound lab finds a storage difference (TAP output, run by
# scripts/test with prove). A throwaway studies lab of its own
# (STORLAB_BOUND_LAB_DIR, STORLAB_BOUND_LAB_PORT) holds its server and page
# cache to 96 MB while pgbench's data is four times that; an experiment
# puts pgbench's tables and indexes on a drive of 200 I/Os a second (lab_ext4)
# and on the VM's own disk (lab_disk), six repetitions of 3 s. The
# drive's layout must lose, significantly. (With four, one disk run from
# a warm cache, twice its layout's mean, once left the difference of 26
# times at p 0.053 on 18: Welch's test on raw TPS needs the repetitions.)
#
# The assertion is about the lab as much as about storlab: were the lab not
# storage-bound, both layouts would run from memory at CPU speed, and no
# difference would be found. STORLAB_LAB_MEMORY_MB=0 (no memory limit)
# shows it: the test then fails.
# Root only (loop devices, cgroups, drive daemons): skipped otherwise.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

source scripts/pg-env.sh
export STORLAB_LAB_DIR=${STORLAB_BOUND_LAB_DIR:-/var/tmp/storlab-bound}
export STORLAB_LAB_PORT=${STORLAB_BOUND_LAB_PORT:-54369}
export STORLAB_LAB_MEMORY_MB=${STORLAB_LAB_MEMORY_MB:-96}
sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
# shellcheck source=test/tap.sh
source test/tap.sh

if [[ $(id -u) -ne 0 ]]; then
  echo "1..0 # SKIP the storage-bound lab needs root (loop devices, a memory cgroup, blkio throttles)"
  exit 0
fi
trap 'scripts/lab stop >/dev/null 2>&1' EXIT
if ! scripts/lab start --studies >"/tmp/storlab-bound-$STORLAB_LAB_PORT.log" 2>&1; then
  echo "Bail out! could not start a throwaway studies lab in $STORLAB_LAB_DIR"
  cat "/tmp/storlab-bound-$STORLAB_LAB_PORT.log" | sed 's/^/# /'
  exit 1
fi
eval "$(scripts/lab env)"
export PGHOST PGPORT PGUSER PGDATABASE
cg=$(cat "$STORLAB_LAB_DIR/cgroup" 2>/dev/null)
limit=$( [[ -n $cg ]] && cat "$cg/memory.limit_in_bytes" || echo 0)
# the data must be four times what the server and its cache may hold
scale=$(( (4 * limit + 15 * 1024 * 1024 - 1) / (15 * 1024 * 1024) ))
((scale >= 5)) || scale=5

echo "1..5"
id=$(sql -c "SET client_min_messages = warning" -c "SELECT storlab.experiment_start('storage-bound',
  '[{\"name\": \"throttled\", \"tables\": \"lab_ext4\", \"indexes\": \"lab_ext4\"},
    {\"name\": \"disk\", \"tables\": \"lab_disk\", \"indexes\": \"lab_disk\"}]',
  'tpcb-like', '{4}', 2, '3 s', 6, '1 s', $scale)")
sql -c "CALL storlab.wait($id)" >/dev/null 2>&1
is "$(sql -c "SELECT status || coalesce(': ' || error, '') FROM storlab.experiments WHERE id = $id")" done \
  "the experiment (scale $scale, memory limit $((limit >> 20)) MB) finishes"

data=$(sql -c "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
                WHERE c.relname IN ('pgbench_accounts', 'pgbench_branches', 'pgbench_tellers', 'pgbench_history')")
if ((limit > 0 && data >= 4 * limit)); then
  tap ok "pgbench's data ($((data >> 20)) MB) is at least four times the memory limit ($((limit >> 20)) MB)"
else
  tap fail "pgbench's data ($((data >> 20)) MB) is at least four times the memory limit (${limit:-none})"
fi

is "$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control" 2>/dev/null)" 0 \
  "nothing was killed by the memory limit"

report=$(sql -F ' ' -c "SELECT layout, runs, round(tps_mean), round(improvement_pct::numeric, 1), p_value, significant
                         FROM storlab.experiment_report($id) ORDER BY layout")
# on stderr: prove shows it when a test fails
echo "$report" | sed 's/^/# /' >&2
# the baseline is the throttled layout (pgbench -i goes to the last one, the
# VM's disk: on the throttled one its ANALYZE alone would take minutes)
is "$(sql -c "SELECT improvement_pct > 0 AND significant FROM storlab.experiment_report($id) WHERE layout = 'disk'")" t \
  "tables and indexes on the throttled disk lose against the VM's disk, significantly"
is "$(sql -c "SELECT count(*) FROM storlab.bench_runs WHERE experiment_id = $id AND NOT warmup AND invalid IS NULL")" 12 \
  "with six valid measured runs of each layout"
