//! What a run stores of the block devices beneath the tablespaces it used
//! (`storlab.bench_runs.device_io`): one entry per device, with the
//! tablespaces on it and what its counters moved by over the run, and one
//! per tablespace on no block device (tmpfs). A device two tablespaces
//! share is one entry, counted once.
//!
//! ```json
//! {"elapsed_ms": 1004,
//!  "devices": [{"device": "loop3", "dev": "7:3", "tablespaces": ["lab_ext4"],
//!               "reads": 0, "read_bytes": 0, "read_ms": 0, "writes": 412,
//!               "write_bytes": 3928064, "write_ms": 190, "flushes": 118,
//!               "io_ticks_ms": 420, "time_in_queue_ms": 236}],
//!  "no_device": [{"tablespace": "lab_ram", "fs_type": "tmpfs"}]}
//! ```

use serde::{Deserialize, Serialize};

use crate::env::diskstats::DeviceIo;

/// A run's device-level I/O.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunDeviceIo {
    /// the time between the two readings of the counters (pgbench's run,
    /// its connections and its vacuum included), ms
    pub elapsed_ms: u64,
    pub devices: Vec<DeviceUse>,
    #[serde(default)]
    pub no_device: Vec<NoDevice>,
}

/// One block device beneath the run's tablespaces.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceUse {
    /// the kernel's name (`loop3`, `vda`)
    pub device: String,
    /// `major:minor`
    pub dev: String,
    /// the run's tablespaces on it (pg_wal's folder as `pg_wal`), by name
    pub tablespaces: Vec<String>,
    /// what its counters moved by; None when they could not be read at
    /// the run's start or end, or went back ([`DeviceUse::unread`] says
    /// why)
    #[serde(flatten)]
    pub io: Option<DeviceIo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unread: Option<String>,
}

/// A tablespace of the run on no block device: tmpfs, or a folder storlab
/// could not resolve (`why`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoDevice {
    pub tablespace: String,
    /// None when the folder could not be read
    pub fs_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl RunDeviceIo {
    /// Reads from every device of the run, each device once; None when a
    /// device's counters are unknown (no figure for the run as a whole).
    pub fn reads(&self) -> Option<u64> {
        self.devices
            .iter()
            .map(|d| d.io.map(|io| io.reads))
            .sum::<Option<u64>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn loop3() -> DeviceUse {
        DeviceUse {
            device: "loop3".into(),
            dev: "7:3".into(),
            tablespaces: vec!["lab_ext4".into()],
            io: Some(DeviceIo {
                reads: 2,
                read_bytes: 8192,
                read_ms: 1,
                writes: 412,
                write_bytes: 3_928_064,
                write_ms: 190,
                flushes: Some(118),
                io_ticks_ms: 420,
                time_in_queue_ms: 236,
            }),
            unread: None,
        }
    }

    #[test]
    fn the_stored_shape() {
        let r = RunDeviceIo {
            elapsed_ms: 1004,
            devices: vec![loop3()],
            no_device: vec![NoDevice {
                tablespace: "lab_ram".into(),
                fs_type: Some("tmpfs".into()),
                why: None,
            }],
        };
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(
            j,
            json!({"elapsed_ms": 1004,
                   "devices": [{"device": "loop3", "dev": "7:3", "tablespaces": ["lab_ext4"],
                                "reads": 2, "read_bytes": 8192, "read_ms": 1, "writes": 412,
                                "write_bytes": 3_928_064, "write_ms": 190, "flushes": 118,
                                "io_ticks_ms": 420, "time_in_queue_ms": 236}],
                   "no_device": [{"tablespace": "lab_ram", "fs_type": "tmpfs"}]})
        );
        // read back as stored (jsonb keeps the keys, in its own order)
        let back: RunDeviceIo = serde_json::from_value(j).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.reads(), Some(2));
    }

    #[test]
    fn a_device_not_read() {
        let unread = DeviceUse {
            io: None,
            unread: Some("its counters went back".into()),
            ..loop3()
        };
        let j = serde_json::to_value(&unread).unwrap();
        assert_eq!(
            j,
            json!({"device": "loop3", "dev": "7:3", "tablespaces": ["lab_ext4"],
                   "unread": "its counters went back"})
        );
        let back: DeviceUse = serde_json::from_value(j).unwrap();
        assert_eq!(back.io, None);
        let r = RunDeviceIo {
            elapsed_ms: 5,
            devices: vec![loop3(), back],
            no_device: vec![],
        };
        assert_eq!(r.reads(), None);
        // no device at all (every tablespace on tmpfs): nothing was read
        assert_eq!(RunDeviceIo::default().reads(), Some(0));
    }
}
