//! A run's log files: pgbench writes one per thread, `<prefix>.<pid>` for
//! the first thread and `<prefix>.<pid>.<thread>` for the others. These
//! functions find them in the run's folder and merge them.

use std::fs;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use super::error::PgbenchError;
use super::tx_log::{TxLogFormat, TxLogStats};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    pub path: PathBuf,
    /// pgbench's process id, the same for all files of a run.
    pub pid: u32,
    /// 0 for the file without a thread suffix.
    pub thread: u32,
}

/// `<prefix>.<pid>` -> (pid, 0), `<prefix>.<pid>.<n>` -> (pid, n); other
/// names (the script file, captured output) are not logs.
fn parse_name(name: &str, prefix: &str) -> Option<(u32, u32)> {
    let rest = name.strip_prefix(prefix)?.strip_prefix('.')?;
    let digits = |s: &str| -> Option<u32> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    match rest.split_once('.') {
        None => Some((digits(rest)?, 0)),
        // pgbench numbers the other threads from 1.
        Some((pid, thread)) => Some((digits(pid)?, digits(thread).filter(|&t| t > 0)?)),
    }
}

/// The log files of the run in `dir`, ordered by thread.
///
/// Refuses a folder holding the logs of more than one pgbench process, or
/// with a thread's file missing: merging them would silently mix runs or
/// drop a thread's transactions.
pub fn list_log_files(dir: &Path, prefix: &str) -> Result<Vec<LogFile>, PgbenchError> {
    let entries = fs::read_dir(dir)
        .map_err(|e| PgbenchError::io(format!("cannot list {}", dir.display()), e))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| PgbenchError::io(format!("cannot list {}", dir.display()), e))?;
        let name = entry.file_name();
        let Some((pid, thread)) = name.to_str().and_then(|n| parse_name(n, prefix)) else {
            continue;
        };
        files.push(LogFile {
            path: entry.path(),
            pid,
            thread,
        });
    }
    files.sort_by_key(|f| (f.pid, f.thread));
    let mut pids: Vec<u32> = files.iter().map(|f| f.pid).collect();
    pids.dedup();
    if pids.len() > 1 {
        let list: Vec<String> = pids.iter().map(u32::to_string).collect();
        return Err(PgbenchError::Parse(format!(
            "{} holds log files of {} pgbench runs (pids {}); give each run a fresh folder",
            dir.display(),
            pids.len(),
            list.join(", ")
        )));
    }
    if let Some(gap) = files
        .iter()
        .enumerate()
        .find(|(i, f)| f.thread as usize != *i)
    {
        return Err(PgbenchError::Parse(format!(
            "{}: the log file of thread {} is missing",
            dir.display(),
            gap.0
        )));
    }
    Ok(files)
}

fn require_some(
    files: Vec<LogFile>,
    dir: &Path,
    prefix: &str,
) -> Result<Vec<LogFile>, PgbenchError> {
    if files.is_empty() {
        return Err(PgbenchError::Parse(format!(
            "no pgbench log files named {prefix}.<pid> in {}",
            dir.display()
        )));
    }
    Ok(files)
}

fn open(path: &Path) -> Result<BufReader<fs::File>, PgbenchError> {
    fs::File::open(path)
        .map(BufReader::new)
        .map_err(|e| PgbenchError::io(format!("cannot open {}", path.display()), e))
}

fn in_file(path: &Path, e: PgbenchError) -> PgbenchError {
    match e {
        PgbenchError::Parse(msg) => PgbenchError::Parse(format!("{}: {msg}", path.display())),
        PgbenchError::Io { context, source } => PgbenchError::Io {
            context: format!("{}: {context}", path.display()),
            source,
        },
        other => other,
    }
}

/// Reads and merges every per-transaction log of the run in `dir`.
pub fn read_tx_logs(
    dir: &Path,
    prefix: &str,
    format: TxLogFormat,
) -> Result<TxLogStats, PgbenchError> {
    let mut total = TxLogStats::default();
    for f in require_some(list_log_files(dir, prefix)?, dir, prefix)? {
        let stats = TxLogStats::read(open(&f.path)?, format).map_err(|e| in_file(&f.path, e))?;
        total.merge(&stats);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pgbench::test_support::{testdata_dir, TempDir};

    const PLAIN: TxLogFormat = TxLogFormat {
        schedule_lag: false,
        retries: false,
    };

    #[test]
    fn names() {
        assert_eq!(
            parse_name("pgbench_log.17234", "pgbench_log"),
            Some((17234, 0))
        );
        assert_eq!(
            parse_name("pgbench_log.17234.3", "pgbench_log"),
            Some((17234, 3))
        );
        for other in [
            "pgbench_log",
            "pgbench_log.",
            "pgbench_log.x",
            "pgbench_log.12.0",
            "pgbench_log.12.",
            "pgbench_log.12.1.2",
            "pgbench_log.+12",
            "pgbench_logs.12",
            "update-hot.sql",
            "stdout",
        ] {
            assert_eq!(parse_name(other, "pgbench_log"), None, "{other}");
        }
    }

    #[test]
    fn real_run_folder_lists_only_its_logs() {
        let dir = testdata_dir().join("update_hot");
        let files = list_log_files(&dir, "pgbench_log").unwrap();
        assert_eq!(
            files.iter().map(|f| (f.pid, f.thread)).collect::<Vec<_>>(),
            [(17234, 0), (17234, 1)]
        );
        assert!(list_log_files(&dir, "other").unwrap().is_empty());
    }

    #[test]
    fn real_tx_logs_merge_across_threads() {
        let s = read_tx_logs(
            &testdata_dir().join("failures_detailed_tx"),
            "pgbench_log",
            PLAIN,
        )
        .unwrap();
        // That run's summary: 12 processed, 12 serialization failures.
        assert_eq!((s.ok, s.failed, s.serialization_failures), (12, 12, 12));
        assert_eq!(s.histogram.count(), 12);
        let p = s.histogram.percentiles().unwrap();
        // One transaction waited two seconds for a lock.
        assert!((p.lat_max_ms - 2002.299).abs() < 2.0, "{p:?}");
    }

    #[test]
    fn mixed_or_incomplete_folders_are_refused() {
        let tmp = TempDir::new("log-dir");
        let line = "0 1 100 0 1795325499 10\n";
        fs::write(tmp.path().join("lg.100"), line).unwrap();
        fs::write(tmp.path().join("lg.100.2"), line).unwrap();
        let e = read_tx_logs(tmp.path(), "lg", PLAIN)
            .unwrap_err()
            .to_string();
        assert!(e.contains("thread 1 is missing"), "{e}");
        fs::write(tmp.path().join("lg.100.1"), line).unwrap();
        assert_eq!(read_tx_logs(tmp.path(), "lg", PLAIN).unwrap().ok, 3);
        fs::write(tmp.path().join("lg.200"), line).unwrap();
        let e = read_tx_logs(tmp.path(), "lg", PLAIN)
            .unwrap_err()
            .to_string();
        assert!(e.contains("2 pgbench runs (pids 100, 200)"), "{e}");
        let e = read_tx_logs(tmp.path(), "nothing", PLAIN)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no pgbench log files named nothing.<pid>"),
            "{e}"
        );
        let e = read_tx_logs(&tmp.path().join("gone"), "lg", PLAIN).unwrap_err();
        assert!(matches!(e, PgbenchError::Io { .. }), "{e:?}");
    }

    #[test]
    fn errors_name_the_file_and_partial_lines_are_counted() {
        let tmp = TempDir::new("log-dir-bad");
        fs::write(
            tmp.path().join("lg.7"),
            "0 1 100 0 1795325499 10\n0 2 200 0 17953",
        )
        .unwrap();
        fs::write(tmp.path().join("lg.7.1"), "0 1 100 0 1795325499 10\n").unwrap();
        let s = read_tx_logs(tmp.path(), "lg", PLAIN).unwrap();
        assert_eq!((s.ok, s.partial_lines), (2, 1));
        fs::write(tmp.path().join("lg.7.1"), "garbage\n").unwrap();
        let e = read_tx_logs(tmp.path(), "lg", PLAIN)
            .unwrap_err()
            .to_string();
        assert!(e.contains("lg.7.1: line 1: expected 6 fields"), "{e}");
    }
}
