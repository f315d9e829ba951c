//! storlab's pure core: everything storlab decides or computes without
//! PostgreSQL. The extension crate (the SQL functions, the operations under
//! an identity, the background worker) calls into it; this crate has no
//! pgrx, so the compiler keeps it that way, and its tests run in seconds
//! without a server: `cargo test -p storlab-core`.
//!
//! - `error`: the one error type, with the SQLSTATE it is raised with
//! - `conninfo`: libpq's `key=value` connection strings, read as libpq reads them
//! - `fleet`: a collector's members: names, conninfo split for postgres_fdw, versions
//! - `request`: typed requests, checked once (22023 with the allowed range)
//! - `probe`: the I/O engine (psync, io_uring), workloads, the precision stop
//! - `env`: storage facts of a path (filesystem, device, allocation, limits)
//! - `pgbench`: pgbench's scripts, command lines, output and log parsers
//! - `bench_run`: what one measured pgbench run decides from what it measured
//! - `report`: comparisons, experiment reports, CI checks' verdicts
//! - `advice`, `chart`: what storlab recommends and draws, from plain figures
//! - `relocate`: relation kinds, ALTER statements, what a move locks
//! - `repack`: pg_repack for online table moves: versions, command line, phases,
//!   and a run's outcome (moved, or the job's error saying why not)
//! - `hdr`: HdrHistogram encoding and merging
//! - `newest`: the newest rows of each group of a long history, through an index
//! - `sql_text`: identifiers and literals quoted as PostgreSQL quotes them
//! - `record`: storlab's own rows as structs, written by column name
//! - `stats`: summaries, Welch's test and the one significance rule (a leaf)
//! - `sequential`: experiments that stop when answered: repeated confidence
//!   intervals with error spent over the looks

pub mod advice;
pub mod bench_run;
pub mod chart;
pub mod conninfo;
pub mod env;
pub mod error;
pub mod fleet;
pub mod hdr;
pub mod newest;
pub mod pgbench;
pub mod probe;
pub mod record;
pub mod relocate;
pub mod repack;
pub mod report;
pub mod request;
pub mod sequential;
pub mod sql_text;
pub mod stats;
