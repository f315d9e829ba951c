//! A job as its steps see it: its row, how it ends when it does not
//! complete, its short transactions (as the owner for storlab's rows, as the
//! caller for its work) and the facts it adds to its detail. Every job kind
//! and the worker share these; they import no job kind.

use pgrx::bgworkers::BackgroundWorker;
use pgrx::prelude::*;
use pgrx::JsonB;

use crate::ops::identity::{as_owner, pinned};
use storlab_core::error::{Error, SqlState};
use storlab_core::request::job::JobArgs;

/// A job as the worker reads it.
pub struct Job {
    pub id: i64,
    pub args: JobArgs,
    pub database: String,
    pub role: String,
}

/// How a job's work ends when it does not complete.
pub enum JobEnd {
    /// A stop request (cancel(), a signal): the job ends 'cancelled'.
    Stopped(String),
    /// A failure outside PostgreSQL (pgbench's exit, a file): the job's
    /// error; CALL storlab.wait raises it as 38000.
    Failed(String),
    /// An error of storlab's own (a lock given up on, a check of ours):
    /// CALL storlab.wait raises it with its SQLSTATE, and its detail (or,
    /// without one, its hint) as the detail.
    Error(Error),
    /// An ERROR PostgreSQL raised in the job's work (a privilege, a lock
    /// timeout, a table dropped under it): CALL storlab.wait raises it
    /// again with its SQLSTATE as raised, any of PostgreSQL's, which is why
    /// it is kept as its five characters.
    Raised {
        message: String,
        sqlstate: String,
        detail: Option<String>,
    },
}

impl JobEnd {
    /// An error of storlab's own with `state`, and `detail` if any.
    pub fn error(state: SqlState, message: String, detail: Option<String>) -> JobEnd {
        JobEnd::Error(Error {
            detail,
            ..Error::new(state, message)
        })
    }
}

impl From<Error> for JobEnd {
    fn from(e: Error) -> Self {
        JobEnd::Error(e)
    }
}

/// One short transaction as the extension's owner, restricted and behind
/// the pinned search_path: storlab's own rows only. SPI errors end the
/// worker with the error in the server log.
pub fn bookkeeping<R>(f: impl FnOnce() -> Result<R, pgrx::spi::Error>) -> R {
    transaction(|| as_owner(f))
}

/// One short transaction as the job's role (the worker's session user),
/// behind the pinned search_path: the caller's own work (its tables, its
/// CHECKPOINT, its statistics), with exactly the caller's privileges.
pub fn as_caller<R>(f: impl FnOnce() -> Result<R, pgrx::spi::Error>) -> R {
    transaction(|| pinned(f))
}

fn transaction<R>(f: impl FnOnce() -> Result<R, pgrx::spi::Error>) -> R {
    let mut f = Some(f);
    BackgroundWorker::transaction(std::panic::AssertUnwindSafe(|| {
        (f.take().expect("called once"))()
    }))
    .unwrap_or_else(|e| error!("storlab job: {e}"))
}

/// Adds facts of the run to the job's `detail`.
pub(super) fn store_detail(job: &Job, detail: serde_json::Value) {
    bookkeeping(|| {
        Spi::run_with_args(
            "UPDATE storlab.job_records SET detail = coalesce(detail, '{}') || $2 WHERE id = $1",
            &[job.id.into(), JsonB(detail).into()],
        )
    });
}
