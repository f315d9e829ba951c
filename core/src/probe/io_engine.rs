//! How a worker issues its I/O, named as fio names its engines: `psync`
//! (one pread/pwrite at a time) or `io_uring` (up to `iodepth` requests in
//! flight on the worker's own ring).

use std::fmt;
use std::str::FromStr;

use super::error::parse_name;

/// Deepest queue a worker keeps: fio's examples stop at 256 too, and beyond
/// it a probe measures the block layer's queue, not the device.
pub const MAX_IODEPTH: u32 = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoEngine {
    /// pread/pwrite, one at a time: what a backend reading a page does.
    Psync,
    /// io_uring, `iodepth` requests in flight: what prefetching and
    /// asynchronous I/O do, and how fio measures a device's ceiling.
    IoUring,
}

impl IoEngine {
    pub const ALL: [IoEngine; 2] = [IoEngine::Psync, IoEngine::IoUring];

    pub fn as_str(self) -> &'static str {
        match self {
            IoEngine::Psync => "psync",
            IoEngine::IoUring => "io_uring",
        }
    }

    /// The engine used when the caller names none: psync for one request at
    /// a time (so that today's probes keep their meaning), io_uring above.
    pub fn for_depth(iodepth: u32) -> IoEngine {
        if iodepth > 1 {
            IoEngine::IoUring
        } else {
            IoEngine::Psync
        }
    }
}

impl FromStr for IoEngine {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_name("engine", s, &IoEngine::ALL, IoEngine::as_str)
    }
}

impl fmt::Display for IoEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_list_the_choices() {
        for e in IoEngine::ALL {
            assert_eq!(e.as_str().parse::<IoEngine>(), Ok(e));
        }
        assert_eq!("IO_URING".parse::<IoEngine>(), Ok(IoEngine::IoUring));
        let msg = "libaio".parse::<IoEngine>().unwrap_err();
        assert!(msg.ends_with("psync, io_uring"), "{msg}");
    }

    #[test]
    fn depth_one_is_psync_and_deeper_queues_need_a_ring() {
        assert_eq!(IoEngine::for_depth(1), IoEngine::Psync);
        assert_eq!(IoEngine::for_depth(2), IoEngine::IoUring);
        assert_eq!(IoEngine::for_depth(MAX_IODEPTH), IoEngine::IoUring);
    }
}
