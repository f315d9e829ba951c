//! An index that must end elsewhere than pg_repack left it: REINDEX
//! (TABLESPACE ...) INDEX CONCURRENTLY, the sessions it waits for named
//! when it gives up.

use std::path::Path;
use std::time::Instant;

use pgrx::prelude::*;

use super::shared::{describe_session, note_skipped, row, show_phase, write, QUIET};
use crate::jobs::client::{psql_commands_watched, with_env};
use crate::jobs::job::{as_caller, Job, JobEnd};
use crate::jobs::reindex::{cancel_backends, drop_invalid_leftovers};
use crate::ops::read;
use crate::ops::relocate::{index_identity, where_now};
use storlab_core::error::SqlState;
use storlab_core::pgbench::Connection;
use storlab_core::record::Relocation;
use storlab_core::relocate::psql_timing_s;
use storlab_core::request::relocate::{MoveOnline, OnlineIndex, OnlineTable};
use storlab_core::sql_text::ident;

/// One index into its target with REINDEX (TABLESPACE ...) INDEX
/// CONCURRENTLY, after pg_repack left it where it was (its target is not
/// the table's): recorded like move_indexes_online's rebuilds.
pub(super) fn reindex(
    job: &Job,
    m: &MoveOnline,
    t: &OnlineTable,
    index: &OnlineIndex,
    conn: &Connection,
    dir: &Path,
) -> Result<(), JobEnd> {
    let oid = pg_sys::Oid::from(index.relation);
    let Some((from, bytes)) = as_caller(|| Ok::<_, pgrx::spi::Error>(where_now(oid))) else {
        note_skipped(
            job,
            t,
            &format!("its index {} was dropped since the call", index.name),
        );
        return Ok(());
    };
    if from == index.to {
        return Ok(());
    }
    show_phase(
        job,
        t,
        &format!("REINDEX CONCURRENTLY of {} into {}", index.name, index.to),
    );
    let sql = format!(
        "REINDEX (TABLESPACE {}) INDEX CONCURRENTLY {}",
        ident(&index.to),
        index.name
    );
    let tag = format!("storlab job {} (online move)", job.id);
    // REINDEX CONCURRENTLY waits for the transactions older than each of
    // its steps, of any table, and fails with PostgreSQL's bare "lock
    // timeout" when one outlives lock_timeout: the sessions it waits for
    // are read while it waits, to name them then
    let mut waited_for: Option<String> = None;
    let mut last_look: Option<Instant> = None;
    let mut watch = || {
        if last_look.is_some_and(|at| at.elapsed() < QUIET) {
            return;
        }
        last_look = Some(Instant::now());
        if let Some(who) = reindex_waits_for(&tag) {
            waited_for = Some(who);
        }
    };
    let out = with_env("PGAPPNAME", &tag, || {
        with_env(
            "PGOPTIONS",
            &format!("-c lock_timeout={}ms", m.lock_timeout_ms),
            || psql_commands_watched(job, conn, &["\\timing on", &sql], dir, &mut watch),
        )
    });
    let stdout = match out {
        Ok(stdout) => stdout,
        Err(e) => {
            cancel_backends(&tag);
            drop_invalid_leftovers(job, conn, t.relation as i64, dir);
            return Err(match e {
                JobEnd::Failed(said) if said.contains("lock timeout") => JobEnd::error(SqlState::LockNotAvailable, format!(
                        "could not rebuild index {} into {} within lock_timeout ({} ms): REINDEX CONCURRENTLY waits for every transaction older than its steps, of any table, and {} outlived lock_timeout",
                        index.name,
                        index.to,
                        m.lock_timeout_ms,
                        waited_for.as_deref().unwrap_or("a transaction")
                    ), Some(format!(
                        "The index is where it was, in {from} (its unfinished copy dropped). Move it again once that transaction is done, or with a longer lock_timeout."
                    ))),
                e => e,
            });
        }
    };
    // REINDEX CONCURRENTLY gives the index a new oid under the old name
    let new_oid = as_caller(|| {
        read::one::<i64>(
            "SELECT pg_catalog.to_regclass($1)::oid::int8",
            &[index.name.clone().into()],
        )
    })
    .unwrap_or(index.relation as i64);
    let (index_table, index_definition) =
        as_caller(|| Ok::<_, pgrx::spi::Error>(index_identity(pg_sys::Oid::from(new_oid as u32))));
    write(&Relocation {
        relation: new_oid as u32,
        relation_name: index.name.clone(),
        kind: "index".into(),
        index_table,
        index_definition,
        from_tablespace: from,
        to_tablespace: index.to.clone(),
        bytes: Some(bytes),
        duration_s: psql_timing_s(&stdout),
        statement: sql,
        note: Some(
            "rebuilt concurrently: writes went on, with brief locks at start and end".into(),
        ),
        previous_relation: Some(index.relation),
        ..row(job, m)
    });
    Ok(())
}

/// The sessions the job's REINDEX CONCURRENTLY (its backend found by
/// `tag`, its application_name) waits for now, as the job's role sees them;
/// None while it waits for no lock. pg_blocking_pids takes the lock
/// manager's partition locks: asked only while the REINDEX waits on one.
fn reindex_waits_for(tag: &str) -> Option<String> {
    let pids = as_caller(|| {
        read::one::<Vec<i32>>(
            "SELECT ARRAY(SELECT DISTINCT b FROM pg_catalog.pg_stat_activity r,
                                 pg_catalog.unnest(CASE WHEN r.wait_event_type = 'Lock'
                                                        THEN pg_catalog.pg_blocking_pids(r.pid) END) b
                           WHERE r.application_name = $1 AND r.pid <> pg_catalog.pg_backend_pid()
                           ORDER BY b)",
            &[tag.into()],
        )
    })
    .unwrap_or_default();
    if pids.is_empty() {
        return None;
    }
    Some(
        pids.iter()
            .map(|&p| {
                if p == 0 {
                    "a prepared transaction (pg_prepared_xacts)".to_string()
                } else {
                    describe_session(p)
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
    )
}
