//! What the kernel says about the block device behind a mount (sysfs).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::mountinfo::Mount;

/// The sysfs folder of the block device a mount sits on, if it is one.
///
/// mountinfo's major:minor is the device for ext4/xfs, but btrfs (and every
/// virtual filesystem) reports an anonymous 0:N there, so for those we stat
/// the mount source instead (`/dev/loop2` for the lab's btrfs).
fn sysfs_dir(mount: &Mount) -> Option<PathBuf> {
    let (major, minor) = if mount.major != 0 {
        (mount.major, mount.minor)
    } else {
        let meta = std::fs::metadata(&mount.source).ok()?;
        use std::os::unix::fs::FileTypeExt;
        if !meta.file_type().is_block_device() {
            return None;
        }
        let rdev = meta.rdev();
        (libc::major(rdev), libc::minor(rdev))
    };
    let dir = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    dir.exists().then_some(dir)
}

/// `queue/rotational` of the device, or of its parent disk for a partition
/// (partitions have no queue folder of their own). None when the kernel does not say.
pub fn rotational(mount: &Mount) -> Option<bool> {
    let dir = std::fs::canonicalize(sysfs_dir(mount)?).ok()?;
    let read = |d: &Path| std::fs::read_to_string(d.join("queue/rotational")).ok();
    let text = read(&dir).or_else(|| read(dir.parent()?))?;
    match text.trim() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_filesystems_have_no_device_answer() {
        let tmpfs = Mount {
            mount_point: "/dev/shm".into(),
            major: 0,
            minor: 23,
            fs_type: "tmpfs".into(),
            source: "tmpfs".into(),
            options: "rw".into(),
        };
        assert_eq!(rotational(&tmpfs), None);
    }

    #[test]
    fn root_device_answers_when_it_is_a_block_device() {
        let mounts = super::super::mountinfo::read_mounts().unwrap();
        let root = super::super::mountinfo::mount_of(&mounts, Path::new("/")).unwrap();
        // Containers may put / on overlayfs (no device); a real disk must answer.
        if root.major != 0
            && Path::new(&format!("/sys/dev/block/{}:{}", root.major, root.minor)).exists()
        {
            assert!(
                rotational(root).is_some(),
                "sysfs has queue/rotational for {root:?}"
            );
        }
    }
}
