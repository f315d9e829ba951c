//! What a relation costs the storage: the length of its files (logical),
//! the blocks the filesystem allocated for them, and what the storage
//! really holds after compression, where the kernel can tell:
//! - btrfs with compression: FIEMAP marks compressed extents "encoded", and
//!   their on-disk length is what is stored (allocation::encoded_savings);
//! - a zram device (the lab's stand-in for a compressing SSD): the device
//!   compresses whole blocks; its mm_stat says how many bytes of RAM hold how
//!   many bytes written, and that ratio applies to every file on it (a
//!   device-wide figure: the lab's zram holds only the experiment's data);
//! - tmpfs: RAM holds exactly the allocated pages.
//!
//! Anything else (ext4, xfs on a disk whose controller may or may not
//! compress) is not known: None, shown as NULL.

use std::path::Path;

use super::allocation;
use super::backing;
use super::mountinfo;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelationSizes {
    /// The files' length, every fork and segment.
    pub logical: u64,
    /// The filesystem's blocks (st_blocks), before any compression.
    pub allocated: u64,
    /// What compressed extents saved (btrfs), from FIEMAP.
    pub compressed_savings: u64,
}

/// The sizes of a relation whose main fork is `first` (its other forks and
/// segments beside it).
pub fn relation_sizes(first: &Path) -> RelationSizes {
    allocation::relation_files(first)
        .iter()
        .fold(RelationSizes::default(), |acc, f| {
            let (blocks, saved) = allocation::blocks_and_savings(f).unwrap_or((0, 0));
            RelationSizes {
                logical: acc.logical + std::fs::metadata(f).map(|m| m.len()).unwrap_or(0),
                allocated: acc.allocated + blocks,
                compressed_savings: acc.compressed_savings + saved,
            }
        })
}

/// What the storage behind `folder` holds for a relation of these sizes;
/// None where the kernel cannot tell.
pub fn stored_bytes(folder: &Path, sizes: &RelationSizes) -> Option<u64> {
    let location = std::fs::canonicalize(folder).ok()?;
    let mounts = mountinfo::read_mounts().ok()?;
    let mount = mountinfo::mount_of(&mounts, &location)?;
    stored_on(
        &mount.fs_type,
        &mount.options,
        &mount.source,
        sizes,
        &|dev| std::fs::read_to_string(format!("/sys/block/{dev}/mm_stat")).ok(),
    )
}

/// The rule of [`stored_bytes`], with the device's mm_stat read through
/// `mm_stat` (so that tests can give one).
fn stored_on(
    fs_type: &str,
    mount_options: &str,
    device: &str,
    sizes: &RelationSizes,
    mm_stat: &dyn Fn(&str) -> Option<String>,
) -> Option<u64> {
    if let Some(dev) = backing::device_name(device).filter(|d| d.starts_with("zram")) {
        let ratio = zram_ratio(&mm_stat(dev)?)?;
        return Some((sizes.allocated as f64 * ratio).round() as u64);
    }
    // btrfs compresses by mount option, as tablespaces() reports it
    if backing::fs_compression(fs_type, mount_options).is_some() {
        return Some(sizes.allocated.saturating_sub(sizes.compressed_savings));
    }
    match fs_type {
        "tmpfs" => Some(sizes.allocated),
        _ => None,
    }
}

/// Bytes of RAM a zram device uses per byte written to it, from its
/// mm_stat: mem_used_total (field 3: compressed data and the allocator's
/// overhead) over what was written, orig_data_size (field 1) plus the
/// same-filled pages (field 6, stored as one word each and counted in
/// neither), in 4 kB pages. None for an empty device.
pub fn zram_ratio(mm_stat: &str) -> Option<f64> {
    let f: Vec<u64> = mm_stat
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<Vec<_>>>()?;
    let (orig, used, same) = (*f.first()?, *f.get(2)?, *f.get(5)?);
    let written = orig + same * 4096;
    (written > 0).then(|| used as f64 / written as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MM: &str =
        "  4194304   1048576   1310720        0  1310720        256        0        0        0\n";

    fn sizes() -> RelationSizes {
        RelationSizes {
            logical: 10 << 20,
            allocated: 10 << 20,
            compressed_savings: 6 << 20,
        }
    }

    #[test]
    fn zram_stores_what_its_ratio_says() {
        // 4 MiB written + 256 same-filled pages (1 MiB) held in 1.25 MiB of RAM
        assert_eq!(zram_ratio(MM), Some(0.25));
        assert_eq!(
            zram_ratio("0 0 0 0 0 0 0 0 0"),
            None,
            "an empty device has no ratio"
        );
        assert_eq!(zram_ratio("garbage"), None);
        let s = stored_on("ext4", "rw,relatime", "/dev/zram0", &sizes(), &|d| {
            assert_eq!(d, "zram0");
            Some(MM.into())
        });
        assert_eq!(s, Some((10 << 20) / 4));
    }

    #[test]
    fn btrfs_stores_less_only_when_it_compresses() {
        let none = &|_: &str| None;
        assert_eq!(
            stored_on(
                "btrfs",
                "rw,compress=zstd:3,space_cache=v2",
                "/dev/loop3",
                &sizes(),
                none
            ),
            Some(4 << 20)
        );
        assert_eq!(
            stored_on(
                "btrfs",
                "rw,compress-force=lzo",
                "/dev/loop3",
                &sizes(),
                none
            ),
            Some(4 << 20)
        );
        assert_eq!(
            stored_on("btrfs", "rw,relatime", "/dev/loop3", &sizes(), none),
            None
        );
        // compression turned off by option stores what it allocates: unknown
        assert_eq!(
            stored_on("btrfs", "rw,compress=no", "/dev/loop3", &sizes(), none),
            None
        );
    }

    #[test]
    fn unknown_storage_is_none_and_ram_is_what_it_allocates() {
        let none = &|_: &str| None;
        assert_eq!(stored_on("ext4", "rw", "/dev/vda", &sizes(), none), None);
        assert_eq!(stored_on("xfs", "rw", "/dev/loop1", &sizes(), none), None);
        assert_eq!(
            stored_on("tmpfs", "rw", "tmpfs", &sizes(), none),
            Some(10 << 20)
        );
    }

    #[test]
    fn sizes_of_a_relation_count_every_fork_and_segment() {
        let dir = std::env::temp_dir().join(format!("storlab_stored_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("16384"), vec![1u8; 8192]).unwrap();
        std::fs::write(dir.join("16384.1"), vec![1u8; 8192]).unwrap();
        std::fs::write(dir.join("16384_fsm"), vec![1u8; 8192]).unwrap();
        let s = relation_sizes(&dir.join("16384"));
        assert_eq!(s.logical, 3 * 8192);
        assert!(s.allocated >= s.logical / 2, "{s:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
