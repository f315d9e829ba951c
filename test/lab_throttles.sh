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

export STORLAB_LAB_DIR=${STORLAB_THROTTLE_LAB_DIR:-/var/tmp/storlab-throttles}
export STORLAB_LAB_PORT=${STORLAB_THROTTLE_LAB_PORT:-54379}
export STORLAB_LAB_IMAGE_MB=256
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
before=$(rules)

echo "1..9"
scripts/lab start --studies >/dev/null 2>&1 || { echo "Bail out! could not start a studies lab in $STORLAB_LAB_DIR"; exit 1; }

# every rule the start added is on a device of the lab: a loop device over
# one of its images, or the zram device it added
added=$(comm -13 <(echo "$before") <(rules))
own=$( { for img in "$STORLAB_LAB_DIR"/images/*.img; do losetup -j "$img" -O NAME -n; done
         echo "/dev/zram$(cat "$STORLAB_LAB_DIR/zram_id")"; } | xargs lsblk -dno MAJ:MIN | tr -d ' ' | sort -u)
if [[ -n $added && -z $(comm -23 <(echo "$added") <(echo "$own")) ]]; then
  tap ok "the start set $(echo "$added" | wc -l) rules, each on a device of the lab"
else
  tap fail "rules on devices that are not the lab's: $(comm -23 <(echo "$added") <(echo "$own") | tr '\n' ' ')"
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
is "$(awk -v d="$(lsblk -dno MAJ:MIN "$dev" | tr -d ' ')" '$1 == d { print $2 }' $BLKIO/blkio.throttle.write_iops_device)" 50 \
  "scripts/lab throttle changes a tablespace's limits"

# a crashed lab: its server killed, then stopped
kill -KILL "$pid"
sleep 1
scripts/lab stop >/dev/null 2>&1
is "$(comm -13 <(echo "$before") <(rules) | tr '\n' ' ')" "" "stop removes every rule the lab set, after its server was killed"
[[ ! -d $cg ]] && tap ok "and its memory cgroup" || tap fail "and its memory cgroup ($cg is still there)"
