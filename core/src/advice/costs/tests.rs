use super::super::figures::Probe;
use super::*;

#[test]
fn seq_page_time_from_throughput() {
    // 1000 MiB/s: 8192 / 1 048 576 000 s = 7.8125 us
    assert!((seq_page_us(1000.0).unwrap() - 7.8125).abs() < 1e-9);
    assert_eq!(seq_page_us(0.0), None);
}

#[test]
fn costs_by_hand() {
    // pg_default: 800 MiB/s -> 9.765625 us a page. lab_disk: 100 us
    // random mean, 640 MiB/s -> 12.20703125 us a page; miss 0.1:
    //   seq_page_cost = 12.207 / 9.766 = 1.25
    //   random_page_cost = max(1.25, 100 / 9.765625 x 0.1 = 1.024) = 1.25
    let unit = seq_page_us(800.0).unwrap();
    let c = costs(100.0, seq_page_us(640.0).unwrap(), unit, 0.1).unwrap();
    assert_eq!(
        c,
        Costs {
            seq_page_cost: 1.25,
            random_page_cost: 1.25
        }
    );
    // a spinning disk: 8 ms random, 200 MiB/s; half the reads miss:
    //   seq = 39.0625 / 9.765625 = 4.0, random = 8000 / 9.765625 x 0.5 = 409.6
    let c = costs(8000.0, seq_page_us(200.0).unwrap(), unit, 0.5).unwrap();
    assert_eq!(
        c,
        Costs {
            seq_page_cost: 4.0,
            random_page_cost: 409.6
        }
    );
    // PostgreSQL's own model: random 40x sequential, 10 % missing -> 4
    let c = costs(40.0 * unit, unit, unit, DEFAULT_MISS).unwrap();
    assert_eq!(
        c,
        Costs {
            seq_page_cost: 1.0,
            random_page_cost: 4.0
        }
    );
    assert_eq!(costs(0.0, 1.0, 1.0, 0.1), None);
}

#[test]
fn the_hit_ratio_needs_enough_reads() {
    assert_eq!(miss_ratio(30, 9_970), (DEFAULT_MISS, false));
    assert_eq!(miss_ratio(10_000, 990_000), (0.01, true));
}

/// A sweep point with its repetitions (ids from the readers).
fn pt(readers: i32, iops: &[f64]) -> SweepPoint {
    SweepPoint {
        readers,
        iops: iops.to_vec(),
        ids: (0..iops.len() as i64)
            .map(|k| readers as i64 * 10 + k)
            .collect(),
    }
}

#[test]
fn the_knee_is_the_smallest_depth_not_significantly_below_four_fifths_of_the_best() {
    // a RAID or SSD: 1 -> 2 -> 4 grow, 8 barely; four fifths of 31 000 is
    // 24 800, which 4 (30 000) is above and 2 (19 000) significantly below
    let sweep = [
        pt(1, &[10_000.0, 10_100.0, 9_900.0]),
        pt(2, &[19_000.0, 19_200.0, 18_800.0]),
        pt(4, &[30_000.0, 29_700.0, 30_300.0]),
        pt(8, &[31_000.0, 31_200.0, 30_800.0]),
    ];
    let pick = eic_from_sweep(&sweep).unwrap();
    assert_eq!((pick.value, pick.best), (4, 8));
    assert_eq!(pick.points.len(), 4);
    assert!(pick.points[3].1.ci95_pct.unwrap() < 5.0);
    // one disk head: nothing to gain beyond one read at a time
    let head = [
        pt(1, &[200.0, 205.0, 195.0]),
        pt(2, &[210.0, 208.0, 212.0]),
        pt(4, &[215.0, 214.0, 216.0]),
    ];
    assert_eq!(eic_from_sweep(&head).unwrap().value, 1);
}

#[test]
fn one_outlying_probe_does_not_crown_a_depth() {
    // the defect's case: one probe at depth 64 far above depth 32. The
    // newest-probe rule saw 64 at 60 000 against 33 000 and said 64; with
    // repetitions 64's mean (42 000) is the best, but 32 is not
    // significantly below four fifths of it (its spread is the outlier's)
    let sweep = [
        pt(1, &[10_000.0, 10_050.0, 9_950.0]),
        pt(32, &[33_000.0, 33_300.0, 32_700.0]),
        pt(64, &[33_100.0, 32_900.0, 60_000.0]),
    ];
    let pick = eic_from_sweep(&sweep).unwrap();
    assert_eq!((pick.value, pick.best), (32, 64));
}

#[test]
fn a_sweep_without_repetitions_or_its_one_reader_point_decides_nothing() {
    let once = [pt(1, &[10_000.0]), pt(8, &[31_000.0]), pt(64, &[52_000.0])];
    assert_eq!(eic_from_sweep(&once), Err(EicShort::TooFewRepetitions(1)));
    let twice = [pt(1, &[1.0, 1.1]), pt(8, &[3.0, 3.1, 3.2])];
    assert_eq!(eic_from_sweep(&twice), Err(EicShort::TooFewRepetitions(2)));
    let no_one = [pt(2, &[1.0, 1.1, 1.2]), pt(4, &[2.0, 2.1, 2.2])];
    assert_eq!(eic_from_sweep(&no_one), Err(EicShort::TooFewPoints));
    assert_eq!(
        eic_from_sweep(&[pt(1, &[1.0, 1.1, 1.2])]),
        Err(EicShort::TooFewPoints)
    );
}

fn probe(id: i64, mean_us: f64, mib_s: f64) -> Probe {
    Probe {
        id,
        mean_us,
        p50_us: mean_us,
        p99_us: mean_us * 2.0,
        mib_s,
    }
}

/// `n` repeated probes of a workload around a figure (ids from `first`).
fn repeats(first: i64, n: usize, mean_us: f64, mib_s: f64) -> Vec<Probe> {
    (0..n)
        .map(|k| {
            let wobble = [1.0, 1.01, 0.99, 1.02, 0.98][k % 5];
            probe(first + k as i64, mean_us * wobble, mib_s * wobble)
        })
        .collect()
}

fn sweep(basis: ConcurrencyBasis, points: Vec<SweepPoint>) -> Option<Sweep> {
    Some(Sweep {
        call: "4f0c1c2e-0000-4000-8000-000000000001".into(),
        measured_at: "2026-12-07 16:00:00+00".into(),
        basis,
        points,
    })
}

/// pg_default and lab_disk with three probes of each costs figure;
/// lab_disk swept by workers with repetitions, pg_default by depth once.
fn two_tablespaces() -> ByTablespace {
    let mut figures = ByTablespace::new();
    let pg_default = figures.entry("pg_default".into()).or_default();
    pg_default
        .repeats
        .insert("seqread".into(), repeats(1, 3, 0.0, 800.0));
    pg_default
        .repeats
        .insert("randread".into(), repeats(4, 3, 60.0, 125.0));
    pg_default.sweep = sweep(
        ConcurrencyBasis::QueueDepth,
        vec![pt(1, &[16_000.0]), pt(8, &[48_000.0]), pt(32, &[55_000.0])],
    );
    let lab_disk = figures.entry("lab_disk".into()).or_default();
    lab_disk
        .repeats
        .insert("seqread".into(), repeats(7, 3, 0.0, 640.0));
    lab_disk
        .repeats
        .insert("randread".into(), repeats(10, 3, 100.0, 78.0));
    lab_disk.sweep = sweep(
        ConcurrencyBasis::Workers,
        vec![
            pt(1, &[10_000.0, 10_100.0, 9_900.0]),
            pt(2, &[19_000.0, 19_200.0, 18_800.0]),
            pt(4, &[30_000.0, 29_700.0, 30_300.0]),
            pt(8, &[31_000.0, 31_200.0, 30_800.0]),
        ],
    );
    figures
}

#[test]
fn a_row_per_tablespace_priced_from_repeated_probes_with_their_intervals() {
    let rows = advise(&two_tablespaces(), 0, 0, None);
    let targets: Vec<_> = rows.iter().map(|r| r.target.as_deref().unwrap()).collect();
    assert_eq!(targets, ["lab_disk", "pg_default"]);
    // the means of 1, 1.01 and 0.99 times the figure are the figure
    assert_eq!(
        rows[0].statement.as_deref(),
        Some("ALTER TABLESPACE lab_disk SET (random_page_cost = 1.25, seq_page_cost = 1.25, effective_io_concurrency = 4)")
    );
    let a = &rows[0].advice;
    // each figure with its interval and how many probes: t(0.975, 2) x 1 % / sqrt(3) = 2.5 %
    assert!(
        a.contains("8 kB random reads take 100.0 us on average (±2.5 %, 3 probes)"),
        "{a}"
    );
    assert!(a.contains("a sequential page 12.21 us (640 MiB/s, ±2.5 %, 3 probes; pg_default's: 9.77 us, ±2.5 %, 3 probes)"), "{a}");
    assert!(a.contains("PostgreSQL's own assumption that 10 %"));
    assert!(a.contains("effective_io_concurrency = 4: the smallest number of concurrent readers whose read IOPS is not significantly below four fifths of the best (8), in one sweep (profile() of 2026-12-07 16:00:00+00, 3 probes or more at each; IOPS by number of concurrent readers: 1: 10000 ±2.5 %, 2: 19000 ±2.6 %"), "{a}");
    let e = &rows[0].evidence;
    assert_eq!(e["probes"], json!([10, 11, 12, 7, 8, 9]));
    assert_eq!(e["randread_mean_us"]["n"], 3);
    assert_eq!(e["randread_mean_us"]["probes"], json!([10, 11, 12]));
    assert_eq!(e["unit_seqread_mib_s"]["probes"], json!([1, 2, 3]));
    assert_eq!(e["miss_ratio_measured"], json!(false));
    assert_eq!(e["sweep"]["by"], "workers");
    assert_eq!(e["sweep"]["effective_io_concurrency"], 4);
    assert_eq!(e["sweep"]["points"][2]["probes"], json!([40, 41, 42]));
    // pg_default: one probe per depth decides nothing; the call that does
    let d = &rows[1];
    assert!(
        d.statement
            .as_deref()
            .unwrap()
            .ends_with("seq_page_cost = 1)"),
        "{:?}",
        d.statement
    );
    assert!(d.advice.contains("effective_io_concurrency is left as it is: the newest sweep (profile() of 2026-12-07 16:00:00+00) has 1 probe at a queue depth where telling them apart takes 3; SELECT * FROM storlab.profile('pg_default', iodepths => '{1,2,4,8,16,32,64}', repetitions => 3) measures one"), "{}", d.advice);
    assert_eq!(d.evidence["sweep"]["effective_io_concurrency"], json!(null));
}

#[test]
fn a_measured_miss_ratio_is_said_and_used() {
    let rows = advise(&two_tablespaces(), 500_000, 500_000, None);
    assert!(rows[0]
        .advice
        .contains("50.0 % of this database's block reads missing shared buffers"));
    // lab_disk: 100 / 9.765625 x 0.5 = 5.12
    assert!(rows[0]
        .statement
        .as_deref()
        .unwrap()
        .contains("random_page_cost = 5.12"));
}

#[test]
fn fewer_than_three_probes_of_a_figure_price_nothing_and_give_the_call() {
    // pg_default's unit with two probes: nothing can be priced
    let mut figures = two_tablespaces();
    figures
        .get_mut("pg_default")
        .unwrap()
        .repeats
        .get_mut("seqread")
        .unwrap()
        .truncate(2);
    let rows = advise(&figures, 0, 0, None);
    assert_eq!(rows.len(), 1);
    assert!(
        rows[0].advice.starts_with("nothing to price yet"),
        "{}",
        rows[0].advice
    );
    assert!(rows[0].advice.contains("2 probes where 3 are needed"));
    assert_eq!(
        rows[0].statement.as_deref(),
        Some(costs_call(&["pg_default"]).as_str())
    );
    // without any: measure first
    figures.get_mut("pg_default").unwrap().repeats.clear();
    let rows = advise(&figures, 0, 0, None);
    assert!(rows[0]
        .advice
        .starts_with("nothing measured yet: pg_default's sequential reads (3 probes)"));
    // lab_disk with one random read: pg_default is priced, lab_disk asked for
    let mut figures = two_tablespaces();
    figures
        .get_mut("lab_disk")
        .unwrap()
        .repeats
        .get_mut("randread")
        .unwrap()
        .truncate(1);
    let rows = advise(&figures, 0, 0, None);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].target.as_deref(), Some("pg_default"));
    assert_eq!(rows[1].target, None);
    assert!(rows[1].advice.contains("cannot price lab_disk yet: a cost needs 3 probes of random reads and of sequential reads, and there are fewer: lab_disk (1 random, 3 sequential)"), "{}", rows[1].advice);
    let call = rows[1].statement.as_deref().unwrap();
    assert!(
        call.contains("ARRAY['lab_disk']::name[]")
            && call.contains("('randread', 8192), ('seqread', 131072)")
            && call.contains("generate_series(1, 3)"),
        "{call}"
    );
}

#[test]
fn pg_wal_gets_no_costs_and_no_sweep_means_measure_one() {
    let mut figures = two_tablespaces();
    figures.insert("pg_wal".into(), figures["lab_disk"].clone());
    figures.get_mut("lab_disk").unwrap().sweep = None;
    let rows = advise(&figures, 0, 0, None);
    assert_eq!(rows.len(), 2, "pg_wal is no tablespace");
    assert!(!rows[0]
        .statement
        .as_deref()
        .unwrap()
        .contains("effective_io_concurrency"));
    assert!(rows[0].advice.contains("for effective_io_concurrency, measure reads at several queue depths first: SELECT * FROM storlab.profile('lab_disk', iodepths => '{1,2,4,8,16,32,64}', repetitions => 3)"));
}

#[test]
fn on_18_the_read_path_decides_effective_io_concurrency() {
    use super::super::read_path::ReadPathPoint;
    let mut figures = two_tablespaces();
    let rp = |eic: i32, mib: [f64; 3]| ReadPathPoint {
        scan: "bitmapscan".into(),
        io_method: "worker".into(),
        eic,
        table_bytes: 64 << 20,
        mib_s: mib.to_vec(),
        ids: vec![100 + eic as i64],
    };
    figures.get_mut("lab_disk").unwrap().read_path = vec![
        rp(1, [30.0, 31.0, 29.0]),
        rp(16, [80.0, 81.0, 79.0]),
        rp(64, [82.0, 81.0, 83.0]),
    ];
    let rows = advise(&figures, 0, 0, Some("worker"));
    let d = rows
        .iter()
        .find(|r| r.target.as_deref() == Some("lab_disk"))
        .unwrap();
    assert!(
        d.statement
            .as_ref()
            .unwrap()
            .ends_with("effective_io_concurrency = 16)"),
        "{:?}",
        d.statement
    );
    // the raw sweep's value (4) is named, and not used
    assert!(
        d.advice.contains("own sweep (profile()) says 4"),
        "{}",
        d.advice
    );
    assert_eq!(d.evidence["read_path"]["effective_io_concurrency"], 16);
    // without read-path probes under the method in use, the sweep decides
    let rows = advise(&figures, 0, 0, Some("io_uring"));
    let d = rows
        .iter()
        .find(|r| r.target.as_deref() == Some("lab_disk"))
        .unwrap();
    assert!(
        d.statement
            .as_ref()
            .unwrap()
            .ends_with("effective_io_concurrency = 4)"),
        "{:?}",
        d.statement
    );
}

#[test]
fn figures_too_spread_price_nothing_and_ask_for_more() {
    // lab_disk's random reads under a load: 100, 300 and 50 us
    let mut figures = two_tablespaces();
    figures.get_mut("lab_disk").unwrap().repeats.insert(
        "randread".into(),
        vec![
            probe(10, 100.0, 78.0),
            probe(11, 300.0, 26.0),
            probe(12, 50.0, 156.0),
        ],
    );
    let rows = advise(&figures, 0, 0, None);
    let d = &rows[0];
    assert_eq!(d.target.as_deref(), Some("lab_disk"));
    assert!(d.advice.starts_with("cannot price lab_disk yet: a cost needs its figures within ±25 %, and random reads of lab_disk ±"), "{}", d.advice);
    let call = d.statement.as_deref().unwrap();
    assert!(
        call.starts_with("SELECT p.* FROM") && call.contains("ARRAY['lab_disk']::name[]"),
        "{call}"
    );
    assert_eq!(d.evidence["max_ci95_pct"], 25.0);
    // pg_default's row is unaffected
    assert!(rows[1]
        .statement
        .as_deref()
        .unwrap()
        .starts_with("ALTER TABLESPACE pg_default"));
}

#[test]
fn pg_defaults_own_spread_is_said_once() {
    let mut figures = two_tablespaces();
    figures.get_mut("pg_default").unwrap().repeats.insert(
        "seqread".into(),
        vec![
            probe(1, 0.0, 800.0),
            probe(2, 0.0, 400.0),
            probe(3, 0.0, 1200.0),
        ],
    );
    let rows = advise(&figures, 0, 0, None);
    let d = rows
        .iter()
        .find(|r| r.target.as_deref() == Some("pg_default"))
        .unwrap();
    assert_eq!(
        d.advice.matches("sequential reads of pg_default").count(),
        1,
        "{}",
        d.advice
    );
    let l = rows
        .iter()
        .find(|r| r.target.as_deref() == Some("lab_disk"))
        .unwrap();
    assert!(
        l.advice.starts_with("cannot price lab_disk yet")
            && l.advice.contains("sequential reads of pg_default ±"),
        "{}",
        l.advice
    );
    assert!(l
        .statement
        .as_deref()
        .unwrap()
        .contains("ARRAY['lab_disk', 'pg_default']"));
}
