//! What pgbench writes on stderr: progress lines (`--progress`), errors,
//! and for `--initialize` the timing of each step.
//!
//! Errors matter because the summary on stdout does not say why a run
//! failed: an aborted run's summary just stops, and pgbench exits with
//! status 2 (1 for bad options or a failed connection).

use super::error::PgbenchError;

/// One progress line, e.g.
/// `progress: 1.0 s, 2019.8 tps, lat 0.204 ms stddev 0.051, 0 failed, lag 0.084 ms, 5 skipped`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressRow {
    /// Seconds since the start (or epoch seconds with `--progress-timestamp`).
    pub t_s: f64,
    pub tps: f64,
    pub lat_avg_ms: f64,
    pub lat_stddev_ms: f64,
    pub failed: u64,
    /// With `--rate`.
    pub lag_ms: Option<f64>,
    /// With `--rate` and `--latency-limit`.
    pub skipped: Option<u64>,
    /// With `--max-tries` other than 1.
    pub retried: Option<u64>,
    pub retries: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct StderrReport {
    /// pgbench's own messages without the `pgbench: ` prefix, e.g.
    /// `error: client 0 script 0 aborted in command 0 query 0: ERROR: ...`
    /// (lines after it, such as the `LINE 1:` excerpt, are left out).
    pub messages: Vec<String>,
    /// pgbench said "Run was aborted; the above results are incomplete."
    pub aborted: bool,
    pub progress: Vec<ProgressRow>,
}

impl StderrReport {
    /// The first error, which is usually the cause of the others.
    pub fn first_error(&self) -> Option<&str> {
        self.messages.iter().find_map(|m| {
            m.strip_prefix("error: ")
                .or_else(|| m.strip_prefix("fatal: "))
        })
    }
}

/// Parses a run's stderr. A progress line that does not parse is an error
/// (the format changed); other unknown lines are skipped. A last line
/// without newline is skipped too, since stderr may be read while pgbench
/// still runs.
pub fn parse_stderr(stderr: &str) -> Result<StderrReport, PgbenchError> {
    let mut report = StderrReport::default();
    let complete = match stderr.rfind('\n') {
        Some(end) => &stderr[..end],
        None => "",
    };
    for (i, line) in complete.lines().enumerate() {
        if let Some(rest) = line.strip_prefix("progress: ") {
            let row = parse_progress(rest).map_err(|e| {
                PgbenchError::Parse(format!("stderr line {}: {e}: \"{line}\"", i + 1))
            })?;
            report.progress.push(row);
        } else if let Some(msg) = line.strip_prefix("pgbench: ") {
            if msg.contains("Run was aborted") {
                report.aborted = true;
            }
            report.messages.push(msg.to_string());
        } else if line.starts_with("Run was aborted") {
            // pgbench before 14 printed it without the program name.
            report.aborted = true;
        }
    }
    Ok(report)
}

fn parse_progress(rest: &str) -> Result<ProgressRow, String> {
    let mut parts = rest.split(", ");
    let mut next = |what: &str| parts.next().ok_or_else(|| format!("no {what}"));
    let t_s = float(
        next("time")?
            .strip_suffix(" s")
            .ok_or("time without unit")?,
    )?;
    let tps = float(next("tps")?.strip_suffix(" tps").ok_or("no tps")?)?;
    // "lat 1.928 ms stddev 1.195"
    let lat = next("latency")?.strip_prefix("lat ").ok_or("no latency")?;
    let (avg, stddev) = lat.split_once(" ms stddev ").ok_or("no stddev")?;
    let lat_avg_ms = float(avg)?;
    let lat_stddev_ms = float(stddev)?;
    let failed = count(
        next("failed")?
            .strip_suffix(" failed")
            .ok_or("no failed count")?,
    )?;
    let mut row = ProgressRow {
        t_s,
        tps,
        lat_avg_ms,
        lat_stddev_ms,
        failed,
        lag_ms: None,
        skipped: None,
        retried: None,
        retries: None,
    };
    for part in parts {
        if let Some(v) = part
            .strip_prefix("lag ")
            .and_then(|v| v.strip_suffix(" ms"))
        {
            row.lag_ms = Some(float(v)?);
        } else if let Some(v) = part.strip_suffix(" skipped") {
            row.skipped = Some(count(v)?);
        } else if let Some(v) = part.strip_suffix(" retried") {
            row.retried = Some(count(v)?);
        } else if let Some(v) = part.strip_suffix(" retries") {
            row.retries = Some(count(v)?);
        } else {
            return Err(format!("unknown field \"{part}\""));
        }
    }
    Ok(row)
}

fn float(v: &str) -> Result<f64, String> {
    // "NaN" is what pgbench prints for the latency of an empty interval in
    // some versions; keep it, the field is a measurement not a count.
    v.parse::<f64>()
        .ok()
        .filter(|x| !x.is_infinite())
        .ok_or_else(|| format!("\"{v}\" is not a number"))
}

fn count(v: &str) -> Result<u64, String> {
    v.parse().map_err(|_| format!("\"{v}\" is not a count"))
}

/// The last line of `pgbench --initialize`:
/// `done in 0.73 s (drop tables 0.04 s, create tables 0.01 s, ...).`
#[derive(Debug, Clone, PartialEq)]
pub struct InitTimings {
    pub total_s: f64,
    /// Each step pgbench ran, in order, with its seconds.
    pub steps: Vec<(String, f64)>,
}

/// Finds and parses the `done in` line; `Ok(None)` when there is none
/// (initialisation failed: see `parse_stderr`'s messages).
pub fn parse_init_timings(stderr: &str) -> Result<Option<InitTimings>, PgbenchError> {
    let Some(line) = stderr.lines().find(|l| l.starts_with("done in ")) else {
        return Ok(None);
    };
    let err = |e: String| PgbenchError::Parse(format!("{e}: \"{line}\""));
    let rest = &line["done in ".len()..];
    let (total, steps) = rest
        .split_once(" s (")
        .ok_or_else(|| err("no step list".into()))?;
    let steps = steps
        .strip_suffix(").")
        .ok_or_else(|| err("unterminated step list".into()))?;
    let total_s = float(total).map_err(err)?;
    let steps = steps
        .split(", ")
        .map(|step| {
            let (name, secs) = step
                .strip_suffix(" s")
                .and_then(|s| s.rsplit_once(' '))
                .ok_or_else(|| format!("step without time \"{step}\""))?;
            Ok((name.to_string(), float(secs)?))
        })
        .collect::<Result<Vec<_>, String>>()
        .map_err(err)?;
    Ok(Some(InitTimings { total_s, steps }))
}

/// A failed client program's stderr (pgbench, psql) as a person should
/// read it: the lines that say what went wrong first (errors, their detail
/// and hint, the server's ERROR), then what else it printed, without the
/// progress chatter (`creating tables...`, `100000 of 1000000 tuples (10%)
/// done`, `progress: ...`) that would push the cause out of sight.
pub fn cause_first(stderr: &str) -> String {
    let raw: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let lines: Vec<&str> = raw.iter().map(|l| l.trim()).collect();
    let is_cause_line = |l: &str| {
        let l = l
            .strip_prefix("pgbench: ")
            .or_else(|| l.strip_prefix("psql: "))
            .unwrap_or(l);
        [
            "error:", "fatal:", "detail:", "hint:", "ERROR:", "FATAL:", "DETAIL:", "HINT:",
            "PANIC:",
        ]
        .iter()
        .any(|p| l.starts_with(p))
            || l.contains(": ERROR:")
    };
    let is_progress = |l: &str| {
        l.ends_with("...")
            || l.starts_with("progress: ")
            || (l.contains(" tuples (") && l.contains(" done ("))
    };
    // an indented line after a cause goes on with it (libpq's "\tIs the
    // server running ...?" under a failed connection)
    let mut cause = vec![false; lines.len()];
    for i in 0..lines.len() {
        cause[i] =
            is_cause_line(lines[i]) || (i > 0 && cause[i - 1] && raw[i].starts_with([' ', '\t']));
    }
    let causes: Vec<&str> = (0..lines.len())
        .filter(|&i| cause[i])
        .map(|i| lines[i])
        .collect();
    let rest: Vec<&str> = (0..lines.len())
        .filter(|&i| !cause[i] && !is_progress(lines[i]))
        .map(|i| lines[i])
        .collect();
    let text = match (causes.is_empty(), rest.is_empty()) {
        (false, true) => causes.join("; "),
        (false, false) => format!(
            "{} (it also printed: {})",
            causes.join("; "),
            rest.join("; ")
        ),
        (true, false) => rest.join("; "),
        // nothing but progress: its last line is where it stopped
        (true, true) => lines
            .last()
            .map(|l| format!("it stopped after: {l}"))
            .unwrap_or_default(),
    };
    if causes.iter().any(|c| is_refused_login(c)) {
        format!("{text}. {CONNECTING_BACK}")
    } else {
        text
    }
}

/// What a job's pgbench or psql needs when the server refuses its login:
/// the lab trusts local connections, most servers do not.
pub const CONNECTING_BACK: &str =
    "storlab's jobs connect back to this server as the calling role, \
     through pg_hba.conf: give them a password (a passfile in storlab.conninfo, e.g. \
     ALTER ROLE ... SET storlab.conninfo = 'passfile=/path/.pgpass') or a pg_hba.conf rule \
     for them; see docs/bench.md, Connection";

/// libpq's and the server's words for a login that was refused.
fn is_refused_login(line: &str) -> bool {
    [
        "fe_sendauth: no password supplied",
        "password authentication failed",
        "Peer authentication failed",
        "no pg_hba.conf entry",
    ]
    .iter()
    .any(|w| line.contains(w))
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_cause_of_a_failed_init_comes_first() {
        let stderr = "dropping old tables...\ncreating tables...\ngenerating data (client-side)...\n\
100000 of 1000000 tuples (10%) done (elapsed 0.05 s, remaining 0.45 s)\n\
200000 of 1000000 tuples (20%) done (elapsed 0.11 s, remaining 0.44 s)\n\
pgbench: error: PQendcopy failed\n\
pgbench: detail: ERROR:  could not extend file \"pg_tblspc/16384/PG_15/5/16399\": No space left on device\n\
HINT:  Check free disk space.\n";
        assert_eq!(
            cause_first(stderr),
            "pgbench: error: PQendcopy failed; pgbench: detail: ERROR:  could not extend file \
             \"pg_tblspc/16384/PG_15/5/16399\": No space left on device; HINT:  Check free disk space."
        );
    }

    #[test]
    fn other_lines_follow_the_cause_and_progress_alone_says_where_it_stopped() {
        assert_eq!(
            cause_first("starting vacuum...end.\npgbench: error: connection to server failed\nsome note\n"),
            "pgbench: error: connection to server failed (it also printed: starting vacuum...end.; some note)"
        );
        assert_eq!(
            cause_first("psql:<stdin>:1: ERROR:  relation \"x\" does not exist\n"),
            "psql:<stdin>:1: ERROR:  relation \"x\" does not exist"
        );
        assert_eq!(
            cause_first("dropping old tables...\ncreating tables...\n"),
            "it stopped after: creating tables..."
        );
        assert_eq!(cause_first(""), "");
        // libpq's indented second line stays with its error
        assert_eq!(
            cause_first("pgbench: error: connection to server failed: No such file or directory\n\tIs the server running locally?\n"),
            "pgbench: error: connection to server failed: No such file or directory; Is the server running locally?"
        );
    }
    use super::*;

    #[test]
    fn progress_lines_of_real_runs() {
        let r = parse_stderr(include_str!("testdata/tpcb_progress/stderr")).unwrap();
        assert!(!r.aborted && r.messages.is_empty());
        assert_eq!(r.progress.len(), 3);
        assert_eq!(
            r.progress[0],
            ProgressRow {
                t_s: 1.0,
                tps: 2055.0,
                lat_avg_ms: 1.928,
                lat_stddev_ms: 1.195,
                failed: 0,
                lag_ms: None,
                skipped: None,
                retried: None,
                retries: None,
            }
        );
        let r = parse_stderr(include_str!("testdata/skipped_tx/stderr")).unwrap();
        assert_eq!(
            (r.progress[0].lag_ms, r.progress[0].skipped),
            (Some(0.084), Some(5))
        );
        let r = parse_stderr(include_str!("testdata/retries_progress/stderr")).unwrap();
        let p: Vec<_> = r
            .progress
            .iter()
            .map(|p| (p.failed, p.retried, p.retries))
            .collect();
        assert_eq!(
            p,
            [
                (11, Some(27), Some(46)),
                (0, Some(1), Some(1)),
                (0, Some(0), Some(0))
            ]
        );
        assert_eq!(r.progress[2].tps, 0.0);
    }

    #[test]
    fn aborted_run_reports_its_first_error() {
        let r = parse_stderr(include_str!("testdata/aborted/stderr")).unwrap();
        assert!(r.aborted);
        assert_eq!(r.messages.len(), 3);
        assert_eq!(
            r.first_error(),
            Some("client 0 script 0 aborted in command 0 query 0: ERROR:  relation \"storlab_no_such_table\" does not exist")
        );
        assert!(r.progress.is_empty());
    }

    #[test]
    fn partial_and_broken_lines() {
        // The cut-off last line is not parsed yet.
        let r = parse_stderr(
            "progress: 1.0 s, 5.0 tps, lat 1.000 ms stddev 0.100, 0 failed\nprogress: 2.0 s, 5",
        )
        .unwrap();
        assert_eq!(r.progress.len(), 1);
        for (line, want) in [
            ("progress: 1.0 s, 5.0 tps\n", "no latency"),
            (
                "progress: 1.0, 5.0 tps, lat 1 ms stddev 1, 0 failed\n",
                "time without unit",
            ),
            (
                "progress: 1.0 s, 5.0 tps, lat 1 ms stddev 1, x failed\n",
                "not a count",
            ),
            (
                "progress: 1.0 s, 5.0 tps, lat 1 ms stddev 1, 0 failed, 3 bogus\n",
                "unknown field",
            ),
            (
                "progress: 1.0 s, inf tps, lat 1 ms stddev 1, 0 failed\n",
                "not a number",
            ),
        ] {
            let e = parse_stderr(line).unwrap_err().to_string();
            assert!(e.contains(want), "{line}: {e}");
        }
        assert_eq!(parse_stderr("").unwrap(), StderrReport::default());
        let old = parse_stderr("Run was aborted; the above results are incomplete.\n").unwrap();
        assert!(old.aborted);
        let fatal = parse_stderr("pgbench: fatal: connection to database \"x\" failed\n").unwrap();
        assert_eq!(
            fatal.first_error(),
            Some("connection to database \"x\" failed")
        );
    }

    #[test]
    fn init_timings_of_a_real_init() {
        let t = parse_init_timings(include_str!("testdata/init/stderr"))
            .unwrap()
            .unwrap();
        assert_eq!(t.total_s, 0.73);
        let names: Vec<&str> = t.steps.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "drop tables",
                "create tables",
                "client-side generate",
                "vacuum",
                "primary keys"
            ]
        );
        assert_eq!(t.steps[2].1, 0.34);
        assert_eq!(parse_init_timings("creating tables...\n").unwrap(), None);
        assert!(parse_init_timings("done in 1 s (vacuum).\n").is_err());
        assert!(parse_init_timings("done in x s (vacuum 1 s).\n").is_err());
    }

    #[test]
    fn a_refused_login_says_how_a_job_gets_in() {
        let stderr = "Password: \npgbench: error: connection to server on socket \"/tmp/.s.PGSQL.5432\" failed: fe_sendauth: no password supplied\npgbench: error: could not create connection for initialization\n";
        let text = cause_first(stderr);
        assert!(
            text.starts_with("pgbench: error: connection to server"),
            "{text}"
        );
        assert!(text.ends_with(CONNECTING_BACK), "{text}");
        // any other failure keeps its own words only
        let other = cause_first("pgbench: error: connection to server failed: could not connect\n");
        assert!(!other.contains("passfile"), "{other}");
    }
}
