//! Space on a filesystem (statvfs) and space used below a folder.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsSpace {
    /// Size of the filesystem.
    pub total_bytes: u64,
    /// What an unprivileged writer may still use (df's "Avail": f_bavail, not
    /// f_bfree, which counts the blocks reserved for root; PostgreSQL does not run as root).
    pub avail_bytes: u64,
}

pub fn fs_space(path: &Path) -> io::Result<FsSpace> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: statvfs only writes into the zeroed struct we hand it.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let frsize = st.f_frsize as u64;
    Ok(FsSpace {
        total_bytes: st.f_blocks as u64 * frsize,
        avail_bytes: st.f_bavail as u64 * frsize,
    })
}

/// The filesystem's device number, the identity of "the same volume" for
/// probes that must not overlap.
pub fn device_id(path: &Path) -> io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata(path)?.dev())
}

/// Asks the filesystem to finish work it defers: xfs frees an unlinked
/// file's blocks lazily, so free space read right after a large probe
/// removed its file can be short by that file (syncfs flushes that queue).
pub fn settle(path: &Path) -> io::Result<()> {
    let dir = std::fs::File::open(path)?;
    use std::os::unix::io::AsRawFd;
    // SAFETY: syncfs on a descriptor we own.
    if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Apparent size of everything below `dir`, counted as pg_tablespace_size()
/// counts it: st_size of every file and of every folder below (PostgreSQL adds
/// the database folders' own sizes), not allocated blocks. Files that vanish
/// while we walk (a checkpoint recycling WAL, a dropped table) are not counted.
pub fn dir_bytes(dir: &Path) -> io::Result<u64> {
    dir_bytes_polling(dir, &mut || {})
}

/// [`dir_bytes`], calling `poll` every thousand entries: a tablespace of a
/// million files takes seconds to walk, and the caller checks for a cancel
/// there (a panic or an ERROR out of `poll` ends the walk).
pub fn dir_bytes_polling(dir: &Path, poll: &mut dyn FnMut()) -> io::Result<u64> {
    let mut seen = 0u64;
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound && d != dir => continue,
            Err(e) => return Err(e),
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen.is_multiple_of(1000) {
                poll();
            }
            // symlink_metadata: never follow a link out of the folder
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                total += meta.len();
                stack.push(entry.path());
            } else if meta.is_file() {
                total += meta.len();
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn statvfs_of_root_is_sane() {
        let s = fs_space(Path::new("/")).unwrap();
        assert!(s.total_bytes > 0);
        assert!(s.avail_bytes <= s.total_bytes);
    }

    #[test]
    fn missing_path_is_an_error() {
        assert!(fs_space(Path::new("/no/such/storlab/path")).is_err());
        assert!(dir_bytes(Path::new("/no/such/storlab/path")).is_err());
    }

    #[test]
    fn a_long_walk_is_polled() {
        let base = std::env::temp_dir().join(format!("storlab_dir_poll_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        for i in 0..2500 {
            std::fs::write(base.join(i.to_string()), b"x").unwrap();
        }
        let mut polls = 0;
        assert_eq!(dir_bytes_polling(&base, &mut || polls += 1).unwrap(), 2500);
        assert_eq!(polls, 2);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn dir_bytes_counts_nested_files_and_not_links() {
        let base = std::env::temp_dir().join(format!("storlab_dir_bytes_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("a/b")).unwrap();
        std::fs::File::create(base.join("f1"))
            .unwrap()
            .write_all(&[1u8; 1000])
            .unwrap();
        std::fs::File::create(base.join("a/b/f2"))
            .unwrap()
            .write_all(&[2u8; 24])
            .unwrap();
        std::os::unix::fs::symlink("/etc/passwd", base.join("link")).unwrap();
        let dirs: u64 = ["a", "a/b"]
            .iter()
            .map(|d| base.join(d).metadata().unwrap().len())
            .sum();
        assert_eq!(
            dir_bytes(&base).unwrap(),
            1024 + dirs,
            "files and the folders below, not the link"
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
