use super::*;

#[test]
fn tablespaces_on_one_filesystem_are_one_volume() {
    // pg_default, pg_wal and lab_disk on one ext4; lab_ram on tmpfs; one unreadable
    let v = volumes(&[Some(2049), Some(2049), Some(41), Some(2049), None, None]);
    assert_eq!(v, vec![0, 0, 2, 0, 4, 5]);
}

#[test]
fn a_probe_counts_for_its_item_or_its_stand_in() {
    assert_eq!(item_of("randread", 8192, "none", 1, 1), Some(0));
    let queued = SUITE.iter().position(|i| i.iodepth > 1).unwrap();
    assert_eq!(item_of("randread", 8192, "none", 1, 32), Some(queued));
    assert_eq!(
        item_of("randread", 8192, "none", 32, 1),
        Some(queued),
        "32 psync workers stand in"
    );
    assert_eq!(
        item_of("randread", 8192, "none", 4, 1),
        None,
        "a profile at 4 workers is another figure"
    );
    assert_eq!(item_of("randread", 4096, "none", 1, 1), None);
    assert_eq!(
        item_of("wal", 8192, "fdatasync", 1, 1).map(|i| SUITE[i].workload),
        Some(Workload::Wal)
    );
}

fn rep(call: &str, item: usize, v: f64, at: i64) -> Rep<i64> {
    Rep {
        call: call.into(),
        item,
        lat_p50_us: Some(v / 2.0),
        lat_p99_us: Some(v),
        iops: 1000.0 / v,
        mib_s: v,
        at,
    }
}

/// A call that measured every item `n` times, starting at `at`.
fn call(name: &str, n: usize, v: f64, at: i64) -> Vec<Rep<i64>> {
    let mut out = Vec::new();
    for r in 0..n {
        for k in 0..SUITE.len() {
            out.push(rep(
                name,
                k,
                v + r as f64,
                at + (r * SUITE.len() + k) as i64,
            ));
        }
    }
    out
}

fn of(reps: &[Rep<i64>]) -> Vec<&Rep<i64>> {
    reps.iter().collect()
}

#[test]
fn a_call_is_complete_with_every_item_and_its_repetitions() {
    let two = call("c", 2, 10.0, 100);
    assert!(complete(&of(&two), 2));
    assert!(!complete(&of(&two), 3), "three repetitions asked");
    // a call that stopped half-way (cancelled, a probe failed)
    let cut: Vec<Rep<i64>> = two.iter().take(SUITE.len() + 2).cloned().collect();
    assert!(!complete(&of(&cut), 2));
    assert!(complete(&of(&cut), 1), "its first round is whole");
    assert!(!complete::<i64>(&[], 1));
    let f = figures(&of(&two));
    assert_eq!(f.scores.randread_p99_us, vec![10.0, 11.0]);
    assert_eq!(f.randread_p50_us, Some(5.25));
    assert_eq!(
        f.scores.bulk_mib_s,
        vec![20.0, 22.0],
        "write + read of each round"
    );
    assert_eq!(f.seqwrite_mib_s.unwrap().mean, 10.5);
    assert_eq!(f.randread_p99_us.unwrap().n, 2);
    // two repetitions 10 and 11: ±(12.706 x 0.5 / 10.5) = ±60.5 %
    assert!((f.randread_p99_us.unwrap().ci95_pct.unwrap() - 60.50).abs() < 0.01);
    assert_eq!(f.first_at, Some(100));
    assert_eq!(f.repetitions, 2);
}

#[test]
fn extra_repetitions_count_for_the_ranked_figures() {
    let mut reps = call("c", 2, 10.0, 0);
    for k in items_for(Wanted {
        wal: true,
        randread: false,
        bulk: false,
    }) {
        reps.push(rep("c", k, 30.0, 50));
    }
    let of_call: Vec<&Rep<i64>> = reps.iter().collect();
    assert!(complete(&of_call, 2));
    let f = figures(&of_call);
    assert_eq!(f.scores.wal_commit_p99_us.len(), 3);
    assert_eq!(f.repetitions, 2, "the fewest of the ranked figures");
}

#[test]
fn the_ranked_figures_are_made_of_these_items() {
    let names = |w| -> Vec<String> { items_for(w).into_iter().map(|k| SUITE[k].name()).collect() };
    assert_eq!(
        names(Wanted {
            wal: true,
            randread: false,
            bulk: false
        }),
        vec!["wal"]
    );
    assert_eq!(
        names(Wanted {
            wal: false,
            randread: true,
            bulk: true
        }),
        vec!["randread", "seqwrite", "seqread"]
    );
    assert!(names(Wanted::default()).is_empty());
}

#[test]
fn the_most_time_counts_every_probe_its_overhead_and_its_fill() {
    // two volumes, 6 items x 2 + 4 ranked items x 2 more = 20 probes each,
    // 1 s + 0.5 s each, 256 MiB filled at a quarter of 1024 MiB/s (1 s) and
    // of 512 MiB/s (2 s)
    let t = most_time(&[1024.0, 512.0], 2, 4, Duration::from_secs(1), 256 << 20);
    assert_eq!(t, Duration::from_secs_f64(20.0 * 2.5 + 20.0 * 3.5));
    assert_eq!(
        most_time(&[], 2, 4, Duration::from_secs(1), 1),
        Duration::ZERO
    );
}
