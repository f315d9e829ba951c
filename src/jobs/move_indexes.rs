//! The `move_indexes` job: each index of a table rebuilt in another
//! tablespace with REINDEX (TABLESPACE ...) INDEX CONCURRENTLY, so that
//! writes go on during the move, each recorded in storlab.relocations.
//!
//! REINDEX CONCURRENTLY commits in phases. Cut short, it leaves an invalid
//! copy behind (`<index>_ccnew` before the swap of names, `<index>_ccold`
//! after it) that every write to the table keeps up to date until someone
//! drops it. So the job drops the leftovers of its table before it starts
//! and when a rebuild fails; and it stores its plan (the indexes, their
//! tablespaces, its batch) in the job's detail before the first rebuild, so
//! that when a crash restart cuts it short, its worker, started again by
//! the postmaster, drops the leftovers and records each rebuild that had
//! completed (`recover`): a move is then complete and recorded, or absent
//! and unrecorded.

use std::path::Path;

use pgrx::prelude::*;
use pgrx::JsonB;
use serde::{Deserialize, Serialize};

use super::client::{connection, psql_commands, with_env};
use super::job::{as_caller, bookkeeping, store_detail, Job, JobEnd};
use super::observe::pg_stat_statements_schema;
use super::reindex::{cancel_backends, copies_dropped, drop_invalid_leftovers, invalid_leftovers};
use crate::ops::read;
use crate::ops::record;
use crate::ops::relocate::{index_identity, lock_holders};
use crate::ops::server::{hostname, system_identifier};
use crate::sqltypes::Name;
use storlab_core::record::{Record, Relocation};
use storlab_core::request::bench::MoveIndexes;
use storlab_core::sql_text::ident;

/// What the job is about to do, as stored in its detail (key `plan`).
#[derive(Debug, Serialize, Deserialize)]
struct Plan {
    batch: i64,
    indexes: Vec<Planned>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Planned {
    /// schema-qualified and quoted, as REINDEX takes it
    name: String,
    from: String,
    bytes: i64,
    /// the index's oid before the rebuild gives it a new one (history
    /// follows it through `previous_relation`); absent in plans stored by
    /// 0.5.0
    #[serde(default)]
    oid: Option<i64>,
}

const NOTE: &str = "rebuilt concurrently: writes went on, with brief locks at start and end";

pub(super) fn run(job: &Job, r: &MoveIndexes, dir: &Path) -> Result<(), JobEnd> {
    let relation = r.relation as i64;
    let conn = connection(job);
    // an earlier rebuild of this table cut short by a shutdown left its copy
    drop_invalid_leftovers(job, &conn, relation, dir);
    let plan = Plan {
        batch: bookkeeping(|| {
            Spi::get_one::<i64>("SELECT pg_catalog.nextval('storlab.relocation_batches')")
        })
        .unwrap_or(0),
        indexes: indexes_elsewhere(relation, &r.tablespace),
    };
    store_detail(job, serde_json::json!({ "plan": plan }));
    let quoted_ts = ident(&r.tablespace);
    // the REINDEX's own session, found by name when it must be cancelled
    let tag = format!("storlab job {} (online index move)", job.id);
    for index in &plan.indexes {
        let sql = reindex(&quoted_ts, index);
        let wal0 = statement_wal(&sql);
        let out = with_env("PGAPPNAME", &tag, || {
            psql_commands(job, &conn, &["\\timing on", &sql], dir)
        });
        let stdout = match out {
            Ok(stdout) => stdout,
            Err(e) => {
                // psql is gone (stopped, or failed), but its backend may not
                // be: a REINDEX CONCURRENTLY waiting for an old transaction
                // would go on holding SHARE UPDATE EXCLUSIVE, its invalid
                // copy kept up to date by every write. Cancel it by pid,
                // then drop the copy.
                cancel_backends(&tag);
                let dropped = drop_invalid_leftovers(job, &conn, relation, dir);
                let left = invalid_leftovers(relation);
                return Err(match (e, left.is_empty()) {
                    (e, true) => e,
                    (JobEnd::Stopped(why), false) => JobEnd::Stopped(format!(
                        "{why}; the rebuild's session was cancelled, {}, but {} could not be dropped yet: a lock on the table is held by {}; DROP INDEX CONCURRENTLY it once that ends, or move this table's indexes again, which drops it first",
                        copies_dropped(dropped),
                        left.join(", "),
                        as_caller(|| Ok::<_, pgrx::spi::Error>(lock_holders(pg_sys::Oid::from(relation as u32))))
                            .unwrap_or_else(|| "another transaction".into())
                    )),
                    (e, false) => e,
                });
            }
        };
        let wal = statement_wal(&sql).zip(wal0).map(|(b, a)| b - a);
        let note = if wal.is_some() {
            NOTE.to_string()
        } else {
            format!("{NOTE}; its WAL is not known here (pg_stat_statements, which counts a statement's own WAL, is not loaded in this database)")
        };
        record(
            job,
            &plan,
            index,
            &r.tablespace,
            storlab_core::relocate::psql_timing_s(&stdout),
            wal,
            &sql,
            &note,
        );
    }
    Ok(())
}

/// The WAL statements of exactly this text have written so far, as
/// pg_stat_statements counts it (a statement's own WAL, not the server's);
/// None where pg_stat_statements is not loaded in this database.
fn statement_wal(sql: &str) -> Option<i64> {
    let schema = pg_stat_statements_schema()?;
    as_caller(|| {
        read::one::<i64>(
            &format!(
                "SELECT coalesce(pg_catalog.sum(s.wal_bytes), 0)::int8 FROM {schema}.pg_stat_statements s
                  WHERE s.query = $1 AND s.dbid = (SELECT d.oid FROM pg_catalog.pg_database d
                                                    WHERE d.datname = pg_catalog.current_database())"
            ),
            &[sql.into()],
        )
    })
}

/// After a crash restart: drops the invalid copies the interrupted rebuild
/// left, and records the rebuilds that had completed (their index now in
/// the target tablespace) without a row. Returns what it did, for the job's
/// error.
pub(super) fn recover(job: &Job, r: &MoveIndexes, dir: &Path) -> String {
    let relation = r.relation as i64;
    let conn = connection(job);
    let dropped = drop_invalid_leftovers(job, &conn, relation, dir);
    let plan: Option<Plan> = bookkeeping(|| {
        read::one::<pgrx::JsonB>(
            "SELECT (SELECT detail -> 'plan' FROM storlab.job_records WHERE id = $1)",
            &[job.id.into()],
        )
    })
    .and_then(|j| serde_json::from_value(j.0).ok());
    let mut recorded = 0;
    if let Some(plan) = &plan {
        let quoted_ts = ident(&r.tablespace);
        let note = format!(
            "{NOTE}; it completed before a server restart interrupted the job, whose worker recorded it after the restart (duration and WAL unknown)"
        );
        for index in &plan.indexes {
            if is_in(&index.name, &r.tablespace) && !is_recorded(plan.batch, &index.name) {
                record(
                    job,
                    plan,
                    index,
                    &r.tablespace,
                    None,
                    None,
                    &reindex(&quoted_ts, index),
                    &note,
                );
                recorded += 1;
            }
        }
    }
    format!(
        "invalid index copies dropped: {dropped}; completed rebuilds recorded after the restart: {recorded}"
    )
}

/// The statement that moves one index, as run and as recorded.
fn reindex(quoted_ts: &str, index: &Planned) -> String {
    format!(
        "REINDEX (TABLESPACE {quoted_ts}) INDEX CONCURRENTLY {}",
        index.name
    )
}

/// The table's indexes not yet in `to`, with their tablespace and size.
fn indexes_elsewhere(relation: i64, to: &str) -> Vec<Planned> {
    as_caller(|| {
        Spi::connect(|c| {
            c.select(
                "SELECT format('%I.%I', n.nspname, c.relname), coalesce(t.spcname, d.spcname)::text,
                        pg_relation_size(c.oid), c.oid::int8
                   FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                   JOIN pg_namespace n ON n.oid = c.relnamespace
                   LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace
                  CROSS JOIN (SELECT s.spcname FROM pg_database db JOIN pg_tablespace s ON s.oid = db.dattablespace
                               WHERE db.datname = current_database()) d
                  WHERE i.indrelid = $1::oid AND i.indisvalid AND coalesce(t.spcname, d.spcname) <> $2
                    -- REINDEX CONCURRENTLY refuses these (the call said so)
                    AND NOT EXISTS (SELECT FROM pg_constraint x WHERE x.conindid = i.indexrelid AND x.contype = 'x')
                  ORDER BY c.relname",
                None,
                &[relation.into(), Name(to.to_string()).into()],
            )?
            .map(|r| {
                Ok(Planned {
                    name: r.get(1)?.unwrap_or_default(),
                    from: r.get(2)?.unwrap_or_default(),
                    bytes: r.get(3)?.unwrap_or(0),
                    oid: r.get(4)?,
                })
            })
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
    })
}

/// Is the index of this name in tablespace `to` (the database's default
/// tablespace when it names none)?
fn is_in(name: &str, to: &str) -> bool {
    as_caller(|| {
        read::one::<bool>(
            "SELECT (SELECT coalesce(t.spcname, d.spcname) = $2
                       FROM pg_class c LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace
                      CROSS JOIN (SELECT s.spcname FROM pg_database db JOIN pg_tablespace s ON s.oid = db.dattablespace
                                   WHERE db.datname = current_database()) d
                      WHERE c.oid = pg_catalog.to_regclass($1))",
            &[name.into(), Name(to.to_string()).into()],
        )
    })
    .unwrap_or(false)
}

fn is_recorded(batch: i64, name: &str) -> bool {
    bookkeeping(|| {
        read::one::<bool>(
            "SELECT EXISTS (SELECT FROM storlab.relocations WHERE batch_id = $1 AND relation_name = $2)",
            &[batch.into(), name.into()],
        )
    })
    .unwrap_or(false)
}

/// Stores one rebuild in storlab.relocations.
#[allow(clippy::too_many_arguments)]
fn record(
    job: &Job,
    plan: &Plan,
    index: &Planned,
    to: &str,
    duration: Option<f64>,
    wal: Option<i64>,
    sql: &str,
    note: &str,
) {
    // REINDEX CONCURRENTLY builds a new index and gives it the old name:
    // the history must name the index that now exists, or restore_layout
    // would take it for dropped
    let oid = as_caller(|| {
        read::one::<i64>(
            "SELECT pg_catalog.to_regclass($1)::oid::int8",
            &[index.name.clone().into()],
        )
    });
    let Some(oid) = oid else {
        error!(
            "storlab job: index {} is gone after its rebuild: its move cannot be recorded",
            index.name
        )
    };
    let (index_table, index_definition) =
        as_caller(|| Ok::<_, pgrx::spi::Error>(index_identity(pg_sys::Oid::from(oid as u32))));
    let record = Relocation {
        batch_id: Some(plan.batch),
        relation: oid as u32,
        relation_name: index.name.clone(),
        kind: "index".into(),
        from_tablespace: index.from.clone(),
        to_tablespace: to.to_string(),
        bytes: Some(index.bytes),
        duration_s: duration,
        lock_wait_s: None,
        wal_bytes: wal,
        statement: sql.to_string(),
        moved_by: job.role.clone(),
        label: Some("move_indexes_online".into()),
        note: Some(note.to_string()),
        system_identifier: system_identifier(),
        hostname: hostname(),
        previous_relation: index.oid.map(|o| o as u32),
        undoes_batch: None,
        online: true,
        writers_blocked_s: None,
        index_table,
        index_definition,
    };
    bookkeeping(|| {
        Spi::run_with_args(
            &record::insert_sql(&record, &[("moved_at", "pg_catalog.clock_timestamp()")])?,
            &[JsonB(record.to_json()).into()],
        )
    });
}
