//! After a crash restart: what the interrupted run left is removed, and a
//! table swapped before the crash is recorded.

use std::path::Path;
use std::time::Duration;

use pgrx::prelude::*;

use super::leftovers::{drop_leftovers, leftovers, repack_running};
use super::shared::{row, write};
use super::tidy::tidy_later;
use crate::jobs::client::connection;
use crate::jobs::job::{as_caller, bookkeeping, Job};
use crate::jobs::reindex::drop_invalid_leftovers;
use crate::ops::read;
use crate::ops::relocate::{index_identity, where_now};
use storlab_core::record::Relocation;
use storlab_core::repack::{self, Version};
use storlab_core::request::relocate::MoveOnline;

/// After a crash restart: removes what the interrupted pg_repack run left
/// on each table of the job, and records a table the run had swapped into
/// its target before the crash (its row was not written yet). Returns what
/// it did, for the job's error.
pub(in crate::jobs) fn recover(job: &Job, m: &MoveOnline, dir: &Path) -> String {
    let mut tidied = Vec::new();
    let conn = connection(job);
    let mut recorded = 0;
    let version = Version::parse(&m.repack_version);
    for t in &m.tables {
        let oid = pg_sys::Oid::from(t.relation);
        // a REINDEX CONCURRENTLY cut short left an invalid copy
        let copies = drop_invalid_leftovers(job, &conn, t.relation as i64, dir);
        if copies > 0 {
            tidied.push(format!(
                "{copies} invalid index copies of {} dropped",
                t.name
            ));
        }
        let had = leftovers(oid);
        if had.is_empty() && !t.moves() {
            continue;
        }
        // a pg_repack of someone else's has started on it since the restart
        if repack_running(oid).is_some() {
            tidied.push(format!(
                "{}: pg_repack runs on it now, its objects were left alone",
                t.name
            ));
            continue;
        }
        let left = drop_leftovers(
            &conn,
            dir,
            oid,
            Duration::from_millis(m.lock_timeout_ms).max(Duration::from_secs(2)),
        );
        if !had.is_empty() {
            tidied.push(if left.is_empty() {
                format!("pg_repack's objects on {} dropped", t.name)
            } else {
                tidy_later(t);
                format!(
                    "pg_repack's objects on {} could not be dropped yet: {} (the job's worker removes them once the sessions holding a lock on the table let go: storlab.jobs' detail->'tidy')",
                    t.name,
                    left.join(", ")
                )
            });
        }
        let now = as_caller(|| Ok::<_, pgrx::spi::Error>(where_now(oid)));
        let recorded_already = bookkeeping(|| {
            read::one::<bool>(
                "SELECT EXISTS (SELECT FROM storlab.relocations WHERE batch_id = $1 AND relation = $2::oid)",
                &[m.batch.into(), oid.into()],
            )
        })
        .unwrap_or(false);
        if let (Some((ts, bytes)), false, Some(version)) = (now, recorded_already, version) {
            if ts == t.to && t.moves() {
                let run = repack::Run {
                    table: &t.name,
                    tablespace: &t.to,
                    move_indexes: t.repack_moves_indexes(),
                    lock_timeout_ms: m.lock_timeout_ms,
                };
                let mut r = Relocation {
                    relation: t.relation,
                    relation_name: t.name.clone(),
                    kind: "table".into(),
                    from_tablespace: t.from.clone(),
                    to_tablespace: t.to.clone(),
                    bytes: Some(bytes),
                    statement: run.statement(),
                    note: Some(format!("moved online by pg_repack {version}; its swap committed before a server restart interrupted the job, whose worker recorded it after the restart (duration and lock waits unknown)")),
                    ..row(job, m)
                };
                write(&r);
                if run.move_indexes {
                    for i in &t.indexes {
                        if i.from != t.to {
                            r.relation = i.relation;
                            r.relation_name = i.name.clone();
                            r.kind = "index".into();
                            (r.index_table, r.index_definition) = as_caller(|| {
                                Ok::<_, pgrx::spi::Error>(index_identity(pg_sys::Oid::from(
                                    i.relation,
                                )))
                            });
                            r.from_tablespace = i.from.clone();
                            r.bytes = Some(i.bytes);
                            write(&r);
                        }
                    }
                }
                recorded += 1;
            }
        }
    }
    format!(
        "{}; tables swapped before the restart and recorded after it: {recorded}",
        if tidied.is_empty() {
            "no pg_repack objects were left".to_string()
        } else {
            tidied.join("; ")
        }
    )
}
