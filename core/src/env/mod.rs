//! Storage facts of a path: filesystem, mount options, device, rotational,
//! space, O_DIRECT support. Pure Rust (no PostgreSQL), read from the kernel.

pub mod allocation;
pub mod backing;
pub mod cgroup;
pub mod device;
pub mod direct_io;
pub mod diskstats;
pub mod mountinfo;
pub mod page_cache;
pub mod space;
pub mod stored;

use std::io;
use std::path::{Path, PathBuf};

/// What the kernel says about the storage behind one folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageFacts {
    /// The folder with symlinks resolved (tablespace locations and pg_wal are often links).
    pub location: PathBuf,
    pub fs_type: String,
    pub mount_point: PathBuf,
    pub mount_options: String,
    pub device: String,
    pub rotational: Option<bool>,
    pub fs_bytes: u64,
    pub free_bytes: u64,
    /// None when the check itself failed (e.g. no permission), not "no".
    pub direct_io: Option<bool>,
    /// What the device is: a loop device's image file, a zram device.
    pub backing: Option<String>,
    /// btrfs's data and metadata profiles, with its device count.
    pub raid_profile: Option<String>,
    /// What compresses the data: btrfs by mount option, or a zram device.
    pub compression: Option<String>,
    /// The cgroup I/O throttles on the device(s) under the filesystem
    /// (summed over btrfs's members).
    pub throttle: cgroup::Throttle,
}

/// The filesystem a folder is on, and no more: what [`facts`] reads first,
/// without its probes (an O_DIRECT test writes a file: never into pg_wal
/// while a benchmark runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The folder with symlinks resolved.
    pub location: PathBuf,
    pub fs_type: String,
    pub mount_point: PathBuf,
    /// st_dev of the folder: two folders with the same one are on the same filesystem.
    pub dev: u64,
}

/// The folder with its symlinks resolved, and the mount it is on.
fn located(path: &Path) -> io::Result<(PathBuf, mountinfo::Mount)> {
    let location = std::fs::canonicalize(path)?;
    let mounts = mountinfo::read_mounts()?;
    let mount = mountinfo::mount_of(&mounts, &location).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("no mount found for {}", location.display()),
        )
    })?;
    Ok((location, mount.clone()))
}

pub fn place(path: &Path) -> io::Result<Place> {
    use std::os::unix::fs::MetadataExt;
    let (location, mount) = located(path)?;
    let dev = std::fs::metadata(&location)?.dev();
    Ok(Place {
        fs_type: mount.fs_type.clone(),
        mount_point: mount.mount_point.clone(),
        location,
        dev,
    })
}

/// The filesystem a folder is on and the block devices beneath it, as the
/// kernel counts their I/O (`cgroup::mount_block_devices`: each member of
/// a btrfs over several, a partition as itself); none for a filesystem on
/// no block device (tmpfs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Devices {
    pub fs_type: String,
    pub mount_point: PathBuf,
    pub devices: Vec<cgroup::DevNo>,
}

pub fn devices_of(path: &Path) -> io::Result<Devices> {
    let (_, mount) = located(path)?;
    Ok(Devices {
        devices: cgroup::mount_block_devices(&mount, Path::new("/sys/fs/btrfs")),
        fs_type: mount.fs_type,
        mount_point: mount.mount_point,
    })
}

/// st_dev of a folder (symlinks followed): its filesystem.
pub fn device_of(path: &Path) -> io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata(path)?.dev())
}

pub fn facts(path: &Path) -> io::Result<StorageFacts> {
    let (location, mount) = located(path)?;
    let space = space::fs_space(&location)?;
    let device = backing::device_name(&mount.source);
    let sys_block = Path::new("/sys/block");
    Ok(StorageFacts {
        backing: device.and_then(|d| {
            backing::backing_of_mount(&mount.fs_type, d, sys_block, Path::new("/sys/fs/btrfs"))
        }),
        raid_profile: device
            .and_then(|d| backing::raid_profile(&mount.fs_type, d, Path::new("/sys/fs/btrfs"))),
        compression: backing::compression(
            &mount.fs_type,
            &mount.options,
            device.unwrap_or(""),
            sys_block,
        ),
        throttle: cgroup::mount_throttle(&mount),
        fs_type: mount.fs_type.clone(),
        mount_point: mount.mount_point.clone(),
        mount_options: mount.options.clone(),
        device: mount.source.clone(),
        rotational: device::rotational(&mount),
        fs_bytes: space.total_bytes,
        free_bytes: space.avail_bytes,
        // an O_DIRECT the filesystem turns into buffered I/O does not count
        direct_io: match direct_io::ignored_by(&mount.fs_type, &mount.options) {
            Some(_) => Some(false),
            None => direct_io::direct_io_works(&location).ok(),
        },
        location,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_of_a_linked_folder_resolve_the_link() {
        let base = std::env::temp_dir().join(format!("storlab_facts_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
        let f = facts(&base.join("link")).unwrap();
        assert_eq!(
            f.location,
            std::fs::canonicalize(base.join("real")).unwrap()
        );
        assert!(f.location.starts_with(&f.mount_point));
        assert!(f.free_bytes <= f.fs_bytes && f.fs_bytes > 0);
        assert!(!f.fs_type.is_empty() && !f.device.is_empty());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn dev_shm_is_tmpfs_without_a_device_answer() {
        if !Path::new("/dev/shm").exists() {
            eprintln!("skipped: no /dev/shm");
            return;
        }
        let f = facts(Path::new("/dev/shm")).unwrap();
        assert_eq!(f.fs_type, "tmpfs");
        assert_eq!(f.rotational, None);
    }

    #[test]
    fn the_place_of_a_linked_folder_is_its_target_s_filesystem() {
        let base = std::env::temp_dir().join(format!("storlab_place_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
        let p = place(&base.join("link")).unwrap();
        let f = facts(&base.join("real")).unwrap();
        assert_eq!(p.location, f.location);
        assert_eq!(p.mount_point, f.mount_point);
        assert_eq!(p.fs_type, f.fs_type);
        assert_eq!(p.dev, device_of(&base).unwrap());
        std::fs::remove_dir_all(&base).unwrap();
        if Path::new("/dev/shm").exists() {
            assert_ne!(device_of(Path::new("/dev/shm")).unwrap(), p.dev);
        }
    }

    #[test]
    fn devices_under_a_folder() {
        let root = devices_of(Path::new("/")).unwrap();
        assert!(!root.fs_type.is_empty());
        if Path::new("/dev/shm").exists() {
            let shm = devices_of(Path::new("/dev/shm")).unwrap();
            assert_eq!(shm.fs_type, "tmpfs");
            assert!(shm.devices.is_empty(), "{shm:?}");
        }
        assert!(devices_of(Path::new("/no/such/storlab/folder")).is_err());
    }

    #[test]
    fn missing_folder_is_an_error() {
        assert!(facts(Path::new("/no/such/storlab/folder")).is_err());
    }
}

/// Storage that loses its contents at a reboot: RAM filesystems, and
/// filesystems on a zram (compressed RAM) block device.
pub fn is_volatile(fs_type: &str, device: &str) -> bool {
    matches!(fs_type, "tmpfs" | "ramfs") || device.trim_start_matches("/dev/").starts_with("zram")
}

#[cfg(test)]
mod volatile_tests {
    use super::is_volatile;

    #[test]
    fn ram_backed_storage_is_volatile() {
        assert!(is_volatile("tmpfs", "tmpfs"));
        assert!(is_volatile("ramfs", "none"));
        assert!(is_volatile("ext4", "/dev/zram0"));
        assert!(!is_volatile("ext4", "/dev/vda1"));
        assert!(!is_volatile("xfs", "/dev/loop3"));
    }
}
