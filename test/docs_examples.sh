#!/usr/bin/env bash
# Docs cannot drift: every SQL example of README.md, docs/*.md and
# studies/README.md runs against the lab and still prints what the docs show
# (column names exactly, the rows' shape; whole output where marked exact),
# or is found with its output in expected/*.out; examples that cannot run in
# the test lab are marked <!-- example: not run: REASON --> and reported as
# skips. How the blocks are read: test/docs_examples.py. TAP, for prove:
#   prove --exec bash test/docs_examples.sh
# Uses the lab of scripts/lab env (PG_BIN, STORLAB_LAB_DIR, STORLAB_LAB_PORT)
# unless PGHOST/PGPORT are set; each page gets a throwaway database.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
source scripts/pg-env.sh
if [[ -z ${PGPORT:-} ]]; then eval "$(scripts/lab env)"; fi
export PGHOST PGPORT PGUSER
exec python3 test/docs_examples.py
