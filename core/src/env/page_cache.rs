//! Dropping a file's pages from the kernel's page cache, so that the next
//! read of it goes to the device: written back and synced first, since
//! POSIX_FADV_DONTNEED drops only clean pages.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

pub fn drop_file(path: &Path) -> std::io::Result<()> {
    let f = File::open(path)?;
    f.sync_data()?;
    // SAFETY: a plain syscall on a descriptor we own for its duration.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(std::io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_a_written_file_and_refuses_a_missing_one() {
        let dir = std::env::temp_dir().join(format!("storlab-page-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, vec![7u8; 1 << 16]).unwrap();
        drop_file(&path).unwrap();
        // the data is intact: dropping from the cache is not losing it
        assert_eq!(std::fs::read(&path).unwrap().len(), 1 << 16);
        assert_eq!(
            drop_file(&dir.join("none")).unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
