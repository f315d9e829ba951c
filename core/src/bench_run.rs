//! What one measured pgbench run decides from what it measured and
//! observed: pgbench's options for it, the settings it reads in its
//! sessions, whether it has a figure to store, why it is invalid, its row
//! of storlab.bench_runs and what its job's detail says. Pure; the job
//! that runs pgbench and reads the server is `src/jobs/bench.rs`.

use std::path::Path;

use crate::hdr::LatencyPercentiles;
use crate::pgbench::{BenchOptions, Connection, StderrReport, Summary};
use crate::record::{RunCounters, RunResult};
use crate::request::bench::BenchRun;

pub mod devices;

/// The settings that every run records, beside those its layout declares.
pub const RECORDED_SETTINGS: [&str; 16] = [
    "shared_buffers",
    "wal_sync_method",
    "synchronous_commit",
    "full_page_writes",
    "checkpoint_timeout",
    "max_wal_size",
    "wal_buffers",
    "wal_compression",
    "effective_io_concurrency",
    "random_page_cost",
    "fsync",
    "wal_level",
    "track_io_timing",
    "work_mem",
    "temp_tablespaces",
    "server_version",
];

/// pgbench's options for the run `r` at `scale` (None: pgbench_branches
/// could not be counted), its logs in `dir`: every transaction logged, or
/// a sample (`BenchRun::sampling_rate`), since the stored percentiles and
/// per-second rows come from the transaction log.
pub fn options(
    r: &BenchRun,
    database: &str,
    dir: &Path,
    scale: Option<i32>,
    connection: Connection,
) -> BenchOptions {
    let mut o = BenchOptions::new(&r.script, database, dir);
    o.scale = scale;
    o.clients = r.clients;
    o.jobs = r.jobs;
    o.duration_s = r.duration_s as i32;
    o.protocol = r.options.protocol();
    o.rate_tps = r.options.rate;
    // pgbench's own progress lines land in the job's stderr file; the stored
    // per-second rows come from the transaction log either way
    o.progress_s = r.options.progress_interval.map(|p| p as i32);
    o.log = true;
    o.sampling_rate = r.sampling_rate();
    o.log_prefix = "tx".into();
    o.no_vacuum = !r.options.vacuum.unwrap_or(true);
    o.connection = connection;
    o
}

/// The settings a run reads in its sessions: those every run records, then
/// the layout's own (`declared`), each once, lowercase as pg_settings
/// names them.
pub fn settings_to_read(declared: &[String]) -> Vec<String> {
    let mut names: Vec<String> = RECORDED_SETTINGS.iter().map(|s| s.to_string()).collect();
    for n in declared {
        let n = n.to_lowercase();
        if !names.contains(&n) {
            names.push(n);
        }
    }
    names
}

/// The settings as psql printed them (`-A -t`: one jsonb object), or why
/// they cannot be read.
pub fn settings_printed(printed: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(printed.trim()).map_err(|e| {
        format!(
            "reading the settings of pgbench's sessions: {e} in {:?}",
            printed.trim()
        )
    })
}

/// Why the run is invalid, if it is: settings that could not be read
/// (`unread`: why) first, then how its observations disagree.
pub fn invalid(unread: Option<&str>, disagreement: Option<String>) -> Option<String> {
    let Some(why) = unread else {
        return disagreement;
    };
    let unread = format!("the settings of its sessions could not be read ({why})");
    Some(match disagreement {
        Some(more) => format!("{unread}; {more}"),
        None => unread,
    })
}

/// A run that completed nothing has no TPS or latency to give: stored, it
/// would read as 0 TPS in every comparison. The job's error then, with
/// pgbench's first error when it printed one.
pub fn no_figure(
    summary: &Summary,
    duration_s: u32,
    report: Option<&StderrReport>,
) -> Option<String> {
    (summary.transactions == Some(0)).then(|| {
        format!(
            "pgbench completed no transaction in {duration_s} s: there is no figure to store{}",
            report
                .and_then(|r| r.first_error().map(|e| format!(" ({e})")))
                .unwrap_or_default()
        )
    })
}

/// What the run measured, as its row: pgbench's summary, the percentiles
/// of its (sampled) transaction log and its histogram, the observations,
/// why it is invalid and the server's counters over it.
pub struct Measured<'a> {
    pub summary: &'a Summary,
    pub percentiles: Option<&'a LatencyPercentiles>,
    pub histogram: Option<Vec<u8>>,
    pub pgbench_version: Option<String>,
    /// `{"start": .., "end": ..}`
    pub observed: serde_json::Value,
    pub invalid: Option<String>,
    pub counters: RunCounters,
    /// the devices beneath its tablespaces ([`devices::record`])
    pub device_io: Option<crate::record::RunDeviceIo>,
    /// the memory the server could cache in at its start, and its source
    pub memory: Option<(u64, crate::env::cgroup::MemorySource)>,
}

impl Measured<'_> {
    pub fn result(self) -> RunResult {
        let (s, p) = (self.summary, self.percentiles);
        RunResult {
            tps: s.tps,
            transactions: s.transactions,
            failures: s.failed,
            lat_avg_ms: s.lat_avg_ms,
            // pgbench prints it only with --rate or --progress; the
            // histogram always has it (of the logged sample)
            lat_stddev_ms: s.lat_stddev_ms.or(p.map(|p| p.lat_stddev_ms)),
            lat_p50_ms: p.map(|p| p.lat_p50_ms),
            lat_p90_ms: p.map(|p| p.lat_p90_ms),
            lat_p95_ms: p.map(|p| p.lat_p95_ms),
            lat_p99_ms: p.map(|p| p.lat_p99_ms),
            lat_max_ms: p.map(|p| p.lat_max_ms),
            histogram: self.histogram,
            pgbench_version: self.pgbench_version,
            observed: self.observed,
            invalid: self.invalid,
            counters: self.counters,
            device_io: self.device_io,
            memory_bytes: self
                .memory
                .map(|(n, _)| i64::try_from(n).unwrap_or(i64::MAX)),
            memory_source: self.memory.map(|(_, s)| s.as_str().to_string()),
        }
    }
}

/// What a run of its own (a bench job's; an experiment's many runs keep
/// their per-second rows in bench_progress only) adds to its job's detail
/// from pgbench's stderr: its progress lines and messages, when it printed
/// any.
pub fn progress_detail(report: &StderrReport) -> Option<serde_json::Value> {
    let progress: Vec<serde_json::Value> = report
        .progress
        .iter()
        .map(|p| {
            serde_json::json!({ "t_s": p.t_s, "tps": p.tps, "lat_avg_ms": p.lat_avg_ms,
                "lat_stddev_ms": p.lat_stddev_ms, "failed": p.failed, "lag_ms": p.lag_ms,
                "skipped": p.skipped })
        })
        .collect();
    (!progress.is_empty() || !report.messages.is_empty()).then(
        || serde_json::json!({ "pgbench_progress": progress, "pgbench_messages": report.messages }),
    )
}

#[cfg(test)]
mod tests;
