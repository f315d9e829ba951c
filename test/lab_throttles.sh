#!/usr/bin/env bash
# The studies lab's limits stay within the lab (TAP output, run by
# scripts/test with prove): a throwaway studies lab of its own
# (STORLAB_THROTTLE_LAB_DIR, STORLAB_THROTTLE_LAB_PORT) sets blkio throttle
# rules only on its own loop and zram devices, refuses the machine's disks
# and devices it did not make, makes its memory cgroup under the cgroup it
# was started from, and removes every rule and the cgroup at stop, also
# after its server was killed. Root only: skipped otherwise.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

source scripts/pg-env.sh
export STORLAB_LAB_DIR=${STORLAB_THROTTLE_LAB_DIR:-/var/tmp/storlab-throttles}
export STORLAB_LAB_PORT=${STORLAB_THROTTLE_LAB_PORT:-54379}
export STORLAB_LAB_IMAGE_MB=512  # sparse; xfs needs 300 MB
BLKIO=/sys/fs/cgroup/blkio
# shellcheck source=test/tap.sh
source test/tap.sh

if [[ $(id -u) -ne 0 ]]; then
  echo "1..0 # SKIP throttles and cgroups need root"
  exit 0
fi
if [[ ! -w $BLKIO/blkio.throttle.read_iops_device ]]; then
  echo "1..0 # SKIP no blkio throttle files here"
  exit 0
fi
trap 'scripts/lab stop >/dev/null 2>&1' EXIT
rules() { cat "$BLKIO"/blkio.throttle.{read,write}_iops_device | cut -d' ' -f1 | sort -u; }

echo "1..9"
scripts/lab start --studies >/dev/null 2>&1 || { echo "Bail out! could not start a studies lab in $STORLAB_LAB_DIR"; exit 1; }

# every device of the lab has its rule, and no rule anywhere is on a device
# that is neither a loop nor a zram device (other labs may run beside this
# one, so rules are told apart by device, not by when they appeared)
own=$( { for img in "$STORLAB_LAB_DIR"/images/*.img; do losetup -j "$img" -O NAME -n; done
         echo "/dev/zram$(cat "$STORLAB_LAB_DIR/zram_id")"; } | xargs lsblk -dno MAJ:MIN | tr -d ' ' | sort -u)
loop_major=$(awk '$2 == "loop" { print $1 }' /proc/devices)
zram_major=$(awk '$2 == "zram" { print $1 }' /proc/devices)
unruled=$(comm -23 <(echo "$own") <(rules))
foreign=$(rules | awk -F: -v l="$loop_major" -v z="$zram_major" '$1 != l && $1 != z')
if [[ -z $unruled && -z $foreign ]]; then
  tap ok "each of the lab's $(echo "$own" | wc -l) devices has its rule, and no rule is on any other kind of device"
else
  tap fail "devices of the lab without a rule: ${unruled:-none}; rules on other kinds of device: ${foreign:-none}"
fi

disk=$(findmnt -no SOURCE / | sed 's/\[.*//')
disk_mm=$(lsblk -dno MAJ:MIN "$disk" 2>/dev/null | tr -d ' ')
out=$(scripts/lab throttle "$disk" 100 100 2>&1)
is "$?/$(rules | grep -cxF "$disk_mm")" "1/0" "the machine's own disk ($disk) is refused, and has no rule"
echo "$out" | grep -q "not a device of this lab" && tap ok "saying why" || tap fail "saying why: $out"

# a loop device the lab did not make
img=$(mktemp /var/tmp/storlab-other.XXXXXX)
truncate -s 16M "$img"
other=$(losetup -f --show "$img")
scripts/lab throttle "$other" 100 100 >/dev/null 2>&1
is "$?/$(rules | grep -cxF "$(lsblk -dno MAJ:MIN "$other" | tr -d ' ')")" "1/0" "so is a loop device the lab did not make ($other)"
losetup -d "$other"; rm -f "$img"

cg=$(cat "$STORLAB_LAB_DIR/cgroup")
own_cg=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3; exit }' /proc/self/cgroup)
is "$(dirname "$cg")" "/sys/fs/cgroup/memory${own_cg%/}" "the memory cgroup is a child of the cgroup the lab was started from"
pid=$(head -1 "$STORLAB_LAB_DIR/data/postmaster.pid")
grep -qxF "$pid" "$cg/cgroup.procs" && tap ok "and the server runs in it" || tap fail "and the server runs in it"

scripts/lab throttle lab_ext4_slow 50 50 >/dev/null
dev=$(losetup -j "$STORLAB_LAB_DIR"/images/ext4_slow.0.img -O NAME -n)
limit=$(awk -v d="$(lsblk -dno MAJ:MIN "$dev" | tr -d ' ')" '$1 == d { print $2 }' $BLKIO/blkio.throttle.write_iops_device)
said=$("$PG_BIN/psql" -X -At -h "$STORLAB_LAB_DIR/sock" -p "$STORLAB_LAB_PORT" -U postgres -d storlab_lab \
         -c "SELECT shobj_description(oid, 'pg_tablespace') FROM pg_tablespace WHERE spcname = 'lab_ext4_slow'")
is "$limit:${said%%;*}" "50:device class: set by scripts/lab throttle to 50 random read and 50 write IOPS per device (blkio throttle)" \
  "scripts/lab throttle changes a tablespace's limits, and its comment says so"

# a crashed lab: its server killed, then stopped
kill -KILL "$pid"
sleep 1
scripts/lab stop >/dev/null 2>&1
is "$(comm -12 <(echo "$own") <(rules) | tr '\n' ' ')" "" "stop removes every rule the lab set, after its server was killed"
[[ ! -d $cg ]] && tap ok "and its memory cgroup" || tap fail "and its memory cgroup ($cg is still there)"
