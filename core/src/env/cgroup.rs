//! What the server runs under, from its control groups: the memory limit of
//! its group (page cache is charged to it, so it bounds what the OS can
//! cache for PostgreSQL too) and the I/O throttles that apply to a block
//! device (cgroup v1 `blkio.throttle.*_device`, cgroup v2 `io.max`).
//!
//! A limit set on any group between the server's and the root applies to
//! the server, so each is the smallest one found along that path. Read from
//! `/proc/self/cgroup`, `/proc/self/mountinfo` and the cgroup filesystems;
//! the parsing is pure and tested on its own.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

use super::backing;
use super::mountinfo::{self, Mount};

/// A cgroup v1 memory limit at or above this is "no limit": the kernel
/// shows an unset limit as the largest page count times the page size
/// (9223372036854771712 with 4 kB pages), and no machine has 4 EiB.
const V1_UNLIMITED: u64 = 1 << 62;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// The server's group in the hierarchy of one controller: the folders of
/// the group and of each ancestor, the group's first and the root's last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Groups {
    pub version: Version,
    pub dirs: Vec<PathBuf>,
}

/// The group of `controller` (`memory`, `blkio`) in `/proc/self/cgroup`:
/// the v1 line naming it (`4:memory:/lab`), else the v2 line (`0::/lab`),
/// where every controller of the unified hierarchy lives.
pub fn group_of(proc_cgroup: &str, controller: &str) -> Option<(Version, String)> {
    let mut v2 = None;
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if controllers.split(',').any(|c| c == controller) {
            return Some((Version::V1, path.to_string()));
        }
        if id == "0" && controllers.is_empty() {
            v2 = Some((Version::V2, path.to_string()));
        }
    }
    v2
}

/// Where the hierarchy is mounted, and which of its groups the mount shows
/// as its root (not `/` where a container sees a subtree only): a `cgroup`
/// mount with the controller among its options for v1, the `cgroup2` mount
/// for v2.
pub fn hierarchy_mount(
    mountinfo: &str,
    version: Version,
    controller: &str,
) -> Option<(PathBuf, String)> {
    mountinfo.lines().find_map(|line| {
        let m = mountinfo::parse_line(line)?;
        let wanted = match version {
            Version::V1 => m.fs_type == "cgroup" && m.options.split(',').any(|o| o == controller),
            Version::V2 => m.fs_type == "cgroup2",
        };
        // mountinfo's fourth field: the root of the mount within its filesystem
        let root = line.split(' ').nth(3)?;
        wanted.then(|| (m.mount_point, root.to_string()))
    })
}

/// The folders of a group and of its ancestors up to the hierarchy's root
/// as mounted: `/lab/pg` under a mount at /sys/fs/cgroup/memory gives
/// .../memory/lab/pg, .../memory/lab, .../memory.
pub fn group_dirs(mount_point: &Path, mount_root: &str, path: &str) -> Vec<PathBuf> {
    let rel = Path::new(path)
        .strip_prefix(mount_root)
        .unwrap_or(Path::new(path));
    let parts: Vec<_> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect();
    (0..=parts.len())
        .rev()
        .map(|n| {
            parts[..n]
                .iter()
                .fold(mount_point.to_path_buf(), |d, p| d.join(p))
        })
        .collect()
}

/// The server's groups for `controller`, read from this process's files.
pub fn server_groups(controller: &str) -> Option<Groups> {
    let proc_cgroup = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (version, path) = group_of(&proc_cgroup, controller)?;
    let (mount_point, root) = hierarchy_mount(&mountinfo, version, controller)?;
    Some(Groups {
        version,
        dirs: group_dirs(&mount_point, &root, &path),
    })
}

/// One group's memory limit file: v1 `memory.limit_in_bytes` (a huge
/// value when unset), v2 `memory.max` (`max` when unset). None: no limit.
pub fn parse_memory_limit(text: &str, version: Version) -> Option<u64> {
    let text = text.trim();
    if version == Version::V2 && text == "max" {
        return None;
    }
    let n: u64 = text.parse().ok()?;
    (version == Version::V2 || n < V1_UNLIMITED).then_some(n)
}

/// The smallest memory limit of these groups; None when none has one.
pub fn memory_limit_of(groups: &Groups) -> Option<u64> {
    let file = match groups.version {
        Version::V1 => "memory.limit_in_bytes",
        Version::V2 => "memory.max",
    };
    groups
        .dirs
        .iter()
        .filter_map(|d| std::fs::read_to_string(d.join(file)).ok())
        .filter_map(|t| parse_memory_limit(&t, groups.version))
        .min()
}

/// The memory limit the server runs under (page cache included); None
/// when no group of its sets one, or cgroups cannot be read.
pub fn memory_limit() -> Option<u64> {
    memory_limit_of(&server_groups("memory")?)
}

/// `MemTotal` of `/proc/meminfo` (`MemTotal:       24681632 kB`), in bytes.
pub fn parse_mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}

/// Where the memory the server could cache its files in was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemorySource {
    /// the smallest memory limit of its group and the group's ancestors
    /// ([`memory_limit`], as `storlab.tablespaces().memory_limit_bytes`)
    Limit,
    /// the machine's, `MemTotal` of /proc/meminfo: no group limits it
    MemTotal,
}

impl MemorySource {
    /// As `storlab.bench_runs.memory_source` stores it.
    pub fn as_str(self) -> &'static str {
        match self {
            MemorySource::Limit => "memory limit",
            MemorySource::MemTotal => "MemTotal",
        }
    }
}

/// The most memory the server's files can be cached in: its memory
/// group's limit (the page cache is charged to it), else the machine's
/// MemTotal; None when neither can be read.
pub fn cache_memory() -> Option<(u64, MemorySource)> {
    if let Some(limit) = memory_limit() {
        return Some((limit, MemorySource::Limit));
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_total(&meminfo).map(|n| (n, MemorySource::MemTotal))
}

/// The I/O throttles that apply: operations and bytes per second, each
/// None when nothing limits it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throttle {
    pub read_iops: Option<u64>,
    pub write_iops: Option<u64>,
    pub read_bps: Option<u64>,
    pub write_bps: Option<u64>,
}

/// A device number, `major:minor`.
pub type DevNo = (u32, u32);

pub fn parse_devno(text: &str) -> Option<DevNo> {
    let (major, minor) = text.trim().split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The limit a cgroup v1 `blkio.throttle.*_device` file sets on `dev`: lines
/// `MAJ:MIN LIMIT`, one per throttled device (0 would mean none: the kernel
/// drops such a rule rather than listing it).
pub fn v1_device_limit(text: &str, dev: DevNo) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut f = line.split_whitespace();
        let d = parse_devno(f.next()?)?;
        let n: u64 = f.next()?.parse().ok()?;
        (d == dev && n > 0).then_some(n)
    })
}

/// The limits a cgroup v2 `io.max` sets on `dev`: lines
/// `MAJ:MIN rbps=N wbps=max riops=N wiops=max`.
pub fn v2_device_limits(text: &str, dev: DevNo) -> Throttle {
    let mut t = Throttle::default();
    let Some(line) = text
        .lines()
        .find(|l| l.split_whitespace().next().and_then(parse_devno) == Some(dev))
    else {
        return t;
    };
    for kv in line.split_whitespace().skip(1) {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let n = v.parse::<u64>().ok().filter(|n| *n > 0);
        match k {
            "riops" => t.read_iops = n,
            "wiops" => t.write_iops = n,
            "rbps" => t.read_bps = n,
            "wbps" => t.write_bps = n,
            _ => {}
        }
    }
    t
}

fn smaller(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The throttles on one device: each the smallest set on any of the groups.
pub fn device_throttle(groups: &Groups, dev: DevNo) -> Throttle {
    let read = |d: &Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap_or_default();
    groups.dirs.iter().fold(Throttle::default(), |acc, d| {
        let here = match groups.version {
            Version::V1 => {
                let v1 = |f: &str| v1_device_limit(&read(d, f), dev);
                Throttle {
                    read_iops: v1("blkio.throttle.read_iops_device"),
                    write_iops: v1("blkio.throttle.write_iops_device"),
                    read_bps: v1("blkio.throttle.read_bps_device"),
                    write_bps: v1("blkio.throttle.write_bps_device"),
                }
            }
            Version::V2 => v2_device_limits(&read(d, "io.max"), dev),
        };
        Throttle {
            read_iops: smaller(acc.read_iops, here.read_iops),
            write_iops: smaller(acc.write_iops, here.write_iops),
            read_bps: smaller(acc.read_bps, here.read_bps),
            write_bps: smaller(acc.write_bps, here.write_bps),
        }
    })
}

/// The throttle of a filesystem over several devices (btrfs RAID): each
/// limit the sum of the members' (what they allow together, before any
/// RAID overhead), None when one member has no limit, or there is no device.
pub fn sum_members(members: &[Throttle]) -> Throttle {
    let sum = |f: fn(&Throttle) -> Option<u64>| {
        if members.is_empty() {
            return None;
        }
        members
            .iter()
            .map(f)
            .try_fold(0u64, |s, n| Some(s.saturating_add(n?)))
    };
    Throttle {
        read_iops: sum(|t| t.read_iops),
        write_iops: sum(|t| t.write_iops),
        read_bps: sum(|t| t.read_bps),
        write_bps: sum(|t| t.write_bps),
    }
}

/// The whole disk of a partition, where the kernel throttles (it takes no
/// rule for a partition); the device itself otherwise. `sys_dev_block`:
/// /sys/dev/block, whose `MAJ:MIN` entries link to the device folders.
pub fn whole_disk(dev: DevNo, sys_dev_block: &Path) -> DevNo {
    let dir = sys_dev_block.join(format!("{}:{}", dev.0, dev.1));
    if !dir.join("partition").exists() {
        return dev;
    }
    std::fs::canonicalize(&dir)
        .ok()
        .and_then(|d| std::fs::read_to_string(d.parent()?.join("dev")).ok())
        .and_then(|t| parse_devno(&t))
        .unwrap_or(dev)
}

/// The block devices a mount's data goes to, where the kernel throttles
/// them: [`mount_block_devices`], a partition as its whole disk.
pub fn mount_devices(mount: &Mount, sys_fs_btrfs: &Path, sys_dev_block: &Path) -> Vec<DevNo> {
    mount_block_devices(mount, sys_fs_btrfs)
        .into_iter()
        .map(|d| whole_disk(d, sys_dev_block))
        .collect()
}

/// The block devices a mount's data goes to, as the kernel counts their
/// I/O: every member of a btrfs filesystem (its sysfs folder lists them,
/// each with its `dev`), else the mount's device (mountinfo's number, or
/// the source's for the anonymous 0:N btrfs shows), a partition as itself.
/// Empty for filesystems on no block device (tmpfs).
pub fn mount_block_devices(mount: &Mount, sys_fs_btrfs: &Path) -> Vec<DevNo> {
    let name = backing::device_name(&mount.source);
    if mount.fs_type == "btrfs" {
        if let Some(fs_dir) = name.and_then(|n| backing::btrfs_fs_dir_for(n, sys_fs_btrfs)) {
            let members: Vec<DevNo> = backing::btrfs_devices(&fs_dir)
                .iter()
                .filter_map(|m| {
                    std::fs::read_to_string(fs_dir.join("devices").join(m).join("dev")).ok()
                })
                .filter_map(|t| parse_devno(&t))
                .collect();
            if !members.is_empty() {
                return members;
            }
        }
    }
    let dev = if mount.major != 0 {
        Some((mount.major, mount.minor))
    } else {
        std::fs::metadata(&mount.source)
            .ok()
            .filter(|m| m.file_type().is_block_device())
            .map(|m| (libc::major(m.rdev()), libc::minor(m.rdev())))
    };
    dev.map(|d| vec![d]).unwrap_or_default()
}

/// The I/O throttles of the server's blkio (v1) or io (v2) groups that
/// apply to the devices under a mount, summed over btrfs's members.
pub fn mount_throttle(mount: &Mount) -> Throttle {
    let devices = mount_devices(
        mount,
        Path::new("/sys/fs/btrfs"),
        Path::new("/sys/dev/block"),
    );
    let Some(groups) = server_groups("blkio") else {
        return Throttle::default();
    };
    let each: Vec<Throttle> = devices
        .iter()
        .map(|d| device_throttle(&groups, *d))
        .collect();
    sum_members(&each)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("storlab_cgroup_{name}_{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    const HYBRID: &str = "\
9:name=systemd:/
7:blkio:/
4:memory:/lab/pg
2:cpu,cpuacct:/
0::/user.slice
";

    #[test]
    fn proc_cgroup_names_the_v1_group_before_the_unified_one() {
        assert_eq!(
            group_of(HYBRID, "memory"),
            Some((Version::V1, "/lab/pg".into()))
        );
        assert_eq!(group_of(HYBRID, "blkio"), Some((Version::V1, "/".into())));
        // a controller in a shared hierarchy (cpu,cpuacct) is found by name
        assert_eq!(group_of(HYBRID, "cpuacct"), Some((Version::V1, "/".into())));
        // a controller not on v1 lives in the unified hierarchy
        assert_eq!(
            group_of(HYBRID, "io"),
            Some((Version::V2, "/user.slice".into()))
        );
        // pure v2: one line
        assert_eq!(
            group_of("0::/system.slice/postgresql@15-main.service\n", "memory"),
            Some((
                Version::V2,
                "/system.slice/postgresql@15-main.service".into()
            ))
        );
        // `name=systemd` is not `memory`, and a v1-only machine has no answer for io
        assert_eq!(group_of("9:name=systemd:/\n", "memory"), None);
        assert_eq!(group_of("garbage\n\n", "memory"), None);
    }

    const MOUNTS: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
39 31 0:36 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn hierarchies_are_found_by_controller_and_version() {
        assert_eq!(
            hierarchy_mount(MOUNTS, Version::V1, "memory"),
            Some(("/sys/fs/cgroup/memory".into(), "/docker/abc".into()))
        );
        assert_eq!(
            hierarchy_mount(MOUNTS, Version::V1, "cpuacct"),
            Some(("/sys/fs/cgroup/cpu,cpuacct".into(), "/".into()))
        );
        assert_eq!(
            hierarchy_mount(MOUNTS, Version::V2, "memory"),
            Some(("/sys/fs/cgroup/unified".into(), "/".into()))
        );
        assert_eq!(hierarchy_mount(MOUNTS, Version::V1, "pids"), None);
    }

    #[test]
    fn a_group_and_its_ancestors_up_to_the_mounted_root() {
        let m = Path::new("/sys/fs/cgroup/memory");
        assert_eq!(
            group_dirs(m, "/", "/lab/pg"),
            vec![m.join("lab/pg"), m.join("lab"), m.to_path_buf()]
        );
        assert_eq!(group_dirs(m, "/", "/"), vec![m.to_path_buf()]);
        // a container's mount shows only its subtree: the path is below its root
        assert_eq!(
            group_dirs(m, "/docker/abc", "/docker/abc/pg"),
            vec![m.join("pg"), m.to_path_buf()]
        );
    }

    #[test]
    fn memory_limits_and_unlimited_values() {
        assert_eq!(
            parse_memory_limit("9223372036854771712\n", Version::V1),
            None
        );
        // 64 kB pages: another spelling of no limit
        assert_eq!(parse_memory_limit("9223372036854710272", Version::V1), None);
        assert_eq!(
            parse_memory_limit("1073741824\n", Version::V1),
            Some(1 << 30)
        );
        assert_eq!(parse_memory_limit("max\n", Version::V2), None);
        assert_eq!(
            parse_memory_limit("536870912\n", Version::V2),
            Some(512 << 20)
        );
        assert_eq!(parse_memory_limit("", Version::V1), None);
    }

    #[test]
    fn the_smallest_limit_of_the_group_and_its_ancestors_applies() {
        let root = scratch("memory");
        let dirs = group_dirs(&root, "/", "/lab/pg");
        for d in &dirs {
            fs::create_dir_all(d).unwrap();
        }
        let write = |d: &Path, t: &str| fs::write(d.join("memory.limit_in_bytes"), t).unwrap();
        let groups = Groups {
            version: Version::V1,
            dirs: dirs.clone(),
        };
        // unset everywhere
        for d in &dirs {
            write(d, "9223372036854771712\n");
        }
        assert_eq!(memory_limit_of(&groups), None);
        // set on the parent only: the server's own group inherits it
        write(&dirs[1], "2147483648\n");
        assert_eq!(memory_limit_of(&groups), Some(2 << 30));
        // the group's own, smaller
        write(&dirs[0], "1073741824\n");
        assert_eq!(memory_limit_of(&groups), Some(1 << 30));
        // v2: `max` unset, no file at the root (it has no memory.max)
        let v2 = Groups {
            version: Version::V2,
            dirs: dirs.clone(),
        };
        fs::write(dirs[0].join("memory.max"), "max\n").unwrap();
        fs::write(dirs[1].join("memory.max"), "805306368\n").unwrap();
        assert_eq!(memory_limit_of(&v2), Some(768 << 20));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn v1_throttle_files_list_one_device_a_line() {
        let text = "7:3 500\n7:10 250\n254:0 9000\n";
        assert_eq!(v1_device_limit(text, (7, 3)), Some(500));
        assert_eq!(v1_device_limit(text, (7, 10)), Some(250));
        // 7:1 is not 7:10, nor 7:3 (whole numbers compared)
        assert_eq!(v1_device_limit(text, (7, 1)), None);
        assert_eq!(v1_device_limit("", (7, 3)), None);
        assert_eq!(v1_device_limit("7:3 0\n", (7, 3)), None);
    }

    #[test]
    fn v2_io_max_has_every_limit_on_one_line() {
        let text = "7:3 rbps=2097152 wbps=max riops=500 wiops=max\n8:0 rbps=max wbps=max riops=max wiops=120\n";
        assert_eq!(
            v2_device_limits(text, (7, 3)),
            Throttle {
                read_iops: Some(500),
                write_iops: None,
                read_bps: Some(2 << 20),
                write_bps: None
            }
        );
        assert_eq!(v2_device_limits(text, (8, 0)).write_iops, Some(120));
        assert_eq!(v2_device_limits(text, (8, 1)), Throttle::default());
    }

    #[test]
    fn device_throttle_takes_the_smallest_along_the_path() {
        let root = scratch("blkio");
        let dirs = group_dirs(&root, "/", "/lab");
        fs::create_dir_all(&dirs[0]).unwrap();
        let groups = Groups {
            version: Version::V1,
            dirs: dirs.clone(),
        };
        // no files at all (no blkio controller): nothing known, nothing limited
        assert_eq!(device_throttle(&groups, (7, 3)), Throttle::default());
        fs::write(
            root.join("blkio.throttle.read_iops_device"),
            "7:3 500\n7:4 500\n",
        )
        .unwrap();
        fs::write(root.join("blkio.throttle.write_iops_device"), "7:3 400\n").unwrap();
        fs::write(dirs[0].join("blkio.throttle.read_iops_device"), "7:3 300\n").unwrap();
        fs::write(
            dirs[0].join("blkio.throttle.read_bps_device"),
            "7:3 1048576\n",
        )
        .unwrap();
        let t = device_throttle(&groups, (7, 3));
        assert_eq!(
            t,
            Throttle {
                read_iops: Some(300),
                write_iops: Some(400),
                read_bps: Some(1 << 20),
                write_bps: None
            }
        );
        assert_eq!(device_throttle(&groups, (7, 4)).read_iops, Some(500));
        assert_eq!(device_throttle(&groups, (7, 5)), Throttle::default());
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn members_add_up_and_one_unthrottled_member_means_no_limit() {
        let t = |r, w| Throttle {
            read_iops: r,
            write_iops: w,
            ..Throttle::default()
        };
        let four = [t(Some(500), Some(500)); 4];
        assert_eq!(sum_members(&four), t(Some(2000), Some(2000)));
        assert_eq!(
            sum_members(&[t(Some(500), Some(300)), t(Some(500), None)]),
            t(Some(1000), None),
            "a member without a write limit lets writes go unthrottled"
        );
        assert_eq!(
            sum_members(&[t(Some(500), Some(500))]),
            t(Some(500), Some(500))
        );
        assert_eq!(sum_members(&[]), Throttle::default());
    }

    #[test]
    fn btrfs_members_and_partitions_name_the_throttled_devices() {
        let sys = scratch("devices");
        let btrfs = sys.join("btrfs");
        let fsdir = btrfs.join("0a1b-uuid");
        for (dev, no) in [("loop8", "7:8"), ("loop9", "7:9"), ("loop10", "7:10")] {
            fs::create_dir_all(fsdir.join("devices").join(dev)).unwrap();
            fs::write(
                fsdir.join("devices").join(dev).join("dev"),
                format!("{no}\n"),
            )
            .unwrap();
        }
        let mount = |fs_type: &str, source: &str, major, minor| Mount {
            mount_point: "/mnt".into(),
            major,
            minor,
            fs_type: fs_type.into(),
            source: source.into(),
            options: "rw".into(),
        };
        let block = sys.join("dev-block");
        fs::create_dir_all(&block).unwrap();
        assert_eq!(
            mount_devices(&mount("btrfs", "/dev/loop9", 0, 45), &btrfs, &block),
            vec![(7, 8), (7, 9), (7, 10)]
        );
        assert_eq!(
            mount_devices(&mount("ext4", "/dev/loop3", 7, 3), &btrfs, &block),
            vec![(7, 3)]
        );
        assert!(mount_devices(&mount("tmpfs", "tmpfs", 0, 23), &btrfs, &block).is_empty());
        // a partition is throttled through its disk
        let disk = sys.join("devices/vda");
        fs::create_dir_all(disk.join("vda1")).unwrap();
        fs::write(disk.join("dev"), "254:0\n").unwrap();
        fs::write(disk.join("vda1/partition"), "1\n").unwrap();
        std::os::unix::fs::symlink(disk.join("vda1"), block.join("254:1")).unwrap();
        std::os::unix::fs::symlink(&disk, block.join("254:0")).unwrap();
        assert_eq!(whole_disk((254, 1), &block), (254, 0));
        assert_eq!(whole_disk((254, 0), &block), (254, 0));
        assert_eq!(whole_disk((7, 3), &block), (7, 3));
        // as the kernel counts I/O, a partition is itself
        let vda1 = mount("ext4", "/dev/vda1", 254, 1);
        assert_eq!(mount_devices(&vda1, &btrfs, &block), vec![(254, 0)]);
        assert_eq!(mount_block_devices(&vda1, &btrfs), vec![(254, 1)]);
        assert_eq!(
            mount_block_devices(&mount("btrfs", "/dev/loop9", 0, 45), &btrfs),
            vec![(7, 8), (7, 9), (7, 10)]
        );
        fs::remove_dir_all(&sys).unwrap();
    }

    #[test]
    fn mem_total_in_bytes() {
        let meminfo = "MemTotal:       24681632 kB\nMemFree:         2107828 kB\n";
        assert_eq!(parse_mem_total(meminfo), Some(24_681_632 * 1024));
        assert_eq!(parse_mem_total("MemFree: 5 kB\n"), None);
        assert_eq!(parse_mem_total("MemTotal: lots kB\n"), None);
        assert_eq!(parse_mem_total("MemTotal: 5 MB\n"), None);
        assert_eq!(MemorySource::Limit.as_str(), "memory limit");
        // this machine has memory, limited or not
        assert!(cache_memory().is_some_and(|(n, _)| n > 0));
    }

    #[test]
    fn reads_this_machine() {
        // whatever the machine: answers, and a limit is a positive number
        assert_ne!(memory_limit(), Some(0));
        let mounts = mountinfo::read_mounts().unwrap();
        let root = mountinfo::mount_of(&mounts, Path::new("/")).unwrap();
        let t = mount_throttle(root);
        assert_ne!(t.read_iops, Some(0));
    }
}
