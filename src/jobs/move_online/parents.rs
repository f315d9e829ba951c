//! A partitioned table or index: where its future partitions go, changed
//! under brief attempts at its exclusive lock.

use std::path::Path;
use std::time::{Duration, Instant};

use pgrx::prelude::*;

use super::shared::{row, write};
use crate::jobs::client::{psql_commands, with_env};
use crate::jobs::job::{as_caller, Job, JobEnd};
use crate::ops::relocate::{lock_holders, where_now};
use storlab_core::error::SqlState;
use storlab_core::pgbench::Connection;
use storlab_core::record::Relocation;
use storlab_core::request::relocate::{MoveOnline, OnlineParent};
use storlab_core::sql_text::ident;

/// Runs a statement that takes ACCESS EXCLUSIVE on a table over a client
/// connection as the job's role, its lock waited for at most 100 ms. Did
/// it succeed?
fn brief_lock_statement(job: &Job, conn: &Connection, dir: &Path, sql: &str) -> bool {
    with_env("PGOPTIONS", "-c lock_timeout=100ms", || {
        psql_commands(job, conn, &[sql], dir).is_ok()
    })
}

/// A partitioned table or index: where its future partitions go, a change
/// of the catalog under ACCESS EXCLUSIVE on it. Each attempt waits at most
/// 100 ms for that lock (a queued request blocks its writers), retried
/// until the call's lock_timeout; then 55P03, the partitions moved and
/// recorded, the default unchanged.
pub(super) fn move_parent(
    job: &Job,
    m: &MoveOnline,
    p: &OnlineParent,
    conn: &Connection,
    dir: &Path,
) -> Result<(), JobEnd> {
    let oid = pg_sys::Oid::from(p.relation);
    let Some((from, _)) = as_caller(|| Ok::<_, pgrx::spi::Error>(where_now(oid))) else {
        return Ok(());
    };
    if from == p.to {
        return Ok(());
    }
    let keyword = if p.kind == "partitioned index" {
        "INDEX"
    } else {
        "TABLE"
    };
    let sql = format!("ALTER {keyword} {} SET TABLESPACE {}", p.name, ident(&p.to));
    let start = Instant::now();
    let limit = Duration::from_millis(m.lock_timeout_ms);
    loop {
        if brief_lock_statement(job, conn, dir, &sql) {
            break;
        }
        if start.elapsed() >= limit {
            return Err(JobEnd::error(SqlState::LockNotAvailable, format!(
                    "could not lock {} {} within lock_timeout ({} ms): its partitions moved, where its new partitions go did not change",
                    p.kind, p.name, m.lock_timeout_ms
                ), as_caller(|| Ok::<_, pgrx::spi::Error>(lock_holders(oid)))
                    .map(|h| format!("Held by: {h}."))));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    write(&Relocation {
        relation: p.relation,
        relation_name: p.name.clone(),
        kind: p.kind.clone(),
        from_tablespace: from,
        to_tablespace: p.to.clone(),
        bytes: Some(0),
        lock_wait_s: Some(start.elapsed().as_secs_f64()),
        statement: sql,
        note: Some("a change of the catalog only: where new partitions go (its brief exclusive lock tried 100 ms at a time)".into()),
        // ALTER ... SET TABLESPACE under a brief exclusive lock, not a
        // rebuild while writes go on
        online: false,
        ..row(job, m)
    });
    Ok(())
}
