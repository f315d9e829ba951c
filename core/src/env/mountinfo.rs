//! Which mount a folder lives on, read from `/proc/self/mountinfo`.
//!
//! Parsed here rather than with procfs-core: that crate keeps mount options in
//! hash maps, which loses their order, and DBAs compare our `mount_options`
//! with `findmnt` / `mount` output, where order is the kernel's.

use std::path::{Component, Path, PathBuf};

/// One line of mountinfo (proc(5)), with the fields we report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub mount_point: PathBuf,
    /// `major:minor` of st_dev for files on this mount (0:N for btrfs, tmpfs, ...).
    pub major: u32,
    pub minor: u32,
    pub fs_type: String,
    /// The mount source: a device path for block filesystems, a label otherwise.
    pub source: String,
    /// Per-mount options followed by the superblock options not already listed,
    /// the same merge the kernel prints in /proc/self/mounts and findmnt shows.
    pub options: String,
}

/// Undo the octal escapes the kernel puts in paths (`\040` for a space, ...).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        // \ooo with a first digit of at most 3, so the value fits a byte
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d[0] <= b'3' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn merge_options(mount_opts: &str, super_opts: &str) -> String {
    let mut merged: Vec<&str> = mount_opts.split(',').filter(|o| !o.is_empty()).collect();
    for opt in super_opts.split(',').filter(|o| !o.is_empty()) {
        // rw/ro is repeated in both lists; the mount's own flag is the one in force.
        if opt == "rw" || opt == "ro" || merged.contains(&opt) {
            continue;
        }
        merged.push(opt);
    }
    merged.join(",")
}

/// Parse one mountinfo line; None for a line that does not have the documented shape.
pub fn parse_line(line: &str) -> Option<Mount> {
    let (left, right) = line.split_once(" - ")?;
    let left: Vec<&str> = left.split(' ').collect();
    let right: Vec<&str> = right.split(' ').collect();
    if left.len() < 6 || right.len() < 3 {
        return None;
    }
    let (major, minor) = left[2].split_once(':')?;
    Some(Mount {
        mount_point: PathBuf::from(unescape(left[4])),
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
        fs_type: unescape(right[0]),
        source: unescape(right[1]),
        options: merge_options(left[5], right[2]),
    })
}

pub fn parse(text: &str) -> Vec<Mount> {
    text.lines().filter_map(parse_line).collect()
}

pub fn read_mounts() -> std::io::Result<Vec<Mount>> {
    Ok(parse(&std::fs::read_to_string("/proc/self/mountinfo")?))
}

/// The mount a canonical (symlink-free, absolute) path lives on: the longest
/// mount point that is a prefix of it, component-wise; of several mounts on the
/// same point the last one listed, since it hides the others.
pub fn mount_of<'a>(mounts: &'a [Mount], canonical: &Path) -> Option<&'a Mount> {
    let depth = |p: &Path| {
        p.components()
            .filter(|c| matches!(c, Component::Normal(_)))
            .count()
    };
    let mut best: Option<&Mount> = None;
    for m in mounts {
        if canonical.starts_with(&m.mount_point)
            && best.is_none_or(|b| depth(&m.mount_point) >= depth(&b.mount_point))
        {
            best = Some(m);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683656k
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict
30 25 0:27 / /dev/shm rw,nosuid - tmpfs tmpfs rw,size=1024k
41 27 7:1 / /mnt/lab\\040space rw,noatime shared:5 master:2 - xfs /dev/loop1 rw,attr2,inode64,noquota
42 27 0:45 / /mnt/lab/btrfs rw,relatime - btrfs /dev/loop2 rw,compress=zstd:3,space_cache=v2,subvolid=5,subvol=/
garbage line
";

    #[test]
    fn parses_fields_and_merges_options_like_the_kernel() {
        let m = parse(SAMPLE);
        assert_eq!(m.len(), 5, "the garbage line is skipped");
        assert_eq!(m[1].fs_type, "ext4");
        assert_eq!(m[1].source, "/dev/vda");
        assert_eq!((m[1].major, m[1].minor), (254, 0));
        assert_eq!(m[1].options, "rw,relatime,discard,resv_strict");
        assert_eq!(
            m[4].options,
            "rw,relatime,compress=zstd:3,space_cache=v2,subvolid=5,subvol=/"
        );
    }

    #[test]
    fn optional_fields_and_escapes() {
        let m = parse(SAMPLE);
        assert_eq!(m[3].mount_point, PathBuf::from("/mnt/lab space"));
        assert_eq!(m[3].fs_type, "xfs");
        assert_eq!(m[3].options, "rw,noatime,attr2,inode64,noquota");
        assert_eq!(unescape("a\\134b\\011"), "a\\b\t");
        assert_eq!(
            unescape("trailing\\04"),
            "trailing\\04",
            "a cut escape is kept as is"
        );
    }

    #[test]
    fn longest_prefix_and_overmount_win() {
        let m = parse(SAMPLE);
        let at = |p: &str| mount_of(&m, Path::new(p)).map(|m| m.mount_point.clone());
        assert_eq!(at("/dev/shm/x"), Some(PathBuf::from("/dev/shm")));
        assert_eq!(
            mount_of(&m, Path::new("/dev/shm/x")).unwrap().options,
            "rw,nosuid,size=1024k"
        );
        assert_eq!(at("/var/lib/postgresql"), Some(PathBuf::from("/")));
        assert_eq!(
            at("/mnt/lab/btrfs/ts"),
            Some(PathBuf::from("/mnt/lab/btrfs"))
        );
        // component-wise: /mnt/lab/btrfsX is not under /mnt/lab/btrfs
        assert_eq!(at("/mnt/lab/btrfsX"), Some(PathBuf::from("/")));
    }

    #[test]
    fn reads_this_machine() {
        let mounts = read_mounts().expect("mountinfo readable");
        let root = mount_of(&mounts, Path::new("/")).expect("/ is mounted");
        assert_eq!(root.mount_point, PathBuf::from("/"));
        assert!(!root.fs_type.is_empty());
    }
}
