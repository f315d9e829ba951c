//! pgbench as a measuring instrument: which script to run, the command line
//! that runs it, and the numbers it prints and logs.
//!
//! Nothing here knows about PostgreSQL's internals or starts a process:
//! the job layer spawns pgbench with the arguments built here (as separate
//! arguments, never through a shell) and hands its output back to the
//! parsers. Every parser is tested against real pgbench 15 output kept in
//! `testdata/`.
//!
//! Module map:
//! - `scripts`: the catalogue (pgbench builtins and storlab's scripts in
//!   `pgbench_scripts/`), and the DDL of the table `insert-append` fills.
//! - `connection`, `bench_options`, `init_options`: validated command lines
//!   for a run and for `pgbench --initialize`.
//! - `summary`: the summary on stdout.
//! - `stderr`: progress lines, error messages, initialisation timings.
//! - `tx_log`: the per-transaction log; `log_dir` finds a run's
//!   per-thread files and merges them.
//! - `interval`: the per-second row a run's timeline is made of.
//! - `error`: `PgbenchError`.

mod bench_options;
mod connection;
pub mod conninfo;
mod error;
mod init_options;
mod interval;
mod log_dir;
pub mod process;
pub mod scripts;
mod stderr;
mod summary;
mod tx_log;

#[cfg(test)]
mod live_test;
#[cfg(test)]
mod test_support;

pub use crate::hdr::{LatencyPercentiles, TxHistogram};
pub use bench_options::{BenchOptions, Protocol};
pub use connection::Connection;
pub use error::PgbenchError;
pub use init_options::{InitOptions, PartitionMethod};
pub use interval::IntervalRow;
pub use log_dir::{list_log_files, read_tx_logs, LogFile};
pub use scripts::{Script, ScriptSource, APPEND_TABLE_DDL, APPEND_TABLE_NAME};
pub use stderr::{
    cause_first, parse_init_timings, parse_stderr, InitTimings, ProgressRow, StderrReport,
};
pub use summary::{parse_summary, Summary};
pub use tx_log::{parse_tx_line, FailureKind, TxLogFormat, TxLogStats, TxOutcome, TxRecord};
