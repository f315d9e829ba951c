//! How a write is made durable, named as PostgreSQL's `wal_sync_method`
//! names them, so results can be compared with pg_test_fsync line by line.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::str::FromStr;

use super::error::parse_name;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncMethod {
    /// No durability: measures the write path only.
    None,
    /// fdatasync(2) after each group of writes.
    Fdatasync,
    /// fsync(2) after each group of writes.
    Fsync,
    /// Open with O_DSYNC: every write returns only once its data is stable.
    OpenDatasync,
    /// Open with O_SYNC: like O_DSYNC, plus all metadata.
    OpenSync,
}

#[cfg(test)]
const NAMES: &[&str] = &["none", "fdatasync", "fsync", "open_datasync", "open_sync"];

impl SyncMethod {
    pub const ALL: [SyncMethod; 5] = [
        SyncMethod::None,
        SyncMethod::Fdatasync,
        SyncMethod::Fsync,
        SyncMethod::OpenDatasync,
        SyncMethod::OpenSync,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SyncMethod::None => "none",
            SyncMethod::Fdatasync => "fdatasync",
            SyncMethod::Fsync => "fsync",
            SyncMethod::OpenDatasync => "open_datasync",
            SyncMethod::OpenSync => "open_sync",
        }
    }

    /// Extra open(2) flags; the open_* methods get their durability here
    /// instead of from a call after the writes.
    pub fn open_flags(self) -> libc::c_int {
        match self {
            SyncMethod::OpenDatasync => libc::O_DSYNC,
            SyncMethod::OpenSync => libc::O_SYNC,
            _ => 0,
        }
    }

    /// Performs the sync that follows a group of writes: fdatasync, fsync,
    /// or nothing (for `None` and for the open_* methods, whose writes are
    /// already durable when they return). EINTR is retried.
    pub fn sync_after_writes(self, fd: BorrowedFd<'_>) -> io::Result<()> {
        let call: unsafe extern "C" fn(libc::c_int) -> libc::c_int = match self {
            SyncMethod::Fdatasync => libc::fdatasync,
            SyncMethod::Fsync => libc::fsync,
            SyncMethod::None | SyncMethod::OpenDatasync | SyncMethod::OpenSync => return Ok(()),
        };
        loop {
            // SAFETY: the fd is borrowed, so it stays open for the call.
            if unsafe { call(fd.as_raw_fd()) } == 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }
}

impl FromStr for SyncMethod {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_name("sync method", s, &SyncMethod::ALL, SyncMethod::as_str)
    }
}

impl fmt::Display for SyncMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::test_dirs::TestDir;
    use std::fs::OpenOptions;
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::os::unix::fs::OpenOptionsExt;

    #[test]
    fn names_round_trip() {
        for m in SyncMethod::ALL {
            assert_eq!(m.as_str().parse::<SyncMethod>(), Ok(m));
            assert_eq!(m.to_string(), m.as_str());
        }
        assert_eq!("OPEN_DATASYNC".parse(), Ok(SyncMethod::OpenDatasync));
        let from_variants: Vec<&str> = SyncMethod::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(from_variants, NAMES);
    }

    #[test]
    fn unknown_names_are_rejected_with_the_allowed_list() {
        for bad in ["", "sync", "fdatasyncs", "open-sync", "fsync_writethrough"] {
            let msg = bad.parse::<SyncMethod>().unwrap_err();
            assert!(msg.starts_with("unknown sync method"), "{msg}");
            assert!(
                msg.ends_with("none, fdatasync, fsync, open_datasync, open_sync"),
                "{msg}"
            );
        }
    }

    #[test]
    fn open_flags_select_dsync_and_sync() {
        assert_eq!(SyncMethod::OpenDatasync.open_flags(), libc::O_DSYNC);
        assert_eq!(SyncMethod::OpenSync.open_flags(), libc::O_SYNC);
        for m in [SyncMethod::None, SyncMethod::Fdatasync, SyncMethod::Fsync] {
            assert_eq!(m.open_flags(), 0, "{m}");
        }
        // Linux defines O_SYNC as O_DSYNC plus a bit of its own.
        assert_eq!(libc::O_SYNC & libc::O_DSYNC, libc::O_DSYNC);
        assert_ne!(libc::O_SYNC, libc::O_DSYNC);
    }

    #[test]
    fn open_flags_reach_the_kernel() {
        let dir = TestDir::new_on_disk("sync-flags");
        for m in [SyncMethod::OpenDatasync, SyncMethod::OpenSync] {
            let file = OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .custom_flags(m.open_flags())
                .open(dir.path().join(m.as_str()))
                .unwrap();
            // SAFETY: F_GETFL only reads the status flags of an open fd.
            let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
            assert_eq!(flags & m.open_flags(), m.open_flags(), "{m}: {flags:#x}");
        }
    }

    #[test]
    fn sync_after_writes_works_on_a_file_and_fails_on_a_pipe() {
        let dir = TestDir::new_on_disk("sync-call");
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(dir.path().join("f"))
            .unwrap();
        file.write_all(b"some bytes").unwrap();
        for m in SyncMethod::ALL {
            m.sync_after_writes(file.as_fd()).unwrap();
        }

        // A pipe cannot be synced: proves the call really happens and that
        // its error comes back instead of being swallowed.
        let mut fds = [0; 2];
        // SAFETY: pipe writes two new fds into the array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both fds were just created and are owned by nobody else.
        let (r, w) = unsafe {
            use std::os::fd::{FromRawFd, OwnedFd};
            (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
        };
        for m in [SyncMethod::Fdatasync, SyncMethod::Fsync] {
            let err = m.sync_after_writes(w.as_fd()).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{m}");
        }
        SyncMethod::None.sync_after_writes(r.as_fd()).unwrap();
    }
}
