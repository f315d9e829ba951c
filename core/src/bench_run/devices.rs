//! The block devices a run used, and what their counters moved by: the
//! tablespaces of pgbench's tables and indexes at the run's start, the
//! temporary tablespaces its sessions had, and pg_wal's folder; each
//! resolved to the devices beneath its filesystem
//! (`env::devices_of`, the same resolution as `storlab.tablespaces()`:
//! every member of a btrfs over several devices), each device counted
//! once however many of them sit on it. Pure, but for
//! [`read_counters`], which reads sysfs.

use std::collections::BTreeMap;
use std::path::Path;

use crate::env::cgroup::DevNo;
use crate::env::diskstats::{self, DiskStat};
use crate::record::{DeviceUse, NoDevice, RunDeviceIo};
use crate::report::experiment::Observation;

/// The name pg_wal's folder goes by among the run's tablespaces.
pub const WAL: &str = "pg_wal";

/// The tablespaces whose devices a run watches, by name, each once:
/// those of pgbench's tables and indexes at its start (`start`), those of
/// `temp_tablespaces` as its sessions had it (the `settings` it read),
/// then pg_wal's folder.
pub fn run_tablespaces(start: &Observation, temp_tablespaces: Option<&str>) -> Vec<String> {
    let mut names: Vec<String> = start
        .tables
        .values()
        .chain(start.indexes.values())
        .cloned()
        .collect();
    names.extend(
        temp_tablespaces
            .map(parse_temp_tablespaces)
            .unwrap_or_default(),
    );
    names.sort();
    names.dedup();
    names.retain(|n| n != WAL);
    names.push(WAL.to_string());
    names
}

/// The names of a `temp_tablespaces` setting as `current_setting()`
/// prints it: a comma-separated list, each name quoted as an identifier
/// when it needs to be (`lab_ram, "Temp Space"`); empty: none (temporary
/// files go to the database's default tablespace, already watched when
/// pgbench's relations are there).
pub fn parse_temp_tablespaces(setting: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = setting.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        let Some(&first) = chars.peek() else { break };
        let mut name = String::new();
        if first == '"' {
            chars.next();
            while let Some(c) = chars.next() {
                if c == '"' {
                    if chars.peek() == Some(&'"') {
                        chars.next();
                        name.push('"');
                    } else {
                        break;
                    }
                } else {
                    name.push(c);
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                name.push(c);
                chars.next();
            }
            name = name.trim().to_lowercase();
        }
        if !name.is_empty() {
            out.push(name);
        }
    }
    out
}

/// Where one of the run's tablespaces is: the devices beneath its
/// filesystem (none on tmpfs), or why its folder could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub tablespace: String,
    pub place: Result<(String, Vec<DevNo>), String>,
}

/// The devices a run watches and the tablespaces on no device, in the
/// order of the tablespaces' names (a device under the first tablespace
/// that has it); `name` gives a device's kernel name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Watched {
    pub devices: Vec<(DevNo, String, Vec<String>)>,
    pub no_device: Vec<NoDevice>,
}

pub fn watch(resolved: &[Resolved], name: &dyn Fn(DevNo) -> String) -> Watched {
    let mut w = Watched::default();
    let mut index: BTreeMap<DevNo, usize> = BTreeMap::new();
    for r in resolved {
        match &r.place {
            Ok((fs_type, devices)) if devices.is_empty() => w.no_device.push(NoDevice {
                tablespace: r.tablespace.clone(),
                fs_type: Some(fs_type.clone()),
                why: None,
            }),
            Ok((_, devices)) => {
                for &dev in devices {
                    let i = *index.entry(dev).or_insert_with(|| {
                        w.devices.push((dev, name(dev), Vec::new()));
                        w.devices.len() - 1
                    });
                    let on = &mut w.devices[i].2;
                    if !on.contains(&r.tablespace) {
                        on.push(r.tablespace.clone());
                    }
                }
            }
            Err(why) => w.no_device.push(NoDevice {
                tablespace: r.tablespace.clone(),
                fs_type: None,
                why: Some(why.clone()),
            }),
        }
    }
    w
}

/// One reading of each watched device's counters (in [`Watched`]'s
/// order), or why it failed.
pub type Reading = Vec<Result<DiskStat, String>>;

/// The counters of `devices` now, from `sys_dev_block` (`/sys/dev/block`).
pub fn read_counters(w: &Watched, sys_dev_block: &Path) -> Reading {
    w.devices
        .iter()
        .map(|(dev, name, _)| {
            diskstats::read_stat(sys_dev_block, *dev)
                .map_err(|e| format!("the counters of {name} could not be read: {e}"))
        })
        .collect()
}

/// What the run stores: each device with what its counters moved by from
/// `before` to `after` (readings `elapsed_ms` apart), and the tablespaces
/// on no device.
pub fn record(w: &Watched, before: &Reading, after: &Reading, elapsed_ms: u64) -> RunDeviceIo {
    let devices = w
        .devices
        .iter()
        .enumerate()
        .map(|(i, ((major, minor), name, tablespaces))| {
            let (io, unread) = match (before.get(i), after.get(i)) {
                (Some(Ok(b)), Some(Ok(a))) => match b.delta(a) {
                    Some(io) => (Some(io), None),
                    None => (
                        None,
                        Some("its counters went back during the run (another device under its number?)".to_string()),
                    ),
                },
                (Some(Err(why)), _) | (_, Some(Err(why))) => (None, Some(why.clone())),
                _ => (None, Some("not read".to_string())),
            };
            DeviceUse {
                device: name.clone(),
                dev: format!("{major}:{minor}"),
                tablespaces: tablespaces.clone(),
                io,
                unread,
            }
        })
        .collect();
    RunDeviceIo {
        elapsed_ms,
        devices,
        no_device: w.no_device.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::diskstats::parse_stat;

    fn observation(tables: &[(&str, &str)], indexes: &[(&str, &str)]) -> Observation {
        let map = |v: &[(&str, &str)]| {
            v.iter()
                .map(|(r, t)| (r.to_string(), t.to_string()))
                .collect()
        };
        Observation {
            tables: map(tables),
            indexes: map(indexes),
            ..Default::default()
        }
    }

    #[test]
    fn the_tablespaces_of_a_run() {
        let start = observation(
            &[
                ("pgbench_accounts", "lab_disk"),
                ("pgbench_branches", "lab_disk"),
            ],
            &[("pgbench_accounts_pkey", "lab_ext4")],
        );
        assert_eq!(
            run_tablespaces(&start, Some("")),
            ["lab_disk", "lab_ext4", "pg_wal"]
        );
        assert_eq!(
            run_tablespaces(&start, Some("lab_ram, lab_disk")),
            ["lab_disk", "lab_ext4", "lab_ram", "pg_wal"]
        );
        // nothing observed: pg_wal still
        assert_eq!(run_tablespaces(&Observation::default(), None), ["pg_wal"]);
    }

    #[test]
    fn temp_tablespaces_as_current_setting_prints_them() {
        assert!(parse_temp_tablespaces("").is_empty());
        assert_eq!(parse_temp_tablespaces("lab_ram"), ["lab_ram"]);
        assert_eq!(
            parse_temp_tablespaces("lab_ram, \"Temp, Space\",x"),
            ["lab_ram", "Temp, Space", "x"]
        );
        assert_eq!(parse_temp_tablespaces("\"a\"\"b\""), ["a\"b"]);
        assert_eq!(parse_temp_tablespaces(" LAB_Ram "), ["lab_ram"]);
    }

    fn resolved(tablespace: &str, fs: &str, devices: &[DevNo]) -> Resolved {
        Resolved {
            tablespace: tablespace.into(),
            place: Ok((fs.into(), devices.to_vec())),
        }
    }

    fn name(dev: DevNo) -> String {
        match dev {
            (254, 0) => "vda".into(),
            (7, n) => format!("loop{n}"),
            _ => "?".into(),
        }
    }

    #[test]
    fn a_device_shared_by_two_tablespaces_is_watched_once() {
        let w = watch(
            &[
                resolved("lab_btrfs_raid1", "btrfs", &[(7, 8), (7, 9)]),
                resolved("lab_disk", "ext4", &[(254, 0)]),
                resolved("lab_ram", "tmpfs", &[]),
                resolved("pg_default", "ext4", &[(254, 0)]),
                Resolved {
                    tablespace: "lab_gone".into(),
                    place: Err("its folder cannot be read".into()),
                },
                resolved("pg_wal", "ext4", &[(254, 0)]),
            ],
            &name,
        );
        assert_eq!(
            w.devices,
            vec![
                (
                    (7, 8),
                    "loop8".to_string(),
                    vec!["lab_btrfs_raid1".to_string()]
                ),
                (
                    (7, 9),
                    "loop9".to_string(),
                    vec!["lab_btrfs_raid1".to_string()]
                ),
                (
                    (254, 0),
                    "vda".to_string(),
                    vec![
                        "lab_disk".to_string(),
                        "pg_default".to_string(),
                        "pg_wal".to_string()
                    ]
                ),
            ]
        );
        assert_eq!(
            w.no_device,
            vec![
                NoDevice {
                    tablespace: "lab_ram".into(),
                    fs_type: Some("tmpfs".into()),
                    why: None
                },
                NoDevice {
                    tablespace: "lab_gone".into(),
                    fs_type: None,
                    why: Some("its folder cannot be read".into())
                },
            ]
        );
    }

    #[test]
    fn what_a_run_records() {
        let w = watch(
            &[
                resolved("lab_ext4", "ext4", &[(7, 3)]),
                resolved("lab_xfs", "xfs", &[(7, 4)]),
                resolved("pg_wal", "ext4", &[(254, 0)]),
            ],
            &name,
        );
        let s = |line: &str| Ok(parse_stat(line).unwrap());
        let before: Reading = vec![
            s("10 0 80 1 20 0 160 2 0 5 6 0 0 0 0 1 0"),
            s("10 0 80 1 20 0 160 2 0 5 6 0 0 0 0 1 0"),
            Err("the counters of vda could not be read: gone".into()),
        ];
        let after: Reading = vec![
            s("14 0 112 2 60 0 960 9 0 25 30 0 0 0 0 9 1"),
            s("1 0 8 1 2 0 16 2 0 5 6 0 0 0 0 1 0"),
            s("1 0 8 1 2 0 16 2 0 5 6 0 0 0 0 1 0"),
        ];
        let r = record(&w, &before, &after, 1004);
        assert_eq!(r.elapsed_ms, 1004);
        let ext4 = &r.devices[0];
        assert_eq!((ext4.device.as_str(), ext4.dev.as_str()), ("loop3", "7:3"));
        let io = ext4.io.unwrap();
        assert_eq!((io.reads, io.read_bytes), (4, 32 * 512));
        assert_eq!(
            (io.writes, io.write_bytes, io.flushes),
            (40, 800 * 512, Some(8))
        );
        assert_eq!((io.io_ticks_ms, io.time_in_queue_ms), (20, 24));
        assert_eq!(ext4.unread, None);
        // counters that went back, a device that could not be read
        assert_eq!(r.devices[1].io, None);
        assert!(r.devices[1]
            .unread
            .as_deref()
            .unwrap()
            .contains("went back"));
        assert_eq!(
            r.devices[2].unread.as_deref(),
            Some("the counters of vda could not be read: gone")
        );
        assert_eq!(r.reads(), None);
    }
}
