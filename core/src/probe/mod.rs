//! The I/O measurement engine: fills a scratch file in a tablespace's temp
//! folder, hammers it from a few threads with a chosen workload, and returns
//! a latency histogram.
//!
//! Nothing here knows about PostgreSQL. The caller hands in a `Caller` that
//! checks the backend's interrupt flag and waits on its latch; this module
//! promises to call it only from the calling thread, never to panic on bad
//! input or I/O errors, and always to remove its scratch file, even when the
//! caller unwinds out of it (which is how a PostgreSQL ERROR travels through
//! Rust frames).
//!
//! Module map:
//! - `workload`, `sync_method`: what to measure, parsed from SQL-facing names.
//! - `offsets`: where each I/O lands (pure functions, tested directly).
//! - `buffer`: page-aligned memory for O_DIRECT.
//! - `scratch`: the scratch file's life cycle and stale-file cleanup.
//! - `Histogram`: the latency histogram (nanoseconds), `crate::hdr`'s one
//!   type in this unit.
//! - `start_gate`: lets worker threads start the timed phase together.
//! - `io_engine`, `ring`: psync or io_uring; one worker's ring and its
//!   in-flight buffers.
//! - `progress`, `precision`: throughput sampled while a probe runs, and
//!   when a probe asked for a precision has it.
//! - `worker`: one thread's timed loop of reads or commits.
//! - `caller`: how the calling thread waits and says stop.
//! - `spec`: `ProbeSpec`, what to measure, and its checks.
//! - `engine`: `run_probe`, which ties the above together.

mod buffer;
mod caller;
mod engine;
mod error;
mod io_engine;
mod offsets;
mod precision;
mod progress;
mod ring;
mod scratch;
mod spec;
mod start_gate;
mod sync_method;
mod worker;
mod workload;

#[cfg(test)]
mod test_dirs;

pub use crate::hdr::{HistogramError, ProbeHistogram as Histogram};
pub use buffer::{AlignedBuf, BUFFER_ALIGN};
pub use caller::Caller;
pub use engine::{run_probe, ProbeResult};
pub(crate) use error::parse_name;
pub use error::ProbeError;
pub use io_engine::{IoEngine, MAX_IODEPTH};
pub use offsets::{random_offset, worker_region, Region, SeqCursor};
pub use precision::{ci95_pct, MAX_PRECISION_PCT, MIN_PRECISION_PCT};
pub use scratch::{remove_own, remove_stale, ScratchFile, SCRATCH_PREFIX};
pub use spec::{ProbeSpec, MAX_BLOCK_SIZE, MAX_WORKERS};
pub use sync_method::SyncMethod;
pub use workload::Workload;
