//! pgbench's aggregated log (`--log --aggregate-interval=N`).
//!
//! pgbench 15 writes one line per interval and thread, always with 15
//! columns (PostgreSQL 15 made every column mandatory; columns that do not
//! apply are 0):
//!
//! ```text
//! interval_start num_transactions sum_latency sum_latency_2 min_latency max_latency
//! sum_lag sum_lag_2 min_lag max_lag skipped retried retries
//! serialization_failures deadlock_failures
//! ```
//!
//! Latencies and lags are microseconds, `interval_start` epoch seconds.
//! There is no total of failures: the two failure columns are the only
//! record of them, and pgbench 15 fills them only with
//! `--failures-detailed` (otherwise they stay 0 even when transactions
//! fail), which is why `BenchOptions` always passes that option. Newer
//! pgbench versions append `other_sql_failures`; 16 columns are accepted
//! for that reason.
//!
//! Interval boundaries are whole epoch seconds: pgbench rounds the first
//! interval's start down to the second in which the benchmark started, so
//! the threads of a run share their labels, and the first interval is only
//! partly covered by the run. pgbench 15 never writes the interval in which
//! the run ends (it is incomplete), so the transactions of the last
//! fraction of a second are missing: the rows add up to less than the
//! summary's count, and a run of `--time=N` gives N rows of which the first
//! is partial. pgbench also writes intervals in which nothing finished.

use std::io::BufRead;

use super::error::PgbenchError;
use super::interval::{latency_ms, IntervalRow};

/// One line of the aggregated log.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AggRecord {
    pub interval_start_s: u64,
    /// Successful transactions.
    pub transactions: u64,
    pub sum_latency_us: f64,
    pub sum_latency_2: f64,
    pub min_latency_us: f64,
    pub max_latency_us: f64,
    pub sum_lag_us: f64,
    pub sum_lag_2: f64,
    pub min_lag_us: f64,
    pub max_lag_us: f64,
    pub skipped: u64,
    pub retried: u64,
    pub retries: u64,
    pub serialization_failures: u64,
    pub deadlock_failures: u64,
    /// Only written by pgbench versions after 15.
    pub other_failures: u64,
}

impl AggRecord {
    pub fn failures(&self) -> u64 {
        self.serialization_failures + self.deadlock_failures + self.other_failures
    }
}

const V15_COLUMNS: usize = 15;
const WITH_OTHER_FAILURES: usize = 16;

/// Parses one line (without its newline).
pub fn parse_agg_line(line: &str) -> Result<AggRecord, String> {
    let f: Vec<&str> = line.split_ascii_whitespace().collect();
    if f.len() != V15_COLUMNS && f.len() != WITH_OTHER_FAILURES {
        return Err(format!(
            "expected {V15_COLUMNS} fields (pgbench 15 aggregate format), got {}",
            f.len()
        ));
    }
    const NAMES: [&str; 16] = [
        "interval_start",
        "num_transactions",
        "sum_latency",
        "sum_latency_2",
        "min_latency",
        "max_latency",
        "sum_lag",
        "sum_lag_2",
        "min_lag",
        "max_lag",
        "skipped",
        "retried",
        "retries",
        "serialization_failures",
        "deadlock_failures",
        "other_sql_failures",
    ];
    let count = |i: usize| -> Result<u64, String> {
        let s = f[i];
        if s.starts_with('+') {
            return Err(format!("{} is not a count: \"{s}\"", NAMES[i]));
        }
        s.parse()
            .map_err(|_| format!("{} is not a count: \"{s}\"", NAMES[i]))
    };
    // Sums are printed with %.0f from doubles: sum_latency_2 of a long
    // interval can exceed what an integer type would be safe for.
    let amount = |i: usize| -> Result<f64, String> {
        match f[i].parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(format!("{} is not a number: \"{}\"", NAMES[i], f[i])),
        }
    };
    let r = AggRecord {
        interval_start_s: count(0)?,
        transactions: count(1)?,
        sum_latency_us: amount(2)?,
        sum_latency_2: amount(3)?,
        min_latency_us: amount(4)?,
        max_latency_us: amount(5)?,
        sum_lag_us: amount(6)?,
        sum_lag_2: amount(7)?,
        min_lag_us: amount(8)?,
        max_lag_us: amount(9)?,
        skipped: count(10)?,
        retried: count(11)?,
        retries: count(12)?,
        serialization_failures: count(13)?,
        deadlock_failures: count(14)?,
        other_failures: if f.len() == WITH_OTHER_FAILURES {
            count(15)?
        } else {
            0
        },
    };
    if r.min_latency_us > r.max_latency_us {
        return Err(format!(
            "min_latency {} is above max_latency {}",
            r.min_latency_us, r.max_latency_us
        ));
    }
    Ok(r)
}

/// The lines of one aggregated log file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AggLog {
    pub records: Vec<AggRecord>,
    /// 1 when the last line was cut off (read while pgbench writes it).
    pub partial_lines: u64,
}

impl AggLog {
    /// Reads a log; as for the per-transaction log, only a last line
    /// without newline may be incomplete.
    pub fn read(reader: impl BufRead) -> Result<AggLog, PgbenchError> {
        let mut log = AggLog::default();
        let partial = super::log_dir::for_each_line(reader, |line_no, line| {
            let record = parse_agg_line(line)
                .map_err(|e| PgbenchError::Parse(format!("line {line_no}: {e}: \"{line}\"")))?;
            if let Some(prev) = log.records.last() {
                if record.interval_start_s < prev.interval_start_s {
                    return Err(PgbenchError::Parse(format!(
                        "line {line_no}: interval_start {} goes back from {}",
                        record.interval_start_s, prev.interval_start_s
                    )));
                }
            }
            log.records.push(record);
            Ok(())
        })?;
        log.partial_lines += u64::from(partial);
        Ok(log)
    }
}

/// Merges the logs of a run's threads into one row per interval.
///
/// `interval_s` is the `--aggregate-interval` of the run. Rows are keyed by
/// `interval_start`, counted from the earliest one. The first row is marked
/// incomplete (see the module documentation). While pgbench is still
/// writing, the last rows may miss threads whose lines are not written yet.
pub fn merge_intervals(logs: &[AggLog], interval_s: u64) -> Result<Vec<IntervalRow>, PgbenchError> {
    if interval_s == 0 {
        return Err(PgbenchError::InvalidOption(
            "aggregate interval must be at least 1 second".into(),
        ));
    }
    let firsts: Vec<u64> = logs
        .iter()
        .filter_map(|l| l.records.first().map(|r| r.interval_start_s))
        .collect();
    let (Some(&start), Some(&latest)) = (firsts.iter().min(), firsts.iter().max()) else {
        return Ok(Vec::new());
    };
    // Threads of one run start together, within the same interval (with
    // intervals over 1 s, threads that start on either side of a second
    // boundary get labels one second apart). Files further apart belong to
    // different runs.
    if latest - start >= interval_s.max(2) {
        return Err(PgbenchError::Parse(format!(
            "aggregate logs start {} s apart: they are not from one run",
            latest - start
        )));
    }
    let mut acc: Vec<Acc> = Vec::new();
    for r in logs.iter().flat_map(|l| &l.records) {
        // AggLog::read keeps each file in order, but a caller may build
        // logs by hand: a label before the first is an error, not a wrap.
        let k = r
            .interval_start_s
            .checked_sub(start)
            .and_then(|d| usize::try_from(d / interval_s).ok())
            .ok_or_else(|| {
                PgbenchError::Parse(format!(
                    "interval_start {} is out of order",
                    r.interval_start_s
                ))
            })?;
        if k >= acc.len() {
            // Bounded by the files' own span: a forged label far in the
            // future must not allocate without end.
            if k > MAX_ROWS {
                return Err(PgbenchError::Parse(format!(
                    "interval_start {} is more than {MAX_ROWS} intervals after the first",
                    r.interval_start_s
                )));
            }
            acc.resize(k + 1, Acc::default());
        }
        let a = &mut acc[k];
        a.transactions += r.transactions;
        a.sum_us += r.sum_latency_us;
        if r.transactions > 0 {
            a.max_us = a.max_us.max(r.max_latency_us);
        }
        a.failures += r.failures();
        a.skipped += r.skipped;
    }
    Ok(acc
        .iter()
        .enumerate()
        .map(|(k, a)| {
            let (lat_avg_ms, lat_max_ms) = latency_ms(a.transactions, a.sum_us, a.max_us);
            IntervalRow {
                t_s: k as u64 * interval_s,
                interval_s,
                complete: k > 0,
                transactions: a.transactions,
                tps: a.transactions as f64 / interval_s as f64,
                lat_avg_ms,
                lat_max_ms,
                failures: a.failures,
                skipped: a.skipped,
            }
        })
        .collect())
}

/// A week of one-second rows; longer runs are not what storlab starts.
const MAX_ROWS: usize = 7 * 24 * 3600;

#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    transactions: u64,
    sum_us: f64,
    max_us: f64,
    failures: u64,
    skipped: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn log(text: &str) -> AggLog {
        AggLog::read(Cursor::new(text.as_bytes())).unwrap()
    }

    #[test]
    fn real_line_with_rate_and_skips() {
        let r = parse_agg_line(
            "1795325663 178 1267512 13269995620 972 24124 36249 35025471 5 1997 61 0 0 0 0",
        )
        .unwrap();
        assert_eq!(r.interval_start_s, 1_795_325_663);
        assert_eq!(r.transactions, 178);
        assert_eq!(r.sum_latency_us, 1_267_512.0);
        assert_eq!((r.min_latency_us, r.max_latency_us), (972.0, 24_124.0));
        assert_eq!(
            (r.sum_lag_us, r.min_lag_us, r.max_lag_us),
            (36_249.0, 5.0, 1_997.0)
        );
        assert_eq!((r.skipped, r.failures()), (61, 0));
    }

    #[test]
    fn real_line_with_retries_and_failures() {
        let r = parse_agg_line("1795325665 10 62113 1919428749 1306 43327 0 0 0 0 0 11 11 6 1")
            .unwrap();
        assert_eq!((r.retried, r.retries), (11, 11));
        assert_eq!((r.serialization_failures, r.deadlock_failures), (6, 1));
        assert_eq!(r.failures(), 7);
        let newer =
            parse_agg_line("1 10 62113 1919428749 1306 43327 0 0 0 0 0 11 11 6 1 2").unwrap();
        assert_eq!(newer.failures(), 9);
    }

    #[test]
    fn other_formats_and_bad_values_are_errors() {
        for (line, want) in [
            // pgbench 14 and older: optional columns, refused rather than
            // misread.
            (
                "1795325663 178 1267512 13269995620 972 24124",
                "expected 15 fields",
            ),
            (
                "1795325663 178 1267512 13269995620 972 24124 1 2 3 4 5",
                "expected 15 fields",
            ),
            (
                "x 1 1 1 1 1 0 0 0 0 0 0 0 0 0",
                "interval_start is not a count",
            ),
            ("1 -1 1 1 1 1 0 0 0 0 0 0 0 0 0", "num_transactions"),
            (
                "1 1 nan 1 1 1 0 0 0 0 0 0 0 0 0",
                "sum_latency is not a number",
            ),
            ("1 1 1 1 1 1 0 0 0 inf 0 0 0 0 0", "max_lag is not a number"),
            (
                "1 1 1 1 5 4 0 0 0 0 0 0 0 0 0",
                "min_latency 5 is above max_latency 4",
            ),
            ("1 1 1 1 1 1 0 0 0 0 +1 0 0 0 0", "skipped"),
        ] {
            let e = parse_agg_line(line).unwrap_err();
            assert!(e.contains(want), "{line}: {e}");
        }
    }

    #[test]
    fn partial_last_line_and_order() {
        let l = log("1 1 1 1 1 1 0 0 0 0 0 0 0 0 0\n2 1 1 1 1 1 0 0");
        assert_eq!((l.records.len(), l.partial_lines), (1, 1));
        let e = AggLog::read(Cursor::new(
            &b"2 1 1 1 1 1 0 0 0 0 0 0 0 0 0\n1 1 1 1 1 1 0 0 0 0 0 0 0 0 0\n"[..],
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("line 2: interval_start 1 goes back from 2"),
            "{e}"
        );
        let e = AggLog::read(Cursor::new(&b"1 2\n"[..]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1: expected 15 fields"), "{e}");
    }

    #[test]
    fn real_threads_merge_into_per_second_rows() {
        let a = log(include_str!("testdata/tpcb_agg_rate/pgbench_log.17136"));
        let b = log(include_str!("testdata/tpcb_agg_rate/pgbench_log.17136.1"));
        let rows = merge_intervals(&[a.clone(), b.clone()], 1).unwrap();
        assert_eq!(
            rows.len(),
            4,
            "--time=4 with 1 s intervals: four complete rows"
        );
        assert_eq!(rows.iter().map(|r| r.t_s).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(
            rows.iter().map(|r| r.transactions).collect::<Vec<_>>(),
            [130 + 146, 251 + 238, 193 + 212, 167 + 178]
        );
        // The first row starts at the whole second before the run began;
        // the other rows are full seconds.
        assert_eq!(
            rows.iter().map(|r| r.complete).collect::<Vec<_>>(),
            [false, true, true, true]
        );
        // The summary of that run counts 1651 transactions and 320 skips:
        // the last fraction of a second is never written by pgbench 15.
        assert_eq!(rows.iter().map(|r| r.transactions).sum::<u64>(), 1515);
        assert_eq!(
            rows.iter().map(|r| r.skipped).sum::<u64>(),
            26 + 12 + 80 + 115
        );
        assert_eq!(rows[0].tps, 276.0);
        let avg0 = (335_811.0 + 405_595.0) / 276.0 / 1000.0;
        assert!((rows[0].lat_avg_ms.unwrap() - avg0).abs() < 1e-9);
        assert_eq!(rows[2].lat_max_ms, Some(41.436));
        // Read as two-second intervals, pairs of seconds add up and the
        // rate is per second of the longer interval.
        let two = merge_intervals(&[a, b], 2).unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(two[1].transactions, 193 + 212 + 167 + 178);
        assert_eq!(two[1].tps, 375.0);
        assert_eq!(two[1].t_s, 2);
    }

    #[test]
    fn real_failures_are_counted_only_with_details() {
        let rows = merge_intervals(
            &[
                log(include_str!("testdata/failures_agg/pgbench_log.17162")),
                log(include_str!("testdata/failures_agg/pgbench_log.17162.1")),
            ],
            1,
        )
        .unwrap();
        // stdout of that run: 41 failed transactions (40 serialization, 1 deadlock).
        assert_eq!(rows.iter().map(|r| r.failures).sum::<u64>(), 41);
        // (The summary says 47: two finished in the unwritten last fraction.)
        assert_eq!(rows.iter().map(|r| r.transactions).sum::<u64>(), 45);
        // Without --failures-detailed pgbench 15 writes zeros although
        // 143 transactions failed.
        let rows = merge_intervals(
            &[
                log(include_str!(
                    "testdata/failures_agg_not_detailed/pgbench_log.17183"
                )),
                log(include_str!(
                    "testdata/failures_agg_not_detailed/pgbench_log.17183.1"
                )),
            ],
            1,
        )
        .unwrap();
        assert_eq!(rows.iter().map(|r| r.failures).sum::<u64>(), 0);
        // A second in which nothing finished has no latency.
        assert_eq!(
            (rows[0].transactions, rows[0].lat_avg_ms, rows[0].lat_max_ms),
            (0, None, None)
        );
    }

    #[test]
    fn merge_checks() {
        assert!(merge_intervals(&[], 1).unwrap().is_empty());
        assert!(merge_intervals(&[AggLog::default()], 1).unwrap().is_empty());
        assert!(matches!(
            merge_intervals(&[], 0),
            Err(PgbenchError::InvalidOption(_))
        ));
        let a = log("100 1 1 1 1 1 0 0 0 0 0 0 0 0 0\n");
        let b = log("101 1 1 1 1 1 0 0 0 0 0 0 0 0 0\n102 2 4 8 2 2 0 0 0 0 0 0 0 0 0\n");
        // Threads that started on either side of a second boundary: the
        // same run, merged by label.
        let rows = merge_intervals(&[a.clone(), b.clone()], 1).unwrap();
        assert_eq!(
            rows.iter().map(|r| r.transactions).collect::<Vec<_>>(),
            [1, 1, 2]
        );
        // With 2 s intervals the labels 100 and 101 fall in one interval.
        let rows = merge_intervals(&[a.clone(), b.clone()], 2).unwrap();
        assert_eq!(
            rows.iter().map(|r| r.transactions).collect::<Vec<_>>(),
            [2, 2]
        );
        let huge = log("18446744073709551615 1 1 1 1 1 0 0 0 0 0 0 0 0 0\n");
        let e = merge_intervals(
            &[AggLog {
                records: vec![a.records[0], huge.records[0]],
                partial_lines: 0,
            }],
            1,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("more than"), "{e}");
        let backwards = AggLog {
            records: vec![b.records[0], a.records[0]],
            partial_lines: 0,
        };
        let e = merge_intervals(&[backwards], 1).unwrap_err().to_string();
        assert!(e.contains("interval_start 100 is out of order"), "{e}");
        let far = log("105 1 1 1 1 1 0 0 0 0 0 0 0 0 0\n");
        let e = merge_intervals(&[a, far], 1).unwrap_err().to_string();
        assert!(e.contains("not from one run"), "{e}");
    }
}
