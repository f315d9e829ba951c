//! A block device's I/O counters, as the kernel keeps them in
//! `/sys/block/<dev>/stat` (a partition's in `/sys/class/block/<dev>/stat`;
//! both are `/sys/dev/block/<major>:<minor>/stat`), and what they moved by
//! over a stretch of time. The fields, in the order of the kernel's
//! Documentation/block/stat.rst: read I/Os, read merges, read sectors,
//! read ticks, write I/Os, write merges, write sectors, write ticks,
//! in_flight, io_ticks, time_in_queue; since 4.18 discard I/Os, merges,
//! sectors and ticks; since 5.5 flush I/Os and flush ticks. Sectors are
//! 512 bytes whatever the device's own sector size; ticks are
//! milliseconds. The counters are the whole device's: every process's I/O
//! on it counts, not only PostgreSQL's.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::cgroup::DevNo;

/// The unit of the stat file's sector counts.
pub const SECTOR_BYTES: u64 = 512;

/// One reading of a device's counters (the fields storlab keeps).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskStat {
    pub read_ios: u64,
    pub read_sectors: u64,
    pub read_ticks_ms: u64,
    pub write_ios: u64,
    pub write_sectors: u64,
    pub write_ticks_ms: u64,
    /// time the device had I/O in flight (busy), ms
    pub io_ticks_ms: u64,
    /// the sum of every request's time in flight, ms
    pub time_in_queue_ms: u64,
    /// None before Linux 5.5, whose file has no flush fields
    pub flush_ios: Option<u64>,
}

/// The stat file's line; None when it has fewer than the 11 fields every
/// kernel since 2.6 writes, or a field that is not a number.
pub fn parse_stat(text: &str) -> Option<DiskStat> {
    let f: Vec<u64> = text
        .split_whitespace()
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    if f.len() < 11 {
        return None;
    }
    Some(DiskStat {
        read_ios: f[0],
        read_sectors: f[2],
        read_ticks_ms: f[3],
        write_ios: f[4],
        write_sectors: f[6],
        write_ticks_ms: f[7],
        io_ticks_ms: f[9],
        time_in_queue_ms: f[10],
        flush_ios: f.get(15).copied(),
    })
}

/// The counters of device `dev` now, from `<sys_dev_block>/<major>:<minor>/stat`
/// (`/sys/dev/block`, which links a disk and a partition alike).
pub fn read_stat(sys_dev_block: &Path, dev: DevNo) -> std::io::Result<DiskStat> {
    let file = sys_dev_block.join(format!("{}:{}/stat", dev.0, dev.1));
    let text = std::fs::read_to_string(&file)?;
    parse_stat(&text).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is not a block device's stat line", file.display()),
        )
    })
}

/// The kernel's name of device `dev` (`loop3`, `vda1`): the folder
/// `/sys/dev/block/<major>:<minor>` links to; `major:minor` when there is
/// none.
pub fn device_name(sys_dev_block: &Path, dev: DevNo) -> String {
    std::fs::canonicalize(sys_dev_block.join(format!("{}:{}", dev.0, dev.1)))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| format!("{}:{}", dev.0, dev.1))
}

/// What a device's counters moved by between two readings, as a run
/// stores it (`storlab.bench_runs.device_io`): I/Os completed, bytes,
/// the time they took (ms), flushes (None where the kernel does not count
/// them), the time the device was busy and the requests' summed time in
/// flight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceIo {
    pub reads: u64,
    pub read_bytes: u64,
    pub read_ms: u64,
    pub writes: u64,
    pub write_bytes: u64,
    pub write_ms: u64,
    pub flushes: Option<u64>,
    pub io_ticks_ms: u64,
    pub time_in_queue_ms: u64,
}

impl DiskStat {
    /// What the counters moved by from `self` to `after`; None when one
    /// went back (the device was detached and another attached under its
    /// number, or its counters wrapped): no difference is known.
    pub fn delta(&self, after: &DiskStat) -> Option<DeviceIo> {
        let d = |b: u64, a: u64| a.checked_sub(b);
        let flushes = match (self.flush_ios, after.flush_ios) {
            (Some(b), Some(a)) => Some(d(b, a)?),
            _ => None,
        };
        Some(DeviceIo {
            reads: d(self.read_ios, after.read_ios)?,
            read_bytes: d(self.read_sectors, after.read_sectors)? * SECTOR_BYTES,
            read_ms: d(self.read_ticks_ms, after.read_ticks_ms)?,
            writes: d(self.write_ios, after.write_ios)?,
            write_bytes: d(self.write_sectors, after.write_sectors)? * SECTOR_BYTES,
            write_ms: d(self.write_ticks_ms, after.write_ticks_ms)?,
            flushes,
            io_ticks_ms: d(self.io_ticks_ms, after.io_ticks_ms)?,
            time_in_queue_ms: d(self.time_in_queue_ms, after.time_in_queue_ms)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A virtio disk's line on Linux 6.x (17 fields).
    const VDA: &str = " 8530491       68 369268752  2413298  2178324    45502 420572768  1493460        0   710416  3974840       56        0 59769056        1   467271    68079\n";

    #[test]
    fn the_fields_as_stat_rst_orders_them() {
        let s = parse_stat(VDA).unwrap();
        assert_eq!(s.read_ios, 8_530_491);
        assert_eq!(s.read_sectors, 369_268_752);
        assert_eq!(s.read_ticks_ms, 2_413_298);
        assert_eq!(s.write_ios, 2_178_324);
        assert_eq!(s.write_sectors, 420_572_768);
        assert_eq!(s.write_ticks_ms, 1_493_460);
        assert_eq!(s.io_ticks_ms, 710_416);
        assert_eq!(s.time_in_queue_ms, 3_974_840);
        assert_eq!(s.flush_ios, Some(467_271));
        // 4.18 .. 5.4: discards, no flushes; before: 11 fields
        let fifteen = "1 0 8 3 4 0 16 5 0 6 7 0 0 0 0";
        assert_eq!(parse_stat(fifteen).unwrap().flush_ios, None);
        let eleven = "1 0 8 3 4 0 16 5 0 6 7";
        assert_eq!(parse_stat(eleven).unwrap().time_in_queue_ms, 7);
        assert_eq!(parse_stat("1 2 3"), None);
        assert_eq!(parse_stat("1 0 8 3 4 0 16 5 0 6 x"), None);
        assert_eq!(parse_stat(""), None);
    }

    #[test]
    fn a_delta_in_bytes_and_ms() {
        let before = parse_stat("100 1 800 30 50 2 4000 70 0 90 120 0 0 0 0 10 4").unwrap();
        let after = parse_stat("112 1 896 33 80 2 6400 95 1 140 190 0 0 0 0 16 6").unwrap();
        let d = before.delta(&after).unwrap();
        assert_eq!(
            d,
            DeviceIo {
                reads: 12,
                read_bytes: 96 * 512,
                read_ms: 3,
                writes: 30,
                write_bytes: 2400 * 512,
                write_ms: 25,
                flushes: Some(6),
                io_ticks_ms: 50,
                time_in_queue_ms: 70,
            }
        );
        // nothing moved: zeros, not None
        assert_eq!(before.delta(&before).unwrap().reads, 0);
        // a counter that went back (another device under the number)
        assert_eq!(after.delta(&before), None);
        // a kernel without flush counts
        let old = parse_stat("100 1 800 30 50 2 4000 70 0 90 120").unwrap();
        assert_eq!(old.delta(&old).unwrap().flushes, None);
        assert_eq!(old.delta(&after).unwrap().flushes, None);
    }

    #[test]
    fn a_device_by_its_number() {
        let sys = std::env::temp_dir().join(format!("storlab_diskstats_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&sys);
        let disk = sys.join("devices/loop3");
        std::fs::create_dir_all(&disk).unwrap();
        std::fs::write(disk.join("stat"), VDA).unwrap();
        let block = sys.join("dev-block");
        std::fs::create_dir_all(&block).unwrap();
        std::os::unix::fs::symlink(&disk, block.join("7:3")).unwrap();
        assert_eq!(read_stat(&block, (7, 3)).unwrap().read_ios, 8_530_491);
        assert_eq!(device_name(&block, (7, 3)), "loop3");
        assert!(read_stat(&block, (7, 4)).is_err());
        assert_eq!(device_name(&block, (7, 4)), "7:4");
        std::fs::write(disk.join("stat"), "garbage").unwrap();
        assert_eq!(
            read_stat(&block, (7, 3)).unwrap_err().kind(),
            std::io::ErrorKind::InvalidData
        );
        std::fs::remove_dir_all(&sys).unwrap();
    }

    #[test]
    fn this_machine_s_devices_read() {
        // whatever block device the machine has reads and names itself
        let Ok(entries) = std::fs::read_dir("/sys/dev/block") else {
            eprintln!("skipped: no /sys/dev/block");
            return;
        };
        for e in entries.flatten().take(3) {
            let name = e.file_name().to_string_lossy().into_owned();
            let dev = super::super::cgroup::parse_devno(&name).unwrap();
            let s = read_stat(Path::new("/sys/dev/block"), dev).unwrap();
            assert!(s.delta(&s).is_some());
            assert_ne!(device_name(Path::new("/sys/dev/block"), dev), name);
        }
    }
}
