//! What stands behind a mount's block device, for `tablespaces()`: the
//! file a loop device reads and writes, a zram device and its algorithm,
//! btrfs's RAID profile over its devices, and what compresses the data
//! (btrfs's `compress` option, a zram device). Read from sysfs; the parsing
//! is pure and tested on its own.

use std::path::{Path, PathBuf};

/// The btrfs block-group profiles sysfs lists under `allocation/<type>/`.
const PROFILES: [&str; 9] = [
    "single", "dup", "raid0", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6",
];

/// The device name of a mount source: `/dev/loop3` -> `loop3`.
pub fn device_name(source: &str) -> Option<&str> {
    source
        .strip_prefix("/dev/")
        .filter(|n| !n.is_empty() && !n.contains('/'))
}

/// The algorithm a zram device uses: sysfs lists every one it knows and
/// marks the chosen one, `lzo lzo-rle [lz4] zstd`.
pub fn selected_algorithm(comp_algorithm: &str) -> Option<String> {
    comp_algorithm
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .map(str::to_string)
}

/// What the device is: `loop image /path/x.img`, `zram (lz4)`, or None for
/// a plain disk (its name is already in `device`).
pub fn backing(device: &str, sys_block: &Path) -> Option<String> {
    let dir = sys_block.join(device);
    if device.starts_with("loop") {
        let file = std::fs::read_to_string(dir.join("loop/backing_file")).ok()?;
        return Some(format!("loop image {}", file.trim()));
    }
    if device.starts_with("zram") {
        let alg = std::fs::read_to_string(dir.join("comp_algorithm")).ok();
        return Some(match alg.as_deref().and_then(selected_algorithm) {
            Some(a) => format!("zram ({a})"),
            None => "zram".to_string(),
        });
    }
    None
}

/// The btrfs filesystem folder in sysfs (`/sys/fs/btrfs/<fsid>`) whose
/// `devices/` lists this device.
pub fn btrfs_fs_dir_for(device: &str, sys_fs_btrfs: &Path) -> Option<PathBuf> {
    std::fs::read_dir(sys_fs_btrfs)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("devices").join(device).exists())
}

/// The devices a btrfs filesystem spans, by name, in number order (loop8
/// before loop10).
pub fn btrfs_devices(fs_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fs_dir.join("devices"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
    names
}

/// What stands behind every device of the mount: for btrfs over several
/// devices each one's (`loop image a.img, loop image b.img`), else the one.
pub fn backing_of_mount(
    fs_type: &str,
    device: &str,
    sys_block: &Path,
    sys_fs_btrfs: &Path,
) -> Option<String> {
    let devices = match fs_type {
        "btrfs" => btrfs_fs_dir_for(device, sys_fs_btrfs)
            .map(|d| btrfs_devices(&d))
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| vec![device.to_string()]),
        _ => vec![device.to_string()],
    };
    let each: Vec<String> = devices
        .iter()
        .filter_map(|d| backing(d, sys_block))
        .collect();
    (!each.is_empty()).then(|| each.join(", "))
}

/// The profiles present under `allocation/<kind>/` (data, metadata).
fn profiles_of(fs_dir: &Path, kind: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(fs_dir.join("allocation").join(kind)) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| PROFILES.contains(&n.as_str()))
        .collect();
    found.sort();
    found
}

/// `data raid6, metadata raid1 (4 devices)`. A filesystem being converted
/// (a balance to another profile) has block groups of both: the one that
/// is not `single` (a fresh filesystem's leftover) names it.
pub fn profile_text(data: &[String], metadata: &[String], devices: usize) -> Option<String> {
    fn pick(p: &[String]) -> Option<&str> {
        p.iter()
            .map(String::as_str)
            .find(|p| *p != "single")
            .or_else(|| p.first().map(String::as_str))
    }
    let (d, m) = (pick(data)?, pick(metadata));
    let mut text = format!("data {d}");
    if let Some(m) = m {
        text.push_str(&format!(", metadata {m}"));
    }
    if devices > 1 {
        text.push_str(&format!(" ({devices} devices)"));
    }
    Some(text)
}

/// btrfs's RAID profile for a mount on `device`; None for other filesystems.
pub fn raid_profile(fs_type: &str, device: &str, sys_fs_btrfs: &Path) -> Option<String> {
    if fs_type != "btrfs" {
        return None;
    }
    let dir = btrfs_fs_dir_for(device, sys_fs_btrfs)?;
    profile_text(
        &profiles_of(&dir, "data"),
        &profiles_of(&dir, "metadata"),
        btrfs_devices(&dir).len(),
    )
}

/// The compression btrfs applies by mount option: `compress=zstd:3` or
/// `compress-force=lzo` -> `zstd:3 (btrfs)`.
pub fn fs_compression(fs_type: &str, mount_options: &str) -> Option<String> {
    if fs_type != "btrfs" {
        return None;
    }
    mount_options.split(',').find_map(|o| {
        let alg = o
            .strip_prefix("compress-force=")
            .or_else(|| o.strip_prefix("compress="))?;
        (alg != "no" && alg != "none").then(|| format!("{alg} (btrfs)"))
    })
}

/// What compresses data on this mount: the filesystem (btrfs), or the block
/// device (zram); None when nothing does that the kernel knows of.
pub fn compression(
    fs_type: &str,
    mount_options: &str,
    device: &str,
    sys_block: &Path,
) -> Option<String> {
    if let Some(c) = fs_compression(fs_type, mount_options) {
        return Some(c);
    }
    if device.starts_with("zram") {
        let alg = std::fs::read_to_string(sys_block.join(device).join("comp_algorithm")).ok()?;
        return selected_algorithm(&alg).map(|a| format!("{a} (zram)"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A scratch folder of this test's own.
    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("storlab_backing_{name}_{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_bracketed_algorithm_is_the_one_in_use() {
        assert_eq!(
            selected_algorithm("lzo lzo-rle [lz4] zstd\n").as_deref(),
            Some("lz4")
        );
        assert_eq!(
            selected_algorithm("[lzo-rle] lzo lz4").as_deref(),
            Some("lzo-rle")
        );
        assert_eq!(selected_algorithm("lzo lz4"), None);
    }

    #[test]
    fn device_names_come_from_dev_paths_only() {
        assert_eq!(device_name("/dev/loop3"), Some("loop3"));
        assert_eq!(device_name("/dev/mapper/vg-root"), None);
        assert_eq!(device_name("tmpfs"), None);
    }

    #[test]
    fn loop_and_zram_devices_say_what_is_behind_them() {
        let sys = scratch("block");
        fs::create_dir_all(sys.join("loop4/loop")).unwrap();
        fs::write(
            sys.join("loop4/loop/backing_file"),
            "/var/tmp/lab/images/ext4.0.img\n",
        )
        .unwrap();
        fs::create_dir_all(sys.join("zram1")).unwrap();
        fs::write(sys.join("zram1/comp_algorithm"), "lzo lzo-rle [lz4] zstd\n").unwrap();
        fs::create_dir_all(sys.join("vda")).unwrap();
        assert_eq!(
            backing("loop4", &sys).as_deref(),
            Some("loop image /var/tmp/lab/images/ext4.0.img")
        );
        assert_eq!(backing("zram1", &sys).as_deref(), Some("zram (lz4)"));
        assert_eq!(backing("vda", &sys), None);
        // a loop device without a file (detached meanwhile): unknown, not an error
        fs::create_dir_all(sys.join("loop9")).unwrap();
        assert_eq!(backing("loop9", &sys), None);
        assert_eq!(
            compression("ext4", "rw,discard", "zram1", &sys).as_deref(),
            Some("lz4 (zram)")
        );
        assert_eq!(compression("ext4", "rw", "loop4", &sys), None);
        fs::remove_dir_all(&sys).unwrap();
    }

    #[test]
    fn btrfs_profiles_are_found_through_the_device() {
        let sys = scratch("btrfs");
        let fsdir = sys.join("0a1b-uuid");
        for dev in ["loop8", "loop9", "loop10", "loop11"] {
            fs::create_dir_all(fsdir.join("devices").join(dev)).unwrap();
        }
        for p in [
            "allocation/data/raid6",
            "allocation/metadata/raid1",
            "allocation/system/raid1",
        ] {
            fs::create_dir_all(fsdir.join(p)).unwrap();
        }
        // files beside the profile folders are not profiles
        fs::write(fsdir.join("allocation/data/total_bytes"), "0").unwrap();
        fs::create_dir_all(sys.join("other-uuid/devices/loop2")).unwrap();
        assert_eq!(btrfs_fs_dir_for("loop9", &sys), Some(fsdir.clone()));
        assert_eq!(
            raid_profile("btrfs", "loop9", &sys).as_deref(),
            Some("data raid6, metadata raid1 (4 devices)")
        );
        assert_eq!(raid_profile("ext4", "loop9", &sys), None);
        // every member's image, in device order
        let block = sys.join("block");
        for (dev, img) in [
            ("loop8", "a"),
            ("loop9", "b"),
            ("loop10", "c"),
            ("loop11", "d"),
        ] {
            fs::create_dir_all(block.join(dev).join("loop")).unwrap();
            fs::write(
                block.join(dev).join("loop/backing_file"),
                format!("/i/{img}.img"),
            )
            .unwrap();
        }
        assert_eq!(
            backing_of_mount("btrfs", "loop8", &block, &sys).as_deref(),
            Some("loop image /i/a.img, loop image /i/b.img, loop image /i/c.img, loop image /i/d.img")
        );
        assert_eq!(
            backing_of_mount("ext4", "loop8", &block, &sys).as_deref(),
            Some("loop image /i/a.img")
        );
        assert_eq!(raid_profile("btrfs", "loop99", &sys), None);
        fs::remove_dir_all(&sys).unwrap();
    }

    #[test]
    fn a_converting_filesystem_is_named_by_its_target_profile() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            profile_text(&s(&["raid1", "single"]), &s(&["dup"]), 2).as_deref(),
            Some("data raid1, metadata dup (2 devices)")
        );
        assert_eq!(
            profile_text(&s(&["single"]), &s(&["dup"]), 1).as_deref(),
            Some("data single, metadata dup")
        );
        assert_eq!(profile_text(&[], &s(&["dup"]), 1), None);
    }

    #[test]
    fn btrfs_compression_comes_from_its_mount_options() {
        assert_eq!(
            fs_compression("btrfs", "rw,relatime,compress=zstd:3,space_cache=v2").as_deref(),
            Some("zstd:3 (btrfs)")
        );
        assert_eq!(
            fs_compression("btrfs", "rw,compress-force=lzo").as_deref(),
            Some("lzo (btrfs)")
        );
        assert_eq!(fs_compression("btrfs", "rw,relatime,space_cache=v2"), None);
        assert_eq!(fs_compression("ext4", "rw,compress=zstd"), None);
        // no level given: the algorithm alone
        assert_eq!(
            fs_compression("btrfs", "rw,compress=zstd").as_deref(),
            Some("zstd (btrfs)")
        );
        // compression switched off by option is no compression
        assert_eq!(fs_compression("btrfs", "rw,compress=no"), None);
        assert_eq!(fs_compression("btrfs", "rw,compress-force=none"), None);
    }

    #[test]
    fn compression_asks_the_filesystem_then_the_device() {
        let sys = scratch("compression");
        fs::create_dir_all(sys.join("zram2")).unwrap();
        fs::write(sys.join("zram2/comp_algorithm"), "lzo-rle lzo lz4 [zstd]\n").unwrap();
        assert_eq!(
            compression("btrfs", "rw,compress-force=zstd:3", "loop8", &sys).as_deref(),
            Some("zstd:3 (btrfs)")
        );
        assert_eq!(
            compression("ext4", "rw", "zram2", &sys).as_deref(),
            Some("zstd (zram)")
        );
        // a zram device gone meanwhile: nothing known, not an error
        assert_eq!(compression("ext4", "rw", "zram7", &sys), None);
        assert_eq!(compression("xfs", "rw", "", &sys), None);
        fs::remove_dir_all(&sys).unwrap();
    }

    #[test]
    fn unknown_devices_and_folders_give_nothing() {
        let sys = scratch("unknown");
        // /sys/fs/btrfs holds `features` beside the filesystems, with no devices
        fs::create_dir_all(sys.join("features")).unwrap();
        assert_eq!(btrfs_fs_dir_for("loop3", &sys), None);
        assert_eq!(btrfs_fs_dir_for("loop3", &sys.join("absent")), None);
        assert!(btrfs_devices(&sys.join("absent")).is_empty());
        assert_eq!(raid_profile("btrfs", "loop3", &sys), None);
        // btrfs whose sysfs folder cannot be found: the mount's own device
        fs::create_dir_all(sys.join("loop3/loop")).unwrap();
        fs::write(sys.join("loop3/loop/backing_file"), "/i/x.img (deleted)\n").unwrap();
        assert_eq!(
            backing_of_mount("btrfs", "loop3", &sys, &sys).as_deref(),
            Some("loop image /i/x.img (deleted)")
        );
        // a zram device whose algorithm cannot be read is still a zram device
        fs::create_dir_all(sys.join("zram3")).unwrap();
        assert_eq!(backing("zram3", &sys).as_deref(), Some("zram"));
        assert_eq!(backing_of_mount("ext4", "vda", &sys, &sys), None);
        fs::remove_dir_all(&sys).unwrap();
    }

    #[test]
    fn single_is_passed_over_whatever_the_order() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            profile_text(&s(&["single", "raid6"]), &s(&["raid1", "single"]), 4).as_deref(),
            Some("data raid6, metadata raid1 (4 devices)")
        );
        assert_eq!(
            profile_text(&s(&["raid0"]), &[], 2).as_deref(),
            Some("data raid0 (2 devices)")
        );
    }
}
