#!/usr/bin/env bash
# compare_tablespaces() under a 2-job 8 kB random read/write fio load on
# pg_default's disk (TAP, for prove): two calls that measure every volume
# afresh (small: 100 ms probes, 16 MB scratch files, 2 to 3 repetitions),
# each checked against its own probes by a Welch test written apart from
# storlab's: every role it gives beats every other candidate
# significantly, every tablespace of a volume gets its volume's answer,
# every ranked figure has its interval. bench/compare_under_load is the
# full figure (ten calls with the defaults). Uses the lab of scripts/lab env.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
source scripts/pg-env.sh
exec bench/compare_under_load --calls 2 --duration '100 ms' --min-reps 2 --max-reps 3 --file-size 16MB --tap
