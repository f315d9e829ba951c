# Sourced by scripts/lab: the studies lab's drives.
#
# A disk has one time budget: a read costs the writes it displaces, and a
# request waits for those ahead of it. blk-throttle gives a device separate
# read and write budgets and releases I/O in 100 ms slices, so a RAID 5's
# read-modify-write reads cost nothing and every p99 is the slice. A lab
# drive here is instead:
#
#   image file(s) -> qemu-storage-daemon (one per drive: a throttle group,
#   the drive's one budget of I/Os and bytes a second, shared by reads and
#   writes) -> a FUSE export per slice -> a loop device on each export
#
# A drive may be carved into slices (separate files in one throttle group),
# so that several volumes share its budget, as volumes carved from one pool
# of drives (a DDP, a SAN pool) do.
#
# qemu's FUSE export (up to 10.0) runs each request to its end in a nested
# event loop, into one receive buffer: a second request read while a
# throttled write waits overwrites that write's data. Each export's FUSE
# connection is therefore limited to one request in flight
# (max_background = 1 in fusectl): the drive serves one request at a time,
# as a disk without command queueing, and queue depth becomes waiting in
# the kernel, as it is for a disk. (fio's verify found the corruption at
# depth 8 without the limit, and none with it.)
#
# Files, all below $LAB_DIR/drives: NAME.sK.img (slice K's image),
# NAME.sK (its FUSE export), NAME.pid, NAME.qmp (QMP socket: `scripts/lab
# throttle` changes the budget through it), NAME.class (IOPS MB/s).

DRIVES_DIR=$LAB_DIR/drives
FUSECTL=/sys/fs/fuse/connections

drives_available() {
  command -v qemu-storage-daemon >/dev/null 2>&1 && [[ -c /dev/fuse ]] || return 1
  if ! mountpoint -q "$FUSECTL"; then
    mount -t fusectl none "$FUSECTL" 2>/dev/null || return 1
  fi
}

# drive_start NAME SLICES SLICE_MB IOPS MBPS: starts the drive's daemon and
# prints one loop device per slice, or fails saying why.
drive_start() {
  local name=$1 slices=$2 mb=$3 iops=$4 mbps=$5 i img export mm loop
  local args=(--daemonize --pidfile "$DRIVES_DIR/$name.pid"
    --chardev "socket,id=qmp,path=$DRIVES_DIR/$name.qmp,server=on,wait=off" --monitor chardev=qmp
    --object "throttle-group,id=budget,x-iops-total=$iops,x-bps-total=$((mbps << 20))")
  mkdir -p "$DRIVES_DIR"
  for ((i = 0; i < slices; i++)); do
    img=$DRIVES_DIR/$name.s$i.img export=$DRIVES_DIR/$name.s$i
    truncate -s "${mb}M" "$img"
    : >"$export"
    # cache.direct: the image is read and written with O_DIRECT, so no page
    # cache of the host sits between the lab and the VM's disk
    args+=(--blockdev "driver=file,node-name=file$i,filename=$img,cache.direct=on,aio=native,discard=unmap"
      --blockdev "driver=raw,node-name=raw$i,file=file$i,discard=unmap"
      --blockdev "driver=throttle,node-name=slice$i,throttle-group=budget,file=raw$i,discard=unmap"
      --export "type=fuse,id=export$i,node-name=slice$i,mountpoint=$export,writable=on")
  done
  qemu-storage-daemon "${args[@]}" >>"$LAB_DIR/log/drives.log" 2>&1 \
    || { say "drive $name: qemu-storage-daemon failed: $(tail -1 "$LAB_DIR/log/drives.log")" >&2; return 1; }
  echo "$iops $mbps" >"$DRIVES_DIR/$name.class"
  for ((i = 0; i < slices; i++)); do
    export=$DRIVES_DIR/$name.s$i
    mm=$(mountpoint -d "$export" 2>/dev/null) && [[ -w $FUSECTL/${mm#*:}/max_background ]] \
      || { say "drive $name: no FUSE connection for $export" >&2; return 1; }
    echo 1 >"$FUSECTL/${mm#*:}/max_background"
    # --direct-io: the loop device passes the filesystem's I/O straight to
    # the export; buffered, the export's page cache (outside the lab's
    # memory limit) would serve reads the drive never sees
    loop=$(losetup -f --show --direct-io=on "$export" 2>/dev/null) || return 1
    if [[ $(losetup -n -O DIO "$loop" | tr -d ' ') != 1 ]]; then
      losetup -d "$loop"
      say "drive $name: the loop device on $export would not use direct I/O" >&2
      return 1
    fi
    echo "$loop"
  done
}

# The drives a tablespace's filesystem sits on (their names), from its
# loop devices' exports.
drives_of_devices() {
  local dev back
  for dev in "$@"; do
    back=$(losetup -n -O BACK-FILE "$dev" 2>/dev/null | sed 's/ *$//')
    if [[ $back == "$DRIVES_DIR/"* ]]; then basename "${back%.s[0-9]*}"; fi
  done | sort -u
}

# The lab's tablespaces (names without lab_) with a device on one of the
# drives named: a pool volume's budget is its sibling's too.
volumes_on_drives() {
  local f
  for f in "$LAB_DIR"/devices/*; do
    [[ -f $f ]] || continue
    # shellcheck disable=SC2046 # devices are words
    if comm -12 <(drives_of_devices $(cat "$f")) <(printf '%s\n' "$@" | sort -u) | grep -q .; then
      basename "$f"
    fi
  done
}

# drive_qmp NAME COMMAND [ARGUMENTS_JSON]: one QMP command to a running
# drive's daemon; prints its return value as JSON, or fails with QMP's error.
drive_qmp() {
  python3 - "$DRIVES_DIR/$1.qmp" "$2" "${3:-}" <<'PY'
import json, socket, sys
path, command, arguments = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_UNIX)
s.connect(path)
f = s.makefile("rw")
def cmd(c, a=None):
    f.write(json.dumps({"execute": c, "arguments": a} if a else {"execute": c}) + "\n"); f.flush()
    while True:
        r = json.loads(f.readline())
        if "return" in r: return r["return"]
        if "error" in r: sys.exit("qmp: " + r["error"]["desc"])
json.loads(f.readline())  # the greeting
cmd("qmp_capabilities")
print(json.dumps(cmd(command, json.loads(arguments) if arguments else None)))
PY
}

# drive_budget NAME IOPS MBPS: a running drive's new budget, through QMP.
drive_budget() {
  local name=$1 iops=$2 mbps=$3
  drive_qmp "$name" qom-set \
    "{\"path\": \"/objects/budget\", \"property\": \"limits\", \"value\": {\"iops-total\": $iops, \"bps-total\": $((mbps << 20))}}" \
    >/dev/null || return 1
  echo "$iops $mbps" >"$DRIVES_DIR/$name.class"
}

# Stops every drive of this lab: loop devices on its exports first, then
# the daemons (by pid file, and any daemon still serving a file of ours:
# a crash between the two), then any export left mounted.
drives_stop() {
  local export loop pidf pid pids i mnt
  [[ -d $DRIVES_DIR ]] || return 0
  for export in "$DRIVES_DIR"/*.s[0-9]*; do
    [[ $export == *.img ]] && continue
    for loop in $(losetup -j "$export" -O NAME -n 2>/dev/null); do
      losetup -d "$loop" && say "detached $loop"
    done
  done
  pids=$(
    for pidf in "$DRIVES_DIR"/*.pid; do [[ -f $pidf ]] && cat "$pidf"; done
    pgrep -f -- "qemu-storage-daemon .*$DRIVES_DIR/" || true
  )
  pids=$(echo "$pids" | sort -u | while read -r pid; do
    [[ -n $pid ]] && grep -qaF "$DRIVES_DIR/" "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"; done)
  if [[ -n $pids ]]; then
    # shellcheck disable=SC2086 # pids are words
    kill $pids 2>/dev/null
    for ((i = 0; i < 50; i++)); do
      # shellcheck disable=SC2086
      kill -0 $pids 2>/dev/null || break
      sleep 0.1
    done
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    say "stopped $(echo "$pids" | wc -w) drive daemon(s)"
  fi
  # exports a killed daemon left mounted (its connection gone)
  while read -r mnt; do
    umount "$mnt" 2>/dev/null || umount -l "$mnt"
    say "unmounted $mnt"
  done < <(awk -v d="$DRIVES_DIR/" 'index($2, d) == 1 { print $2 }' /proc/mounts)
}
