# Sourced by storlab's scripts: which PostgreSQL major they work with.
#
#   PG        the major: 15 (the default), 17 or 18. Set by `make ... PG=17`.
#   PG_BIN    that major's bin directory (default: `scripts/pg bindir $PG`).
#             Given alone (another installation of a major), PG is read
#             from its postgres binary.
#
# One lab per major can run at once, so the lab's defaults differ by major:
# 15 keeps /var/tmp/storlab-lab on port 54329; 17 and 18 get
# /var/tmp/storlab-lab-17 on 54339 and /var/tmp/storlab-lab-18 on 54344.
# STORLAB_LAB_DIR and STORLAB_LAB_PORT still win when set. (The throwaway
# clusters of the crash, fault and storage-bound suites keep one place for
# every major: one make test at a time.)
#
# An unsupported major stops the caller at once, with scripts/pg's one line.

_storlab_scripts=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ -z ${PG:-} && -n ${PG_BIN:-} && -x $PG_BIN/postgres ]]; then
  PG=$("$PG_BIN/postgres" --version | sed -n 's/^postgres (PostgreSQL) \([0-9]*\).*/\1/p')
fi
PG=${PG:-15}
if [[ -z ${PG_BIN:-} ]]; then
  PG_BIN=$("$_storlab_scripts/pg" bindir "$PG") || exit 2
fi
if [[ $PG == 15 ]]; then
  : "${STORLAB_LAB_DIR:=/var/tmp/storlab-lab}" "${STORLAB_LAB_PORT:=54329}"
else
  : "${STORLAB_LAB_DIR:=/var/tmp/storlab-lab-$PG}" "${STORLAB_LAB_PORT:=$((54329 + (PG - 15) * 5))}"
fi
export PG PG_BIN STORLAB_LAB_DIR STORLAB_LAB_PORT
unset _storlab_scripts
