//! Turning measurements into settings (`storlab.recommend()`), pure: the
//! formulas, with the figures they use passed in. `crate::api::advice`
//! reads the figures and writes the rows.
//!
//! Planner costs. PostgreSQL's costs are relative to `seq_page_cost` = 1,
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

/// Is moving worth saying: the other volume lower by more than 10 %?
pub fn worth_moving(now_us: f64, best_us: f64) -> bool {
    best_us < now_us * 0.9
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn moving_pays_only_beyond_a_tenth() {
        assert!(worth_moving(200.0, 150.0));
        assert!(!worth_moving(200.0, 185.0));
        assert!((crate::stats::improvement_pct(200.0, 150.0).unwrap() + 25.0).abs() < 1e-9);
    }
}
