//! Where pg_wal should be: the durable volume whose commits (8 kB writes +
//! fdatasync, p99) are more than a tenth faster than pg_wal's own, never a
//! tablespace on pg_wal's own volume (two probes of one volume differ by
//! noise alone) and never volatile storage; WAL on volatile storage is
//! always moved, to the fastest durable volume measured.

use serde_json::json;

use super::figures::ByTablespace;
use super::{percent, Advice, COMPARE_CALL};
use crate::stats;

/// Is moving worth saying: the other volume lower by more than 10 %?
pub fn worth_moving(now_us: f64, best_us: f64) -> bool {
    best_us < now_us * 0.9
}

/// Where the WAL goes on a volume: `pg_wal` at its mount point, spelled
/// without a double slash when that is the root.
pub fn wal_folder_on(mount: &str) -> String {
    format!("{}/pg_wal", mount.trim_end_matches('/'))
}

/// The wal row.
pub fn advise(figures: &ByTablespace) -> Advice {
    let Some(wal) = figures.get("pg_wal") else {
        return measure_wal();
    };
    let Some(now) = wal.workloads.get("wal") else {
        return measure_wal();
    };
    let here = wal.mount.clone().unwrap_or_else(|| "its volume".into());
    // A tablespace on pg_wal's own volume is no place to move it to: two
    // probes of one volume differ by noise alone.
    let wal_mount = wal.mount.clone();
    let best = figures
        .iter()
        .filter(|(ts, f)| *ts != "pg_wal" && !f.volatile)
        .filter(|(_, f)| wal_mount.is_none() || f.mount != wal_mount)
        .filter_map(|(ts, f)| Some((ts, f, f.workloads.get("wal")?)))
        .min_by(|a, b| a.2.p99_us.total_cmp(&b.2.p99_us));
    let on_volatile = wal.volatile;
    let mut evidence = json!({"probes": [now.id], "pg_wal_commit_p50_us": now.p50_us, "pg_wal_commit_p99_us": now.p99_us, "pg_wal_mount": here, "pg_wal_volatile": on_volatile});
    // WAL on storage that a reboot empties (tmpfs, zram) loses the cluster:
    // no commit latency makes that a place to stay, and the advice is the
    // durable volume with the fastest commits, however much slower it is
    if on_volatile && best.is_none() {
        return Advice::new(
            "wal",
            Some("pg_wal"),
            format!(
                "pg_wal is on volatile storage ({here}): a reboot loses the WAL, and the cluster with it, however fast it commits ({:.0} us p99); no durable volume has WAL figures yet: measure one, then move pg_wal there",
                now.p99_us
            ),
            Some(COMPARE_CALL.into()),
            None,
            evidence,
        );
    }
    match best {
        Some((ts, f, p)) if on_volatile || worth_moving(now.p99_us, p.p99_us) => {
            let mount = f.mount.clone().unwrap_or_else(|| format!("the volume of tablespace {ts}"));
            evidence["probes"] = json!([now.id, p.id]);
            evidence["best"] = json!({"tablespace": ts, "mount": mount, "commit_p50_us": p.p50_us, "commit_p99_us": p.p99_us});
            let why = if on_volatile {
                format!("pg_wal is on volatile storage ({here}): a reboot loses the WAL, and the cluster with it. Of the durable volumes measured, tablespace {ts}'s ({mount}) commits fastest, in {:.0} us p99 (pg_wal now: {:.0} us)", p.p99_us, now.p99_us)
            } else {
                format!("pg_wal (on {here}) commits in {:.0} us p99; the volume of tablespace {ts} ({mount}) in {:.0} us", now.p99_us, p.p99_us)
            };
            Advice::new(
                "wal",
                Some(ts),
                format!(
                    "{why}. Moving pg_wal is done offline: stop the server (pg_ctl stop -m fast), make the new folder (mkdir -m 700 {dest}, owned by the server's user), move the WAL's files there, wherever pg_wal points now (mv \"$(readlink -f $PGDATA/pg_wal)\"/* {dest}/), replace pg_wal by a link to it (rm -r $PGDATA/pg_wal && ln -s {dest} $PGDATA/pg_wal: rm removes a link itself, not what it points to), start the server; a new cluster takes initdb --waldir",
                    dest = wal_folder_on(&mount)
                ),
                None,
                Some(format!(
                    "WAL commit p99 {:.0} -> {:.0} us ({}), p50 {:.0} -> {:.0} us",
                    now.p99_us,
                    p.p99_us,
                    percent(stats::improvement_pct(now.p99_us, p.p99_us)),
                    now.p50_us,
                    p.p50_us
                )),
                evidence,
            )
        }
        _ => Advice::new(
            "wal",
            Some("pg_wal"),
            format!(
                "pg_wal (on {here}) commits in {:.0} us p99: no durable volume measured commits more than a tenth faster; leave it where it is",
                now.p99_us
            ),
            None,
            None,
            evidence,
        ),
    }
}

fn measure_wal() -> Advice {
    Advice::measure_first("wal", "pg_wal's commit latency", COMPARE_CALL)
}

#[cfg(test)]
mod tests {
    use super::super::figures::{Figures, Probe};
    use super::*;

    fn volume(mount: &str, volatile: bool, commit_p99_us: f64, id: i64) -> Figures {
        let mut f = Figures {
            volatile,
            mount: Some(mount.into()),
            device: Some(if volatile {
                "tmpfs".into()
            } else {
                "/dev/vdb".into()
            }),
            ..Figures::default()
        };
        f.workloads.insert(
            "wal".into(),
            Probe {
                id,
                mean_us: commit_p99_us / 2.0,
                p50_us: commit_p99_us / 2.0,
                p99_us: commit_p99_us,
                mib_s: 1.0,
            },
        );
        f
    }

    #[test]
    fn moving_pays_only_beyond_a_tenth() {
        assert!(worth_moving(200.0, 150.0));
        assert!(!worth_moving(200.0, 185.0));
        assert!((crate::stats::improvement_pct(200.0, 150.0).unwrap() + 25.0).abs() < 1e-9);
    }

    #[test]
    fn no_wal_figures_measure_them() {
        let a = advise(&ByTablespace::new());
        assert_eq!(
            a.advice,
            "nothing measured yet: pg_wal's commit latency; measure first"
        );
        assert_eq!(a.statement.as_deref(), Some(COMPARE_CALL));
        // tablespaces measured, pg_wal not
        let figures = ByTablespace::from([("lab_disk".into(), volume("/srv/d", false, 1.0, 1))]);
        assert_eq!(advise(&figures).statement.as_deref(), Some(COMPARE_CALL));
    }

    #[test]
    fn a_faster_durable_volume_gets_the_wal() {
        let figures = ByTablespace::from([
            ("pg_wal".into(), volume("/srv/pg_wal", false, 300.0, 1)),
            ("lab_disk".into(), volume("/srv/lab_disk", false, 1.0, 2)),
            ("lab_ram".into(), volume("/dev/shm", true, 0.5, 3)),
        ]);
        let a = advise(&figures);
        assert_eq!(
            a.target.as_deref(),
            Some("lab_disk"),
            "never the faster RAM"
        );
        assert!(a.advice.starts_with("pg_wal (on /srv/pg_wal) commits in 300 us p99; the volume of tablespace lab_disk (/srv/lab_disk) in 1 us. Moving pg_wal is done offline"));
        assert!(a.advice.contains("mkdir -m 700 /srv/lab_disk/pg_wal"));
        assert_eq!(a.statement, None, "moved offline");
        assert_eq!(
            a.expected_gain.as_deref(),
            Some("WAL commit p99 300 -> 1 us (-100 %), p50 150 -> 0 us")
        );
        assert_eq!(a.evidence["probes"], json!([1, 2]));
    }

    #[test]
    fn a_tenth_or_less_faster_stays_and_its_own_volume_is_no_candidate() {
        let mut figures = ByTablespace::from([
            ("pg_wal".into(), volume("/srv/pg_wal", false, 300.0, 1)),
            ("lab_disk".into(), volume("/srv/lab_disk", false, 280.0, 2)),
        ]);
        let a = advise(&figures);
        assert_eq!(a.target.as_deref(), Some("pg_wal"));
        assert!(a.advice.ends_with(
            "no durable volume measured commits more than a tenth faster; leave it where it is"
        ));
        // far faster, but on pg_wal's volume: noise, not a place
        figures.insert("lab_same".into(), volume("/srv/pg_wal", false, 1.0, 3));
        assert_eq!(advise(&figures).target.as_deref(), Some("pg_wal"));
    }

    #[test]
    fn volatile_wal_is_always_moved_or_a_durable_volume_measured() {
        let mut figures = ByTablespace::from([
            ("pg_wal".into(), volume("/", true, 1.0, 1)),
            ("lab_ram".into(), volume("/dev/shm", true, 0.5, 2)),
        ]);
        let a = advise(&figures);
        assert_eq!(a.target.as_deref(), Some("pg_wal"));
        assert_eq!(a.statement.as_deref(), Some(COMPARE_CALL));
        assert!(a.advice.contains("no durable volume has WAL figures yet"));
        // a much slower durable volume still gets it; the root is not //pg_wal
        figures.insert("slow".into(), volume("/", false, 9000.0, 3));
        figures.get_mut("pg_wal").unwrap().mount = Some("/dev/shm/x".into());
        let a = advise(&figures);
        assert_eq!(a.target.as_deref(), Some("slow"));
        assert!(a.advice.starts_with("pg_wal is on volatile storage (/dev/shm/x): a reboot loses the WAL, and the cluster with it. Of the durable volumes measured, tablespace slow's (/) commits fastest"));
        assert!(a.advice.contains("mkdir -m 700 /pg_wal,") && !a.advice.contains("//pg_wal"));
    }
}
