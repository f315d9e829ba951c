# shellcheck shell=bash
# TAP helpers of the shell suites (sourced by test/*.sh): `tap ok|fail TEXT`
# numbers the results; `is HAVE WANT TEXT` compares and shows both on failure.
n=0
tap() { n=$((n + 1)); if [[ $1 == ok ]]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }
is() {
  if [[ "$1" == "$2" ]]; then tap ok "$3"; else
    tap fail "$3"; printf '#   have: %s\n#   want: %s\n' "$1" "$2"
  fi
}
# until_true QUERY [TENTHS]: polls the script's own `sql` until QUERY
# answers t (every tenth of a second, 300 tenths unless told); fails after.
until_true() {
  local i
  for ((i = 0; i < ${2:-300}; i++)); do
    [[ $(sql -c "$1" 2>/dev/null) == t ]] && return 0
    sleep 0.1
  done
  return 1
}
# the clock in milliseconds
ms() { date +%s%3N; }
