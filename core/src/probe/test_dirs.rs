//! Throw-away folders for the tests: on a real disk (accepts O_DIRECT), on
//! /dev/shm, on a filesystem that refuses O_DIRECT, or on a tiny mount that
//! fills up. Each test gets its own folder so tests can run in parallel and
//! assert that a folder is empty afterwards.

use std::ffi::{CStr, CString};
use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(0);

pub struct TestDir {
    path: PathBuf,
    /// A filesystem of our own is mounted on `path`.
    mounted: bool,
}

impl TestDir {
    /// A fresh folder under /var/tmp, which is on the root disk rather than
    /// a tmpfs /tmp on many systems.
    pub fn new_on_disk(tag: &str) -> TestDir {
        Self::new_under(Path::new("/var/tmp"), tag)
            .expect("/var/tmp must be writable for these tests")
    }

    /// A fresh folder on /dev/shm, or None (after saying so) when the
    /// machine has no /dev/shm.
    pub fn new_on_shm(tag: &str) -> Option<TestDir> {
        let shm = Path::new("/dev/shm");
        if !shm.is_dir() {
            eprintln!("skipping: /dev/shm is absent");
            return None;
        }
        Some(Self::new_under(shm, tag).expect("/dev/shm must be writable"))
    }

    /// A folder on which O_DIRECT opens fail with EINVAL. That was /dev/shm
    /// until Linux 6.6 taught tmpfs O_DIRECT; on newer kernels a ramfs is
    /// mounted instead (needs root). None, after saying why, if neither.
    pub fn refusing_direct(tag: &str) -> Option<TestDir> {
        if let Some(shm) = Self::new_on_shm(tag) {
            if refuses_direct(shm.path()) {
                return Some(shm);
            }
        }
        let ram = Self::new_mounted(c"ramfs", c"", tag)?;
        if refuses_direct(ram.path()) {
            return Some(ram);
        }
        eprintln!("skipping: even ramfs accepts O_DIRECT on this kernel");
        None
    }

    /// A fresh folder with a new `fstype` filesystem mounted on it,
    /// unmounted on drop. None (after saying why) when mounting is not
    /// permitted, e.g. without root.
    pub fn new_mounted(fstype: &CStr, options: &CStr, tag: &str) -> Option<TestDir> {
        let mut dir = Self::new_on_disk(tag);
        let target = CString::new(dir.path.as_os_str().as_encoded_bytes()).ok()?;
        // SAFETY: every pointer is a NUL-terminated string outliving the call.
        let rc = unsafe {
            libc::mount(
                c"none".as_ptr(),
                target.as_ptr(),
                fstype.as_ptr(),
                0,
                options.as_ptr().cast(),
            )
        };
        if rc != 0 {
            eprintln!(
                "skipping: cannot mount {fstype:?}: {}",
                io::Error::last_os_error()
            );
            return None;
        }
        dir.mounted = true;
        Some(dir)
    }

    fn new_under(base: &Path, tag: &str) -> std::io::Result<TestDir> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = base.join(format!("probe-test-{}-{}-{tag}", std::process::id(), n));
        std::fs::create_dir(&path)?;
        Ok(TestDir {
            path,
            mounted: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Names of the entries in the folder, sorted.
    pub fn entries(&self) -> Vec<String> {
        entries(&self.path)
    }
}

pub fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn refuses_direct(dir: &Path) -> bool {
    let probe = dir.join("direct-probe");
    let _ = std::fs::write(&probe, b"");
    let refused = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .is_err_and(|e| e.raw_os_error() == Some(libc::EINVAL));
    let _ = std::fs::remove_file(&probe);
    refused
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if self.mounted {
            if let Ok(target) = CString::new(self.path.as_os_str().as_encoded_bytes()) {
                // SAFETY: target is a NUL-terminated path.
                unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
            }
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
