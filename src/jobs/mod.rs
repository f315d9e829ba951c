//! Jobs: benchmark work done by a dynamic background worker.
//!
//! A SELECT holds its backend's snapshot for as long as it runs; a benchmark
//! driven from one would stop HOT pruning and vacuum for minutes and bias the
//! very TPS it measures. So a job runs in a background worker that holds no
//! snapshot while pgbench runs: it opens short transactions only to read its
//! job, check for a cancel and store results (ARCHITECTURE.md).
//!
//! Life of a job: the caller inserts a `storlab.job_records` row (status 'queued')
//! and starts a worker with the job's id. The worker waits until the row is
//! visible (the caller's transaction has committed), marks it 'running',
//! runs pgbench in a process group of its own, and ends it 'done', 'failed'
//! (with pgbench's stderr) or 'cancelled'. storlab.cancel() sets
//! 'cancelling' and signals the worker, which notices at once; SIGTERM
//! (pg_terminate_backend, a server shutdown) and the postmaster's death stop
//! it the same way; if the worker itself is killed, the kernel kills pgbench.

// This file is the worker: it waits for its job, starts and ends it, and
// runs it through `dispatch`, the one module that knows the job kinds
// (`bench`, `experiment`, `move_indexes`, `move_online`). A kind imports
// neither the dispatcher nor another kind, but for an experiment, which is
// made of `bench`'s two steps; otherwise only what they share: `job` (the
// job, how it ends, its transactions), `stop`, `client` (pgbench, psql,
// pg_repack), `observe` and `reindex` (what an interrupted REINDEX
// CONCURRENTLY leaves).
mod bench;
mod client;
mod dispatch;
mod experiment;
mod job;
mod move_indexes;
mod move_online;
mod observe;
mod reindex;
mod stop;

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use pgrx::bgworkers::{BackgroundWorker, SignalWakeFlags};
use pgrx::pg_sys::PgTryBuilder;
use pgrx::prelude::*;

use crate::ops::jobs as ops_jobs;
use crate::ops::read;
use storlab_core::request::job::{JobArgs, JobSpec};

use job::{bookkeeping, Job, JobEnd};

/// The worker's entry point (named in launch()).
#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn storlab_job_main(arg: pg_sys::Datum) {
    // SAFETY: launch() passes an int8 by value.
    let Some(job_id) = (unsafe { i64::from_datum(arg, false) }) else {
        return;
    };
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    // the errors of its work name the job's worker, not a SQL function
    let _called = crate::ops::error::called("storlab job worker");
    // "database role creator": oids, and the creating transaction's xid8
    let extra = BackgroundWorker::get_extra();
    let mut ids = extra.split(' ').filter_map(|s| s.parse::<u64>().ok());
    let (Some(db), Some(role)) = (ids.next(), ids.next()) else {
        return;
    };
    let (db, role) = (db as u32, role as u32);
    let creator = ids.next();
    BackgroundWorker::connect_worker_to_spi_by_oid(Some(db.into()), Some(role.into()));
    // An ERROR that escapes (storlab's tables gone with DROP EXTENSION, a
    // failed bookkeeping transaction) is logged and the worker returns:
    // exit code 0, so that a worker the postmaster restarts after a crash
    // (ops::jobs::launch) is never restarted for an ERROR, again and again.
    PgTryBuilder::new(AssertUnwindSafe(|| work(job_id, creator)))
        .catch_others(|e| {
            // SAFETY: leaves the failed transaction, if any.
            unsafe { pg_sys::AbortCurrentTransaction() };
            if let JobEnd::Raised { message, .. } = caught(&e) {
                log!("storlab job {job_id}: {message}");
            }
        })
        .execute();
}

/// The worker's work, once connected: wait for the job, run it, end it.
fn work(job_id: i64, creator: Option<u64>) {
    let Some(row) = wait_for_job(job_id, creator) else {
        return; // the creating transaction rolled back: there is no job
    };
    let args = match JobArgs::from_json(&row.args) {
        Ok(args) => args,
        Err(e) => return finish(job_id, "failed", Some(e)),
    };
    let interrupted = matches!(row.status.as_str(), "running" | "cancelling");
    let job = Job {
        id: job_id,
        args,
        database: row.database,
        role: row.role,
    };
    if interrupted {
        // the postmaster started this worker again after a crash restart
        // (only jobs that asked to be, ops::jobs::launch): it tidies what
        // the interrupted job left and ends it
        let why = PgTryBuilder::new(AssertUnwindSafe(|| dispatch::recover(&job)))
            .catch_others(|e| {
                // SAFETY: as below, leaves the failed transaction.
                unsafe { pg_sys::AbortCurrentTransaction() };
                match caught(&e) {
                    JobEnd::Raised { message, .. } => {
                        format!("the server restarted while the job ran, and tidying after it failed: {message}")
                    }
                    _ => "the server restarted while the job ran".to_string(),
                }
            })
            .execute();
        finish(job_id, "failed", Some(why));
        return dispatch::after_end(&job);
    }
    if row.status != "queued" {
        return; // cancelled before it started
    }
    // Where this job's pgbench finds its tables, stored as the job turns
    // 'running': storlab's moves refuse those relations while it runs
    // (ops::jobs::pgbench_relations_free). pgbench -i may make them
    // elsewhere: a bench_init job (or one that finds none) claims every
    // schema's.
    let schema = match &job.args.spec {
        JobSpec::Bench(_) | JobSpec::Experiment(_) => observe::pgbench_schema().ok(),
        _ => None,
    };
    // Jobs on this database's pgbench tables exclude each other; the caller
    // checked when it started the job, this checks again in a transaction
    // of its own (a caller at REPEATABLE READ may not have seen the other).
    // The lock also keeps the job from starting while a storlab move of
    // its relations is between its check and its commit.
    let start = bookkeeping(|| {
        if job.args.spec.uses_pgbench_tables() {
            Spi::run(ops_jobs::PGBENCH_TABLES_LOCK)?;
            if let Some(other) = Spi::get_one_with_args::<String>(
                &ops_jobs::pgbench_tables_user_query(),
                &[job_id.into()],
            )? {
                return Ok(Start::Busy(other));
            }
        }
        // only a job still queued starts: a cancel() may have committed
        // since the row was read
        let started = Spi::get_one_with_args::<bool>(
            "WITH s AS (
               UPDATE storlab.job_records SET status = 'running', worker_pid = pg_catalog.pg_backend_pid(),
                      started_at = pg_catalog.clock_timestamp(),
                      detail = CASE WHEN $2::text IS NULL THEN detail OPERATOR(pg_catalog.-) 'pgbench_schema'
                                    ELSE coalesce(detail, '{}') OPERATOR(pg_catalog.||)
                                         pg_catalog.jsonb_build_object('pgbench_schema', $2::text) END
                WHERE id = $1 AND status = 'queued'
                RETURNING 1)
             SELECT EXISTS (SELECT FROM s)",
            &[job_id.into(), schema.clone().into()],
        )?;
        Ok(if started == Some(true) {
            Start::Started
        } else {
            Start::Cancelled
        })
    });
    match start {
        Start::Started => {}
        Start::Cancelled => return,
        Start::Busy(other) => {
            return finish(
                job_id,
                "failed",
                Some(format!(
                    "pgbench's tables in this database are in use by {other}"
                )),
            )
        }
    }
    // An ERROR in the job's own work (a privilege the caller lacks, a
    // table dropped under it) ends the job 'failed' with that error's text,
    // rather than ending the worker with the job left 'running'.
    let outcome = PgTryBuilder::new(AssertUnwindSafe(|| dispatch::run(&job)))
        .catch_others(|e| {
            // SAFETY: leaves the failed transaction (a no-op outside one),
            // restoring the user id and GUC nest levels as any abort does.
            unsafe { pg_sys::AbortCurrentTransaction() };
            Err(caught(&e))
        })
        .execute();
    match outcome {
        Ok(()) => finish(job_id, "done", None),
        Err(JobEnd::Stopped(why)) => finish(job_id, "cancelled", Some(why)),
        Err(JobEnd::Failed(why)) => finish(job_id, "failed", Some(why)),
        Err(JobEnd::Error(e)) => finish_with(
            job_id,
            "failed",
            Some(e.message),
            Some(e.state.code().to_string()),
            e.detail.or(e.hint),
        ),
        Err(JobEnd::Raised {
            message,
            sqlstate,
            detail,
        }) => finish_with(job_id, "failed", Some(message), Some(sqlstate), detail),
    }
    dispatch::after_end(&job);
}

fn finish(job_id: i64, status: &str, error: Option<String>) {
    finish_with(job_id, status, error, None, None)
}

/// Ends the job: its status and error, with the error's SQLSTATE and detail
/// for CALL storlab.wait to raise, in the same statement, so that no one
/// sees the job failed before they are there.
fn finish_with(
    job_id: i64,
    status: &str,
    error: Option<String>,
    sqlstate: Option<String>,
    detail: Option<String>,
) {
    // an experiment that stops says where its relations are, as observed
    // now (not as its last layout asked)
    let is_experiment = bookkeeping(|| {
        read::one::<bool>(
            "SELECT EXISTS (SELECT FROM storlab.experiment_records WHERE id = $1)",
            &[job_id.into()],
        )
    }) == Some(true);
    let placement =
        (is_experiment && status != "done").then(|| dispatch::experiment_placement(job_id));
    bookkeeping(|| {
        Spi::run_with_args(
            "UPDATE storlab.job_records
                SET status = $2, error = coalesce($3, error), finished_at = pg_catalog.clock_timestamp(),
                    detail = CASE WHEN $4::text IS NULL THEN detail
                                  ELSE coalesce(detail, '{}') OPERATOR(pg_catalog.||)
                                       pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                                         'error_sqlstate', $4::text, 'error_detail', $5::text)) END
              WHERE id = $1",
            &[
                job_id.into(),
                status.into(),
                error.into(),
                sqlstate.into(),
                detail.into(),
            ],
        )?;
        // a run that failed or was cancelled ended too (an experiment's
        // runs carry its id as job_id)
        Spi::run_with_args(
            "UPDATE storlab.bench_runs SET finished_at = pg_catalog.clock_timestamp()
              WHERE job_id = $1 AND finished_at IS NULL",
            &[job_id.into()],
        )?;
        // an experiment that did not finish says where it stopped, and
        // where its relations are
        Spi::run_with_args(
            "UPDATE storlab.experiment_records
                SET current_action = pg_catalog.format('%s at step %s of %s (%s); pgbench''s relations are placed %s',
                        $2, current_step OPERATOR(pg_catalog.+) 1, steps_total, coalesce(current_action, 'starting'), $3)
              WHERE id = $1 AND $2 OPERATOR(pg_catalog.<>) 'done'",
            &[job_id.into(), status.into(), placement.into()],
        )
    });
}

/// An ERROR caught in the job's work: its message (with its detail, as
/// the job's `error` always read), its SQLSTATE and detail kept apart.
fn caught(e: &pg_sys::panic::CaughtError) -> JobEnd {
    use pg_sys::panic::CaughtError::*;
    let report = match e {
        PostgresError(r) | ErrorReport(r) => r,
        RustPanic { ereport, .. } => ereport,
    };
    let mut message = report.message().to_string();
    if let Some(detail) = report.detail() {
        message.push_str(&format!(": {detail}"));
    }
    JobEnd::Raised {
        message,
        sqlstate: storlab_core::error::unpack_sqlstate(report.sql_error_code() as i32),
        detail: report.detail().map(str::to_string),
    }
}

/// What became of a queued job when its worker came to start it.
enum Start {
    Started,
    /// cancelled before it started
    Cancelled,
    /// another job uses the same pgbench tables
    Busy(String),
}

/// The job's row as stored.
struct Row {
    status: String,
    args: serde_json::Value,
    database: String,
    role: String,
}

/// The job row appears (or, for a job started again, turns 'queued') when
/// the creating transaction commits. The worker asks after that transaction
/// (its xid8, passed by the launcher) while it waits: one that rolled back,
/// or committed without the row (a rolled-back savepoint), ends the worker
/// at once, so that a rolled-back job never holds a worker slot. While the
/// creator is in progress the worker waits, however long it stays open (a
/// job runs after its COMMIT, as any write of a transaction takes effect
/// then), polling more slowly as time goes by; a signal (cancel of the
/// wait, pg_terminate_backend, shutdown) ends the wait. Without a creator
/// to ask, it waits a minute for the row.
fn wait_for_job(job_id: i64, creator: Option<u64>) -> Option<Row> {
    let start = Instant::now();
    loop {
        // the creator's status first, then the row, in a transaction of
        // its own: a creator seen as committed has its row visible to the
        // snapshot that transaction takes (the reads ask for no xid, so
        // they share their transaction's snapshot, taken before the status
        // was read). Committed in the commit log is not enough: a commit is
        // recorded there before it leaves the proc array, and a snapshot
        // taken in between still sees it running; so committed counts only
        // once the status read's own snapshot sees it, and every later
        // snapshot then does
        let creator_status = match creator {
            Some(xid) => bookkeeping(|| {
                read::one::<String>(
                    "SELECT CASE WHEN s OPERATOR(pg_catalog.=) 'committed'
                                  AND NOT pg_catalog.pg_visible_in_snapshot(x, pg_catalog.pg_current_snapshot())
                                 THEN 'in progress' ELSE s END
                       FROM (SELECT $1::text::pg_catalog.xid8 AS x) c,
                            LATERAL (SELECT pg_catalog.pg_xact_status(c.x) AS s) t",
                    &[xid.to_string().into()],
                )
            }),
            None => None,
        };
        let row = bookkeeping(|| read_job(job_id));
        match creator_status.as_deref() {
            // a job started again (experiment_resume) has its row visible
            // all along, as it was before: wait for the UPDATE to commit
            Some("in progress") => {}
            // committed, and visible to the snapshot the row was read in:
            // no row then was written in a savepoint that rolled back, and
            // the worker goes at once (a call that starts jobs in
            // subtransactions it rolls back must not hold worker slots)
            Some("committed") => return row,
            Some("aborted") => return None,
            // no creator to ask (or too old to tell): the row decides
            _ if row.is_some() => return row,
            _ if start.elapsed() > Duration::from_secs(60) => return None,
            _ => {}
        }
        // 50 ms for the first seconds (a job started by an autocommit
        // statement runs at once), then up to a second: a transaction left
        // open for an hour costs the server one short read a second
        let pause = match start.elapsed().as_secs() {
            0..=4 => 50,
            5..=59 => 250,
            _ => 1000,
        };
        if !BackgroundWorker::wait_latch(Some(Duration::from_millis(pause))) {
            return None;
        }
    }
}

fn read_job(job_id: i64) -> Result<Option<Row>, pgrx::spi::Error> {
    Spi::connect(|c| {
        let mut rows = c.select(
            "SELECT status, args, database::text, role::text FROM storlab.job_records WHERE id = $1",
            None,
            &[job_id.into()],
        )?;
        let Some(r) = rows.next() else {
            return Ok(None);
        };
        Ok(Some(Row {
            status: r.get(1)?.unwrap_or_default(),
            args: r.get::<pgrx::JsonB>(2)?.map(|j| j.0).unwrap_or_default(),
            database: r.get(3)?.unwrap_or_default(),
            role: r.get(4)?.unwrap_or_default(),
        }))
    })
}
