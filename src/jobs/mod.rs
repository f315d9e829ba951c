//! Jobs: benchmark work done by a dynamic background worker.
//!
//! A SELECT holds its backend's snapshot for as long as it runs; a benchmark
//! driven from one would stop HOT pruning and vacuum for minutes and bias the
//! very TPS it measures. So a job runs in a background worker that holds no
//! snapshot while pgbench runs: it opens short transactions only to read its
//! job, check for a cancel and store results (DESIGN.md, "Long work").
//!
//! Life of a job: the caller inserts a `storlab.jobs` row (status 'queued')
//! and starts a worker with the job's id. The worker waits until the row is
//! visible (the caller's transaction has committed), marks it 'running',
//! runs pgbench in a process group of its own, and ends it 'done', 'failed'
//! (with pgbench's stderr) or 'cancelled'. storlab.cancel() sets
//! 'cancelling' and signals the worker, which notices at once; SIGTERM
//! (pg_terminate_backend, a server shutdown) and the postmaster's death stop
//! it the same way; if the worker itself is killed, the kernel kills pgbench.

pub mod conninfo;
pub mod process;
mod run;

use std::time::{Duration, Instant};

use std::panic::AssertUnwindSafe;

use pgrx::bgworkers::{BackgroundWorker, SignalWakeFlags};
use pgrx::pg_sys::PgTryBuilder;
use pgrx::prelude::*;

use crate::ops::identity::{as_owner, pinned};

/// Starting a worker for a committed-or-about-to-commit job row.
pub fn launch(job_id: i64) -> Result<(), String> {
    // SAFETY: reads the backend's database and user ids.
    let (db, role) = unsafe { (pg_sys::MyDatabaseId, pg_sys::GetUserId()) };
    pgrx::bgworkers::BackgroundWorkerBuilder::new(&format!("storlab job {job_id}"))
        .set_type("storlab job")
        .set_library("storlab")
        .set_function("storlab_job_main")
        .set_argument(job_id.into_datum())
        .set_extra(&format!("{} {}", u32::from(db), u32::from(role)))
        .enable_spi_access()
        .set_restart_time(None)
        .load_dynamic()
        .map(|_| ())
        .map_err(|e| format!("{e:?}"))
}

/// The worker's entry point (named in launch()).
#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn storlab_job_main(arg: pg_sys::Datum) {
    // SAFETY: launch() passes an int8 by value.
    let Some(job_id) = (unsafe { i64::from_datum(arg, false) }) else {
        return;
    };
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    let mut ids = BackgroundWorker::get_extra()
        .split(' ')
        .filter_map(|s| s.parse::<u32>().ok());
    let (Some(db), Some(role)) = (ids.next(), ids.next()) else {
        return;
    };
    BackgroundWorker::connect_worker_to_spi_by_oid(Some(db.into()), Some(role.into()));

    let Some(job) = wait_for_job(job_id) else {
        return;
    };
    if job.status != "queued" {
        return; // cancelled before it started
    }
    bookkeeping(|| {
        Spi::run_with_args(
            "UPDATE storlab.jobs SET status = 'running', worker_pid = pg_catalog.pg_backend_pid(), started_at = pg_catalog.clock_timestamp()
              WHERE id = $1",
            &[job_id.into()],
        )
    });
    // An ERROR in the job's own work (a privilege the caller lacks, a
    // table dropped under it) ends the job 'failed' with that error's text,
    // rather than ending the worker with the job left 'running'.
    let outcome = PgTryBuilder::new(AssertUnwindSafe(|| run::run(&job)))
        .catch_others(|e| {
            // SAFETY: leaves the failed transaction (a no-op outside one),
            // restoring the user id and GUC nest levels as any abort does.
            unsafe { pg_sys::AbortCurrentTransaction() };
            Err(run::JobEnd::Failed(error_text(&e)))
        })
        .execute();
    let (status, error) = match outcome {
        Ok(()) => ("done", None),
        Err(run::JobEnd::Stopped(why)) => ("cancelled", Some(why)),
        Err(run::JobEnd::Failed(why)) => ("failed", Some(why)),
    };
    bookkeeping(|| {
        Spi::run_with_args(
            "UPDATE storlab.jobs SET status = $2, error = coalesce($3, error), finished_at = pg_catalog.clock_timestamp()
              WHERE id = $1",
            &[job_id.into(), status.into(), error.into()],
        )
    });
}

/// An error's message, with its detail, for `storlab.jobs.error`.
fn error_text(e: &pg_sys::panic::CaughtError) -> String {
    use pg_sys::panic::CaughtError::*;
    let report = match e {
        PostgresError(r) | ErrorReport(r) => r,
        RustPanic { ereport, .. } => ereport,
    };
    let mut text = report.message().to_string();
    if let Some(detail) = report.detail() {
        text.push_str(&format!(": {detail}"));
    }
    text
}

/// A job as the worker reads it.
pub struct Job {
    pub id: i64,
    pub kind: String,
    pub status: String,
    pub args: serde_json::Value,
    pub database: String,
    pub role: String,
}

/// The job row appears when the launching transaction commits; a row that
/// never appears (the caller rolled back) ends the worker after a minute.
fn wait_for_job(job_id: i64) -> Option<Job> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if let Some(job) = bookkeeping(|| read_job(job_id)) {
            return Some(job);
        }
        if !BackgroundWorker::wait_latch(Some(Duration::from_millis(50))) {
            return None;
        }
    }
    None
}

fn read_job(job_id: i64) -> Result<Option<Job>, pgrx::spi::Error> {
    Spi::connect(|c| {
        let mut rows = c.select(
            "SELECT kind, status, args, database::text, role::text FROM storlab.jobs WHERE id = $1",
            None,
            &[job_id.into()],
        )?;
        let Some(r) = rows.next() else {
            return Ok(None);
        };
        Ok(Some(Job {
            id: job_id,
            kind: r.get(1)?.unwrap_or_default(),
            status: r.get(2)?.unwrap_or_default(),
            args: r.get::<pgrx::JsonB>(3)?.map(|j| j.0).unwrap_or_default(),
            database: r.get(4)?.unwrap_or_default(),
            role: r.get(5)?.unwrap_or_default(),
        }))
    })
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

/// Has the job been cancelled, or the worker told to stop? For the child's
/// stop callback: it also waits on the latch, so it paces the polling.
pub fn stop_requested(job_id: i64) -> Option<String> {
    // every 250 ms: a transaction each time, on a server that is being
    // benchmarked; cancel() also signals the worker, which wakes this at once
    let signalled = !BackgroundWorker::wait_latch(Some(Duration::from_millis(250)));
    let status = bookkeeping(|| {
        Spi::get_one_with_args::<String>(
            "SELECT (SELECT status FROM storlab.jobs WHERE id = $1)",
            &[job_id.into()],
        )
    });
    if status.as_deref() == Some("cancelling") {
        Some("cancelled with storlab.cancel()".into())
    } else if signalled {
        Some(
            "stopped by a signal: the waiting caller was cancelled (statement_timeout, pg_cancel_backend), \
             or pg_terminate_backend, or a server shutdown"
                .into(),
        )
    } else {
        None
    }
}
