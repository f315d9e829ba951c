//! The `move_online` job: tables moved to another tablespace while writes
//! go on, each through pg_repack (the tool DBAs trust for this; storlab
//! does not swap files itself), then each index that must end elsewhere
//! than pg_repack left it through REINDEX CONCURRENTLY. One batch of
//! storlab.relocations, each row written once its move is done.
//!
//! pg_repack runs as the job's role, over a client connection, with
//! `--no-kill-backend` (it never cancels other sessions) and the call's
//! lock_timeout as `--wait-timeout`. While it runs the worker samples
//! pg_locks every 20 ms: the longest wait of any other session for a lock
//! on the table or its indexes is the writers' stall, stored with the row;
//! pg_repack's own waits for its exclusive locks are its lock_wait_s. The
//! phase (copy, index build, log replay, swap) is read from pg_repack's
//! `--echo` output and shown in the job's detail.
//!
//! Another session's request queued behind pg_repack's locks (a
//! migration's ALTER TABLE or TRUNCATE) makes every writer queue behind it:
//! once one has waited lock_timeout the job ends pg_repack's sessions, so
//! that it goes through, and fails naming it (55P03).
//!
//! However the run ends (done, a lock given up on, cancel(), the worker
//! killed and the server restarted), what pg_repack left is removed:
//! its trigger on the table, its log table, its copy and its type
//! (`repack.repack_drop`), with every lock wait bounded. The table is then
//! where it was, or moved and recorded. What a session's lock keeps longer
//! is removed by the worker after the job's end, once that session's
//! transaction ends (`tidy_after_end`).
//!
//! The parts: `repack_run` (one table's pg_repack run, observed and
//! recorded), `watch` (its watcher: phase, pg_locks, stop requests),
//! `leftovers` (pg_repack's objects, read and removed), `tidy` (what a
//! session's lock kept, removed after the job's end), `recover` (after a
//! crash restart), `indexes` (REINDEX CONCURRENTLY of an index pg_repack
//! left elsewhere), `parents` (where a partitioned table's future
//! partitions go) and `shared` (what they all use, importing none of
//! them). This file runs the job's steps in order.

mod indexes;
mod leftovers;
mod parents;
mod recover;
mod repack_run;
mod shared;
mod tidy;
mod watch;

use std::path::Path;

use pgrx::prelude::*;

use super::client::connection;
use super::job::{as_caller, bookkeeping, store_detail, Job, JobEnd};
use crate::ops::relocate::where_now;
use indexes::reindex;
use parents::move_parent;
pub(super) use recover::recover;
use repack_run::repack_table;
use shared::note_skipped;
use storlab_core::repack::Version;
use storlab_core::request::relocate::MoveOnline;
pub(super) use tidy::tidy_after_end;

pub(super) fn run(job: &Job, m: &MoveOnline, dir: &Path) -> Result<(), JobEnd> {
    steps(job, m, dir).map_err(|e| with_progress(m, e))
}

/// An error of a job that moved part of its batch says what moved, what
/// did not, and that undo_batch takes back what moved (the job's rows are
/// written as each move is done, so the batch holds exactly what moved).
fn with_progress(m: &MoveOnline, e: JobEnd) -> JobEnd {
    let moved = bookkeeping(|| {
        Spi::connect(|c| {
            c.select(
                "SELECT kind, relation_name, to_tablespace::text FROM storlab.relocations WHERE batch_id = $1 ORDER BY id",
                None,
                &[m.batch.into()],
            )?
            .map(|r| {
                Ok((
                    r.get::<String>(1)?.unwrap_or_default(),
                    r.get::<String>(2)?.unwrap_or_default(),
                    r.get::<String>(3)?.unwrap_or_default(),
                ))
            })
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
    });
    let Some(said) = m.progress(&moved) else {
        return e;
    };
    // in the message: CALL storlab.wait raises the message alone
    match e {
        JobEnd::Error(e) => JobEnd::Error(storlab_core::error::Error {
            message: format!("{}. {said}", e.message),
            ..e
        }),
        JobEnd::Raised {
            message,
            sqlstate,
            detail,
        } => JobEnd::Raised {
            message: format!("{message}. {said}"),
            sqlstate,
            detail,
        },
        JobEnd::Failed(why) => JobEnd::Failed(format!("{why}. {said}")),
        JobEnd::Stopped(why) => JobEnd::Stopped(format!("{why}. {said}")),
    }
}

fn steps(job: &Job, m: &MoveOnline, dir: &Path) -> Result<(), JobEnd> {
    let conn = connection(job);
    // known when some table moves (the call checked pg_repack then); a job
    // that only rebuilds indexes never runs it
    let version = || {
        Version::parse(&m.repack_version).ok_or_else(|| {
            JobEnd::Failed(format!(
                "pg_repack's version is not known: {}",
                m.repack_version
            ))
        })
    };
    store_detail(job, serde_json::json!({ "batch_id": m.batch }));
    for t in &m.tables {
        let oid = pg_sys::Oid::from(t.relation);
        let Some((now, _)) = as_caller(|| Ok::<_, pgrx::spi::Error>(where_now(oid))) else {
            note_skipped(job, t, "it was dropped since the call");
            continue;
        };
        if t.moves() && now == t.to {
            note_skipped(job, t, &format!("it is in {} already", t.to));
        } else if t.moves() {
            repack_table(job, m, t, &conn, dir, version()?)?;
        }
        for index in t.reindexed() {
            reindex(job, m, t, index, &conn, dir)?;
        }
    }
    for p in &m.parents {
        move_parent(job, m, p, &conn, dir)?;
    }
    store_detail(job, serde_json::json!({ "phase": "done" }));
    Ok(())
}
