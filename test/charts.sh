#!/usr/bin/env bash
# Charts in a real browser (TAP, run by scripts/test with prove): each kind
# of storlab.chart_svg(), drawn by scripts/charts from results measured on
# the lab for the purpose (short probes: the pictures matter here, not the
# figures), is screenshotted by headless Chromium, and the picture must not
# be blank: more than 2 % of its pixels differ from the background (and
# less than 90 %: not a solid block either). The files stay in
# target/charts.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=target/charts
# shellcheck source=test/tap.sh
source test/tap.sh

if ! command -v chromium >/dev/null; then
  echo "1..0 # skip chromium is not installed (scripts/deps installs it)"
  exit 0
fi
rm -rf "$OUT"
if ! scripts/charts "$OUT" '50 ms' quick >/dev/null; then
  echo "Bail out! scripts/charts could not measure and draw"
  exit 1
fi
echo "1..6"
for kind in experiment run probe profile depths tablespaces; do
  timeout 60 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=960,540 \
    --screenshot="$OUT/$kind.png" "file://$PWD/$OUT/$kind.svg" >/dev/null 2>&1
  ink=$([[ -s $OUT/$kind.png ]] && python3 test/png_ink.py "$OUT/$kind.png" || echo 0)
  is "$(awk -v i="$ink" 'BEGIN { print (i > 0.02 && i < 0.9) ? "drawn" : "blank or solid" }')" drawn \
    "the $kind chart renders in Chromium: $ink of its pixels inked ($(wc -c <"$OUT/$kind.svg") bytes of SVG)"
done
