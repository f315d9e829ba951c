//! Which tablespace is best at what: the ratios and roles that
//! `storlab.compare_tablespaces()` reports.

/// The figures of one tablespace that the ranking looks at; None where the
/// tablespace could not be measured (it then wins nothing and has no ratio).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scores {
    pub randread_p99_us: Option<f64>,
    pub wal_commit_p99_us: Option<f64>,
    pub seqwrite_mib_s: Option<f64>,
    pub seqread_mib_s: Option<f64>,
    /// Storage that loses its contents at a reboot (tmpfs, zram): fast, and
    /// no place for WAL, data or indexes, so it wins no role and is no one's
    /// yardstick while durable storage was measured too.
    pub volatile: bool,
    /// The WAL folder: no table or index can be placed there, so it
    /// competes for `wal` only (and is no yardstick for reads or bulk).
    pub wal_only: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ranking {
    /// randread p99 / best randread p99: 1.0 is the best, 3.0 three times slower.
    pub randread_vs_best: Option<f64>,
    pub wal_commit_vs_best: Option<f64>,
    /// Roles this tablespace wins among durable storage: `wal` (lowest WAL
    /// commit p99), `indexes` (lowest 8 kB random read p99), `bulk` (highest
    /// sequential throughput, read plus write).
    pub best_for: Vec<&'static str>,
}

fn positive(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite() && *v > 0.0)
}

fn bulk(s: &Scores) -> Option<f64> {
    Some(positive(s.seqwrite_mib_s)? + positive(s.seqread_mib_s)?)
}

fn min_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values
        .flatten()
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))))
}

/// Ratios to the best durable figure, and each role to the durable winner.
/// When every measured tablespace is volatile, they compete among themselves.
pub fn rank(all: &[Scores]) -> Vec<Ranking> {
    let any_durable = all.iter().any(|s| {
        !s.volatile
            && (positive(s.randread_p99_us).is_some() || positive(s.wal_commit_p99_us).is_some())
    });
    let candidates = || all.iter().filter(move |s| !(any_durable && s.volatile));
    let places_relations = || candidates().filter(|s| !s.wal_only);
    let best_read = min_of(places_relations().map(|s| positive(s.randread_p99_us)));
    let best_wal = min_of(candidates().map(|s| positive(s.wal_commit_p99_us)));
    let best_bulk = places_relations()
        .filter_map(bulk)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    all.iter()
        .map(|s| {
            let read = positive(s.randread_p99_us);
            let wal = positive(s.wal_commit_p99_us);
            let mut best_for = Vec::new();
            let competes = !(any_durable && s.volatile);
            // Ties share the role: two equal disks are equally good for WAL.
            if competes && wal.is_some() && wal == best_wal {
                best_for.push("wal");
            }
            let places = competes && !s.wal_only;
            if places && read.is_some() && read == best_read {
                best_for.push("indexes");
            }
            if places && bulk(s).is_some() && bulk(s) == best_bulk {
                best_for.push("bulk");
            }
            Ranking {
                randread_vs_best: read.zip(best_read).map(|(v, b)| v / b),
                wal_commit_vs_best: wal.zip(best_wal).map(|(v, b)| v / b),
                best_for,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(read: f64, wal: f64, w: f64, r: f64) -> Scores {
        Scores {
            randread_p99_us: Some(read),
            wal_commit_p99_us: Some(wal),
            seqwrite_mib_s: Some(w),
            seqread_mib_s: Some(r),
            volatile: false,
            wal_only: false,
        }
    }

    #[test]
    fn ratios_are_to_the_best_and_roles_go_to_the_winner() {
        let ram = s(10.0, 5.0, 2000.0, 4000.0);
        let disk = s(200.0, 1500.0, 300.0, 900.0);
        let r = rank(&[ram, disk]);
        assert_eq!(r[0].randread_vs_best, Some(1.0));
        assert_eq!(r[1].randread_vs_best, Some(20.0));
        assert_eq!(r[1].wal_commit_vs_best, Some(300.0));
        assert_eq!(r[0].best_for, vec!["wal", "indexes", "bulk"]);
        assert!(r[1].best_for.is_empty());
    }

    #[test]
    fn roles_can_be_split_and_shared() {
        let fast_reads = s(50.0, 900.0, 100.0, 100.0);
        let fast_wal = s(80.0, 300.0, 500.0, 600.0);
        let twin = s(80.0, 300.0, 100.0, 100.0);
        let r = rank(&[fast_reads, fast_wal, twin]);
        assert_eq!(r[0].best_for, vec!["indexes"]);
        assert_eq!(r[1].best_for, vec!["wal", "bulk"]);
        assert_eq!(r[2].best_for, vec!["wal"], "a tie shares the role");
    }

    #[test]
    fn unmeasured_tablespaces_win_nothing_and_have_no_ratio() {
        let r = rank(&[Scores::default(), s(10.0, 10.0, 10.0, 10.0)]);
        assert_eq!(
            r[0],
            Ranking {
                randread_vs_best: None,
                wal_commit_vs_best: None,
                best_for: vec![]
            }
        );
        assert_eq!(r[1].randread_vs_best, Some(1.0));
        assert!(rank(&[]).is_empty());
    }

    #[test]
    fn volatile_storage_wins_no_role_beside_durable_storage() {
        let ram = Scores {
            volatile: true,
            ..s(10.0, 5.0, 2000.0, 4000.0)
        };
        let ssd = s(100.0, 500.0, 300.0, 900.0);
        let hdd = s(5000.0, 8000.0, 100.0, 150.0);
        let r = rank(&[ram, ssd, hdd]);
        assert!(r[0].best_for.is_empty(), "tmpfs is no place for WAL");
        assert_eq!(r[1].best_for, vec!["wal", "indexes", "bulk"]);
        assert_eq!(
            r[1].wal_commit_vs_best,
            Some(1.0),
            "the yardstick is durable"
        );
        assert_eq!(r[0].wal_commit_vs_best, Some(0.01));
        // with only volatile storage measured, it still ranks among itself
        let r = rank(&[ram]);
        assert_eq!(r[0].best_for, vec!["wal", "indexes", "bulk"]);
    }

    #[test]
    fn pg_wal_competes_for_wal_only() {
        // the WAL folder on the fastest volume: no relation can go there
        let pg_wal = Scores {
            wal_only: true,
            ..s(10.0, 50.0, 3000.0, 5000.0)
        };
        let ssd = s(100.0, 500.0, 300.0, 900.0);
        let r = rank(&[pg_wal, ssd]);
        assert_eq!(r[0].best_for, vec!["wal"]);
        assert_eq!(r[1].best_for, vec!["indexes", "bulk"]);
        assert_eq!(
            r[1].randread_vs_best,
            Some(1.0),
            "pg_wal is no yardstick for reads"
        );
        assert_eq!(r[0].randread_vs_best, Some(0.1));
    }

    #[test]
    fn zero_or_nan_figures_are_ignored() {
        let r = rank(&[s(0.0, f64::NAN, 1.0, 1.0), s(5.0, 5.0, 1.0, 1.0)]);
        assert_eq!(r[0].randread_vs_best, None);
        assert_eq!(r[1].best_for, vec!["wal", "indexes", "bulk"]);
        assert_eq!(r[0].best_for, vec!["bulk"], "equal throughput ties");
    }
}
