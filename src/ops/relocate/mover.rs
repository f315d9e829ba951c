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
use storlab_core::relocate::{batch, statement, Kind};

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
    let what = batch::lock_target(rel.kind, &rel.qualified);
    lock_oid(rel.oid, &what, start, timeout);
    for (oid, part) in toast_of(rel.oid) {
        lock_oid(oid, &batch::toast_target(part, &what), start, timeout);
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
            let e = batch::lock_refused(what, timeout, lock_holders(oid));
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
                e.message,
                e.detail.unwrap_or_default()
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
    let call_bytes = batch::call_bytes(steps.iter().map(|s| (s.rel.kind, s.rel.bytes)));
    let volatile = volatile_targets(&folders);
    // logged relations moved onto volatile storage, by target: said once the
    // moves are done (a move that fails its lock moved nothing)
    let mut onto_volatile: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let batch_id = batch::takes_batch(dry_run, steps.len())
        .then(next_batch)
        .flatten();
    // Each ALTER's own further locks (an index's table) get what is left of
    // the limit, for this call only; the caller's setting comes back after.
    let callers_lock_timeout = if dry_run {
        None
    } else {
        read::one::<String>("SELECT pg_catalog.current_setting('lock_timeout')", &[])
            .unwrap_or(None)
    };
    let shared = Shared {
        batch_id,
        label,
        undoes,
        moved_by: caller(),
    };
    let mut rows = Vec::with_capacity(steps.len());
    for (s, after) in steps.into_iter().zip(space) {
        // a dry run describes the plan as read; a move reads the relation
        // again once it is locked (the plan was read without a lock), so
        // that history records what is really done
        let (rel, waited) = if dry_run {
            (s.rel, None)
        } else {
            match relock(&s, lock_timeout) {
                Some((rel, waited)) => (rel, Some(waited)),
                None => continue,
            }
        };
        let sql = statement(
            rel.kind,
            &rel.qualified,
            &storlab_core::sql_text::ident(&s.to),
        )
        .expect("plans hold movable kinds only");
        let timing = match waited {
            None => (None, None, None),
            Some(waited) => alter(&sql, lock_timeout, waited),
        };
        let said = batch::step_note(
            &facts(&rel),
            &s.to,
            call_bytes,
            volatile.get(&s.to).map(String::as_str),
            dry_run,
            after.as_ref().map(|(_, a)| a),
        );
        if said.onto_volatile {
            onto_volatile
                .entry(s.to.clone())
                .or_default()
                .push(rel.qualified.clone());
        }
        if let Some(missing) = &said.missing {
            warning!("{missing}");
        }
        let record = relocation(&rel, &s.to, sql, timing, said.note, &shared);
        rows.push(store(&record, dry_run));
    }
    if let Some(old) = callers_lock_timeout {
        set_lock_timeout(&old);
    }
    for (ts, moved) in &onto_volatile {
        warning!("{}", batch::volatile_warning(ts, &volatile[ts], moved));
    }
    rows
}

/// What every row of a call shares.
struct Shared<'a> {
    batch_id: Option<i64>,
    label: Option<&'a str>,
    undoes: Option<i64>,
    moved_by: String,
}

/// A step's relation as the core's decisions read it.
fn facts(rel: &Rel) -> batch::Facts<'_> {
    batch::Facts {
        kind: rel.kind,
        qualified: &rel.qualified,
        table: rel.table.as_deref(),
        bytes: rel.bytes,
        logged: rel.logged,
        files_missing: rel.files_missing,
    }
}

/// The row of a step to `to`: its statement, its duration, lock wait and
/// WAL (None in a dry run) and its note.
fn relocation(
    rel: &Rel,
    to: &str,
    sql: String,
    (duration, lock_wait, wal): (Option<f64>, Option<f64>, Option<i64>),
    note: String,
    shared: &Shared,
) -> Relocation {
    let (index_table, index_definition) =
        if matches!(rel.kind, Kind::Index | Kind::PartitionedIndex) {
            index_identity(rel.oid)
        } else {
            (None, None)
        };
    Relocation {
        batch_id: shared.batch_id,
        relation: rel.oid.to_u32(),
        relation_name: rel.qualified.clone(),
        kind: rel.kind.as_str().to_string(),
        from_tablespace: rel.tablespace.clone(),
        to_tablespace: to.to_string(),
        bytes: (!rel.files_missing).then_some(rel.bytes),
        duration_s: duration,
        lock_wait_s: lock_wait,
        wal_bytes: wal,
        statement: sql,
        moved_by: shared.moved_by.clone(),
        label: shared.label.map(str::to_owned),
        note: Some(note),
        system_identifier: system_identifier(),
        hostname: hostname(),
        previous_relation: None,
        undoes_batch: shared.undoes,
        online: false,
        writers_blocked_s: None,
        index_table,
        index_definition,
    }
}

/// A new batch id for the call's rows.
fn next_batch() -> Option<i64> {
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
}

/// A step's relation locked and read again (the plan was read without a
/// lock), with the time its locks took; None, said in a NOTICE, when there
/// is nothing to move any more.
fn relock(s: &Step, lock_timeout: Duration) -> Option<(Rel, Duration)> {
    let waited = lock(&s.rel, lock_timeout);
    let now = tablespace_now(s.rel.oid)
        .zip(rels("WHERE c.oid = $1", vec![s.rel.oid.into()]).pop())
        .map(|(now, mut rel)| {
            rel.tablespace = now;
            rel
        });
    match batch::relocked(
        &s.rel.qualified,
        now.as_ref()
            .map(|r| (r.qualified.as_str(), r.tablespace.as_str())),
        &s.to,
    ) {
        batch::Relocked::Move => now.map(|rel| (rel, waited)),
        batch::Relocked::Skip(why) => {
            notice!("{why}");
            None
        }
    }
}

/// Runs a step's ALTER under what is left of lock_timeout after `waited`:
/// its duration, the lock wait and the WAL it wrote.
fn alter(
    sql: &str,
    lock_timeout: Duration,
    waited: Duration,
) -> (Option<f64>, Option<f64>, Option<i64>) {
    // lock_timeout bounds the whole wait, the ALTER's included
    set_lock_timeout(&batch::lock_timeout_left(lock_timeout, waited));
    // the WAL this backend wrote for the ALTER (its own counter,
    // as EXPLAIN (WAL) reads it), not the server's insert
    // position, which counts every other session's WAL too
    // SAFETY: a plain read of this backend's own counter.
    let wal0 = unsafe { pg_sys::pgWalUsage.wal_bytes };
    let t0 = Instant::now();
    Spi::run(sql).map_err(spi(sql)).or_raise();
    let wal1 = unsafe { pg_sys::pgWalUsage.wal_bytes };
    (
        Some(t0.elapsed().as_secs_f64()),
        Some(waited.as_secs_f64()),
        Some((wal1 - wal0) as i64),
    )
}

/// A step's row: stored as the owner, or in a dry run only shaped as
/// the row (no id or time).
fn store(record: &Relocation, dry_run: bool) -> RelocationRow {
    as_owner(|| {
        let query = if dry_run {
            // The plan: the same row, not stored (no id or time).
            Ok(Relocation::row_sql())
        } else {
            record::insert_sql(record, &[("moved_at", "pg_catalog.clock_timestamp()")])
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
    })
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
