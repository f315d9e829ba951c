#!/usr/bin/env bash
# META.json, PGXN's description of the distribution (TAP, for prove):
#   1. it is valid against the PGXN Meta Spec v1, as pgxn_meta (the spec's
#      own JSON Schemas, from PGXN's crate; scripts/deps installs it)
#      validates it;
#   2. the validator really rejects a broken copy: one without its abstract,
#      one whose version is not semantic (0.8), one with an unknown license
#      key; a validator that passed those would make test 1 worthless;
#   3. one version everywhere: META.json's version and its provides'
#      storlab version equal Cargo.toml's, and storlab.control's
#      default_version is Cargo.toml's (@CARGO_VERSION@) or states the same:
#      a release bump changes all of them.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=test/tap.sh
source test/tap.sh

if ! command -v pgxn_meta >/dev/null; then
  echo "1..0 # skip pgxn_meta is missing (make deps, or cargo install pgxn_meta --locked)"
  exit 0
fi
echo "1..7"

if out=$(pgxn_meta META.json 2>&1); then tap ok "pgxn_meta: $out"; else
  tap fail "pgxn_meta META.json"; sed 's/^/#   /' <<<"$out"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# broken NAME WHY PYTHON: a copy of META.json changed by PYTHON (on dict
# m), which pgxn_meta must refuse with an error saying WHY (each field that
# failed is listed, so the copy must fail for the reason meant)
broken() {
  python3 -c 'import json, sys
m = json.load(open("META.json"))
exec(sys.argv[1])
json.dump(m, open(sys.argv[2], "w"), indent=3)' "$3" "$tmp/$1.json" || return 1
  if out=$(pgxn_meta "$tmp/$1.json" 2>&1); then
    tap fail "pgxn_meta refuses META.json $1"; echo "#   it said: $out"
  elif ! grep -qF -- "$2" <<<"$out"; then
    tap fail "pgxn_meta refuses META.json $1: $2"; echo "#   it said: $out"
  else
    tap ok "pgxn_meta refuses META.json $1: $2"
  fi
}
broken "without abstract" "missing properties 'abstract'" 'del m["abstract"]'
broken "with version 0.8" "at '/version': '0.8' does not match" 'm["version"] = "0.8"'
broken "with license gpl" "at '/license': value must be one of" 'm["license"] = "gpl"'

json() { python3 -c 'import json, sys; m = json.load(open("META.json")); print(eval(sys.argv[1]))' "$1"; }
cargo_version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n 1)
control_version=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" storlab.control)
[[ $control_version == @CARGO_VERSION@ ]] && control_version=$cargo_version
is "$(json 'm["version"]')" "$cargo_version" "META.json's version is Cargo.toml's ($cargo_version)"
is "$(json 'm["provides"]["storlab"]["version"]')" "$cargo_version" "META.json's provides.storlab.version is Cargo.toml's"
is "$control_version" "$cargo_version" "storlab.control's default_version is Cargo.toml's"
