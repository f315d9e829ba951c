//! pgbench's per-transaction log (`--log`, optionally `--sampling-rate`).
//!
//! pgbench 15 writes one line per logged transaction:
//!
//! ```text
//! client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]
//! ```
//!
//! `time` is the transaction's latency in microseconds, or a word for a
//! transaction that has none: `skipped` (late under `--rate` with
//! `--latency-limit`), `failed`, or with `--failures-detailed` the kind of
//! failure, `serialization` or `deadlock`. `time_epoch`/`time_us` is when it
//! finished. `schedule_lag` is present only with `--rate`, `retries` only
//! with `--max-tries` other than 1: the two optional columns cannot be told
//! apart by their count alone, so the caller states which are there
//! ([`TxLogFormat`], which `BenchOptions::tx_log_format` derives).
//!
//! The log may be read while pgbench still writes it; stdio flushes in
//! blocks, so the last line can be cut anywhere. Only a last line without
//! its newline is taken as such a partial line and skipped; any other
//! malformed line is an error, because it means the format is not the one
//! this parser knows.

use std::collections::BTreeMap;
use std::io::BufRead;

use super::error::PgbenchError;
use super::interval::{latency_ms, IntervalRow};
use super::TxHistogram;

/// Which optional columns the log has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TxLogFormat {
    /// `--rate` was given.
    pub schedule_lag: bool,
    /// `--max-tries` was not 1.
    pub retries: bool,
}

impl TxLogFormat {
    fn columns(self) -> usize {
        6 + usize::from(self.schedule_lag) + usize::from(self.retries)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// `failed`: pgbench was not asked for details (`--failures-detailed`).
    Unspecified,
    Serialization,
    Deadlock,
    /// `other`: newer pgbench versions can continue after other SQL errors.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxOutcome {
    Ok { latency_us: u64 },
    Failed(FailureKind),
    Skipped,
}

/// One line of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxRecord {
    pub client_id: u32,
    pub transaction_no: u64,
    pub outcome: TxOutcome,
    /// Which `-b`/`-f` script ran (0 when there is one).
    pub script_no: u32,
    /// Completion time: seconds since the Unix epoch ...
    pub time_epoch_s: u64,
    /// ... plus microseconds.
    pub time_us: u32,
    pub schedule_lag_us: Option<u64>,
    pub retries: Option<u32>,
}

/// Parses one line (without its newline).
pub fn parse_tx_line(line: &str, format: TxLogFormat) -> Result<TxRecord, String> {
    let fields: Vec<&str> = line.split_ascii_whitespace().collect();
    if fields.len() != format.columns() {
        return Err(format!(
            "expected {} fields (client_id transaction_no time script_no time_epoch time_us{}{}), got {}",
            format.columns(),
            if format.schedule_lag { " schedule_lag" } else { "" },
            if format.retries { " retries" } else { "" },
            fields.len()
        ));
    }
    let outcome = match fields[2] {
        "skipped" => TxOutcome::Skipped,
        "failed" => TxOutcome::Failed(FailureKind::Unspecified),
        "serialization" => TxOutcome::Failed(FailureKind::Serialization),
        "deadlock" => TxOutcome::Failed(FailureKind::Deadlock),
        "other" => TxOutcome::Failed(FailureKind::Other),
        t => TxOutcome::Ok {
            latency_us: number(t, "time")?,
        },
    };
    let time_us: u32 = number(fields[5], "time_us")?;
    if time_us >= 1_000_000 {
        return Err(format!("time_us must be below 1000000, got {time_us}"));
    }
    let mut rest = fields[6..].iter();
    let schedule_lag_us = match format.schedule_lag {
        true => Some(whole_number(
            rest.next().copied().unwrap_or(""),
            "schedule_lag",
        )?),
        false => None,
    };
    let retries = match format.retries {
        true => Some(number(rest.next().copied().unwrap_or(""), "retries")?),
        false => None,
    };
    Ok(TxRecord {
        client_id: number(fields[0], "client_id")?,
        transaction_no: number(fields[1], "transaction_no")?,
        outcome,
        script_no: number(fields[3], "script_no")?,
        time_epoch_s: number(fields[4], "time_epoch")?,
        time_us,
        schedule_lag_us,
        retries,
    })
}

fn number<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    // FromStr for integers accepts a leading '+'; pgbench never writes one.
    if s.starts_with('+') {
        return Err(format!("{what} is not a number: \"{s}\""));
    }
    s.parse()
        .map_err(|_| format!("{what} is not a number: \"{s}\""))
}

/// pgbench prints some microsecond values with `%.0f` from a double: an
/// integer in practice, but accept what that format can produce.
fn whole_number(s: &str, what: &str) -> Result<u64, String> {
    if let Ok(n) = number::<u64>(s, what) {
        return Ok(n);
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > -1.0 => Ok(v.max(0.0).round() as u64),
        _ => Err(format!("{what} is not a number: \"{s}\"")),
    }
}

/// Transactions that finished within one second of wall-clock time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Second {
    ok: u64,
    sum_us: f64,
    max_us: u64,
    failures: u64,
    skipped: u64,
}

/// What a log (or several, merged) says about a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TxLogStats {
    /// Latencies of successful transactions.
    pub histogram: TxHistogram,
    /// Successful transactions (what pgbench calls processed).
    pub ok: u64,
    /// Failed transactions of any kind.
    pub failed: u64,
    pub serialization_failures: u64,
    pub deadlock_failures: u64,
    pub skipped: u64,
    /// Transactions that needed more than one try, and the extra tries
    /// (only with the retries column).
    pub retried: u64,
    pub retries: u64,
    /// Cut-off last lines skipped (see the module documentation).
    pub partial_lines: u64,
    seconds: BTreeMap<u64, Second>,
}

impl TxLogStats {
    pub fn add(&mut self, r: &TxRecord) {
        let second = self.seconds.entry(r.time_epoch_s).or_default();
        match r.outcome {
            TxOutcome::Ok { latency_us } => {
                self.ok += 1;
                self.histogram.record_us(latency_us);
                second.ok += 1;
                second.sum_us += latency_us as f64;
                second.max_us = second.max_us.max(latency_us);
            }
            TxOutcome::Failed(kind) => {
                self.failed += 1;
                second.failures += 1;
                match kind {
                    FailureKind::Serialization => self.serialization_failures += 1,
                    FailureKind::Deadlock => self.deadlock_failures += 1,
                    FailureKind::Unspecified | FailureKind::Other => {}
                }
            }
            TxOutcome::Skipped => {
                self.skipped += 1;
                second.skipped += 1;
            }
        }
        if let Some(n) = r.retries.filter(|&n| n > 0) {
            self.retried += 1;
            self.retries += u64::from(n);
        }
    }

    /// Adds another thread's (or run's) log.
    pub fn merge(&mut self, other: &TxLogStats) {
        self.histogram.merge(&other.histogram);
        self.ok += other.ok;
        self.failed += other.failed;
        self.serialization_failures += other.serialization_failures;
        self.deadlock_failures += other.deadlock_failures;
        self.skipped += other.skipped;
        self.retried += other.retried;
        self.retries += other.retries;
        self.partial_lines += other.partial_lines;
        for (&epoch, s) in &other.seconds {
            let mine = self.seconds.entry(epoch).or_default();
            mine.ok += s.ok;
            mine.sum_us += s.sum_us;
            mine.max_us = mine.max_us.max(s.max_us);
            mine.failures += s.failures;
            mine.skipped += s.skipped;
        }
    }

    /// Reads a whole log. Lines are read one at a time, so a long run's
    /// log is never held in memory.
    pub fn read(reader: impl BufRead, format: TxLogFormat) -> Result<TxLogStats, PgbenchError> {
        let mut stats = TxLogStats::default();
        let partial = for_each_line(reader, |line_no, line| {
            let record = parse_tx_line(line, format)
                .map_err(|e| PgbenchError::Parse(format!("line {line_no}: {e}: \"{line}\"")))?;
            stats.add(&record);
            Ok(())
        })?;
        stats.partial_lines += u64::from(partial);
        Ok(stats)
    }

    /// Completion time of the first and last logged transaction, as whole
    /// epoch seconds.
    pub fn epoch_range_s(&self) -> Option<(u64, u64)> {
        Some((
            *self.seconds.keys().next()?,
            *self.seconds.keys().next_back()?,
        ))
    }

    /// One row per wall-clock second, by completion time, from the first
    /// second with a logged transaction to the last (seconds in between
    /// without any are rows of zeros, not gaps). The first and last rows
    /// cover only part of a second, since a run does not start on a
    /// second boundary.
    ///
    /// Counts are of logged transactions; with `--sampling-rate`, pass it
    /// so that `tps` estimates the full rate.
    pub fn timeline(&self, sampling_rate: Option<f64>) -> Vec<IntervalRow> {
        let Some((first, last)) = self.epoch_range_s() else {
            return Vec::new();
        };
        let scale = match sampling_rate {
            Some(r) if r > 0.0 && r <= 1.0 => 1.0 / r,
            _ => 1.0,
        };
        (first..=last)
            .map(|epoch| {
                let s = self.seconds.get(&epoch).copied().unwrap_or_default();
                let (lat_avg_ms, lat_max_ms) = latency_ms(s.ok, s.sum_us, s.max_us as f64);
                IntervalRow {
                    t_s: epoch - first,
                    interval_s: 1,
                    complete: epoch != first && epoch != last,
                    transactions: s.ok,
                    tps: s.ok as f64 * scale,
                    lat_avg_ms,
                    lat_max_ms,
                    failures: s.failures,
                    skipped: s.skipped,
                }
            })
            .collect()
    }
}

/// Calls `each(line_no, line)` for every complete line of a pgbench log,
/// one line at a time (a long run's log is never held in memory). pgbench
/// may still be writing the file: only the end of the data can lack its
/// newline, and such a cut-off last line is skipped. Returns whether one was.
fn for_each_line(
    mut reader: impl BufRead,
    mut each: impl FnMut(u64, &str) -> Result<(), PgbenchError>,
) -> Result<bool, PgbenchError> {
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| PgbenchError::io(format!("reading line {}", line_no + 1), e))?;
        if n == 0 {
            return Ok(false);
        }
        line_no += 1;
        if buf.last() != Some(&b'\n') {
            return Ok(true);
        }
        let line = std::str::from_utf8(&buf[..buf.len() - 1])
            .map_err(|_| PgbenchError::Parse(format!("line {line_no}: not text")))?;
        each(line_no, line)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    const PLAIN: TxLogFormat = TxLogFormat {
        schedule_lag: false,
        retries: false,
    };

    fn read(text: &str, format: TxLogFormat) -> Result<TxLogStats, PgbenchError> {
        TxLogStats::read(Cursor::new(text.as_bytes()), format)
    }

    #[test]
    fn plain_line() {
        let r = parse_tx_line("1 2 1137 0 1795325499 152996", PLAIN).unwrap();
        assert_eq!(
            r,
            TxRecord {
                client_id: 1,
                transaction_no: 2,
                outcome: TxOutcome::Ok { latency_us: 1137 },
                script_no: 0,
                time_epoch_s: 1_795_325_499,
                time_us: 152_996,
                schedule_lag_us: None,
                retries: None,
            }
        );
    }

    #[test]
    fn optional_columns_follow_the_format() {
        let lag = TxLogFormat {
            schedule_lag: true,
            retries: false,
        };
        let r = parse_tx_line("0 145 skipped 0 1795325508 677512 0", lag).unwrap();
        assert_eq!(r.outcome, TxOutcome::Skipped);
        assert_eq!(r.schedule_lag_us, Some(0));
        let both = TxLogFormat {
            schedule_lag: true,
            retries: true,
        };
        let r = parse_tx_line("3 7 failed 0 1795325659 344218 12 2", both).unwrap();
        assert_eq!(r.outcome, TxOutcome::Failed(FailureKind::Unspecified));
        assert_eq!((r.schedule_lag_us, r.retries), (Some(12), Some(2)));
        // The count must match exactly: a 7-column line is not a plain one.
        let e = parse_tx_line("0 1 81 0 1795325653 79626 81", PLAIN).unwrap_err();
        assert!(e.contains("expected 6 fields"), "{e}");
        let e = parse_tx_line("0 1 81 0 1795325653 79626", lag).unwrap_err();
        assert!(
            e.contains("expected 7 fields") && e.contains("schedule_lag"),
            "{e}"
        );
    }

    #[test]
    fn bad_fields_are_errors() {
        for (line, want) in [
            ("x 1 100 0 1795325499 1", "client_id"),
            ("1 1 slow 0 1795325499 1", "time is not a number: \"slow\""),
            ("1 1 -5 0 1795325499 1", "time"),
            ("1 1 +5 0 1795325499 1", "time"),
            ("1 1 5 0 1795325499 1000000", "time_us must be below"),
            ("1 1 5 0 1795325499 x", "time_us"),
            ("", "expected 6 fields"),
        ] {
            let e = parse_tx_line(line, PLAIN).unwrap_err();
            assert!(e.contains(want), "{line:?}: {e}");
        }
    }

    #[test]
    fn partial_last_line_is_skipped_but_a_bad_middle_line_is_not() {
        let text = "0 1 100 0 1795325499 10\n0 2 200 0 1795325499 20\n0 3 30";
        let s = read(text, PLAIN).unwrap();
        assert_eq!((s.ok, s.partial_lines), (2, 1));
        let text = "0 1 100 0 1795325499 10\n0 2 20\n0 3 300 0 1795325499 30\n";
        let e = read(text, PLAIN).unwrap_err().to_string();
        assert!(e.contains("line 2: expected 6 fields"), "{e}");
        let e = read("0 1 100 0 1795325499 10\n\n", PLAIN)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
        let e = read("0 1 \u{ff} 0 1 1\n", PLAIN).unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
        let bytes = b"0 1 1\xff 0 1 1\n";
        let e = TxLogStats::read(Cursor::new(&bytes[..]), PLAIN)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not text"), "{e}");
        assert_eq!(read("", PLAIN).unwrap(), TxLogStats::default());
    }

    #[test]
    fn every_cut_of_a_real_log_reads_or_fails_cleanly() {
        // A reader racing pgbench sees any prefix of the file.
        let text = include_str!("testdata/select_rate_limit/pgbench_log.16721");
        let lag = TxLogFormat {
            schedule_lag: true,
            retries: false,
        };
        let full = read(text, lag).unwrap();
        for cut in 0..=text.len() {
            let s = read(&text[..cut], lag).unwrap();
            let complete = text[..cut].matches('\n').count() as u64;
            assert_eq!(s.ok, complete, "cut {cut}");
            assert_eq!(
                s.partial_lines,
                u64::from(!text[..cut].ends_with('\n') && cut > 0)
            );
            assert!(s.ok <= full.ok);
        }
    }

    #[test]
    fn real_sampled_log_with_schedule_lag() {
        let s = read(
            include_str!("testdata/select_rate_limit/pgbench_log.16721"),
            TxLogFormat {
                schedule_lag: true,
                retries: false,
            },
        )
        .unwrap();
        assert_eq!((s.ok, s.failed, s.skipped, s.partial_lines), (25, 0, 0, 0));
        let p = s.histogram.percentiles().unwrap();
        // The file's extremes: 142 µs and 1209 µs.
        assert!((p.lat_max_ms - 1.209).abs() < 0.002, "{p:?}");
        assert!((s.histogram.quantile_ms(0.0).unwrap() - 0.142).abs() < 0.001);
        // Completions span 1795325653..=1795325655.
        assert_eq!(s.epoch_range_s(), Some((1_795_325_653, 1_795_325_655)));
        let t = s.timeline(Some(0.1));
        assert_eq!(
            t.iter().map(|r| r.transactions).collect::<Vec<_>>(),
            [17, 7, 1]
        );
        assert_eq!(t[0].tps, 170.0, "sampled counts are scaled to a rate");
        assert_eq!(t.iter().map(|r| r.t_s).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(
            t.iter().map(|r| r.complete).collect::<Vec<_>>(),
            [false, true, false]
        );
    }

    #[test]
    fn real_logs_with_failures_skips_and_retries() {
        let s = read(
            include_str!("testdata/failures_tx/pgbench_log.17038"),
            PLAIN,
        )
        .unwrap();
        assert_eq!((s.ok, s.failed), (2, 5));
        assert_eq!(
            s.serialization_failures + s.deadlock_failures,
            0,
            "no details asked"
        );

        let s = read(
            include_str!("testdata/failures_detailed_tx/pgbench_log.17053.1"),
            PLAIN,
        )
        .unwrap();
        assert_eq!((s.ok, s.failed, s.serialization_failures), (4, 8, 8));

        let retries = TxLogFormat {
            schedule_lag: false,
            retries: true,
        };
        let s = read(
            include_str!("testdata/retries_tx/pgbench_log.17067"),
            retries,
        )
        .unwrap();
        assert_eq!((s.ok, s.failed), (17, 1));
        assert_eq!((s.retried, s.retries), (7, 9));

        let lag = TxLogFormat {
            schedule_lag: true,
            retries: false,
        };
        let s = read(include_str!("testdata/skipped_tx/pgbench_log.17616"), lag).unwrap();
        assert_eq!(s.skipped, 3);
        let t = s.timeline(None);
        assert_eq!(t.iter().map(|r| r.skipped).sum::<u64>(), 3);
        assert_eq!(t.iter().map(|r| r.transactions).sum::<u64>(), s.ok);
    }

    #[test]
    fn idle_seconds_are_rows_of_zeros() {
        let text = "0 1 1000 0 100 5\n0 2 3000 0 100 7\n0 3 failed 0 103 1\n";
        let t = read(text, PLAIN).unwrap().timeline(None);
        assert_eq!(t.len(), 4);
        assert_eq!(
            (t[0].transactions, t[0].lat_avg_ms, t[0].lat_max_ms),
            (2, Some(2.0), Some(3.0))
        );
        assert_eq!(
            (t[1].transactions, t[1].lat_avg_ms, t[1].tps),
            (0, None, 0.0)
        );
        assert_eq!((t[3].t_s, t[3].failures), (3, 1));
        assert!(TxLogStats::default().timeline(None).is_empty());
    }

    #[test]
    fn merge_equals_reading_both() {
        let a = include_str!("testdata/update_hot/pgbench_log.17234");
        let b = include_str!("testdata/update_hot/pgbench_log.17234.1");
        let mut merged = read(a, PLAIN).unwrap();
        merged.merge(&read(b, PLAIN).unwrap());
        let both = read(&format!("{a}{b}"), PLAIN).unwrap();
        assert_eq!(merged, both);
        assert_eq!(merged.ok, 23 + 28);
    }
}
