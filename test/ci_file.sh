#!/usr/bin/env bash
# docs/ci.md's pgTAP file, run as docs/ci.md's CI role (TAP, for prove,
# against the lab): the blocks are taken from the page itself, so the page
# cannot show a file that no longer works. Its thresholds are made ones the
# lab cannot meet (pg_wal's WAL p99 under 1 us, a quadrillion queued reads a
# second), and its regressions() made short; then
#   1. the role and its grants as the page gives them;
#   2. pg_prove fails, and each failed check prints the figure measured
#      (cmp_ok's have/want) and the probes it measured;
#   3. those probes are still stored after the file ended (no ROLLBACK
#      took them), and the CI role reads them in storlab.own_probes;
#   4. the role follows baseline()'s 42710 HINT: it drops its own baseline
#      and takes the label again.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

source scripts/pg-env.sh
DB=storlab_ci_file
ROLE=storage_ci
sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
# shellcheck source=test/tap.sh
source test/tap.sh

if ! "$PG_BIN/psql" -X -q -At -d postgres -c "SELECT 1" >/dev/null 2>&1; then
  echo "Bail out! cannot reach the lab's server (PGHOST=${PGHOST:-unset}, PGPORT=${PGPORT:-unset})"
  exit 1
fi
echo "1..8"
drop() {
  "$PG_BIN/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" 2>/dev/null
  # DROP OWNED also revokes what the role was granted on shared objects
  # (CREATE on a tablespace), which DROP ROLE would refuse
  "$PG_BIN/psql" -X -q -d postgres -c "DO \$\$ BEGIN
      IF EXISTS (SELECT FROM pg_roles WHERE rolname = '$ROLE') THEN
        DROP OWNED BY $ROLE;
        DROP ROLE $ROLE;
      END IF;
    END \$\$" 2>/dev/null
}
drop  # what an interrupted earlier run left
tmp=$(mktemp -d)
trap 'drop; rm -rf "$tmp"' EXIT
"$PG_BIN/psql" -X -q -d postgres -c "CREATE DATABASE $DB" >/dev/null
sql -c "SET client_min_messages = warning" -c "CREATE EXTENSION storlab" -c "CREATE EXTENSION pgtap" >/dev/null
# small scratch files for the role's probes (a superuser's setting: the
# role cannot SET it), as the docs examples use: the figures do not matter here
sql -c "LOAD 'storlab'" -c "ALTER DATABASE $DB SET storlab.suite_file_size = '16MB'" >/dev/null

# the fenced block right after the line of docs/ci.md that starts with $1
block() {
  awk -v start="$1" 'index($0, start) == 1 { found = 1; next }
                     found && /^```/ { if (inside) exit; inside = 1; next }
                     inside { print }' docs/ci.md
}
block "A complete pgTAP file" >"$tmp/storage.sql"
block "tablespace it measures, and, to measure pg_wal" >"$tmp/role.sql"
if [[ ! -s $tmp/storage.sql || ! -s $tmp/role.sql ]]; then
  echo "Bail out! docs/ci.md has no pgTAP file or no CI role block where this test looks"
  exit 1
fi

# 1. the role, as the page grants it
out=$(sql -f "$tmp/role.sql" 2>&1)
is "$out" "" "the CI role of docs/ci.md is made with its grants and nothing else ($(paste -sd' ' "$tmp/role.sql" | cut -c1-60)...)"

# the role's baseline, short, for the file's regressions('known-good')
PGUSER=$ROLE sql -c "SELECT storlab.baseline('known-good', '{lab_ram}', '50 ms', 2)" >/dev/null
# thresholds the lab cannot meet, short checks and a short regressions()
sed -e "s/\b2000\b/1/g" -e "s/\b20000\b/1e15/g" \
    -e "s/\(FROM storlab\.check([^)]*\))/\1, '200 ms')/" \
    -e "s/storlab.regressions('known-good')/storlab.regressions('known-good', max_change_pct => 1000, duration => '50 ms', repetitions => 2)/" \
    "$tmp/storage.sql" >"$tmp/failing.sql"
PGUSER=$ROLE pg_prove --psql-bin "$PG_BIN/psql" -d "$DB" -v "$tmp/failing.sql" >"$tmp/tap" 2>&1
rc=$?

# 2. it fails, saying what was measured and which probes measured it
is "$rc" 1 "pg_prove fails on thresholds the lab cannot meet"
failed=$(grep -c '^not ok' "$tmp/tap")
is "$failed" 2 "both checks fail (the regressions test passes)"
ids=$(sed -n 's/^not ok 1 - pg_wal wal lat_p99_us < 1 (probes \([0-9, ]*\))$/\1/p' "$tmp/tap")
if [[ -n $ids ]]; then tap ok "the failed check names its probes: $ids"; else
  tap fail "the failed check names its probes"; sed 's/^/#   /' "$tmp/tap"
fi
figure=$(awk '/^# Failed test 1:/ { getline; print; exit }' "$tmp/tap")
if [[ $figure =~ ^#\ +\'[0-9.e+]+\'$ ]]; then tap ok "and prints the figure it measured: ${figure###}"; else
  tap fail "and prints the figure it measured"; sed 's/^/#   /' "$tmp/tap"
fi

# 3. the probes outlive the file, readable by the role that measured them
is "$(sql -c "SELECT count(*) FROM storlab.probes WHERE id IN (${ids:-0}) AND measured_by = '$ROLE'")" 3 \
  "its 3 probes are still stored after the file ended"
is "$(PGUSER=$ROLE sql -c "SELECT count(*) FROM storlab.own_probes WHERE id IN (${ids:-0})")" 3 \
  "and the CI role reads them (storlab.own_probes), though it may not read storlab.probes"

# 4. the HINT of a taken label is a statement the role may run
hint=$(PGUSER=$ROLE "$PG_BIN/psql" -X -q -At -d "$DB" -v VERBOSITY=verbose \
         -c "SELECT storlab.baseline('known-good', '{lab_ram}', '50 ms', 2)" 2>&1 | sed -n 's/^HINT: *//p')
stmt=${hint#*: }
out=$(PGUSER=$ROLE sql -c "$stmt" -c "SELECT storlab.baseline('known-good', '{lab_ram}', '50 ms', 2) > 0" 2>&1 | tail -n 1)
is "$out" t "the role follows baseline()'s HINT ($hint) and takes the label again"
