//! The summary pgbench prints on stdout at the end of a run.
//!
//! pgbench 15 prints, for example:
//!
//! ```text
//! pgbench (15.20 (Debian 15.20-0+deb12u1))
//! transaction type: <builtin: TPC-B (sort of)>
//! scaling factor: 2
//! query mode: simple
//! number of clients: 4
//! number of threads: 2
//! maximum number of tries: 1
//! duration: 3 s
//! number of transactions actually processed: 6711
//! number of failed transactions: 0 (0.000%)
//! latency average = 1.780 ms
//! latency stddev = 1.258 ms
//! initial connection time = 5.851 ms
//! tps = 2233.892655 (without initial connection time)
//! ```
//!
//! Which lines appear depends on the options and on how the run went:
//! `latency stddev` only with `--progress`, `--rate` or `--latency-limit`
//! (otherwise the average is derived from the run time and, when
//! transactions failed, says "(including failures)"); the failure kinds
//! only with `--failures-detailed`; retries only with `--max-tries`; skips,
//! late transactions and schedule lag only with `--rate`/`--latency-limit`;
//! with `--connect` the connection time is an average per transaction and
//! tps includes it. A run aborted by an SQL error stops after the failed
//! transactions line. So every field is an `Option`, and lines this parser
//! does not know (e.g. `--report-per-command`) are skipped.

use super::error::PgbenchError;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// From the first line, e.g. "15.20 (Debian 15.20-0+deb12u1)".
    pub pgbench_version: Option<String>,
    /// `<builtin: TPC-B (sort of)>`, or the script file's path.
    pub transaction_type: Option<String>,
    pub scaling_factor: Option<i64>,
    pub query_mode: Option<String>,
    pub clients: Option<i64>,
    pub threads: Option<i64>,
    pub max_tries: Option<i64>,
    /// With `--time`.
    pub duration_s: Option<i64>,
    /// With `--transactions`.
    pub transactions_per_client: Option<i64>,
    /// Successful transactions.
    pub transactions: Option<i64>,
    /// With `--transactions`, the planned total ("processed: 40/40").
    pub transactions_planned: Option<i64>,
    pub failed: Option<i64>,
    pub serialization_failures: Option<i64>,
    pub deadlock_failures: Option<i64>,
    pub retried: Option<i64>,
    pub retries: Option<i64>,
    pub skipped: Option<i64>,
    pub latency_limit_ms: Option<f64>,
    /// Transactions above `latency_limit_ms`.
    pub late: Option<i64>,
    pub lat_avg_ms: Option<f64>,
    /// pgbench's run-time-derived average counts failed transactions too.
    pub lat_avg_includes_failures: bool,
    pub lat_stddev_ms: Option<f64>,
    pub lag_avg_ms: Option<f64>,
    pub lag_max_ms: Option<f64>,
    pub initial_connection_time_ms: Option<f64>,
    /// With `--connect`, instead of the initial connection time.
    pub average_connection_time_ms: Option<f64>,
    pub tps: Option<f64>,
    /// With `--connect`, tps counts the time spent reconnecting.
    pub tps_includes_connections: bool,
}

/// Parses pgbench's stdout. Errors when a known line has a value that
/// does not parse (the format changed), or when the text has no summary
/// line at all (pgbench failed before running: see its stderr).
pub fn parse_summary(stdout: &str) -> Result<Summary, PgbenchError> {
    let mut s = Summary::default();
    let mut recognised = 0usize;
    for (i, raw) in stdout.lines().enumerate() {
        let line = raw.trim_end();
        let known = parse_line(line, &mut s)
            .map_err(|e| PgbenchError::Parse(format!("summary line {}: {e}: \"{line}\"", i + 1)))?;
        recognised += usize::from(known);
    }
    if recognised == 0 {
        return Err(PgbenchError::Parse(
            "no pgbench summary in the output".into(),
        ));
    }
    Ok(s)
}

/// Fills `s` from one line; `Ok(false)` for a line it does not know.
fn parse_line(line: &str, s: &mut Summary) -> Result<bool, String> {
    if let Some(rest) = line.strip_prefix("pgbench (") {
        let version = rest.strip_suffix(')').ok_or("unterminated version")?;
        s.pgbench_version = Some(version.to_string());
    } else if let Some(v) = line.strip_prefix("transaction type: ") {
        s.transaction_type = Some(v.to_string());
    } else if let Some(v) = line.strip_prefix("scaling factor: ") {
        s.scaling_factor = Some(int(v)?);
    } else if let Some(v) = line.strip_prefix("query mode: ") {
        s.query_mode = Some(v.to_string());
    } else if let Some(v) = line.strip_prefix("number of clients: ") {
        s.clients = Some(int(v)?);
    } else if let Some(v) = line.strip_prefix("number of threads: ") {
        s.threads = Some(int(v)?);
    } else if let Some(v) = line.strip_prefix("maximum number of tries: ") {
        s.max_tries = Some(int(v)?);
    } else if let Some(v) = line.strip_prefix("duration: ") {
        s.duration_s = Some(int(v.strip_suffix(" s").ok_or("duration without unit")?)?);
    } else if let Some(v) = line.strip_prefix("number of transactions per client: ") {
        s.transactions_per_client = Some(int(v)?);
    } else if let Some(v) = line.strip_prefix("number of transactions actually processed: ") {
        match v.split_once('/') {
            Some((done, planned)) => {
                s.transactions = Some(int(done)?);
                s.transactions_planned = Some(int(planned)?);
            }
            None => s.transactions = Some(int(v)?),
        }
    } else if let Some(v) = line.strip_prefix("number of failed transactions: ") {
        s.failed = Some(count_with_percent(v)?);
    } else if let Some(v) = line.strip_prefix("number of serialization failures: ") {
        s.serialization_failures = Some(count_with_percent(v)?);
    } else if let Some(v) = line.strip_prefix("number of deadlock failures: ") {
        s.deadlock_failures = Some(count_with_percent(v)?);
    } else if let Some(v) = line.strip_prefix("number of transactions retried: ") {
        s.retried = Some(count_with_percent(v)?);
    } else if let Some(v) = line.strip_prefix("total number of retries: ") {
        s.retries = Some(int(v)?);
    } else if let Some(v) = line.strip_prefix("number of transactions skipped: ") {
        s.skipped = Some(count_with_percent(v)?);
    } else if let Some(v) = line.strip_prefix("number of transactions above the ") {
        // "2.0 ms latency limit: 355/1433 (24.773%)"
        let (limit, rest) = v
            .split_once(" ms latency limit: ")
            .ok_or("no latency limit")?;
        s.latency_limit_ms = Some(float(limit)?);
        let (late, _) = rest.split_once('/').ok_or("no late count")?;
        s.late = Some(int(late)?);
    } else if let Some(v) = line.strip_prefix("latency average = ") {
        let (ms, note) = ms_value(v)?;
        s.lat_avg_ms = Some(ms);
        s.lat_avg_includes_failures = note == "(including failures)";
    } else if let Some(v) = line.strip_prefix("latency stddev = ") {
        s.lat_stddev_ms = Some(ms_value(v)?.0);
    } else if let Some(v) = line.strip_prefix("rate limit schedule lag: avg ") {
        // "0.099 (max 4.697) ms"
        let (avg, rest) = v.split_once(" (max ").ok_or("no max lag")?;
        let max = rest.strip_suffix(") ms").ok_or("lag without unit")?;
        s.lag_avg_ms = Some(float(avg)?);
        s.lag_max_ms = Some(float(max)?);
    } else if let Some(v) = line.strip_prefix("initial connection time = ") {
        s.initial_connection_time_ms = Some(ms_value(v)?.0);
    } else if let Some(v) = line.strip_prefix("average connection time = ") {
        s.average_connection_time_ms = Some(ms_value(v)?.0);
    } else if let Some(v) = line.strip_prefix("tps = ") {
        let (value, note) = v.split_once(' ').unwrap_or((v, ""));
        let tps = float(value)?;
        // pgbench 13 and older print two lines; keep the one without
        // connection time, like pgbench 14+ prints.
        if note.contains("including connections establishing") && s.tps.is_some() {
            return Ok(true);
        }
        s.tps = Some(tps);
        s.tps_includes_connections =
            note.contains("including reconnection") || note.contains("including connections");
    } else {
        return Ok(false);
    }
    Ok(true)
}

fn int(v: &str) -> Result<i64, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("\"{}\" is not an integer", v.trim()))
}

fn float(v: &str) -> Result<f64, String> {
    // Rust's parser also takes "inf" and "NaN"; pgbench prints those for
    // empty runs in some lines, but a value we store must be a number.
    match v.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(format!("\"{}\" is not a number", v.trim())),
    }
}

/// "12 (0.5%)" or "0 (NaN%)" -> 12, 0.
fn count_with_percent(v: &str) -> Result<i64, String> {
    let (n, pct) = v.split_once(" (").ok_or("no percentage")?;
    if !pct.ends_with("%)") {
        return Err("no percentage".into());
    }
    int(n)
}

/// "3.703 ms" or "258.427 ms (including failures)" -> (3.703, note).
fn ms_value(v: &str) -> Result<(f64, &str), String> {
    let (n, rest) = v.split_once(" ms").ok_or("value without ms")?;
    Ok((float(n)?, rest.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Summary {
        parse_summary(text).unwrap()
    }

    #[test]
    fn tpcb_with_progress() {
        let s = parse(include_str!("testdata/tpcb_progress/stdout"));
        assert_eq!(
            s,
            Summary {
                pgbench_version: Some("15.20 (Debian 15.20-0+deb12u1)".into()),
                transaction_type: Some("<builtin: TPC-B (sort of)>".into()),
                scaling_factor: Some(2),
                query_mode: Some("simple".into()),
                clients: Some(4),
                threads: Some(2),
                max_tries: Some(1),
                duration_s: Some(3),
                transactions: Some(6711),
                failed: Some(0),
                lat_avg_ms: Some(1.780),
                lat_stddev_ms: Some(1.258),
                initial_connection_time_ms: Some(5.851),
                tps: Some(2233.892655),
                ..Default::default()
            }
        );
    }

    #[test]
    fn rate_and_latency_limit() {
        let s = parse(include_str!("testdata/tpcb_agg_rate/stdout"));
        assert_eq!(s.transactions, Some(1651));
        assert_eq!(
            (s.serialization_failures, s.deadlock_failures),
            (Some(0), Some(0))
        );
        assert_eq!(s.skipped, Some(320));
        assert_eq!((s.latency_limit_ms, s.late), (Some(2.0), Some(1062)));
        assert_eq!((s.lag_avg_ms, s.lag_max_ms), (Some(0.242), Some(4.749)));
        assert_eq!((s.lat_avg_ms, s.lat_stddev_ms), (Some(4.420), Some(4.332)));
        let s = parse(include_str!("testdata/select_rate_limit/stdout"));
        assert_eq!(s.query_mode.as_deref(), Some("prepared"));
        assert_eq!(
            (s.skipped, s.late, s.latency_limit_ms),
            (Some(1), Some(3), Some(1.0))
        );
    }

    #[test]
    fn transactions_mode_has_no_duration_and_no_stddev() {
        let s = parse(include_str!("testdata/transactions_mode/stdout"));
        assert_eq!(s.duration_s, None);
        assert_eq!(s.transactions_per_client, Some(20));
        assert_eq!(
            (s.transactions, s.transactions_planned),
            (Some(40), Some(40))
        );
        assert_eq!(s.query_mode.as_deref(), Some("extended"));
        assert_eq!((s.lat_avg_ms, s.lat_stddev_ms), (Some(1.069), None));
        assert_eq!(s.tps, Some(1871.520142));
    }

    #[test]
    fn failures_retries_and_details() {
        let s = parse(include_str!("testdata/failures_tx/stdout"));
        assert_eq!((s.transactions, s.failed), (Some(8), Some(7)));
        assert_eq!(s.lat_avg_ms, Some(270.333));
        assert!(s.lat_avg_includes_failures);
        assert_eq!(
            s.transaction_type.as_deref(),
            Some("/tmp/pgb-out/conflict.sql")
        );
        assert_eq!(
            s.scaling_factor,
            Some(1),
            "pgbench's :scale default for files"
        );

        let s = parse(include_str!("testdata/failures_agg/stdout"));
        assert_eq!(s.max_tries, Some(2));
        assert_eq!(
            (s.failed, s.serialization_failures, s.deadlock_failures),
            (Some(41), Some(40), Some(1))
        );
        assert_eq!((s.retried, s.retries), (Some(67), Some(67)));

        // With --progress the average is measured, without the note.
        let s = parse(include_str!("testdata/retries_progress/stdout"));
        assert_eq!(
            (s.lat_avg_ms, s.lat_avg_includes_failures),
            (Some(98.370), false)
        );
        assert_eq!(s.lat_stddev_ms, Some(505.067));
    }

    #[test]
    fn connect_mode() {
        let s = parse(include_str!("testdata/connect/stdout"));
        assert_eq!(s.initial_connection_time_ms, None);
        assert_eq!(s.average_connection_time_ms, Some(3.595));
        assert_eq!(s.tps, Some(268.429587));
        assert!(s.tps_includes_connections);
    }

    #[test]
    fn aborted_run_stops_early() {
        let s = parse(include_str!("testdata/aborted/stdout"));
        assert_eq!(
            (s.transactions, s.failed),
            (Some(0), Some(0)),
            "\"0 (NaN%)\" is read"
        );
        assert_eq!((s.tps, s.lat_avg_ms), (None, None));
    }

    #[test]
    fn storlab_script_run() {
        let s = parse(include_str!("testdata/update_hot/stdout"));
        assert_eq!(
            s.transaction_type.as_deref(),
            Some("/tmp/pgb-out/update-hot.sql")
        );
        assert_eq!(s.scaling_factor, Some(2), "--scale reaches the script");
        assert_eq!(s.tps, Some(2462.079597));
    }

    #[test]
    fn older_pgbench_tps_lines() {
        let s = parse(
            "tps = 100.5 (including connections establishing)\n\
             tps = 101.5 (excluding connections establishing)\n",
        );
        assert_eq!((s.tps, s.tps_includes_connections), (Some(101.5), false));
    }

    #[test]
    fn unknown_lines_are_skipped_but_broken_known_lines_are_errors() {
        let s = parse("statement latencies in milliseconds:\n         0.002  \\set aid\ntps = 5.5 (without initial connection time)\n");
        assert_eq!(s.tps, Some(5.5));
        for (text, want) in [
            ("tps = fast (x)", "\"fast\" is not a number"),
            ("number of clients: four", "not an integer"),
            ("latency average = 3.5 s", "without ms"),
            ("duration: 60", "duration without unit"),
            ("number of failed transactions: 3", "no percentage"),
            ("rate limit schedule lag: avg 1.0 ms", "no max lag"),
            ("latency average = inf ms", "not a number"),
            ("pgbench (15.20", "unterminated version"),
        ] {
            let e = parse_summary(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
            assert!(e.contains("summary line 1"), "{e}");
        }
        assert!(parse_summary("")
            .unwrap_err()
            .to_string()
            .contains("no pgbench summary"));
        assert!(parse_summary("pgbench: error: connection failed\n").is_err());
    }
}
