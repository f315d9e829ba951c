//! Whether O_DIRECT works in a folder.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Try an O_DIRECT open plus one aligned 4 kB write in `dir`.
///
/// The file is made with O_TMPFILE: it has no name, so nothing is left in a
/// tablespace folder even if the backend dies here (a stray file there would make
/// DROP TABLESPACE fail). Some filesystems accept the open and refuse the I/O,
/// hence the write. Ok(false) means the filesystem refused O_DIRECT (EINVAL);
/// any other failure (permissions, no O_TMPFILE support) is an Err: we do not know.
pub fn direct_io_works(dir: &Path) -> io::Result<bool> {
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: plain syscalls on a descriptor we own; the buffer is allocated
    // with the alignment O_DIRECT requires and freed below.
    unsafe {
        let fd = libc::open(
            c.as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_DIRECT,
            0o600,
        );
        if fd < 0 {
            let e = io::Error::last_os_error();
            return if e.raw_os_error() == Some(libc::EINVAL) {
                Ok(false)
            } else {
                Err(e)
            };
        }
        let layout = std::alloc::Layout::from_size_align(4096, 4096).expect("valid layout");
        let buf = std::alloc::alloc_zeroed(layout);
        let n = libc::pwrite(fd, buf as *const libc::c_void, 4096, 0);
        let err = io::Error::last_os_error();
        std::alloc::dealloc(buf, layout);
        libc::close(fd);
        match n {
            4096 => Ok(true),
            n if n >= 0 => Err(io::Error::other(format!(
                "short O_DIRECT write: {n} of 4096 bytes"
            ))),
            _ if err.raw_os_error() == Some(libc::EINVAL) => Ok(false),
            _ => Err(err),
        }
    }
}

/// Filesystems that accept O_DIRECT and quietly do buffered I/O instead,
/// known from their mount options: a probe there would measure the page
/// cache. Why, for the NOTICE; None where O_DIRECT is what it says.
pub fn ignored_by(fs_type: &str, mount_options: &str) -> Option<&'static str> {
    // ext4 journals file data in this mode, which direct I/O would bypass:
    // ext4_dio_supported() says no and the I/O goes through the page cache
    let journalled = mount_options.split(',').any(|o| o == "data=journal");
    (fs_type == "ext4" && journalled).then_some(
        "ext4 with data=journal accepts O_DIRECT but reads and writes through the page cache",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext4_journalling_data_ignores_o_direct() {
        assert!(ignored_by(
            "ext4",
            "rw,relatime,nodioread_nolock,nodelalloc,data=journal"
        )
        .is_some());
        assert_eq!(ignored_by("ext4", "rw,relatime,data=writeback"), None);
        assert_eq!(ignored_by("ext4", "rw,relatime"), None);
        assert_eq!(ignored_by("xfs", "rw,data=journal"), None);
    }

    #[test]
    fn answers_for_a_real_folder_and_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("storlab_dio_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Most filesystems accept it; the answer must be a yes or no, not an error.
        assert!(direct_io_works(&dir).is_ok());
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "O_TMPFILE leaves no name behind"
        );
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn missing_folder_is_an_error_not_a_no() {
        assert!(direct_io_works(Path::new("/no/such/storlab/dir")).is_err());
    }
}
