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

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
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

/// Every file of a relation whose main fork is `first` (`.../16384/24576`):
/// forks `_fsm`, `_vm`, `_init`, and segments `.1`, `.2`, ... of each.
pub fn relation_files(first: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let base = first.as_os_str().to_string_lossy().into_owned();
    for fork in ["", "_fsm", "_vm", "_init"] {
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
