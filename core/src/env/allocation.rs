//! What the filesystem really holds for a file, and for every file of a
//! PostgreSQL relation (all forks, all 1 GB segments).
//!
//! `st_blocks` sees holes (sparse files) but not compression: btrfs reports
//! compressed extents at their uncompressed size there. FIEMAP marks those
//! extents ENCODED without giving their on-disk length, so for them we use
//! the distance to the next extent on disk, capped by the logical length: an
//! upper bound that is exact when the compressed extents lie packed one after
//! the other, as btrfs writes them. Data not yet written back (delalloc) has
//! no extent yet and counts at its logical size.

use std::collections::{HashMap, HashSet};
use std::ffi::{CString, OsString};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

// linux/fiemap.h and linux/fs.h
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
const FIEMAP_EXTENT_LAST: u32 = 0x0001;
const FIEMAP_EXTENT_UNKNOWN: u32 = 0x0002;
const FIEMAP_EXTENT_DELALLOC: u32 = 0x0004;
const FIEMAP_EXTENT_ENCODED: u32 = 0x0008;
const BATCH: usize = 256;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

#[repr(C)]
struct Fiemap {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [FiemapExtent; BATCH],
}

/// One extent as FIEMAP reports it: (physical start, logical length, flags).
pub type Extent = (u64, u64, u32);

fn extents(file: &File) -> io::Result<Vec<Extent>> {
    let mut out = Vec::new();
    let mut start = 0u64;
    loop {
        let mut map = Box::new(Fiemap {
            fm_start: start,
            fm_length: u64::MAX - start,
            fm_flags: 0,
            fm_mapped_extents: 0,
            fm_extent_count: BATCH as u32,
            fm_reserved: 0,
            fm_extents: [FiemapExtent::default(); BATCH],
        });
        // SAFETY: FS_IOC_FIEMAP fills at most fm_extent_count extents of the struct we own.
        if unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP, &mut *map as *mut Fiemap) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let n = map.fm_mapped_extents as usize;
        for e in &map.fm_extents[..n.min(BATCH)] {
            out.push((e.fe_physical, e.fe_length, e.fe_flags));
        }
        match map.fm_extents[..n.min(BATCH)].last() {
            Some(last) if last.fe_flags & FIEMAP_EXTENT_LAST == 0 && n == BATCH => {
                start = last.fe_logical + last.fe_length;
            }
            _ => return Ok(out),
        }
    }
}

/// How many bytes of the ENCODED extents' logical length are not really on
/// disk (see the module comment). Pure, for tests.
pub fn encoded_savings(extents: &[Extent]) -> u64 {
    let mut on_disk: Vec<&Extent> = extents
        .iter()
        .filter(|e| e.2 & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC) == 0)
        .collect();
    on_disk.sort_by_key(|e| e.0);
    let mut saved = 0;
    for (i, &&(physical, length, flags)) in on_disk.iter().enumerate() {
        if flags & FIEMAP_EXTENT_ENCODED == 0 {
            continue;
        }
        // Extents sharing one compressed blob (reflinks, partial overwrites)
        // have the same physical start: the next *different* start bounds it.
        let next = on_disk[i + 1..].iter().map(|e| e.0).find(|&p| p > physical);
        let bound = next.map_or(length, |n| length.min(n - physical));
        saved += length - bound;
    }
    saved
}

/// Bytes the filesystem holds for one file: st_blocks, less what compression saves.
pub fn allocated_bytes(path: &Path) -> io::Result<u64> {
    let (blocks, saved) = blocks_and_savings(path)?;
    Ok(blocks.saturating_sub(saved))
}

/// st_blocks in bytes (btrfs counts compressed extents at their
/// uncompressed length there), and what compression saves of it.
pub fn blocks_and_savings(path: &Path) -> io::Result<(u64, u64)> {
    let file = File::open(path)?;
    let blocks = file.metadata()?.blocks() * 512;
    // FIEMAP is optional (tmpfs lacks it): then st_blocks is all we know.
    let saved = extents(&file).map(|e| encoded_savings(&e)).unwrap_or(0);
    Ok((blocks, saved))
}

/// The forks of a relation, as suffixes of its main fork's file name.
const FORKS: [&str; 4] = ["", "_fsm", "_vm", "_init"];
/// A segment after the first is only begun once the one before holds 1 GB.
const SEGMENT_BYTES: u64 = 1 << 30;

/// The sizes of many relations' files in one call (`layout()` of a schema
/// of 10 000 relations). Asking the filesystem about each fork and segment
/// that might exist costs five failed stat() calls for an empty table, and
/// FIEMAP on a filesystem that cannot compress tells nothing: so each
/// folder is listed once, only files that exist are looked at, and FIEMAP
/// is used only where compression can be. A segment begun after the
/// listing still counts (one is begun only when the one before is full);
/// a fork made meanwhile (a VACUUM's first visibility map) may not.
#[derive(Default)]
pub struct RelationSizer {
    folders: HashMap<PathBuf, Folder>,
}

struct Folder {
    names: HashSet<OsString>,
    may_compress: bool,
}

impl RelationSizer {
    /// (logical bytes, allocated bytes) of the relation whose main fork is
    /// `first`; None when that file is not there (a tmpfs tablespace after
    /// a reboot, a folder that cannot be read): unknown, never 0, which
    /// would read as "empty".
    pub fn sizes(&mut self, first: &Path) -> Option<(u64, u64)> {
        let (dir, base) = (first.parent()?, first.file_name()?);
        let folder = self
            .folders
            .entry(dir.to_path_buf())
            .or_insert_with(|| Folder::list(dir));
        folder.names.contains(base).then(|| self.bytes(first))
    }

    /// (logical bytes, allocated bytes) of the relation whose main fork is
    /// `first`, as relation_bytes() counts them.
    pub fn bytes(&mut self, first: &Path) -> (u64, u64) {
        let (Some(dir), Some(base)) = (first.parent(), first.file_name()) else {
            return (0, 0);
        };
        let folder = self
            .folders
            .entry(dir.to_path_buf())
            .or_insert_with(|| Folder::list(dir));
        let base = base.to_string_lossy();
        let (mut logical, mut allocated) = (0, 0);
        for fork in FORKS {
            let head = format!("{base}{fork}");
            let mut full = false;
            for seg in 0.. {
                let name = if seg == 0 {
                    head.clone()
                } else {
                    format!("{head}.{seg}")
                };
                if !full && !folder.names.contains(&OsString::from(&name)) {
                    break;
                }
                let path = dir.join(&name);
                let Ok(meta) = std::fs::metadata(&path) else {
                    break; // gone meanwhile (a TRUNCATE, a DROP)
                };
                let saved = if folder.may_compress {
                    File::open(&path)
                        .and_then(|f| extents(&f))
                        .map(|e| encoded_savings(&e))
                        .unwrap_or(0)
                } else {
                    0
                };
                logical += meta.len();
                allocated += (meta.blocks() * 512).saturating_sub(saved);
                full = meta.len() >= SEGMENT_BYTES;
            }
        }
        (logical, allocated)
    }
}

impl Folder {
    fn list(dir: &Path) -> Folder {
        let names = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok().map(|e| e.file_name()))
                    .collect()
            })
            .unwrap_or_default();
        Folder {
            names,
            may_compress: may_compress(dir),
        }
    }
}

/// Can files in this folder be stored compressed? Not on ext2/3/4, XFS or
/// tmpfs (statfs magic numbers from linux/magic.h); anywhere else (btrfs,
/// or a filesystem storlab does not know) FIEMAP is asked.
fn may_compress(dir: &Path) -> bool {
    const NEVER: [u64; 3] = [0xEF53, 0x5846_5342, 0x0102_1994];
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return true;
    };
    // SAFETY: statfs fills the struct we own from a NUL-terminated path.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return true;
    }
    !NEVER.contains(&(st.f_type as u64))
}

/// Every file of a relation whose main fork is `first` (`.../16384/24576`):
/// forks `_fsm`, `_vm`, `_init`, and segments `.1`, `.2`, ... of each.
pub fn relation_files(first: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let base = first.as_os_str().to_string_lossy().into_owned();
    for fork in FORKS {
        let head = PathBuf::from(format!("{base}{fork}"));
        if !head.exists() {
            continue;
        }
        files.push(head);
        for seg in 1.. {
            let p = PathBuf::from(format!("{base}{fork}.{seg}"));
            if !p.exists() {
                break;
            }
            files.push(p);
        }
    }
    files
}

/// (logical bytes, allocated bytes) of a relation's files. Files that vanish
/// meanwhile (a concurrent TRUNCATE or VACUUM) are not counted.
pub fn relation_bytes(first: &Path) -> (u64, u64) {
    relation_files(first).iter().fold((0, 0), |(l, a), f| {
        let logical = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        let allocated = allocated_bytes(f).unwrap_or(0);
        (l + logical, a + allocated)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn packed_compressed_extents_count_their_disk_share() {
        // btrfs with zstd: 128 kB extents each compressed into one 4 kB block
        let e: Vec<Extent> = (0..4)
            .map(|i| (1_000_000 + i * 4096, 131_072, FIEMAP_EXTENT_ENCODED))
            .collect();
        // three bounded by their successor, the last one only by its length
        assert_eq!(encoded_savings(&e), 3 * (131_072 - 4096));
    }

    #[test]
    fn plain_and_delalloc_extents_save_nothing() {
        let e = vec![
            (0, 65_536, 0),
            (65_536, 65_536, FIEMAP_EXTENT_LAST),
            (0, 8192, FIEMAP_EXTENT_DELALLOC),
        ];
        assert_eq!(encoded_savings(&e), 0);
        assert_eq!(encoded_savings(&[]), 0);
    }

    #[test]
    fn shared_and_far_apart_extents_are_bounded_sensibly() {
        let shared = vec![
            (500, 131_072, FIEMAP_EXTENT_ENCODED),
            (500, 131_072, FIEMAP_EXTENT_ENCODED),
            (8692, 4096, 0),
        ];
        assert_eq!(
            encoded_savings(&shared),
            2 * (131_072 - 8192),
            "both bounded by the next different start"
        );
        let far = vec![
            (0, 131_072, FIEMAP_EXTENT_ENCODED),
            (10_000_000, 131_072, 0),
        ];
        assert_eq!(
            encoded_savings(&far),
            0,
            "a gap wider than the extent bounds nothing"
        );
    }

    #[test]
    fn forks_and_segments_are_found_and_summed() {
        let dir = std::env::temp_dir().join(format!("storlab_alloc_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, len) in [
            ("16384", 8192),
            ("16384.1", 8192),
            ("16384_fsm", 24_576),
            ("16384_vm", 8192),
            ("163840", 99),
        ] {
            std::fs::File::create(dir.join(name))
                .unwrap()
                .write_all(&vec![7u8; len])
                .unwrap();
        }
        let files = relation_files(&dir.join("16384"));
        assert_eq!(
            files.len(),
            4,
            "another relation whose name starts alike is not ours: {files:?}"
        );
        let (logical, allocated) = relation_bytes(&dir.join("16384"));
        assert_eq!(logical, 8192 + 8192 + 24_576 + 8192);
        assert!(allocated > 0);
        assert_eq!(
            relation_bytes(&dir.join("99999")),
            (0, 0),
            "a relation without files"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_sizer_agrees_with_relation_bytes_and_sees_a_segment_begun_after_its_listing() {
        let dir = std::env::temp_dir().join(format!("storlab_sizer_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, len) in [("500", 8192), ("500_vm", 8192), ("5000", 99), ("600", 0)] {
            std::fs::File::create(dir.join(name))
                .unwrap()
                .write_all(&vec![1u8; len])
                .unwrap();
        }
        // a full first segment (sparse: no real space)
        std::fs::File::create(dir.join("700"))
            .unwrap()
            .set_len(SEGMENT_BYTES)
            .unwrap();
        let mut sizer = RelationSizer::default();
        for rel in ["500", "5000", "600", "99999"] {
            assert_eq!(
                sizer.bytes(&dir.join(rel)),
                relation_bytes(&dir.join(rel)),
                "relation {rel}"
            );
        }
        // the folder is listed by now: a second segment begun after it counts
        std::fs::File::create(dir.join("700.1"))
            .unwrap()
            .write_all(&[1u8; 100])
            .unwrap();
        assert_eq!(sizer.bytes(&dir.join("700")).0, SEGMENT_BYTES + 100);
        // a relation whose files are gone is unknown, not empty
        assert_eq!(sizer.sizes(&dir.join("99999")), None);
        assert_eq!(
            sizer.sizes(&dir.join("700")).map(|s| s.0),
            Some(SEGMENT_BYTES + 100)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_sparse_file_holds_less_than_its_length() {
        let dir = std::env::temp_dir().join(format!("storlab_sparse_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("sparse");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(64 << 20).unwrap();
        drop(f);
        assert!(allocated_bytes(&p).unwrap() < 1 << 20);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
