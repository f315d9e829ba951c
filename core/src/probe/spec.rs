//! `ProbeSpec`: what a probe measures, and the checks that refuse a spec
//! that cannot run or would silently ignore a setting, before anything
//! touches the disk.

use std::path::PathBuf;
use std::time::Duration;

use super::error::ProbeError;
use super::io_engine::{IoEngine, MAX_IODEPTH};
use super::precision::{MAX_PRECISION_PCT, MIN_PRECISION_PCT};
use super::sync_method::SyncMethod;
use super::workload::Workload;

/// More threads than this measure the scheduler, not the disk, and a typo
/// in SQL must not spawn a million threads inside a backend.
pub const MAX_WORKERS: usize = 256;

/// Largest I/O size accepted; per-worker buffers are this big.
pub const MAX_BLOCK_SIZE: usize = 64 << 20;

/// What to measure. `ProbeSpec::new` gives sensible defaults; adjust fields
/// with struct update syntax.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSpec {
    /// Folder for the scratch file (created if missing; its parent must exist).
    pub dir: PathBuf,
    pub workload: Workload,
    /// Bytes per I/O; a multiple of 512.
    pub block_size: usize,
    /// Length of the timed phase (the fill is not counted).
    pub duration: Duration,
    /// Number of threads, each with its own fd and buffer.
    pub workers: usize,
    /// Scratch file size; at least one block per worker. Larger than the
    /// device cache for honest random reads.
    pub file_size: u64,
    /// Ask for O_DIRECT; see `ProbeResult::direct` for what was used.
    pub direct: bool,
    /// Durability per commit; must be `None` for read workloads.
    pub sync: SyncMethod,
    /// Writes of `block_size` per commit before the one sync (pg_test_fsync's
    /// "2 * 8kB" test is 2). Must be 1 for read workloads.
    pub writes_per_sync: u32,
    /// Every commit starts again at the worker's region start, as
    /// pg_test_fsync does; only for seqwrite and wal.
    pub rewind: bool,
    /// None: every op of a write workload is a commit (`writes_per_sync`
    /// writes, then `sync`). Some(n): every op is one write, and each
    /// worker calls `sync` (fsync or fdatasync) after every n-th write of
    /// its own and after its last one (n = 0: only after its last one, as
    /// iozone -e flushes once at the end), timed apart from the writes and
    /// inside the probe's elapsed time. randwrite and seqwrite only.
    pub sync_every: Option<u32>,
    /// Requests each worker keeps in flight (1..=MAX_IODEPTH); above 1
    /// only with the io_uring engine.
    pub iodepth: u32,
    pub engine: IoEngine,
    /// Stop once the 95 % confidence interval of the mean IOPS is within
    /// ±this percent and the p99 has settled (see `precision`); `duration`
    /// is then the upper bound. None: run for `duration`.
    pub precision_pct: Option<f64>,
}

impl ProbeSpec {
    /// 8 KiB (PostgreSQL's page) I/O for 1 s from 1 worker on a 16 MiB
    /// file, O_DIRECT, with the workload's default sync.
    pub fn new(dir: impl Into<PathBuf>, workload: Workload) -> ProbeSpec {
        ProbeSpec {
            dir: dir.into(),
            workload,
            block_size: 8192,
            duration: Duration::from_secs(1),
            workers: 1,
            file_size: 16 << 20,
            direct: true,
            sync: workload.default_sync(),
            writes_per_sync: 1,
            rewind: false,
            sync_every: None,
            iodepth: 1,
            engine: IoEngine::Psync,
            precision_pct: None,
        }
    }

    /// Rejects specs that cannot run, or that would silently ignore a
    /// setting (a sync on a read workload measures nothing the user meant).
    pub fn validate(&self) -> Result<(), ProbeError> {
        let bad = |msg: String| Err(ProbeError::InvalidSpec(msg));
        let w = self.workload;
        if self.dir.as_os_str().is_empty() {
            return bad("dir must not be empty".into());
        }
        if self.block_size == 0 || !self.block_size.is_multiple_of(512) {
            return bad(format!(
                "block_size must be a positive multiple of 512 bytes, got {}",
                self.block_size
            ));
        }
        if self.block_size > MAX_BLOCK_SIZE {
            return bad(format!(
                "block_size must be at most {MAX_BLOCK_SIZE} bytes, got {}",
                self.block_size
            ));
        }
        if self.workers == 0 || self.workers > MAX_WORKERS {
            return bad(format!(
                "workers must be between 1 and {MAX_WORKERS}, got {}",
                self.workers
            ));
        }
        let min_size = self.block_size as u128 * self.workers as u128;
        if (self.file_size as u128) < min_size {
            return bad(format!(
                "file_size must hold at least one block per worker ({} workers x {} bytes = \
                 {min_size}), got {}",
                self.workers, self.block_size, self.file_size
            ));
        }
        if self.duration.is_zero() {
            return bad("duration must be greater than zero".into());
        }
        if self.writes_per_sync == 0 {
            return bad("writes_per_sync must be at least 1".into());
        }
        if !w.is_write() {
            if self.sync != SyncMethod::None {
                return bad(format!(
                    "sync method {} applies to write workloads only, and {w} reads",
                    self.sync
                ));
            }
            if self.writes_per_sync != 1 {
                return bad(format!(
                    "writes_per_sync applies to write workloads only, and {w} reads"
                ));
            }
        }
        if self.rewind && !matches!(w, Workload::Seqwrite | Workload::Wal) {
            return bad(format!(
                "rewind applies to sequential write workloads (seqwrite, wal) only, not {w}"
            ));
        }
        if let Some(n) = self.sync_every {
            if !matches!(w, Workload::Randwrite | Workload::Seqwrite) {
                return bad(format!(
                    "sync_every applies to randwrite and seqwrite only, not {w}"
                ));
            }
            if !matches!(self.sync, SyncMethod::Fsync | SyncMethod::Fdatasync) {
                return bad(format!(
                    "sync_every {n} needs a sync call after the writes (fsync or fdatasync), not sync method {}",
                    self.sync
                ));
            }
            if self.writes_per_sync != 1 || self.rewind {
                return bad(
                    "sync_every counts single writes: writes_per_sync must be 1 and rewind off"
                        .into(),
                );
            }
            if self.engine != IoEngine::Psync {
                return bad(
                    "sync_every runs on psync: a sync waits for the writes before it".into(),
                );
            }
            if n == 0 && self.precision_pct.is_some() {
                return bad(
                    "sync_every 0 syncs once, after the last write, which no throughput sample \
                     sees: it runs for its whole duration (no precision)"
                        .into(),
                );
            }
        }
        if !(1..=MAX_IODEPTH).contains(&self.iodepth) {
            return bad(format!(
                "iodepth must be between 1 and {MAX_IODEPTH}, got {}",
                self.iodepth
            ));
        }
        if self.engine == IoEngine::Psync && self.iodepth > 1 {
            return bad(format!(
                "the psync engine has one I/O in flight at a time; iodepth {} needs io_uring",
                self.iodepth
            ));
        }
        if self.engine == IoEngine::IoUring
            && (self.sync != SyncMethod::None || self.writes_per_sync != 1 || self.rewind)
        {
            return bad(format!(
                "io_uring queues plain reads and writes; a commit (writes, then sync method {}) \
                 waits for its sync and runs on psync",
                self.sync
            ));
        }
        if let Some(p) = self.precision_pct {
            if !(MIN_PRECISION_PCT..=MAX_PRECISION_PCT).contains(&p) {
                return bad(format!(
                    "precision must be between {MIN_PRECISION_PCT} and {MAX_PRECISION_PCT} percent, got {p}"
                ));
            }
        }
        Ok(())
    }
}
