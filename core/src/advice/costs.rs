//! Planner costs per tablespace and effective_io_concurrency.
//! PostgreSQL's costs are relative to `seq_page_cost` = 1,
//! one 8 kB page read as part of a sequential scan. Its default
//! `random_page_cost` = 4 models a random read 40 times as slow as a
//! sequential one with 90 % of random reads found in a cache (40 x 0.1).
//! Here each is measured instead:
//!   t_seq(ts)  = 8192 / sequential read throughput (bytes/s), the time of
//!                one page at the standard suite's 128 kB direct reads;
//!   t_rand(ts) = mean latency of the standard suite's 8 kB direct random
//!                reads, one worker;
//!   miss       = 1 - the database's buffer hit ratio (pg_stat_database),
//!                or PostgreSQL's own 0.1 while it has read too few blocks
//!                to tell;
//!   seq_page_cost(ts)    = t_seq(ts) / t_seq(pg_default): pg_default's
//!                          sequential page is the unit the server-wide
//!                          seq_page_cost = 1 stands for;
//!   random_page_cost(ts) = max(seq_page_cost(ts), t_rand(ts) / t_seq(pg_default) x miss):
//!                          a cached random read costs no more than a
//!                          sequential one.
//! effective_io_concurrency: the smallest queue depth of one reader (or,
//! where no depth beyond 1 was measured, the fewest concurrent workers)
//! that reaches four fifths of the highest read IOPS measured; 1 when one
//! read at a time already gets nearly all there is.

use serde_json::json;

use super::figures::{ByTablespace, Figures};
use super::read_path::{choose_eic, eic_said};
use super::{Advice, COMPARE_CALL};
use crate::sql_text::{ident, literal};

/// Costs proposed for one tablespace.
#[derive(Debug, Clone, PartialEq)]
pub struct Costs {
    pub seq_page_cost: f64,
    pub random_page_cost: f64,
}

/// PostgreSQL's own assumption of the share of random reads that miss
/// every cache (its random_page_cost = 4 is 40 x 0.1).
pub const DEFAULT_MISS: f64 = 0.1;
/// Below this many block reads and hits, a hit ratio says nothing about a
/// workload (a new database's are its catalog lookups).
pub const MIN_BLOCKS_FOR_RATIO: i64 = 1_000_000;

/// The time of one 8 kB page read sequentially, in microseconds.
pub fn seq_page_us(seqread_mib_s: f64) -> Option<f64> {
    (seqread_mib_s > 0.0).then(|| 8192.0 / (seqread_mib_s * 1_048_576.0) * 1e6)
}

/// The share of reads that miss shared buffers, or the default while the
/// database has not read enough to tell.
pub fn miss_ratio(blks_read: i64, blks_hit: i64) -> (f64, bool) {
    let total = blks_read + blks_hit;
    if total < MIN_BLOCKS_FOR_RATIO {
        return (DEFAULT_MISS, false);
    }
    (blks_read as f64 / total as f64, true)
}

/// A cost as ALTER TABLESPACE should get it: two decimals, at least 0.01.
fn rounded(x: f64) -> f64 {
    ((x * 100.0).round() / 100.0).max(0.01)
}

pub fn costs(rand_mean_us: f64, seq_us: f64, unit_seq_us: f64, miss: f64) -> Option<Costs> {
    if !(rand_mean_us > 0.0 && seq_us > 0.0 && unit_seq_us > 0.0) {
        return None;
    }
    let seq_page_cost = rounded(seq_us / unit_seq_us);
    let random_page_cost =
        rounded((rand_mean_us / unit_seq_us * miss).max(seq_us / unit_seq_us)).max(seq_page_cost);
    Some(Costs {
        seq_page_cost,
        random_page_cost,
    })
}

/// effective_io_concurrency from read IOPS at several numbers of
/// concurrent readers (workers or queue depth): the fewest readers that
/// reach four fifths of the highest IOPS measured, a rule one noisy step
/// does not derail. None without the one-reader point and another.
pub fn effective_io_concurrency(iops_by_readers: &[(i32, f64)]) -> Option<i32> {
    let mut points: Vec<(i32, f64)> = iops_by_readers
        .iter()
        .copied()
        .filter(|p| p.0 > 0 && p.1 > 0.0)
        .collect();
    points.sort_by_key(|p| p.0);
    points.dedup_by_key(|p| p.0);
    if points.len() < 2 || points[0].0 != 1 {
        return None;
    }
    let top = points.iter().map(|p| p.1).fold(0.0, f64::max);
    points
        .iter()
        .find(|p| p.1 >= 0.8 * top)
        .map(|p| p.0.min(1000))
}

/// What an effective_io_concurrency was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConcurrencyBasis {
    /// One reader's io_uring queue depth: what the setting is, the number
    /// of reads one backend keeps in flight while it prefetches.
    QueueDepth,
    /// Concurrent synchronous readers (profile's workers): a stand-in,
    /// for tablespaces profiled before queued probes existed or where
    /// io_uring is off.
    Workers,
}

/// effective_io_concurrency from the read IOPS measured at several queue
/// depths (one reader) or, without such, at several workers: the depth
/// curve when it has a point beyond depth 1, since that is the setting's
/// own meaning.
pub fn io_concurrency(
    by_depth: &[(i32, f64)],
    by_workers: &[(i32, f64)],
) -> Option<(i32, ConcurrencyBasis)> {
    if by_depth.iter().any(|p| p.0 > 1) {
        if let Some(n) = effective_io_concurrency(by_depth) {
            return Some((n, ConcurrencyBasis::QueueDepth));
        }
    }
    effective_io_concurrency(by_workers).map(|n| (n, ConcurrencyBasis::Workers))
}

/// The costs rows: one per tablespace with random and sequential reads
/// measured (pg_wal aside), priced in pg_default's sequential page; or
/// what to measure first.
/// `io_method`: the server's (PostgreSQL 18), whose read-path probes decide
/// effective_io_concurrency where they were run.
pub fn advise(
    figures: &ByTablespace,
    blks_read: i64,
    blks_hit: i64,
    io_method: Option<&str>,
) -> Vec<Advice> {
    let seq = |f: &Figures| {
        f.workloads
            .get("seqread")
            .and_then(|p| seq_page_us(p.mib_s))
    };
    let Some(unit) = figures.get("pg_default").and_then(seq) else {
        return vec![Advice::measure_first(
            "costs",
            "pg_default's sequential reads, the unit every cost is relative to",
            COMPARE_CALL,
        )];
    };
    let (miss, measured) = miss_ratio(blks_read, blks_hit);
    let miss_said = if measured {
        format!(
            "{:.1} % of this database's block reads missing shared buffers (pg_stat_database)",
            miss * 100.0
        )
    } else {
        format!("PostgreSQL's own assumption that {:.0} % of random reads miss every cache (this database has read too little to tell)", miss * 100.0)
    };
    let mut rows = Vec::new();
    for (ts, f) in figures.iter().filter(|(ts, _)| *ts != "pg_wal") {
        let (Some(rand), Some(seq_us)) = (f.workloads.get("randread"), seq(f)) else {
            continue;
        };
        let Some(Costs {
            seq_page_cost,
            random_page_cost,
        }) = costs(rand.mean_us, seq_us, unit, miss)
        else {
            continue;
        };
        let readers: Vec<(i32, f64)> = f.scaling.iter().map(|s| (s.0, s.1)).collect();
        let depths: Vec<(i32, f64)> = f.depths.iter().map(|s| (s.0, s.1)).collect();
        let eic = io_concurrency(&depths, &readers);
        let mut set =
            format!("random_page_cost = {random_page_cost}, seq_page_cost = {seq_page_cost}");
        let mut said = format!(
            "plans priced by this storage's measured costs: 8 kB random reads take {:.1} us on average, a sequential page {:.2} us (pg_default's: {:.2} us); with {miss_said}, a random page costs {random_page_cost} and a sequential one {seq_page_cost} of pg_default's sequential page",
            rand.mean_us, seq_us, unit
        );
        let finer = format!(
            "SELECT * FROM storlab.profile({}, iodepths => '{{1,2,4,8,16,32,64}}')",
            literal(ts)
        );
        let read_path = io_method.and_then(|m| choose_eic(&f.read_path, m).map(|c| (c, m)));
        match eic {
            _ if read_path.is_some() => {
                let (c, m) = read_path.as_ref().expect("matched");
                set.push_str(&format!(", effective_io_concurrency = {}", c.eic));
                said.push_str("; ");
                said.push_str(&eic_said(c, m, eic.map(|e| e.0)));
            }
            Some((n, ConcurrencyBasis::QueueDepth)) => {
                set.push_str(&format!(", effective_io_concurrency = {n}"));
                let measured: Vec<String> = depths.iter().map(|d| d.0.to_string()).collect();
                let who = if n == 1 {
                    "one read at a time already gets".to_string()
                } else {
                    format!("one reader keeping {n} reads in flight reaches")
                };
                said.push_str(&format!(
                    "; {who} four fifths of the highest read IOPS measured (queue depths {})",
                    measured.join(", ")
                ));
                // the suite's depths 1 and 32 bound the knee, they do not
                // place it (nothing is below 1)
                if n > 1 && depths.len() < 4 {
                    said.push_str(&format!("; {finer} places it more finely"));
                }
            }
            Some((n, ConcurrencyBasis::Workers)) => {
                set.push_str(&format!(", effective_io_concurrency = {n}"));
                said.push_str(&format!("; {n} concurrent readers reach four fifths of the highest read IOPS measured"));
            }
            None => said.push_str(&format!(
                "; for effective_io_concurrency, measure reads at several queue depths first: {finer}"
            )),
        }
        rows.push(Advice::new(
            "costs",
            Some(ts),
            said,
            Some(format!("ALTER TABLESPACE {} SET ({set})", ident(ts))),
            // the gain is in the plans chosen: no figure to promise
            None,
            json!({
                "probes": [rand.id, f.workloads["seqread"].id],
                "scaling_probes": f.scaling.iter().map(|s| s.2).collect::<Vec<_>>(),
                "randread_mean_us": rand.mean_us, "seq_page_us": seq_us, "unit_seq_page_us": unit,
                "miss_ratio": miss, "miss_ratio_measured": measured,
                "iops_by_workers": readers,
                "iops_by_iodepth": depths,
                "depth_probes": f.depths.iter().map(|s| s.2).collect::<Vec<_>>(),
                "read_path": read_path.as_ref().map(|(c, m)| json!({
                    "io_method": m, "effective_io_concurrency": c.eic, "mib_s_by_value": c.curve,
                    "probes": c.ids,
                })),
            }),
        ));
    }
    if rows.is_empty() {
        rows.push(Advice::measure_first(
            "costs",
            "random and sequential reads of any tablespace",
            COMPARE_CALL,
        ));
    }
    rows
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn io_concurrency_is_where_four_fifths_of_the_top_is_reached() {
        // a RAID or SSD: 1 -> 2 -> 4 grow, 8 barely
        assert_eq!(
            effective_io_concurrency(&[(1, 10_000.0), (2, 19_000.0), (4, 30_000.0), (8, 31_000.0)]),
            Some(4)
        );
        // one disk head: nothing to gain
        assert_eq!(
            effective_io_concurrency(&[(1, 200.0), (2, 210.0), (4, 215.0)]),
            Some(1)
        );
        // a noisy step (2 -> 4 +16 %) does not hide the gain at 8
        assert_eq!(
            effective_io_concurrency(&[(1, 14_451.0), (2, 29_605.0), (4, 34_253.0), (8, 47_237.0)]),
            Some(8)
        );
        assert_eq!(
            effective_io_concurrency(&[(2, 1.0), (4, 2.0)]),
            None,
            "needs the one-reader point"
        );
        assert_eq!(effective_io_concurrency(&[(1, 1.0)]), None);
    }

    #[test]
    fn queue_depth_is_read_before_workers() {
        let workers = [(1, 10_000.0), (2, 19_000.0), (4, 30_000.0)];
        // lab_disk's profile in the README: 43 701 IOPS from one psync
        // reader, then io_uring at depths 2..128; four fifths of the top
        // (120 960) is 96 768, first passed at depth 16
        let depths = [
            (1, 43_701.0),
            (2, 65_161.0),
            (4, 87_808.0),
            (8, 94_716.0),
            (16, 109_969.0),
            (32, 117_037.0),
            (64, 120_960.0),
            (128, 116_238.0),
        ];
        assert_eq!(
            io_concurrency(&depths, &workers),
            Some((16, ConcurrencyBasis::QueueDepth))
        );
        // the standard suite alone: depths 1 and 32
        assert_eq!(
            io_concurrency(&[(1, 43_701.0), (32, 117_037.0)], &[]),
            Some((32, ConcurrencyBasis::QueueDepth))
        );
        // only the one-reader point at depth: the workers decide
        assert_eq!(
            io_concurrency(&[(1, 10_000.0)], &workers),
            Some((4, ConcurrencyBasis::Workers))
        );
        // depths without their one-reader point: the workers decide too
        assert_eq!(
            io_concurrency(&[(32, 117_037.0)], &workers),
            Some((4, ConcurrencyBasis::Workers))
        );
        assert_eq!(io_concurrency(&[(1, 1.0)], &[(1, 1.0)]), None);
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

    /// pg_default and lab_disk as sql/recommend.sql stores them.
    fn two_tablespaces() -> ByTablespace {
        let mut figures = ByTablespace::new();
        let pg_default = figures.entry("pg_default".into()).or_default();
        pg_default
            .workloads
            .insert("seqread".into(), probe(1, 0.0, 800.0));
        pg_default
            .workloads
            .insert("randread".into(), probe(2, 60.0, 125.0));
        pg_default.depths = vec![(1, 16_000.0, 2), (8, 48_000.0, 3), (32, 55_000.0, 4)];
        let lab_disk = figures.entry("lab_disk".into()).or_default();
        lab_disk
            .workloads
            .insert("seqread".into(), probe(5, 0.0, 640.0));
        lab_disk
            .workloads
            .insert("randread".into(), probe(6, 100.0, 78.0));
        lab_disk.scaling = vec![
            (1, 10_000.0, 6),
            (2, 19_000.0, 7),
            (4, 30_000.0, 8),
            (8, 31_000.0, 9),
        ];
        figures
    }

    #[test]
    fn a_row_per_tablespace_priced_in_pg_defaults_sequential_page() {
        let rows = advise(&two_tablespaces(), 0, 0, None);
        let targets: Vec<_> = rows.iter().map(|r| r.target.as_deref().unwrap()).collect();
        assert_eq!(targets, ["lab_disk", "pg_default"]);
        assert_eq!(
            rows[0].statement.as_deref(),
            Some("ALTER TABLESPACE lab_disk SET (random_page_cost = 1.25, seq_page_cost = 1.25, effective_io_concurrency = 4)")
        );
        assert!(rows[0]
            .advice
            .contains("4 concurrent readers reach four fifths"));
        assert!(rows[0]
            .advice
            .contains("PostgreSQL's own assumption that 10 %"));
        assert_eq!(rows[0].evidence["probes"], json!([6, 5]));
        assert_eq!(rows[0].evidence["miss_ratio_measured"], json!(false));
        // pg_default: queue depths decide; 3 depths only: how to place it finely
        assert!(rows[1]
            .statement
            .as_deref()
            .unwrap()
            .ends_with("effective_io_concurrency = 8)"));
        assert!(rows[1].advice.contains("one reader keeping 8 reads in flight reaches four fifths of the highest read IOPS measured (queue depths 1, 8, 32); SELECT * FROM storlab.profile('pg_default', iodepths => '{1,2,4,8,16,32,64}') places it more finely"));
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
    fn without_pg_defaults_sequential_reads_nothing_is_priced() {
        let mut figures = two_tablespaces();
        figures
            .get_mut("pg_default")
            .unwrap()
            .workloads
            .remove("seqread");
        let rows = advise(&figures, 0, 0, None);
        assert_eq!(rows.len(), 1);
        assert!(rows[0].advice.contains("pg_default's sequential reads"));
        assert_eq!(rows[0].statement.as_deref(), Some(COMPARE_CALL));
        // pg_default's unit alone, no tablespace with both reads: measure
        let mut figures = two_tablespaces();
        for f in figures.values_mut() {
            f.workloads.remove("randread");
        }
        let rows = advise(&figures, 0, 0, None);
        assert_eq!(rows.len(), 1);
        assert!(rows[0]
            .advice
            .contains("random and sequential reads of any tablespace"));
    }

    #[test]
    fn pg_wal_gets_no_costs_and_no_depths_means_measure_them() {
        let mut figures = two_tablespaces();
        figures.insert("pg_wal".into(), figures["lab_disk"].clone());
        figures.get_mut("lab_disk").unwrap().scaling.clear();
        let rows = advise(&figures, 0, 0, None);
        assert_eq!(rows.len(), 2, "pg_wal is no tablespace");
        assert!(!rows[0]
            .statement
            .as_deref()
            .unwrap()
            .contains("effective_io_concurrency"));
        assert!(rows[0].advice.contains("for effective_io_concurrency, measure reads at several queue depths first: SELECT * FROM storlab.profile('lab_disk'"));
    }

    #[test]
    fn on_18_the_read_path_decides_effective_io_concurrency() {
        use super::super::read_path::ReadPathPoint;
        let mut figures = two_tablespaces();
        let pt = |eic: i32, mib: [f64; 3]| ReadPathPoint {
            scan: "bitmapscan".into(),
            io_method: "worker".into(),
            eic,
            table_bytes: 64 << 20,
            mib_s: mib.to_vec(),
            ids: vec![100 + eic as i64],
        };
        figures.get_mut("pg_default").unwrap().read_path = vec![
            pt(1, [30.0, 31.0, 29.0]),
            pt(16, [80.0, 81.0, 79.0]),
            pt(64, [82.0, 81.0, 83.0]),
        ];
        let rows = advise(&figures, 0, 0, Some("worker"));
        let d = rows
            .iter()
            .find(|r| r.target.as_deref() == Some("pg_default"))
            .unwrap();
        assert!(
            d.statement
                .as_ref()
                .unwrap()
                .ends_with("effective_io_concurrency = 16)"),
            "{:?}",
            d.statement
        );
        // the raw queue-depth curve (8 reaches four fifths) is named, and not used
        assert!(
            d.advice.contains("raw queue-depth curve says 8"),
            "{}",
            d.advice
        );
        assert_eq!(d.evidence["read_path"]["effective_io_concurrency"], 16);
        // without read-path probes under the method in use, the curve decides
        let rows = advise(&figures, 0, 0, Some("io_uring"));
        let d = rows
            .iter()
            .find(|r| r.target.as_deref() == Some("pg_default"))
            .unwrap();
        assert!(
            d.statement
                .as_ref()
                .unwrap()
                .ends_with("effective_io_concurrency = 8)"),
            "{:?}",
            d.statement
        );
    }
}
