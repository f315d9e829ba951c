use super::*;

/// A volume whose repetitions spread ±1 % around each figure.
fn s(read: f64, wal: f64, bulk: f64) -> Scores {
    let around = |v: f64| vec![v * 0.99, v, v * 1.01];
    Scores {
        randread_p99_us: around(read),
        wal_commit_p99_us: around(wal),
        bulk_mib_s: around(bulk),
        volatile: false,
        wal_only: false,
        ..Scores::default()
    }
}

fn names(n: usize) -> Vec<&'static str> {
    ["a", "b", "c", "d"][..n].to_vec()
}

#[test]
fn an_estimate_is_the_mean_with_its_interval() {
    let e = estimate(&[100.0, 110.0, 90.0]).unwrap();
    assert_eq!(e.n, 3);
    assert!((e.mean - 100.0).abs() < 1e-9);
    // t(0.975, 2) = 4.303, s = 10, se = 5.774: ±24.8 %
    assert!((e.ci95_pct.unwrap() - 24.84).abs() < 0.01, "{e:?}");
    let one = estimate(&[5.0]).unwrap();
    assert_eq!(one.ci95_pct, None, "one repetition: no spread known");
    assert_eq!(
        estimate(&[0.0, f64::NAN]),
        None,
        "failed probes count for nothing"
    );
}

#[test]
fn ratios_are_to_the_best_and_roles_go_to_a_significant_winner() {
    let ram = s(10.0, 5.0, 6000.0);
    let disk = s(200.0, 1500.0, 1200.0);
    let r = rank(&[ram, disk], &names(2), Some(5.0));
    assert!((r[0].randread_vs_best.unwrap() - 1.0).abs() < 1e-12);
    assert!((r[1].randread_vs_best.unwrap() - 20.0).abs() < 1e-9);
    assert!((r[1].wal_commit_vs_best.unwrap() - 300.0).abs() < 1e-9);
    assert_eq!(r[0].best_for, vec!["wal", "indexes", "bulk"]);
    assert!(r[1].best_for.is_empty() && r[1].tied_for.is_empty());
    assert!(r[0].caveats.is_empty(), "{:?}", r[0].caveats);
}

#[test]
fn figures_that_cannot_be_told_apart_tie_and_no_one_wins() {
    // the WAL probe of the issue: one volume seen 18.6x apart, ±43 %
    let noisy = |v: &[f64]| Scores {
        wal_commit_p99_us: v.to_vec(),
        ..s(100.0, 1.0, 500.0)
    };
    let a = noisy(&[300.0, 5600.0, 900.0]);
    let b = noisy(&[400.0, 350.0, 5000.0]);
    let r = rank(&[a, b], &names(2), Some(5.0));
    for x in &r {
        assert!(!x.best_for.contains(&"wal"), "{x:?}");
        assert!(x.tied_for.contains(&"wal"), "{x:?}");
        assert!(
            x.caveats.iter().any(|c| c.starts_with(
                "wal: a tie, no one is best: wal commit p99 cannot be told apart from "
            )),
            "{:?}",
            x.caveats
        );
        assert!(
            x.caveats.iter().any(|c| c.starts_with("wal commit p99: ±")
                && c.ends_with("over 3 repetitions (5 % asked)")),
            "{:?}",
            x.caveats
        );
    }
    assert!(
        r[0].caveats
            .iter()
            .any(|c| c.contains("from b (Welch p = ")),
        "{:?}",
        r[0].caveats
    );
    // the read and bulk figures are identical: a tie too, p = 1
    assert_eq!(r[0].tied_for, vec!["wal", "indexes", "bulk"]);
    assert!(r[1]
        .caveats
        .iter()
        .any(|c| c.contains("from a (Welch p = 1.00, 3 and 3 repetitions)")));
}

#[test]
fn one_repetition_is_no_test_and_wins_nothing_against_another() {
    let one = |v: f64| Scores {
        randread_p99_us: vec![v],
        ..Scores::default()
    };
    let r = rank(&[one(50.0), one(500.0)], &names(2), Some(5.0));
    assert!(r[0].best_for.is_empty());
    assert_eq!(r[0].tied_for, vec!["indexes"]);
    assert!(r[0].caveats.contains(&"indexes: a tie, no one is best: 8 kB random read p99 cannot be told apart from b (no test: 1 and 1 repetition; Welch's test needs 2 of each)".to_string()), "{:?}", r[0].caveats);
    assert!(r[0]
        .caveats
        .contains(&"8 kB random read p99: measured once, its precision is unknown".to_string()));
    // alone, it has no one to beat
    let r = rank(&[one(50.0)], &names(1), Some(5.0));
    assert_eq!(r[0].best_for, vec!["indexes"]);
}

#[test]
fn a_leader_wins_only_when_it_beats_every_other_candidate() {
    let a = s(50.0, 100.0, 500.0);
    let b = s(80.0, 100.0, 500.0);
    // c is slower on average than a but too noisy to be told from it
    let c = Scores {
        randread_p99_us: vec![20.0, 150.0, 90.0],
        ..s(80.0, 100.0, 500.0)
    };
    let r = rank(&[a.clone(), b.clone()], &names(2), None);
    assert!(r[0].best_for.contains(&"indexes"));
    let r = rank(&[a, b, c], &names(3), None);
    assert!(!r[0].best_for.contains(&"indexes"));
    assert!(r[0].tied_for.contains(&"indexes") && r[2].tied_for.contains(&"indexes"));
    assert!(
        !r[1].tied_for.contains(&"indexes"),
        "b is significantly worse than a"
    );
}

#[test]
fn unmeasured_volumes_win_nothing_and_have_no_ratio() {
    let r = rank(&[Scores::default(), s(10.0, 10.0, 10.0)], &names(2), None);
    assert_eq!(r[0], Ranking::default());
    assert!((r[1].randread_vs_best.unwrap() - 1.0).abs() < 1e-12);
    assert!(rank(&[], &[], None).is_empty());
}

#[test]
fn volatile_storage_wins_no_role_beside_durable_storage() {
    let ram = Scores {
        volatile: true,
        ..s(10.0, 5.0, 6000.0)
    };
    let ssd = s(100.0, 500.0, 1200.0);
    let hdd = s(5000.0, 8000.0, 250.0);
    let r = rank(&[ram.clone(), ssd, hdd], &names(3), None);
    assert!(
        r[0].best_for.is_empty() && r[0].tied_for.is_empty(),
        "tmpfs is no place for WAL"
    );
    assert_eq!(r[1].best_for, vec!["wal", "indexes", "bulk"]);
    assert!(
        (r[1].wal_commit_vs_best.unwrap() - 1.0).abs() < 1e-12,
        "the yardstick is durable"
    );
    assert!((r[0].wal_commit_vs_best.unwrap() - 0.01).abs() < 1e-12);
    // with only volatile storage measured, it still ranks among itself
    let r = rank(&[ram], &names(1), None);
    assert_eq!(r[0].best_for, vec!["wal", "indexes", "bulk"]);
}

#[test]
fn a_volume_of_pg_wal_alone_competes_for_wal_only() {
    let pg_wal = Scores {
        wal_only: true,
        ..s(10.0, 50.0, 8000.0)
    };
    let ssd = s(100.0, 500.0, 1200.0);
    let r = rank(&[pg_wal, ssd], &names(2), None);
    assert_eq!(r[0].best_for, vec!["wal"]);
    assert_eq!(r[1].best_for, vec!["indexes", "bulk"]);
    assert!(
        (r[1].randread_vs_best.unwrap() - 1.0).abs() < 1e-12,
        "pg_wal is no yardstick for reads"
    );
    assert!((r[0].randread_vs_best.unwrap() - 0.1).abs() < 1e-12);
}

#[test]
fn more_repetitions_are_wanted_where_imprecise_or_tied() {
    let precise = s(100.0, 100.0, 500.0);
    let twin = s(100.0, 300.0, 900.0);
    let w = wanted(&[precise.clone(), twin], Some(5.0));
    // reads tie (the same figures): both want more; WAL and bulk are decided
    assert_eq!(
        w[0],
        Wanted {
            wal: false,
            randread: true,
            bulk: false
        }
    );
    assert_eq!(
        w[1],
        Wanted {
            wal: false,
            randread: true,
            bulk: false
        }
    );
    let noisy = Scores {
        bulk_mib_s: vec![400.0, 600.0],
        ..s(10.0, 10.0, 1.0)
    };
    let w = wanted(&[precise, noisy], Some(5.0));
    assert!(w[1].bulk, "±127 % where 5 % was asked");
    // the noisy figure cannot be told from the precise one: both again
    assert_eq!(
        w[0],
        Wanted {
            wal: false,
            randread: false,
            bulk: true
        }
    );
}

/// A sequential write less precise than asked is named, though the bulk sum
/// it is part of is precise enough (the output shows the write apart).
#[test]
fn each_shown_figure_gets_its_own_caveat() {
    let mut a = s(10.0, 10.0, 1000.0);
    a.seqwrite_mib_s = vec![400.0, 430.0, 370.0];
    a.seqread_mib_s = vec![600.0, 570.0, 630.0];
    a.bulk_mib_s = vec![1000.0, 1000.0, 1000.0];
    let r = rank(&[a.clone(), s(10.0, 10.0, 1000.0)], &names(2), Some(5.0));
    let about: Vec<&str> = r[0]
        .caveats
        .iter()
        .filter(|c| c.starts_with("sequential"))
        .map(|c| c.as_str())
        .collect();
    assert_eq!(about.len(), 2, "{:?}", r[0].caveats);
    assert!(
        about[0].starts_with("sequential write MiB/s: ±19 % over 3 repetitions"),
        "{about:?}"
    );
    assert!(
        about[1].starts_with("sequential read MiB/s: ±12 % over 3"),
        "{about:?}"
    );
    assert!(wanted(&[a, s(10.0, 10.0, 1000.0)], Some(5.0))[0].bulk);
}
