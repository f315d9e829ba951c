#!/usr/bin/env bash
# The studies lab's limits stay within the lab (TAP output, run by
# scripts/test with prove): a throwaway studies lab of its own
# (STORLAB_THROTTLE_LAB_DIR, STORLAB_THROTTLE_LAB_PORT) puts its volumes on
# drives (a qemu-storage-daemon each, one budget, loop devices on its FUSE
# exports, one request in flight per export), sets blkio throttle rules only
# on its own loop and zram devices, refuses the machine's disks and devices
# it did not make, makes its memory cgroup under the cgroup it was started
# from, and at stop removes every daemon, FUSE export, loop device, rule and
# the cgroup, also after its server and a drive's daemon were killed.
# Root only: skipped otherwise.
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

echo "1..17"
scripts/lab start --studies >/dev/null 2>&1 || { echo "Bail out! could not start a studies lab in $STORLAB_LAB_DIR"; exit 1; }
drives=$STORLAB_LAB_DIR/drives
daemons() { pgrep -f -- "qemu-storage-daemon .*$drives/" | sort; }
fuse_mounts() { awk -v d="$drives/" '$3 == "fuse" && index($2, d) == 1' /proc/mounts; }
lab_loops() { losetup -n -O NAME,BACK-FILE | awk -v d="$STORLAB_LAB_DIR/" 'index($2, d) == 1 { print $1 }'; }
# the drive's budget as its daemon holds it, "IOPS BPS" (scripts/lab's own QMP client)
qmp() {
  (LAB_DIR=$STORLAB_LAB_DIR; say() { :; }; source scripts/lab-drives.sh
   drive_qmp "$1" qom-get '{"path": "/objects/budget", "property": "limits"}') \
    | python3 -c 'import json, sys; l = json.load(sys.stdin); print(l.get("iops-total"), l.get("bps-total"))'
}

# every volume of the lab but lab_ssd (and lab_zram, a zram device) is on
# drives: loop devices with direct I/O on the FUSE exports of this lab's
# daemons, each export's connection one request at a time
vols=$(ls "$STORLAB_LAB_DIR/devices")
bad=$(for v in $vols; do
  [[ $v == ssd ]] && continue
  while read -r dev; do
    back=$(losetup -n -O BACK-FILE "$dev" | sed 's/ *$//'); dio=$(losetup -n -O DIO "$dev" | tr -d ' ')
    mm=$(mountpoint -d "$back" 2>/dev/null)
    [[ $back == "$drives/"* && $dio == 1 && $(cat "/sys/fs/fuse/connections/${mm#*:}/max_background" 2>/dev/null) == 1 ]] \
      || echo "lab_$v:$dev($back dio=$dio)"
  done <"$STORLAB_LAB_DIR/devices/$v"
done)
is "${bad:-none}" none "each of the $(echo "$vols" | wc -w) volumes but lab_ssd is on loop devices with direct I/O over a drive's FUSE export, one request in flight"
is "$(daemons | wc -l)" "$(ls "$drives"/*.pid | wc -l)" "one qemu-storage-daemon per drive ($(ls "$drives"/*.pid | wc -l))"

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

scripts/lab budget lab_ext4_slow 50 40 >/dev/null
said=$("$PG_BIN/psql" -X -At -h "$STORLAB_LAB_DIR/sock" -p "$STORLAB_LAB_PORT" -U postgres -d storlab_lab \
         -c "SELECT shobj_description(oid, 'pg_tablespace') FROM pg_tablespace WHERE spcname = 'lab_ext4_slow'")
is "$(qmp ext4_slow.0):${said%%;*}" "50 41943040:device class: set by scripts/lab budget to 50 I/Os and 40 MB a second per drive, reads and writes from one budget" \
  "scripts/lab budget changes a drive's one budget in its daemon, and the tablespace's comment says so"
comment() { "$PG_BIN/psql" -X -At -h "$STORLAB_LAB_DIR/sock" -p "$STORLAB_LAB_PORT" -U postgres -d storlab_lab \
              -c "SELECT shobj_description(oid, 'pg_tablespace') FROM pg_tablespace WHERE spcname = '$1'"; }
scripts/lab budget lab_pool_raid1 300 >/dev/null
said=$(comment lab_pool_raid6)
is "$(qmp pool.0):${said%%;*}" "300 157286400:device class: set by scripts/lab budget (through lab_pool_raid1, which shares its drives) to 300 I/Os and 150 MB a second per drive, reads and writes from one budget" \
  "a pool volume's budget is its sibling's: both comments say so"
out=$(scripts/lab budget lab_ssd 500 2>&1)
is "$?:$(echo "$out" | grep -c 'throttle lab_ssd')" "1:1" "budget refuses lab_ssd (blkio), naming the throttle command"
zram=/dev/zram$(cat "$STORLAB_LAB_DIR/zram_id")
scripts/lab throttle "$zram" 1500 1500 >/dev/null
said=$(comment lab_zram)
is "${said%%;*}" "device class: set by scripts/lab throttle to 1500 random read and 1500 write IOPS per device (blkio throttle)" \
  "throttle on a device (the zram device) restates its tablespace's class"
out=$(scripts/lab throttle lab_ext4_slow 50 50 2>&1)
echo "$out" | grep -q "is on drives" && tap ok "scripts/lab throttle refuses a volume on drives, naming budget" || tap fail "throttle on a drive volume: $out"

# a crashed lab: its server and one drive's daemon killed, then stopped
loops_before=$(lab_loops | wc -l)
kill -KILL "$pid" "$(cat "$drives/ext4.0.pid")"
sleep 1
scripts/lab stop >/dev/null 2>&1
is "$(comm -12 <(echo "$own") <(rules) | tr '\n' ' ')" "" "stop removes every rule the lab set, after its server and a drive's daemon were killed"
[[ ! -d $cg ]] && tap ok "and its memory cgroup" || tap fail "and its memory cgroup ($cg is still there)"
is "$(daemons | wc -l)/$(fuse_mounts | wc -l)" "0/0" "and every drive's daemon and FUSE export"
is "$(lab_loops | wc -l)" 0 "and every loop device ($loops_before before)"
