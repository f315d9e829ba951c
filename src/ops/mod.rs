//! Operations: what storlab does, each under an explicit identity (the
//! caller, or the extension's owner for storlab's own rows, see
//! `identity`). The SQL functions (`api`) and the background worker
//! (`jobs`) both use them; neither imports the other.

pub mod advice;
pub mod backend_wait;
pub mod chart;
pub mod checks;
pub mod compare;
pub mod error;
pub mod experiment;
pub mod fleet;
pub mod identity;
pub mod jobs;
pub mod pgbench;
pub mod probe;
pub mod prune;
pub mod read;
pub mod read_path;
pub mod record;
pub mod relocate;
pub mod report;
pub mod server;
pub mod settings;
pub mod standby;
pub mod suite;
pub mod targets;
pub mod time_bound;
