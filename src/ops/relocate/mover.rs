//! The mover: the plan of a call (`move`, `apply_layout`, an experiment's
//! placement; `ops::relocate::history` hands it its restores), checked, then
//! each relation locked without queueing, moved with ALTER ... SET
//! TABLESPACE and recorded in storlab.relocations, all in the caller's
//! transaction; with `online`, handed to `online` instead.

use std::time::{Duration, Instant};

use pgrx::prelude::*;
use pgrx::JsonB;

use super::catalog::{
    index_identity, lock_holders, rels, tablespace_now, Rel, RelocationRow, Step,
};
use super::checks::{
    check_movable, check_target, refuse_online_alone, refuse_what_cannot_move, volatile_targets,
};
use crate::ops::error::{invalid, raise, spi, Error, OrRaise, Raise, SqlState};
use crate::ops::identity::{as_owner, caller};
use crate::ops::read;
use crate::ops::record;
use crate::ops::server::{hostname, system_identifier};
use crate::sqltypes::Name;
use storlab_core::record::{Record, Relocation};
use storlab_core::relocate::{human_bytes, note, statement, Kind};

/// Relations already where they should be are skipped, not rewritten;
/// a relation reached twice (an index of a table and of its partition tree) once.
pub(super) fn plan(candidates: Vec<(Rel, String)>) -> Vec<Step> {
    let mut seen = std::collections::HashSet::new();
    candidates
        .into_iter()
        .filter(|(rel, to)| rel.tablespace != *to && seen.insert(rel.oid))
        .map(|(rel, to)| Step { rel, to })
        .collect()
}

/// Waits for ACCESS EXCLUSIVE on `rel`, and on its TOAST table and TOAST
/// index, without queueing: it retries a conditional lock every few
/// milliseconds, so other sessions never line up behind a waiting request
/// of ours (a queued ACCESS EXCLUSIVE request blocks every newcomer, readers
/// included). The TOAST relations are locked here, not left to the ALTER:
/// a wait there would fail with PostgreSQL's bare "canceling statement due
/// to lock timeout", naming nothing. Fails with 55P03 after `timeout` (all
/// of them together), naming the relation and what holds it.
fn lock(rel: &Rel, timeout: Duration) -> Duration {
    let start = Instant::now();
    let what = format!("{} {}", rel.kind.as_str(), rel.qualified);
    lock_oid(rel.oid, &what, start, timeout);
    for (oid, part) in toast_of(rel.oid) {
        lock_oid(oid, &format!("the TOAST {part} of {what}"), start, timeout);
    }
    start.elapsed()
}

/// The TOAST table and TOAST index of a relation, if it has them.
fn toast_of(oid: pg_sys::Oid) -> Vec<(pg_sys::Oid, &'static str)> {
    Spi::connect(|c| {
        c.select(
            "SELECT t.oid, 'table' FROM pg_catalog.pg_class c JOIN pg_catalog.pg_class t ON t.oid = c.reltoastrelid
              WHERE c.oid = $1
             UNION ALL
             SELECT i.indexrelid, 'index' FROM pg_catalog.pg_class c JOIN pg_catalog.pg_index i ON i.indrelid = c.reltoastrelid
              WHERE c.oid = $1",
            None,
            &[oid.into()],
        )?
        .map(|r| {
            let part = if r.get::<String>(2)?.as_deref() == Some("index") { "index" } else { "table" };
            Ok((r.get::<pg_sys::Oid>(1)?.expect("oid"), part))
        })
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the catalog"))
    .or_raise()
}

/// ACCESS EXCLUSIVE on one relation, retried until `timeout` after `start`
/// (the wait for all of a relation's locks together).
fn lock_oid(oid: pg_sys::Oid, what: &str, start: Instant, timeout: Duration) {
    loop {
        // SAFETY: a plain lock-manager call from the backend's thread.
        if unsafe {
            pg_sys::ConditionalLockRelationOid(oid, pg_sys::AccessExclusiveLock as pg_sys::LOCKMODE)
        } {
            return;
        }
        if start.elapsed() >= timeout {
            let holders = lock_holders(oid)
                .unwrap_or_else(|| "no session any more (it let go as storlab gave up)".into());
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
                format!(
                    "could not lock {what} within lock_timeout ({} ms): another session is using it",
                    timeout.as_millis()
                ),
                format!("Held by: {holders}. Nothing was moved.")
            );
        }
        pg_sys::check_for_interrupts!();
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Moves (or, in a dry run, describes) every step; one batch, one transaction.
///
/// `job` is the storlab job that moves them itself (an experiment placing
/// its cells), or None for a call: relations a running job uses are
/// refused whole (55006) before anything moves (ops::jobs).
fn execute(
    steps: Vec<Step>,
    lock_timeout: Duration,
    dry_run: bool,
    label: Option<&str>,
    job: Option<i64>,
    undoes: Option<i64>,
) -> Vec<RelocationRow> {
    let (folders, space) = refuse_what_cannot_move(&steps, lock_timeout, dry_run, job);
    let call_bytes: i64 = steps
        .iter()
        .filter(|s| s.rel.kind.has_storage())
        .map(|s| s.rel.bytes)
        .sum();
    let volatile = volatile_targets(&folders);
    // logged relations moved onto volatile storage, by target: said once the
    // moves are done (a move that fails its lock moved nothing)
    let mut onto_volatile: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let batch: Option<i64> = if dry_run || steps.is_empty() {
        None
    } else {
        as_owner(|| {
            Spi::connect_mut(|c| {
                c.update(
                    "SELECT pg_catalog.nextval('storlab.relocation_batches')",
                    None,
                    &[],
                )?
                .first()
                .get_one()
            })
            .map_err(spi("starting a batch"))
            .or_raise()
        })
    };
    // Each ALTER's own further locks (an index's table) get what is left of
    // the limit, for this call only; the caller's setting comes back after.
    let callers_lock_timeout = if dry_run {
        None
    } else {
        read::one::<String>("SELECT pg_catalog.current_setting('lock_timeout')", &[])
            .unwrap_or(None)
    };
    let moved_by = caller();
    let mut rows = Vec::with_capacity(steps.len());
    for (s, after) in steps.into_iter().zip(space) {
        // a dry run describes the plan as read; a move reads the relation
        // again once it is locked (the plan was read without a lock), so
        // that history records what is really done
        let (rel, waited) = if dry_run {
            (s.rel, None)
        } else {
            let waited = lock(&s.rel, lock_timeout);
            let (Some(now), Some(mut rel)) = (
                tablespace_now(s.rel.oid),
                rels("WHERE c.oid = $1", vec![s.rel.oid.into()]).pop(),
            ) else {
                notice!(
                    "storlab: {} was dropped while storlab waited for it; nothing to move",
                    s.rel.qualified
                );
                continue;
            };
            rel.tablespace = now;
            if rel.tablespace == s.to {
                notice!("storlab: {} is already in {} (moved by another session meanwhile); nothing to move", rel.qualified, s.to);
                continue;
            }
            (rel, Some(waited))
        };
        let sql = statement(
            rel.kind,
            &rel.qualified,
            &storlab_core::sql_text::ident(&s.to),
        )
        .expect("plans hold movable kinds only");
        let (duration, lock_wait, wal) = match waited {
            None => (None, None, None),
            Some(waited) => {
                // lock_timeout bounds the whole wait, the ALTER's included
                let left = lock_timeout
                    .saturating_sub(waited)
                    .max(Duration::from_millis(1));
                set_lock_timeout(&format!("{}ms", left.as_millis().max(1)));
                // the WAL this backend wrote for the ALTER (its own counter,
                // as EXPLAIN (WAL) reads it), not the server's insert
                // position, which counts every other session's WAL too
                // SAFETY: a plain read of this backend's own counter.
                let wal0 = unsafe { pg_sys::pgWalUsage.wal_bytes };
                let t0 = Instant::now();
                Spi::run(&sql).map_err(spi(&sql)).or_raise();
                let wal1 = unsafe { pg_sys::pgWalUsage.wal_bytes };
                (
                    Some(t0.elapsed().as_secs_f64()),
                    Some(waited.as_secs_f64()),
                    Some((wal1 - wal0) as i64),
                )
            }
        };
        let mut note = if rel.files_missing {
            // nothing to say of a copy whose size is unknown: the move would fail
            format!(
                "its files cannot be found: the size to copy is unknown, and ALTER ... SET TABLESPACE would fail (a tmpfs tablespace after a reboot?); the call copies {} besides",
                human_bytes(call_bytes)
            )
        } else {
            note(
                rel.kind,
                &rel.qualified,
                rel.table.as_deref(),
                rel.bytes,
                call_bytes,
            )
        };
        if let Some(fs) = volatile
            .get(&s.to)
            .filter(|_| rel.logged && rel.kind.has_storage())
        {
            note.push_str(&format!(
                "; {} is volatile storage ({fs}): a reboot loses this logged relation's files",
                s.to
            ));
            if !dry_run {
                onto_volatile
                    .entry(s.to.clone())
                    .or_default()
                    .push(rel.qualified.clone());
            }
        }
        if let (true, false, Some((_, a))) = (dry_run, rel.files_missing, &after) {
            // the plan says what the target has left once the call copied
            note.push_str(&format!(
                "; {} has {} free now, {} after this call{}",
                s.to,
                human_bytes(a.free as i64),
                human_bytes(a.left()),
                if a.fits() {
                    String::new()
                } else {
                    format!(
                        ": does not fit (storlab.min_free_bytes keeps {} free)",
                        human_bytes(a.reserve as i64)
                    )
                }
            ));
        }
        if rel.files_missing && dry_run {
            warning!(
                "storlab: the files of {} cannot be found: bytes to copy unknown (NULL), and the move itself would fail",
                rel.qualified
            );
        }
        let (index_table, index_definition) =
            if matches!(rel.kind, Kind::Index | Kind::PartitionedIndex) {
                index_identity(rel.oid)
            } else {
                (None, None)
            };
        let record = Relocation {
            batch_id: batch,
            relation: rel.oid.to_u32(),
            relation_name: rel.qualified.clone(),
            kind: rel.kind.as_str().to_string(),
            from_tablespace: rel.tablespace.clone(),
            to_tablespace: s.to.clone(),
            bytes: (!rel.files_missing).then_some(rel.bytes),
            duration_s: duration,
            lock_wait_s: lock_wait,
            wal_bytes: wal,
            statement: sql,
            moved_by: moved_by.clone(),
            label: label.map(str::to_owned),
            note: Some(note),
            system_identifier: system_identifier(),
            hostname: hostname(),
            previous_relation: None,
            undoes_batch: undoes,
            online: false,
            writers_blocked_s: None,
            index_table,
            index_definition,
        };
        let row = as_owner(|| {
            let query = if dry_run {
                // The plan: the same row, not stored (no id or time).
                Ok(Relocation::row_sql())
            } else {
                record::insert_sql(&record, &[("moved_at", "pg_catalog.clock_timestamp()")])
            };
            query
                .and_then(|query| {
                    Spi::connect_mut(|c| {
                        c.update(query.as_str(), None, &[JsonB(record.to_json()).into()])?
                            .first()
                            .get_one::<RelocationRow>()
                    })
                })
                .map_err(spi("recording a move"))
                .or_raise()
                .expect("one row")
        });
        rows.push(row);
    }
    if let Some(old) = callers_lock_timeout {
        set_lock_timeout(&old);
    }
    for (ts, moved) in &onto_volatile {
        warning!(
            "storlab: durable data moved onto volatile storage: {ts} is on {}, which a reboot empties; {} logged relation(s) went there ({}): after a reboot their files are gone and the database with them",
            volatile[ts],
            moved.len(),
            moved.join(", ")
        );
    }
    rows
}

fn set_lock_timeout(value: &str) {
    read::one::<String>(
        "SELECT pg_catalog.set_config('lock_timeout', $1, true)",
        &[value.into()],
    )
    .map_err(spi("setting lock_timeout"))
    .or_raise();
}

/// Every relation of a move request, with where it should go.
fn move_candidates(root: pg_sys::Oid, to: &str, with_indexes: bool) -> Vec<(Rel, String)> {
    let root_rel = rels("WHERE c.oid = $1", vec![root.into()]);
    let Some(root_rel) = root_rel.into_iter().next() else {
        return vec![];
    };
    // the relation itself, or for partitioned ones every member of the tree
    // (walked through pg_inherits: pg_partition_tree would lock every member)
    let mut members = match root_rel.kind {
        Kind::PartitionedTable | Kind::PartitionedIndex => {
            say_foreign_partitions(root);
            rels(
                &format!(
                    "JOIN ({PARTITION_TREE}) p ON p.relid = c.oid ORDER BY p.level, c.relname"
                ),
                vec![root.into()],
            )
        }
        _ => vec![root_rel],
    };
    if with_indexes {
        let tables: Vec<pg_sys::Oid> = members
            .iter()
            .filter(|r| {
                matches!(
                    r.kind,
                    Kind::Table | Kind::MaterializedView | Kind::PartitionedTable
                )
            })
            .map(|r| r.oid)
            .collect();
        members.extend(rels(
            "JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid WHERE i.indrelid = ANY($1) ORDER BY c.relname",
            vec![tables.into()],
        ));
    }
    members.into_iter().map(|r| (r, to.to_string())).collect()
}

/// Every member of the partition tree rooted at $1, with its depth; no locks.
const PARTITION_TREE: &str = "
    WITH RECURSIVE tree (relid, level) AS (
        SELECT $1::oid, 0
        UNION ALL
        SELECT i.inhrelid, t.level + 1 FROM pg_catalog.pg_inherits i JOIN tree t ON i.inhparent = t.relid)
    SELECT relid, level FROM tree";

/// A foreign table in a partition tree has no storage in this server: it is
/// left where it is, and the caller is told so.
fn say_foreign_partitions(root: pg_sys::Oid) {
    let foreign: Vec<String> = Spi::connect(|c| {
        c.select(
            &format!(
                "SELECT format('%I.%I', n.nspname, c.relname) FROM ({PARTITION_TREE}) p
                   JOIN pg_catalog.pg_class c ON c.oid = p.relid
                   JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                  WHERE c.relkind = 'f' ORDER BY 1"
            ),
            None,
            &[root.into()],
        )?
        .map(|r| Ok(r.get::<String>(1)?.unwrap_or_default()))
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the partition tree"))
    .or_raise();
    for f in foreign {
        notice!("storlab: {f} is a foreign table: it has no storage in this server and stays where it is");
    }
}

/// Moves a table (its TOAST goes along) and, with `with_indexes`, its indexes;
/// an index; a materialized view and its indexes; or a partitioned table's
/// every partition (and their indexes) and its default for future partitions.
pub fn move_relation(
    relation: pg_sys::Oid,
    tablespace: &str,
    with_indexes: bool,
    timeout: Duration,
    dry_run: bool,
    online: bool,
) -> Vec<RelocationRow> {
    check_movable(relation).or_raise();
    let to = check_target(tablespace).or_raise();
    if online {
        refuse_online_alone(relation);
    }
    let steps = plan(move_candidates(relation, &to, with_indexes));
    run_steps(steps, timeout, dry_run, None, None, online)
}

/// A plan moved now in this transaction, or online by a job.
pub(super) fn run_steps(
    steps: Vec<Step>,
    timeout: Duration,
    dry_run: bool,
    label: Option<&str>,
    undoes: Option<i64>,
    online: bool,
) -> Vec<RelocationRow> {
    if online {
        super::online::start(steps, timeout, dry_run, label, undoes)
    } else {
        execute(steps, timeout, dry_run, label, None, undoes)
    }
}

/// "Data here, indexes there" in one call: every table, partitioned table and
/// materialized view of a schema to `tables_tablespace`, every index to
/// `indexes_tablespace`; NULL leaves that part where it is.
pub fn apply_layout(
    tables_tablespace: Option<Name>,
    indexes_tablespace: Option<Name>,
    schema: Name,
    timeout: Duration,
    dry_run: bool,
    online: bool,
) -> Vec<RelocationRow> {
    if tables_tablespace.is_none() && indexes_tablespace.is_none() {
        raise(invalid(
            "nothing to do: give tables_tablespace, indexes_tablespace or both",
        ));
    }
    let schema_exists = read::one::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = $1)",
        &[schema.clone().into()],
    );
    if schema_exists != Ok(Some(true)) {
        Error::new(
            SqlState::InvalidSchemaName,
            format!("schema \"{schema}\" does not exist"),
        )
        .raise();
    }
    if matches!(schema.as_str(), "pg_catalog" | "information_schema")
        || schema.as_str().starts_with("pg_toast")
    {
        invalid(format!(
            "{schema} holds system catalogs: storlab moves user relations only"
        ))
        .raise();
    }
    let candidates = schema_candidates(
        tables_tablespace.as_ref().map(Name::as_str),
        indexes_tablespace.as_ref().map(Name::as_str),
        &schema,
        "",
    );
    run_steps(plan(candidates), timeout, dry_run, None, None, online)
}

/// The tables (with partitioned tables and materialized views) and the
/// indexes of one schema, each paired with the tablespace it should move to;
/// `filter` narrows the relations by a further condition on `c`.
fn schema_candidates(
    tables: Option<&str>,
    indexes: Option<&str>,
    schema: &Name,
    filter: &str,
) -> Vec<(Rel, String)> {
    let mut candidates = Vec::new();
    for (ts, kinds) in [(tables, "'r', 'm', 'p'"), (indexes, "'i', 'I'")] {
        let Some(ts) = ts else { continue };
        let to = check_target(ts).or_raise();
        let found = rels(
            &format!(
                "WHERE n.nspname = $1 AND c.relkind IN ({kinds}) AND c.relpersistence <> 't' {filter}
                 ORDER BY c.relkind, c.relname"
            ),
            vec![schema.clone().into()],
        );
        candidates.extend(found.into_iter().map(|r| (r, to.clone())));
    }
    candidates
}

/// pgbench's relations (its tables, storlab's append table, their indexes)
/// in `schema`, moved to an experiment's layout: one batch, one
/// transaction, recorded under `label`. Other relations of the schema stay
/// where they are. An error (a lock timeout) leaves every relation where it
/// was, and no history row.
pub fn apply_pgbench_placement(
    tables: Option<&str>,
    indexes: Option<&str>,
    schema: &str,
    timeout: Duration,
    label: &str,
    job: i64,
) -> Vec<RelocationRow> {
    // an index is pgbench's when its table is
    let filter = "AND coalesce((SELECT tc.relname FROM pg_catalog.pg_index ix
                                  JOIN pg_catalog.pg_class tc ON tc.oid = ix.indrelid
                                 WHERE ix.indexrelid = c.oid), c.relname)
                      OPERATOR(pg_catalog.~) '^(pgbench_(accounts|branches|tellers|history)|storlab_bench_append)$'";
    let candidates = schema_candidates(tables, indexes, &Name(schema.to_string()), filter);
    execute(
        plan(candidates),
        timeout,
        false,
        Some(label),
        Some(job),
        None,
    )
}
