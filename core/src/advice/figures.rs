//! The figures advice is decided from, as `ops::advice` reads them: the
//! newest standard-suite probes per tablespace (and pg_wal), repeated
//! probes of the same workload, done experiments with their reports' cells,
//! and a few facts of the database.

use std::collections::BTreeMap;

use serde_json::Value;

/// One stored probe's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Probe {
    pub id: i64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub mib_s: f64,
}

/// What is stored of one tablespace (or pg_wal).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// on storage a reboot empties (tmpfs, zram)
    pub volatile: bool,
    /// the mount point of its filesystem
    pub mount: Option<String>,
    /// the device its filesystem is mounted from
    pub device: Option<String>,
    /// the folder PostgreSQL keeps its files in (a tablespace's
    /// `PG_<major>_<catversion>` folder), as the newest probe found it
    pub location: Option<String>,
    /// the newest 1-worker standard-suite probe of each workload
    pub workloads: BTreeMap<String, Probe>,
    /// one call's 8 kB random-read IOPS over queue depths (or workers):
    /// the newest profile() sweep, effective_io_concurrency's evidence
    pub sweep: Option<Sweep>,
    /// every stored probe of one worker at queue depth 1, direct, at the
    /// standard suite's block size of the workload (randread, seqread,
    /// seqwrite), newest first: the repeated figures a difference between
    /// two tablespaces is tested on
    pub repeats: BTreeMap<String, Vec<Probe>>,
    /// PostgreSQL's own read path (probe_read_path, PostgreSQL 18): the
    /// repetitions of each (scan, io_method, effective_io_concurrency)
    pub read_path: Vec<super::read_path::ReadPathPoint>,
}

/// One `profile()` call's 8 kB random reads at several queue depths of one
/// reader (or, where it swept none, at several workers): every point from
/// that one call, each with its repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// the call's suite_call
    pub call: String,
    /// when the call started, as the advice says it
    pub measured_at: String,
    pub basis: ConcurrencyBasis,
    pub points: Vec<SweepPoint>,
}

/// A sweep's point: the reads in flight (queue depth or workers), the IOPS
/// of each repetition and the probes'.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SweepPoint {
    pub readers: i32,
    pub iops: Vec<f64>,
    pub ids: Vec<i64>,
}

/// What a sweep's reads in flight are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConcurrencyBasis {
    /// One reader's io_uring queue depth: what the setting is, the number
    /// of reads one backend keeps in flight while it prefetches.
    QueueDepth,
    /// Concurrent synchronous readers (profile's workers): a stand-in,
    /// where io_uring is off or no depth was swept.
    Workers,
}

/// Figures by tablespace name ("pg_wal" for the WAL's folder).
pub type ByTablespace = BTreeMap<String, Figures>;

/// A done experiment: its layouts' placements and its report's cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Experiment {
    pub id: i64,
    pub name: String,
    /// (name, placement) in order, the baseline first
    pub layouts: Vec<(String, Value)>,
    /// Stopped by a sequential design (its layouts' comparisons decided
    /// when it stopped; its fillfactor comparisons were not designed for it)
    pub sequential: bool,
    pub cells: Vec<Cell>,
}

/// One (layout, fillfactor, clients) cell of an experiment's report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cell {
    pub layout: String,
    pub fillfactor: i32,
    pub clients: i32,
    /// TPS of each run the report pooled
    pub tps: Vec<f64>,
    pub improvement_pct: Option<f64>,
    pub p_value: Option<f64>,
    pub significant: Option<bool>,
    /// A sequential experiment's decision for this layout (different,
    /// equivalent, open, undecided), the repetitions of its look and that
    /// look's repeated confidence interval of the improvement (%); None
    /// in a fixed experiment, whose Welch test decides.
    pub decision: Option<crate::sequential::Decision>,
    pub decided_after: Option<i32>,
    pub seq_ci_low_pct: Option<f64>,
    pub seq_ci_high_pct: Option<f64>,
    pub logical_bytes: Option<i64>,
    pub stored_bytes: Option<i64>,
}

/// Facts of the database the advice is for.
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    /// pg_stat_database's counters of this database
    pub blks_read: i64,
    pub blks_hit: i64,
    /// the database's name as an identifier in SQL (quoted where needed)
    pub quoted_database: String,
    /// where pgbench finds its tables for the caller (None: no tables)
    pub pgbench_schema: Option<String>,
    /// where pgbench's indexes are now (the database's default tablespace
    /// without pgbench tables)
    pub index_tablespace: String,
    /// where temp files go now: temp_tablespaces' first, else the
    /// database's default tablespace
    pub temp_tablespace: String,
    /// the server's asynchronous I/O settings; None before PostgreSQL 18
    pub aio: Option<super::read_path::AioSettings>,
}

impl Default for Context {
    fn default() -> Context {
        Context {
            blks_read: 0,
            blks_hit: 0,
            quoted_database: "postgres".into(),
            pgbench_schema: None,
            index_tablespace: "pg_default".into(),
            temp_tablespace: "pg_default".into(),
            aio: None,
        }
    }
}
