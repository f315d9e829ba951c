//! The scratch file a probe does its I/O on, and cleanup of ones left by
//! crashed backends.
//!
//! Names follow PostgreSQL's temp-file convention (`pgsql_tmp` prefix, in a
//! tablespace's `pgsql_tmp` folder) so that the postmaster removes leftovers
//! at restart. The pid in the name lets `remove_stale` clean folders the
//! postmaster does not (e.g. next to the WAL) without touching files of
//! backends that are still running.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::buffer::AlignedBuf;
use super::error::ProbeError;

/// Every scratch file name is `<SCRATCH_PREFIX><pid>_<n>`.
pub const SCRATCH_PREFIX: &str = "pgsql_tmp_storlab_";

/// Fill granularity: big enough for near-sequential write speed, small
/// enough that a cancel is noticed within a few milliseconds.
const FILL_CHUNK: usize = 1 << 20;

/// How many names to try before giving up: a collision only happens when a
/// dead process with our pid left files behind, so a few tries suffice.
const NAME_ATTEMPTS: u32 = 100;

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// A filled scratch file, removed when dropped.
#[derive(Debug)]
pub struct ScratchFile {
    path: PathBuf,
    size: u64,
    direct: bool,
}

impl ScratchFile {
    /// Creates `size` bytes of random data in `dir` (creating `dir` itself,
    /// mode 0700, if missing; its parent must exist).
    ///
    /// Random data, written for real, because a sparse or fallocated file
    /// has unwritten extents whose first write costs extra metadata work
    /// (sync latencies would lie), and a compressing or deduplicating
    /// filesystem would store zeros for free.
    ///
    /// Laid out as fio lays out its own files: truncated to `size` first,
    /// then written one block of the probe's size at a time (at most 1 MiB).
    /// The virtual disk of the lab answered random writes to files laid out
    /// so faster than to ones written in 1 MiB pieces into a growing file:
    /// 8 kB random writes at depth 8, 10 alternating runs of fio on fresh
    /// files, median 81 200 IOPS against 70 500 (faster in 9 of 10 runs),
    /// fio on a file it laid out itself 82 200. Dropping or keeping the
    /// pages, fsync or fdatasync made no difference. Why the disk cares is
    /// not visible from inside the guest; storlab and fio now lay out alike.
    ///
    /// `poll` is called before each 1 MiB chunk; when it returns true the
    /// fill stops with `Cancelled`. With `direct`, O_DIRECT is tried and, if
    /// the filesystem refuses it at open (EINVAL, as tmpfs does), the file
    /// is used buffered: see `direct()`. The file's pages are dropped from
    /// the page cache either way, so buffered reads start cold.
    pub fn create(
        dir: &Path,
        size: u64,
        block_size: usize,
        direct: bool,
        poll: &mut dyn FnMut() -> bool,
    ) -> Result<ScratchFile, ProbeError> {
        ensure_dir(dir)?;
        let (file, path) = create_unique(dir)?;
        // From here on the file is owned by `scratch`: every early return,
        // and an unwind out of `poll`, removes it.
        let mut scratch = ScratchFile {
            path,
            size,
            direct: false,
        };
        scratch.fill(file, block_size, poll)?;
        scratch.direct = direct && scratch.direct_io_works(block_size)?;
        Ok(scratch)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether `open` uses O_DIRECT: false when it was not asked for or
    /// when the filesystem refused it.
    pub fn direct(&self) -> bool {
        self.direct
    }

    /// A new read-write descriptor on the file, with O_DIRECT when
    /// `direct()` and with `extra_flags` (e.g. O_DSYNC). Each worker opens
    /// its own so that no file-position or fd-level locking is shared.
    pub fn open(&self, extra_flags: libc::c_int) -> io::Result<File> {
        let direct = if self.direct { libc::O_DIRECT } else { 0 };
        OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(direct | extra_flags)
            .open(&self.path)
    }

    fn fill(
        &self,
        mut file: File,
        block_size: usize,
        poll: &mut dyn FnMut() -> bool,
    ) -> Result<(), ProbeError> {
        file.set_len(self.size).map_err(|e| {
            ProbeError::io(
                format!("setting the size of scratch file {}", self.path.display()),
                e,
            )
        })?;
        let piece = block_size.clamp(1, FILL_CHUNK);
        let mut chunk = vec![0u8; FILL_CHUNK];
        let mut rng = fastrand::Rng::new();
        let mut written: u64 = 0;
        while written < self.size {
            if poll() {
                return Err(ProbeError::Cancelled);
            }
            let n = (self.size - written).min(FILL_CHUNK as u64) as usize;
            rng.fill(&mut chunk[..n]);
            for (i, part) in chunk[..n].chunks(piece).enumerate() {
                file.write_all(part).map_err(|e| {
                    ProbeError::io(
                        format!(
                            "filling scratch file {} at byte {} of {}",
                            self.path.display(),
                            written + (i * piece) as u64,
                            self.size
                        ),
                        e,
                    )
                })?;
            }
            written += n as u64;
        }
        file.sync_data().map_err(|e| {
            ProbeError::io(
                format!("fdatasync of scratch file {}", self.path.display()),
                e,
            )
        })?;
        // The fill left every page in the cache; without this a buffered
        // probe would measure memory. The pages are clean after the
        // fdatasync, so the kernel can really drop them.
        // SAFETY: plain syscall on an fd we own.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(ProbeError::io(
                format!("dropping cached pages of {}", self.path.display()),
                io::Error::from_raw_os_error(rc),
            ));
        }
        Ok(())
    }

    /// Tries O_DIRECT: Ok(false) when the filesystem refuses it at open.
    /// Also reads one block, because a filesystem may accept the flag yet
    /// refuse I/O whose size is below the device's logical block size;
    /// that is the spec's fault, reported as such rather than hidden by a
    /// silent fallback.
    fn direct_io_works(&self, block_size: usize) -> Result<bool, ProbeError> {
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&self.path)
        {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(false),
            Err(e) => {
                return Err(ProbeError::io(
                    format!("opening {} with O_DIRECT", self.path.display()),
                    e,
                ))
            }
        };
        if (block_size as u64) > self.size {
            return Ok(true);
        }
        let mut buf = AlignedBuf::new(block_size)
            .map_err(|e| ProbeError::io("allocating an O_DIRECT test buffer", e))?;
        match file.read_exact_at(buf.as_mut_slice(), 0) {
            Ok(()) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                Err(ProbeError::InvalidSpec(format!(
                    "an O_DIRECT read of {block_size} bytes was refused (EINVAL) in {}; the block \
                     size is probably not a multiple of the device's logical block size \
                     (try 4096, or direct => false)",
                    self.path.parent().unwrap_or(Path::new("")).display()
                )))
            }
            Err(e) => Err(ProbeError::io(
                format!("test O_DIRECT read of {}", self.path.display()),
                e,
            )),
        }
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        // Nothing useful can be done about a failure here; the pgsql_tmp
        // name means the postmaster removes it at the next restart anyway.
        let _ = fs::remove_file(&self.path);
    }
}

/// Creates the scratch folder if missing, as PostgreSQL does for
/// pgsql_tmp: only the last component, private to the server's user.
fn ensure_dir(dir: &Path) -> Result<(), ProbeError> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(ProbeError::io(
            format!(
                "creating scratch folder {} (its parent folder must exist)",
                dir.display()
            ),
            e,
        )),
        Err(e) => Err(ProbeError::io(
            format!("creating scratch folder {}", dir.display()),
            e,
        )),
    }
}

fn create_unique(dir: &Path) -> Result<(File, PathBuf), ProbeError> {
    let pid = std::process::id();
    for _ in 0..NAME_ATTEMPTS {
        let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{SCRATCH_PREFIX}{pid}_{n}"));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => return Ok((file, path)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(ProbeError::io(
                    format!("creating scratch file {}", path.display()),
                    e,
                ))
            }
        }
    }
    Err(ProbeError::Io {
        context: format!(
            "creating a scratch file in {}: {NAME_ATTEMPTS} names already taken; run remove_stale",
            dir.display()
        ),
        source: io::Error::from(io::ErrorKind::AlreadyExists),
    })
}

/// Removes scratch files in `dir` left by processes that no longer exist
/// and returns how many. Files of live processes, non-regular files and
/// anything not named exactly `<SCRATCH_PREFIX><pid>_<n>` are left alone.
/// A missing `dir` counts as empty.
pub fn remove_stale(dir: &Path) -> Result<usize, ProbeError> {
    remove_matching(dir, |pid| !process_exists(pid))
}

/// Removes this process's own scratch files from `dir`. For an exit
/// callback: a backend that leaves through FATAL (pg_terminate_backend, a
/// fast shutdown) exits without unwinding, so no destructor runs.
pub fn remove_own(dir: &Path) -> Result<usize, ProbeError> {
    let me = std::process::id() as libc::pid_t;
    remove_matching(dir, |pid| pid == me)
}

/// Removes the scratch files of ours in `dir` whose owner pid `doomed` picks.
fn remove_matching(dir: &Path, doomed: impl Fn(libc::pid_t) -> bool) -> Result<usize, ProbeError> {
    let context = || format!("listing {} for stale scratch files", dir.display());
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(ProbeError::io(context(), e)),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(|e| ProbeError::io(context(), e))?;
        let Some(pid) = entry.file_name().to_str().and_then(scratch_owner_pid) else {
            continue;
        };
        if !doomed(pid) {
            continue;
        }
        let is_file = entry
            .file_type()
            .map_err(|e| ProbeError::io(context(), e))?
            .is_file();
        if !is_file {
            continue;
        }
        match fs::remove_file(entry.path()) {
            Ok(()) => removed += 1,
            // Another backend cleaning the same folder got there first.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(ProbeError::io(
                    format!("removing stale scratch file {}", entry.path().display()),
                    e,
                ))
            }
        }
    }
    Ok(removed)
}

/// The pid in `<SCRATCH_PREFIX><pid>_<n>`, or None for any other name.
fn scratch_owner_pid(name: &str) -> Option<libc::pid_t> {
    let (pid, n) = name.strip_prefix(SCRATCH_PREFIX)?.split_once('_')?;
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(pid) || !all_digits(n) {
        return None;
    }
    pid.parse::<libc::pid_t>().ok().filter(|&p| p > 0)
}

/// kill(pid, 0) checks existence without sending anything. EPERM means the
/// process exists under another user, so only ESRCH counts as gone.
fn process_exists(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 performs only the permission and existence checks.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::test_dirs::{entries, TestDir};
    use std::os::unix::fs::PermissionsExt;

    fn never() -> impl FnMut() -> bool {
        || false
    }

    #[test]
    fn create_fills_with_random_data_and_drop_removes() {
        let dir = TestDir::new_on_disk("scratch-fill");
        let size = 2 * FILL_CHUNK as u64 + 12_345;
        let scratch = ScratchFile::create(dir.path(), size, 8192, false, &mut never()).unwrap();
        let name = scratch
            .path()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            scratch_owner_pid(&name),
            Some(std::process::id() as libc::pid_t)
        );
        let meta = fs::metadata(scratch.path()).unwrap();
        assert_eq!(meta.len(), size);
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        // Fully allocated, not sparse.
        use std::os::unix::fs::MetadataExt;
        assert!(meta.blocks() * 512 >= size, "{} blocks", meta.blocks());

        let data = fs::read(scratch.path()).unwrap();
        let (first, rest) = data.split_at(FILL_CHUNK);
        assert_ne!(first, &rest[..FILL_CHUNK], "chunks must not repeat");
        // Random bytes: every value appears close to 1/256 of the time.
        let mut counts = [0u32; 256];
        for &b in &data {
            counts[b as usize] += 1;
        }
        let expected = data.len() as f64 / 256.0;
        assert!(counts
            .iter()
            .all(|&c| (c as f64 - expected).abs() < expected * 0.1));

        let path = scratch.path().to_path_buf();
        drop(scratch);
        assert!(!path.exists());
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn creates_only_the_last_folder_component_with_mode_0700() {
        let dir = TestDir::new_on_disk("scratch-mkdir");
        let tmp = dir.path().join("pgsql_tmp");
        let scratch = ScratchFile::create(&tmp, 4096, 4096, false, &mut never()).unwrap();
        assert_eq!(
            fs::metadata(&tmp).unwrap().permissions().mode() & 0o777,
            0o700
        );
        drop(scratch);
        assert!(entries(&tmp).is_empty());

        let deep = dir.path().join("missing").join("pgsql_tmp");
        let err = ScratchFile::create(&deep, 4096, 4096, false, &mut never()).unwrap_err();
        assert!(
            err.to_string().contains("parent folder must exist"),
            "{err}"
        );
        assert!(!dir.path().join("missing").exists());
    }

    #[test]
    fn cancel_during_fill_removes_the_file() {
        let dir = TestDir::new_on_disk("scratch-cancel");
        let mut calls = 0;
        let mut poll = || {
            calls += 1;
            calls == 3
        };
        let err = ScratchFile::create(dir.path(), 8 << 20, 8192, false, &mut poll).unwrap_err();
        assert!(matches!(err, ProbeError::Cancelled), "{err}");
        assert_eq!(calls, 3);
        assert!(dir.entries().is_empty(), "{:?}", dir.entries());
    }

    #[test]
    fn the_file_has_its_full_size_before_the_first_byte_is_written() {
        // as fio lays out its files: truncated to size, then written
        let dir = TestDir::new_on_disk("scratch-layout");
        let size = 3 * FILL_CHUNK as u64;
        let mut seen = Vec::new();
        let mut poll = || {
            for entry in fs::read_dir(dir.path()).unwrap() {
                seen.push(entry.unwrap().metadata().unwrap().len());
            }
            false
        };
        let _s = ScratchFile::create(dir.path(), size, 8192, false, &mut poll).unwrap();
        assert_eq!(seen, vec![size; 3]);
    }

    #[test]
    fn poll_is_called_once_per_chunk() {
        let dir = TestDir::new_on_disk("scratch-poll");
        let mut calls = 0;
        let mut poll = || {
            calls += 1;
            false
        };
        let _s = ScratchFile::create(dir.path(), 4 * FILL_CHUNK as u64 + 1, 512, false, &mut poll)
            .unwrap();
        assert_eq!(calls, 5);
    }

    #[test]
    fn refused_direct_falls_back_to_buffered() {
        let Some(dir) = TestDir::refusing_direct("scratch-nodirect") else {
            return;
        };
        let scratch = ScratchFile::create(dir.path(), 1 << 20, 8192, true, &mut never()).unwrap();
        assert!(!scratch.direct());
        let f = scratch.open(0).unwrap();
        // SAFETY: F_GETFL only reads the fd's status flags.
        let flags = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_DIRECT, 0);
    }

    #[test]
    fn disk_accepts_direct_and_open_uses_it() {
        let dir = TestDir::new_on_disk("scratch-direct");
        let scratch = ScratchFile::create(dir.path(), 1 << 20, 8192, true, &mut never()).unwrap();
        if !scratch.direct() {
            eprintln!("skipping: /var/tmp refuses O_DIRECT on this machine");
            return;
        }
        let f = scratch.open(libc::O_DSYNC).unwrap();
        // SAFETY: F_GETFL only reads the fd's status flags.
        let flags = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_DIRECT, libc::O_DIRECT);
        assert_eq!(flags & libc::O_DSYNC, libc::O_DSYNC);
    }

    #[test]
    fn buffered_file_starts_with_its_pages_out_of_the_cache() {
        let dir = TestDir::new_on_disk("scratch-cold");
        let size = 8 << 20;
        let scratch = ScratchFile::create(dir.path(), size, 8192, false, &mut never()).unwrap();
        let resident = resident_pages(scratch.path(), size as usize);
        let pages = size as usize / 4096;
        // A few pages may come back through readahead or writeback racing
        // with the advice; nearly all must be gone.
        assert!(resident < pages / 10, "{resident} of {pages} pages cached");
    }

    /// Counts the file's pages in the page cache with mincore(2).
    fn resident_pages(path: &Path, len: usize) -> usize {
        let f = File::open(path).unwrap();
        // SAFETY: a read-only shared mapping of a file we keep open; it is
        // unmapped before returning and never dereferenced.
        unsafe {
            let addr = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            );
            assert_ne!(addr, libc::MAP_FAILED);
            let mut vec = vec![0u8; len.div_ceil(4096)];
            assert_eq!(libc::mincore(addr, len, vec.as_mut_ptr()), 0);
            libc::munmap(addr, len);
            vec.iter().filter(|&&v| v & 1 == 1).count()
        }
    }

    #[test]
    fn full_disk_is_reported_as_disk_full_and_the_file_removed() {
        // A 1 MiB tmpfs, so that filling 4 MiB really hits ENOSPC.
        let Some(tiny) = TestDir::new_mounted(c"tmpfs", c"size=1m", "scratch-enospc") else {
            return;
        };
        let err = ScratchFile::create(tiny.path(), 4 << 20, 8192, false, &mut never()).unwrap_err();
        match &err {
            ProbeError::DiskFull(msg) => assert!(msg.contains("filling scratch file"), "{msg}"),
            other => panic!("expected DiskFull, got {other:?}"),
        }
        assert!(tiny.entries().is_empty(), "{:?}", tiny.entries());
    }

    #[test]
    fn scratch_names_are_recognised_exactly() {
        assert_eq!(scratch_owner_pid("pgsql_tmp_storlab_123_0"), Some(123));
        assert_eq!(scratch_owner_pid("pgsql_tmp_storlab_9_77"), Some(9));
        for other in [
            "pgsql_tmp123.0",
            "pgsql_tmp_storlab_123",
            "pgsql_tmp_storlab_123_",
            "pgsql_tmp_storlab__1",
            "pgsql_tmp_storlab_0_1",
            "pgsql_tmp_storlab_12a_1",
            "pgsql_tmp_storlab_1_2_3",
            "pgsql_tmp_storlab_99999999999999999999_1",
            "xpgsql_tmp_storlab_1_1",
        ] {
            assert_eq!(scratch_owner_pid(other), None, "{other}");
        }
    }

    /// A pid that existed and is now gone: a child we started and reaped.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn remove_stale_removes_dead_owners_only() {
        let dir = TestDir::new_on_disk("scratch-stale");
        let dead = dead_pid();
        let live = std::process::id();
        let touch = |name: &str| fs::write(dir.path().join(name), b"x").unwrap();
        touch(&format!("{SCRATCH_PREFIX}{dead}_0"));
        touch(&format!("{SCRATCH_PREFIX}{dead}_17"));
        touch(&format!("{SCRATCH_PREFIX}{live}_3"));
        touch(&format!("pgsql_tmp{dead}.0"));
        touch(&format!("{SCRATCH_PREFIX}{dead}"));
        touch("postgresql.conf");
        fs::create_dir(dir.path().join(format!("{SCRATCH_PREFIX}{dead}_5"))).unwrap();

        assert_eq!(remove_stale(dir.path()).unwrap(), 2);
        let mut expected = vec![
            format!("{SCRATCH_PREFIX}{live}_3"),
            format!("pgsql_tmp{dead}.0"),
            format!("{SCRATCH_PREFIX}{dead}"),
            "postgresql.conf".to_string(),
            format!("{SCRATCH_PREFIX}{dead}_5"),
        ];
        expected.sort();
        assert_eq!(dir.entries(), expected);
        assert_eq!(remove_stale(dir.path()).unwrap(), 0);
    }

    #[test]
    fn remove_own_takes_this_process_files_only() {
        let dir = TestDir::new_on_disk("scratch-own");
        let dead = dead_pid();
        let me = std::process::id();
        let touch = |name: &str| fs::write(dir.path().join(name), b"x").unwrap();
        touch(&format!("{SCRATCH_PREFIX}{me}_0"));
        touch(&format!("{SCRATCH_PREFIX}{me}_9"));
        touch(&format!("{SCRATCH_PREFIX}{dead}_1"));
        assert_eq!(remove_own(dir.path()).unwrap(), 2);
        assert_eq!(dir.entries(), vec![format!("{SCRATCH_PREFIX}{dead}_1")]);
    }

    #[test]
    fn remove_stale_of_a_missing_folder_is_zero() {
        let dir = TestDir::new_on_disk("scratch-stale-missing");
        assert_eq!(remove_stale(&dir.path().join("nope")).unwrap(), 0);
    }
}
