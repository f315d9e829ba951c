#!/usr/bin/env bash
# The package on a machine that never saw Rust (TAP, for prove):
#   test/package_clean_root.sh [MAJOR]        (default: PG, else 15)
# debootstraps a minimal Debian root of the suite that ships PostgreSQL
# MAJOR (15: bookworm, 17: trixie, 18: sid), checks it has no cargo or rustc,
# installs postgresql-MAJOR there with apt, then
# target/package/postgresql-MAJOR-storlab_<version>-1_<arch>.deb (made by
# make package PG=MAJOR) with `apt install ./file.deb`, makes and starts a
# cluster with Debian's pg_createcluster and pg_ctlcluster, runs CREATE EXTENSION
# storlab, a one-second probe and \dx storlab, then removes the package
# with apt and checks that no storlab file stays. The root, its mounts and
# the cluster are removed on every exit. About a minute (35 to 100 s here),
# mostly downloads (docs/install.md has the measured times).
#
# Skipped, saying why, when not root, without debootstrap, or without the
# .deb. STORLAB_PACKAGE_DEB names another .deb (make test: the debug
# build's); STORLAB_DEBIAN_MIRROR another mirror (default: the one of this
# machine's apt sources).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=test/tap.sh
source test/tap.sh

MAJOR=${1:-${PG:-15}}
case $MAJOR in
  15) SUITE=bookworm ;;
  17) SUITE=trixie ;;
  18) SUITE=sid ;;
  *) echo "1..0 # skip no Debian suite ships PostgreSQL $MAJOR"; exit 0 ;;
esac
VERSION=$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n 1)
NAME=postgresql-$MAJOR-storlab
DEB=${STORLAB_PACKAGE_DEB:-target/package/${NAME}_$VERSION-1_$(dpkg --print-architecture).deb}

if [[ $(id -u) -ne 0 ]]; then echo "1..0 # skip debootstrap and chroot need root"; exit 0; fi
if ! command -v debootstrap >/dev/null; then echo "1..0 # skip debootstrap is missing (apt-get install debootstrap)"; exit 0; fi
if [[ ! -f $DEB ]]; then echo "1..0 # skip no $DEB (make package PG=$MAJOR)"; exit 0; fi

# The machine's own Debian mirror: the first URI of its apt sources.
mirror=${STORLAB_DEBIAN_MIRROR:-$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
  sed -n -e 's/^URIs: *\([^ ]*\).*/\1/p' -e 's/^deb  *\(\[[^]]*\] *\)\?\(http[^ ]*\).*/\2/p' | grep -v security | head -n 1)}
mirror=${mirror:-http://deb.debian.org/debian}

root=$(mktemp -d /var/tmp/storlab-clean-root.XXXXXX)
chmod 755 "$root"   # the root's "/": mktemp made it 0700, which would lock postgres out
mounts=()
cleanup() {
  # the cluster first (its postmaster holds files in the root), then the
  # mounts in reverse order, then the folder
  [[ -x $root/usr/bin/pg_ctlcluster ]] && chroot "$root" pg_ctlcluster "$MAJOR" main stop -m immediate >/dev/null 2>&1
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[$i]}" 2>/dev/null || umount -l "${mounts[$i]}"; done
  # rm -rf with --one-file-system: should an unmount have failed, nothing
  # of the host's behind a mount point is touched
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"; }
psql_root() { in_root runuser -u postgres -- psql -X -v ON_ERROR_STOP=1 -d postgres "$@"; }
elapsed() { echo "$((SECONDS - $1)) s"; }

echo "1..7"
started=$SECONDS
t=$SECONDS
# A bare root does not change from commit to commit: one debootstrap is
# kept as a tarball (STORLAB_ROOT_CACHE), keyed on the suite, the mirror and
# debootstrap's version, and made again once a week, so that the packages
# apt installs into it next are those a new machine would get.
cache=${STORLAB_ROOT_CACHE:-/var/cache/storlab-ci/roots}
key=$(echo "$SUITE $mirror $(dpkg-query -W -f='${Version}' debootstrap 2>/dev/null)" | sha256sum | cut -c1-16)
tarball=$cache/$SUITE-minbase-$key.tar
mkdir -p "$cache"
find "$cache" -maxdepth 1 -name "$SUITE-minbase-*.tar" \( ! -name "${tarball##*/}" -o -mtime +6 \) -delete
if [[ -s $tarball ]] && tar -C "$root" -xpf "$tarball" 2>"$root.log"; then
  tap ok "debootstrap --variant=minbase $SUITE from $mirror (kept from $(date -r "$tarball" +%F), unpacked in $(elapsed "$t"))"
  rm -f "$root.log"
elif { [[ ! -s $tarball ]] || { rm -f "$tarball"; find "$root" -mindepth 1 -delete; }; } &&
     debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$root.log" 2>&1; then
  tap ok "debootstrap --variant=minbase $SUITE from $mirror ($(elapsed "$t"))"
  rm -f "$root.log"
  tar -C "$root" -cpf "$tarball.part" . && mv "$tarball.part" "$tarball" || rm -f "$tarball.part"
else
  tap fail "debootstrap --variant=minbase $SUITE from $mirror"; sed 's/^/#   /' "$root.log" | tail -n 20
  rm -f "$root.log"; echo "Bail out! no root to install into"; exit 1
fi

for m in proc sys dev/pts dev/shm; do
  mkdir -p "$root/$m"
  case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs sysfs "$root/sys" ;;
    dev/pts) mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" ;;   # apt's log
    dev/shm) mount -t tmpfs -o mode=1777 shm "$root/dev/shm" ;;   # PostgreSQL's dynamic shared memory
  esac && mounts+=("$root/$m")
done
# A server's sources: the suite's updates and security fixes too (sid has
# neither), so that the root gets the PostgreSQL minor a server would.
security=$(sed -n 's/^URIs: *\(.*security.*\)/\1/p; s/^deb  *\(http[^ ]*security[^ ]*\).*/\1/p' \
  /etc/apt/sources.list /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
if [[ $SUITE != sid ]]; then
  printf 'deb %s %s-updates main\ndeb %s %s-security main\n' "$mirror" "$SUITE" \
    "${security:-http://deb.debian.org/debian-security}" "$SUITE" >"$root/etc/apt/sources.list.d/updates.list"
fi
# sid's Release file is valid for a week only: a mirror that has not
# synced for longer (seen here) makes apt refuse it. What this test asks is
# whether the package installs, not how fresh the mirror is.
if [[ $SUITE == sid ]]; then
  echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99storlab-mirror-age"
fi
# No service starts inside the root by itself (invoke-rc.d asks this).
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" && chmod 755 "$root/usr/sbin/policy-rc.d"

rust=$(in_root sh -c 'command -v cargo rustc; ls -d /root/.cargo /root/.rustup 2>/dev/null' || true)
is "$rust" "" "the root has no cargo, rustc or rustup"

t=$SECONDS
if out=$(in_root apt-get update -q 2>&1 && in_root apt-get install -y -q --no-install-recommends "postgresql-$MAJOR" 2>&1); then
  tap ok "apt-get install postgresql-$MAJOR: $(in_root dpkg-query -W -f='${Version}' "postgresql-$MAJOR") ($(elapsed "$t"))"
else
  tap fail "apt-get install postgresql-$MAJOR"; tail -n 20 <<<"$out" | sed 's/^/#   /'
  echo "Bail out! no PostgreSQL in the root"; exit 1
fi

cp "$DEB" "$root/tmp/"
t=$SECONDS
if out=$(in_root sh -c "cd /tmp && apt install -y ./$(basename "$DEB")" 2>&1); then
  tap ok "apt install ./$(basename "$DEB") ($(elapsed "$t"))"
  grep -v '^$' <<<"$out" | sed 's/^/#   /'
else
  tap fail "apt install ./$(basename "$DEB")"; tail -n 20 <<<"$out" | sed 's/^/#   /'
  echo "Bail out! the package did not install"; exit 1
fi

# A cluster as Debian's tools make one (postgresql-common makes it at
# at install where it may; here it made none); TCP off, so that
# nothing of the host's (whose network the root shares) clashes with its port.
out=
if { in_root pg_lsclusters -h | grep -q "^$MAJOR  *main " ||
     out=$(in_root pg_createcluster "$MAJOR" main 2>&1); } &&
   echo "listen_addresses = ''" >>"$root/etc/postgresql/$MAJOR/main/postgresql.conf" &&
   out+=$(in_root pg_ctlcluster "$MAJOR" main start 2>&1) && in_root pg_lsclusters | grep -q online; then
  tap ok "pg_createcluster $MAJOR main, pg_ctlcluster $MAJOR main start"
else
  tap fail "pg_createcluster $MAJOR main, pg_ctlcluster $MAJOR main start"; sed 's/^/#   /' <<<"$out"
  tail -n 20 "$root/var/log/postgresql/postgresql-$MAJOR-main.log" | sed 's/^/#   /'
  echo "Bail out! no server"; exit 1
fi

# What a DBA types first (README: Install), then a real measurement.
if out=$(psql_root -c 'CREATE EXTENSION storlab' \
    -c "SELECT tablespace, workload, direct, round(iops) AS iops, round(lat_p99_us::numeric, 1) AS lat_p99_us
          FROM storlab.probe('pg_default', 'randread', duration => '1 s')" \
    -c '\dx storlab' 2>&1); then
  tap ok "CREATE EXTENSION storlab, a one-second probe of pg_default, \\dx storlab"
else
  tap fail "CREATE EXTENSION storlab, a one-second probe of pg_default, \\dx storlab"
fi
sed 's/^/#   /' <<<"$out"

in_root pg_ctlcluster "$MAJOR" main stop >/dev/null 2>&1
if out=$(in_root apt-get remove -y -q "$NAME" 2>&1); then
  left=$(in_root sh -c "ls /usr/lib/postgresql/$MAJOR/lib/storlab* /usr/share/postgresql/$MAJOR/extension/storlab* /usr/share/doc/$NAME 2>/dev/null")
  is "$left" "" "apt-get remove $NAME leaves no file of storlab's"
else
  tap fail "apt-get remove $NAME"; tail -n 20 <<<"$out" | sed 's/^/#   /'
fi
echo "# $SUITE root, PostgreSQL $MAJOR, package and removal in $(elapsed "$started")"
