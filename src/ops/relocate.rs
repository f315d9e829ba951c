//! Relocation: where relations live (`layout`), and moving them (`move`,
//! `apply_layout`, `restore_layout`), run as the caller: storlab moves only
//! what the caller could move by hand. Only the history rows are written as
//! the extension's owner.
//!
//! A call is one transaction: every relation is locked, moved and recorded in
//! storlab.relocations inside the caller's transaction, so an error or a
//! cancel leaves every relation where it was and no row behind.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use pgrx::datum::TimestampWithTimeZone;
use pgrx::heap_tuple::PgHeapTuple;
use pgrx::prelude::*;
use pgrx::AllocatedByRust;
use pgrx::JsonB;

use super::error::{invalid, raise, spi, Error, OrRaise, Raise, SqlState};
use super::identity::{as_owner, caller};
use super::jobs::pgbench_relations_free;
use super::read;
use super::record;
use super::server::{data_dir, hostname, system_identifier, this_server};
use super::settings::min_free_bytes;
use super::targets::resolve;
use crate::sqltypes::{Name, RegClass};
use storlab_core::env::{allocation, space};
use storlab_core::record::{Record, Relocation};
use storlab_core::relocate::{human_bytes, note, space_after, statement, Kind, SpaceAfter};

/// A relation as the catalog describes it, with names already quoted by PostgreSQL.
#[derive(Debug, Clone)]
pub(super) struct Rel {
    pub(super) oid: pg_sys::Oid,
    pub(super) qualified: String,
    pub(super) kind: Kind,
    pub(super) tablespace: String,
    /// What a move copies: the relation's files with their forks, and its
    /// TOAST table and TOAST index (pg_table_size's sum), read from disk.
    pub(super) bytes: i64,
    owned: bool,
    /// An index's table (for what moving the index does to other sessions).
    pub(super) table: Option<String>,
    /// Permanent (relpersistence 'p'): a reboot of volatile storage loses it.
    logged: bool,
    /// Its main file is not where the catalog says: `bytes` is unknown.
    files_missing: bool,
}

/// Columns and joins shared by every catalog query here. `tablespace` is
/// spelled out: reltablespace 0 means the database's default tablespace.
/// Nothing here takes a lock: pg_relation_filepath reads the syscache, where
/// pg_table_size would queue for ACCESS SHARE behind any waiting DDL, with
/// no bound but the caller's lock_timeout (by default none). Sizes come from
/// the files themselves.
const REL_SELECT: &str = "
    SELECT c.oid, format('%I.%I', n.nspname, c.relname), c.relkind::text, n.nspname LIKE 'pg\\_toast%',
           coalesce(t.spcname, d.spcname)::text,
           ARRAY[pg_catalog.pg_relation_filepath(c.oid),
                 CASE WHEN c.reltoastrelid <> 0 THEN pg_catalog.pg_relation_filepath(c.reltoastrelid) END,
                 (SELECT pg_catalog.pg_relation_filepath(ti.indexrelid) FROM pg_catalog.pg_index ti
                   WHERE c.reltoastrelid <> 0 AND ti.indrelid = c.reltoastrelid LIMIT 1)],
           pg_catalog.pg_has_role(c.relowner, 'USAGE'),
           (SELECT format('%I.%I', tn.nspname, tc.relname) FROM pg_catalog.pg_index ix
              JOIN pg_catalog.pg_class tc ON tc.oid = ix.indrelid
              JOIN pg_catalog.pg_namespace tn ON tn.oid = tc.relnamespace
             WHERE ix.indexrelid = c.oid),
           c.relpersistence = 'p'
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN pg_catalog.pg_tablespace t ON t.oid = c.reltablespace
     CROSS JOIN (SELECT s.spcname FROM pg_catalog.pg_database db
                   JOIN pg_catalog.pg_tablespace s ON s.oid = db.dattablespace
                  WHERE db.datname = pg_catalog.current_database()) d";

/// The relations a query selects, in its order; kinds storlab does not move
/// (a foreign table in a partition tree) are left out.
pub(super) fn rels(where_order: &str, args: Vec<pgrx::datum::DatumWithOid<'static>>) -> Vec<Rel> {
    let query = format!("{REL_SELECT} {where_order}");
    let data = data_dir();
    Spi::connect(|c| {
        c.select(query.as_str(), None, &args)?
            .filter_map(|r| {
                let row = (|| {
                    let relkind: String = r.get(3)?.unwrap_or_default();
                    let in_toast: bool = r.get(4)?.unwrap_or(false);
                    let Some(kind) = Kind::from_relkind(&relkind, in_toast) else {
                        return Ok(None);
                    };
                    let paths: Vec<Option<String>> = r.get(6)?.unwrap_or_default();
                    // the main fork's first file must be there (a tmpfs
                    // tablespace after a reboot has none): else the size is
                    // unknown, not 0
                    let files_missing = paths
                        .first()
                        .cloned()
                        .flatten()
                        .is_some_and(|p| !data.join(p).exists());
                    let bytes: u64 = paths
                        .into_iter()
                        .flatten()
                        .map(|p| allocation::relation_bytes(&data.join(p)).0)
                        .sum();
                    Ok(Some(Rel {
                        oid: r.get(1)?.expect("oid"),
                        qualified: r.get(2)?.expect("name"),
                        kind,
                        tablespace: r.get(5)?.expect("tablespace"),
                        bytes: bytes as i64,
                        owned: r.get(7)?.unwrap_or(false),
                        table: r.get(8)?,
                        logged: r.get(9)?.unwrap_or(false),
                        files_missing,
                    }))
                })();
                row.transpose()
            })
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the catalog"))
    .or_raise()
}

/// Refuses what storlab never moves, with the reason (22023).
pub fn check_movable(oid: pg_sys::Oid) -> Result<(), Error> {
    let (name, relkind, nsp, other_temp) = Spi::connect(|c| {
        let mut r = c.select(
            "SELECT format('%I.%I', n.nspname, c.relname), c.relkind::text, n.nspname::text,
                    c.relpersistence = 't' AND c.relnamespace <> pg_catalog.pg_my_temp_schema()
               FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
              WHERE c.oid = $1",
            None,
            &[oid.into()],
        )?;
        let row = r.next().ok_or(pgrx::spi::Error::InvalidPosition)?;
        Ok::<_, pgrx::spi::Error>((
            row.get::<String>(1)?.unwrap_or_default(),
            row.get::<String>(2)?.unwrap_or_default(),
            row.get::<String>(3)?.unwrap_or_default(),
            row.get::<bool>(4)?.unwrap_or(false),
        ))
    })
    .map_err(|_| {
        Error::new(
            SqlState::UndefinedTable,
            format!("relation with oid {oid} does not exist"),
        )
    })?;
    if nsp.starts_with("pg_toast") {
        let owner = read::one::<String>(
            "SELECT format('%I.%I', n.nspname, c.relname)
               FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
              WHERE c.reltoastrelid IN ($1, (SELECT indrelid FROM pg_catalog.pg_index WHERE indexrelid = $1))",
            &[oid.into()],
        )
        .ok()
        .flatten()
        .unwrap_or_else(|| "its table".into());
        return Err(invalid(format!(
            "TOAST relations move with their table: move {owner} instead"
        )));
    }
    if nsp == "pg_catalog"
        || nsp == "information_schema"
        || u32::from(oid) < pg_sys::FirstNormalObjectId
    {
        return Err(invalid(format!(
            "{name} is a system catalog: storlab moves user relations only"
        )));
    }
    if other_temp {
        return Err(invalid(format!(
            "{name} is a temporary table of another session"
        )));
    }
    let what = match relkind.as_str() {
        "r" | "i" | "m" | "p" | "I" => return Ok(()),
        "S" => "a sequence",
        "v" => "a view",
        "f" => "a foreign table",
        "c" => "a composite type",
        _ => "not a table",
    };
    Err(invalid(format!(
        "{name} is {what}: storlab moves tables, indexes and materialized views"
    )))
}

/// The target tablespace: it exists, is not pg_global, and the caller may
/// create in it (as ALTER ... SET TABLESPACE demands; the database's default
/// tablespace needs no grant).
pub fn check_target(tablespace: &str) -> Result<String, Error> {
    if tablespace == "pg_global" {
        return Err(invalid(
            "user relations cannot live in pg_global: it holds only shared system catalogs",
        ));
    }
    let may = read::one::<bool>(
        "SELECT t.oid = d.dattablespace OR pg_catalog.has_tablespace_privilege(t.oid, 'CREATE')
           FROM pg_catalog.pg_tablespace t, pg_catalog.pg_database d
          WHERE t.spcname = $1 AND d.datname = pg_catalog.current_database()",
        &[Name(tablespace.to_string()).into()],
    )
    .unwrap_or(None);
    match may {
        None => Err(Error::new(
            SqlState::UndefinedObject,
            format!("tablespace \"{tablespace}\" does not exist"),
        )),
        Some(false) => Err(Error::new(
            SqlState::InsufficientPrivilege,
            format!("permission denied for tablespace {tablespace}"),
        )),
        Some(true) => Ok(tablespace.to_string()),
    }
}

/// One step of a plan: a relation and where it goes.
pub(super) struct Step {
    pub(super) rel: Rel,
    pub(super) to: String,
}

/// Relations already where they should be are skipped, not rewritten;
/// a relation reached twice (an index of a table and of its partition tree) once.
fn plan(candidates: Vec<(Rel, String)>) -> Vec<Step> {
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

/// An index's table and its definition now (pg_get_indexdef, under the
/// search_path every caller of it pins), for its history row: what tells
/// the index again after a REINDEX CONCURRENTLY by hand gives it a new oid
/// under the same name. (None, None) for a relation that is no index.
pub fn index_identity(oid: pg_sys::Oid) -> (Option<u32>, Option<String>) {
    read::two::<pg_sys::Oid, String>(
        "SELECT i.indrelid, pg_catalog.pg_get_indexdef(i.indexrelid)
           FROM (SELECT 1) one LEFT JOIN pg_catalog.pg_index i ON i.indexrelid = $1",
        &[oid.into()],
    )
    .map(|(table, definition)| (table.map(|t| t.to_u32()), definition))
    .unwrap_or((None, None))
}

/// Who holds a lock on a relation (see HOLDERS), or None.
pub fn lock_holders(oid: pg_sys::Oid) -> Option<String> {
    read::one::<String>(HOLDERS, &[oid.into()]).ok().flatten()
}

/// Who holds a lock on a relation: backends by pid and kind (an
/// autovacuum worker, a client backend, ...: pg_stat_activity shows every
/// role that), and prepared
/// transactions (which have no backend: a lock of theirs lasts until
/// someone runs COMMIT PREPARED or ROLLBACK PREPARED) by gid, owner and
/// the time they were prepared.
const HOLDERS: &str = "
    SELECT pg_catalog.string_agg(DISTINCT CASE
             WHEN l.pid IS NOT NULL THEN pg_catalog.format('backend pid %s (%s)', l.pid, coalesce(a.backend_type, 'ended'))
             ELSE pg_catalog.format('prepared transaction %L (owner %s, prepared at %s)', p.gid, p.owner, p.prepared)
           END, ', ')
      FROM pg_catalog.pg_locks l
      -- a prepared transaction's locks belong to a dummy process with no
      -- pid: its own transaction id lock, under the same virtual
      -- transaction, tells which prepared transaction it is
      LEFT JOIN pg_catalog.pg_locks x ON l.pid IS NULL AND x.locktype = 'transactionid'
                                     AND x.virtualtransaction = l.virtualtransaction
      LEFT JOIN pg_catalog.pg_prepared_xacts p ON p.transaction = x.transactionid
      LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'relation' AND l.relation = $1 AND l.granted
       AND l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid()
       AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())";

pub type RelocationRow = PgHeapTuple<'static, AllocatedByRust>;

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

/// What refuses a whole call before anything is locked or moved: a
/// relation the caller does not own (42501), one a running benchmark or
/// experiment uses (55006, held to the end of the transaction), a target
/// the copies would fill past storlab.min_free_bytes (53100). Returns each
/// target's folder and, per step, the space left after the call's copies.
pub(super) fn refuse_what_cannot_move(
    steps: &[Step],
    lock_timeout: Duration,
    dry_run: bool,
    job: Option<i64>,
) -> (HashMap<String, PathBuf>, Vec<Option<(PathBuf, SpaceAfter)>>) {
    for s in steps {
        if !s.rel.owned {
            Error::new(
                SqlState::InsufficientPrivilege,
                format!(
                    "must be owner of {} {}",
                    s.rel.kind.as_str(),
                    s.rel.qualified
                ),
            )
            .raise();
        }
    }
    // A run measures the layout it records: nothing a running job uses
    // moves under it. Held from here to the end of the transaction (a
    // dry run moves nothing, and takes nothing).
    if !dry_run {
        let rels: Vec<(pg_sys::Oid, String)> = steps
            .iter()
            .map(|s| {
                (
                    s.rel.oid,
                    format!("{} {}", s.rel.kind.as_str(), s.rel.qualified),
                )
            })
            .collect();
        pgbench_relations_free(&rels, job, lock_timeout).or_raise();
        // nor what an online move has queued or runs on
        super::online::refuse_moving_online(&super::online::tables_of(steps));
    }
    // Room for the copies, before anything is locked: a move that runs the
    // target out of space fails mid-copy, and meanwhile every other writer
    // to that filesystem fails too.
    let folders = target_folders(steps);
    let space = space_after_steps(steps, &folders);
    if !dry_run {
        for (s, after) in steps.iter().zip(&space) {
            if let Some((folder, after)) = after.as_ref().filter(|(_, a)| !a.fits()) {
                Error::new(
                    SqlState::DiskFull,
                    format!(
                        "not enough free space in tablespace {} to move {} {} ({})",
                        s.to,
                        s.rel.kind.as_str(),
                        s.rel.qualified,
                        human_bytes(s.rel.bytes)
                    ),
                )
                .with_detail(format!(
                    "The filesystem of {} ({}) has {} free; this call copies {} into it in all, and storlab.min_free_bytes keeps {} free. Nothing was moved.",
                    s.to,
                    folder.display(),
                    human_bytes(after.free as i64),
                    human_bytes(after.copied as i64),
                    human_bytes(after.reserve as i64)
                ))
                .with_hint("Free space there, choose another tablespace, or lower storlab.min_free_bytes.")
                .raise();
            }
        }
    }
    (folders, space)
}

/// The target tablespaces of the steps that are on storage a reboot
/// empties (tmpfs, ramfs, zram), with their filesystem and device.
pub(super) fn volatile_targets(folders: &HashMap<String, PathBuf>) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for (ts, folder) in folders {
        if let Ok(f) = storlab_core::env::facts(folder) {
            if storlab_core::env::is_volatile(&f.fs_type, &f.device) {
                let what = if f.device == f.fs_type {
                    f.fs_type.clone()
                } else {
                    format!("{} on {}", f.fs_type, f.device)
                };
                out.insert(ts.clone(), what);
            }
        }
    }
    out
}

/// The folder of each tablespace the steps move to, resolved once.
fn target_folders(steps: &[Step]) -> HashMap<String, PathBuf> {
    let mut out = HashMap::new();
    for s in steps {
        if !out.contains_key(&s.to) {
            out.insert(s.to.clone(), resolve(&s.to).or_raise().folder);
        }
    }
    out
}

/// For each step that copies (a relation with storage), the target's
/// folder and the space its filesystem has left after the whole call's
/// copies (see storlab_core::relocate::space_after).
fn space_after_steps(
    steps: &[Step],
    folders: &HashMap<String, PathBuf>,
) -> Vec<Option<(PathBuf, SpaceAfter)>> {
    let mut moves = Vec::new();
    let mut index = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        if !s.rel.kind.has_storage() {
            continue;
        }
        let folder = folders[&s.to].clone();
        let (fs, free) = match (space::device_id(&folder), space::fs_space(&folder)) {
            (Ok(fs), Ok(sp)) => (fs, sp.avail_bytes),
            (Err(e), _) | (_, Err(e)) => Error::new(
                SqlState::IoError,
                format!(
                    "cannot read the free space of tablespace {} ({}): {e}",
                    s.to,
                    folder.display()
                ),
            )
            .raise(),
        };
        moves.push((fs, free, s.rel.bytes.max(0) as u64));
        index.push((i, folder));
    }
    let mut out: Vec<Option<(PathBuf, SpaceAfter)>> = vec![None; steps.len()];
    for ((i, folder), after) in index.into_iter().zip(space_after(&moves, min_free_bytes())) {
        out[i] = Some((folder, after));
    }
    out
}

/// Where a relation is now and how many bytes its files hold (with its
/// TOAST), read as `layout()` reads them, without a lock; None once it is
/// dropped.
pub fn where_now(oid: pg_sys::Oid) -> Option<(String, i64)> {
    rels("WHERE c.oid = $1", vec![oid.into()])
        .pop()
        .map(|r| (r.tablespace, r.bytes))
}

/// Where a relation is now, as the catalog says once we hold its lock: read
/// through the syscache, which taking the lock brought up to date (as the
/// relcache is), not through SPI, whose snapshot under REPEATABLE READ or
/// SERIALIZABLE is the transaction's own and would not see a move another
/// session committed since: history would record where the relation was at
/// the transaction's start, and a move to where it already is would run a
/// no-op ALTER and be recorded. None: it was dropped.
fn tablespace_now(oid: pg_sys::Oid) -> Option<String> {
    // SAFETY: lsyscache lookups from the backend's thread; the name is
    // palloc'd in the current memory context and copied out at once.
    unsafe {
        if pg_sys::get_rel_relkind(oid) == 0 {
            return None;
        }
        let mut spc = pg_sys::get_rel_tablespace(oid);
        if spc == pg_sys::InvalidOid {
            spc = pg_sys::MyDatabaseTableSpace;
        }
        let name = pg_sys::get_tablespace_name(spc);
        (!name.is_null()).then(|| {
            std::ffi::CStr::from_ptr(name)
                .to_string_lossy()
                .into_owned()
        })
    }
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

/// An index does not move online alone through storlab.move: pg_repack
/// moves tables (with their indexes), REINDEX CONCURRENTLY every index of
/// a table (move_indexes_online).
fn refuse_online_alone(relation: pg_sys::Oid) {
    let Some(rel) = rels("WHERE c.oid = $1", vec![relation.into()]).pop() else {
        return;
    };
    if matches!(rel.kind, Kind::Index | Kind::PartitionedIndex) {
        invalid(format!(
            "{} is an index: storlab.move(..., online => true) moves tables, with pg_repack",
            rel.qualified
        ))
        .with_hint(format!(
            "storlab.move_indexes_online({}, ...) rebuilds a table's indexes elsewhere while writes go on; storlab.move() without online moves this one index.",
            literal_of(rel.table.as_deref().unwrap_or("its_table"))
        ))
        .raise();
    }
}

fn literal_of(s: &str) -> String {
    storlab_core::sql_text::literal(s)
}

/// A plan moved now in this transaction, or online by a job.
fn run_steps(
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

/// Moves every relation that storlab moved since `at` back to where it was
/// at `at`. Batches (one call each) are restored whole or not at all: a
/// batch counts as since `at` when its first move is at or after `at`, so
/// the `moved_at` of a batch's first row undoes that whole batch (its rows
/// carry their own clock times, a little apart). A relation is restored
/// only while it is still the one that was moved: the same oid, name and
/// kind; one dropped since, or whose oid now belongs to another relation,
/// is skipped with a NOTICE. What the caller may not move (another role's
/// relation) stays where it is, with a NOTICE.
pub fn restore_layout(
    at: TimestampWithTimeZone,
    timeout: Duration,
    online: bool,
) -> Vec<RelocationRow> {
    // a history with a hole (pruned before `at`) is refused, never half restored
    super::prune::refuse_restore_before_horizon(at);
    // the first move of the restored batches tells where each relation was at `at`
    let wanted = history(
        "SELECT r.relation, r.relation_name, r.kind, r.from_tablespace::text, r.index_table, r.index_definition
           FROM storlab.relocations r
          WHERE r.system_identifier = ANY($2)
            AND r.batch_id IN (SELECT b.batch_id FROM storlab.relocations b WHERE b.system_identifier = ANY($2)
                                GROUP BY b.batch_id HAVING min(b.moved_at) >= $1)
          ORDER BY r.moved_at, r.id",
        vec![at.into(), this_server().into()],
    );
    let label = format!("restore_layout since {at}");
    restore(wanted, timeout, &label, false, None, online)
}

/// Undoes one batch (one call of move, apply_layout, restore_layout, an
/// online index move or an experiment's placement): each of its relations
/// goes back to where the batch took it from, all in one transaction. Whole
/// or not at all: a relation moved again by a later batch (undo that one
/// first), or one the caller does not own, refuses the call.
pub fn undo_batch(batch: i64, timeout: Duration, online: bool) -> Vec<RelocationRow> {
    let wanted = history(
        "SELECT r.relation, r.relation_name, r.kind, r.from_tablespace::text, r.index_table, r.index_definition
           FROM storlab.relocations r
          WHERE r.batch_id = $1 AND r.system_identifier = ANY($2)
          ORDER BY r.moved_at, r.id",
        vec![batch.into(), this_server().into()],
    );
    // deleted by storlab.prune, or a later batch that may have moved its
    // relations again is: 22023 naming the horizon
    super::prune::refuse_undo_across_horizon(batch, !wanted.is_empty());
    if wanted.is_empty() {
        Error::new(
            SqlState::UndefinedObject,
            format!("relocation batch {batch} does not exist on this server"),
        )
        .with_hint("storlab.relocations lists each move with its batch_id.")
        .raise();
    }
    // moved again by a later batch: the same relation, followed through
    // online rebuilds (which give an index a new oid)
    // A later batch undone since (by undo_batch) and its undo cancel out:
    // together they left the relations where this batch put them.
    let mine: std::collections::HashSet<pg_sys::Oid> = wanted.iter().map(|w| w.oid).collect();
    let cancelled: Vec<i64> = cancelled_batches(batch).into_iter().collect();
    let later: Vec<String> = history_rows(
        "SELECT r.relation, r.relation_name, r.kind, r.to_tablespace::text, r.index_table, r.index_definition,
                pg_catalog.format('%s (batch %s)', r.relation_name, r.batch_id)
           FROM storlab.relocations r
          WHERE r.batch_id > $1 AND r.system_identifier = ANY($2) AND r.batch_id OPERATOR(pg_catalog.<>) ALL ($3)
          ORDER BY r.moved_at, r.id",
        vec![batch.into(), this_server().into(), cancelled.into()],
    )
    .into_iter()
    .filter(|w| mine.contains(&w.oid))
    .map(|w| w.shown)
    .collect();
    if !later.is_empty() {
        let later = later.join(", ");
        Error::new(
            SqlState::ObjectNotInPrerequisiteState,
            format!("cannot undo relocation batch {batch}: its relations were moved again since: {later}"),
        )
        .with_hint("Undo the later batches first, newest first, or use storlab.restore_layout(at) to go back to a point in time.")
        .raise();
    }
    restore(
        wanted,
        timeout,
        &format!("undo of batch {batch}"),
        true,
        Some(batch),
        online,
    )
}

/// The batches after `batch` that cancel out: each undone by a later
/// undo_batch() (both the undone batch and its undo; an undo that was
/// itself undone counts as a move again: `relocate::cancelled_batches`).
fn cancelled_batches(batch: i64) -> std::collections::HashSet<i64> {
    let pairs: Vec<(i64, i64)> = as_owner(|| {
        Spi::connect(|c| {
            c.select(
                "SELECT DISTINCT r.batch_id, r.undoes_batch FROM storlab.relocations r
                  WHERE r.undoes_batch > $1 AND r.system_identifier = ANY($2)",
                None,
                &[batch.into(), this_server().into()],
            )?
            .map(|r| {
                Ok((
                    r.get::<i64>(1)?.expect("batch_id"),
                    r.get::<i64>(2)?.expect("undoes_batch"),
                ))
            })
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
        .map_err(spi("reading storlab.relocations"))
        .or_raise()
    });
    storlab_core::relocate::cancelled_batches(&pairs)
}

/// A relation of a history query, read as the owner: its oid now, its
/// name as moved, kind, and the tablespace of the row (where to go back to,
/// or where a later batch took it).
struct Wanted {
    oid: pg_sys::Oid,
    name: String,
    kind: String,
    tablespace: String,
    /// how a message names the row (the query's seventh column, else the name)
    shown: String,
    /// an index of the moved one's name is there under another oid, and its
    /// row (written before 0.9.0) does not say which table and definition
    /// the moved one had: it may have been rebuilt by hand, or be another
    unsure: bool,
}

/// The relations a history query returns (in its order: moved_at, id), each
/// once, at its first row: where it was before the first of those moves.
/// A relation is followed through storlab's online rebuilds, which give an
/// index a new oid (`previous_relation`): rows under its earlier oids count
/// as its own, under the oid it has now; and through a REINDEX CONCURRENTLY
/// by hand, which does the same without a trace: the index of the moved
/// one's name, on the same table with the same definition, is that index.
fn history(query: &str, args: Vec<pgrx::datum::DatumWithOid<'static>>) -> Vec<Wanted> {
    let mut seen = std::collections::HashSet::new();
    history_rows(query, args)
        .into_iter()
        .filter(|w| seen.insert(w.oid))
        .collect()
}

/// The rows of a history query, each relation under the oid it has now.
fn history_rows(query: &str, args: Vec<pgrx::datum::DatumWithOid<'static>>) -> Vec<Wanted> {
    let next = rebuilt_as();
    let now = |mut oid: pg_sys::Oid| {
        // a chain of rebuilds, newest last (bounded: no cycle can hold us)
        for _ in 0..next.len() {
            match next.get(&oid) {
                Some(&n) => oid = n,
                None => break,
            }
        }
        oid
    };
    raw_history(query, args)
        .into_iter()
        .map(|row| {
            let oid = now(row.oid);
            let mut w = Wanted {
                oid,
                name: row.name,
                kind: row.kind,
                tablespace: row.tablespace,
                shown: row.shown,
                unsure: false,
            };
            if (w.kind == "index" || w.kind == "partitioned index")
                && same_relation(oid, &w.name, &w.kind).is_err()
            {
                match rebuilt_by_hand(
                    &w.name,
                    &w.kind,
                    row.index_table,
                    row.index_definition.as_deref(),
                ) {
                    Rebuilt::Same(now) => w.oid = now,
                    Rebuilt::Unsure(now) => {
                        w.oid = now;
                        w.unsure = true;
                    }
                    Rebuilt::No => {}
                }
            }
            w
        })
        .collect()
}

/// What became of a moved index whose oid is gone (or names another
/// relation now), by the index of its name.
enum Rebuilt {
    /// it: the same table and definition (a REINDEX CONCURRENTLY by hand)
    Same(pg_sys::Oid),
    /// an index of its name whose table and definition its row does not
    /// record (a row written before 0.9.0): it, or another one
    Unsure(pg_sys::Oid),
    /// none of its name, or another one (its table or definition differ):
    /// the moved index was dropped
    No,
}

fn rebuilt_by_hand(
    name: &str,
    kind: &str,
    table: Option<pg_sys::Oid>,
    definition: Option<&str>,
) -> Rebuilt {
    let relkind = if kind == "index" { "i" } else { "I" };
    let found = Spi::connect(|c| {
        let mut rows = c.select(
            "SELECT c.oid, i.indrelid, pg_catalog.pg_get_indexdef(c.oid)
               FROM pg_catalog.pg_class c JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid
              WHERE c.oid = pg_catalog.to_regclass($1) AND c.relkind = $2::\"char\"",
            None,
            &[name.into(), relkind.into()],
        )?;
        let Some(r) = rows.next() else {
            return Ok(None);
        };
        Ok::<_, pgrx::spi::Error>(Some((
            r.get::<pg_sys::Oid>(1)?.expect("oid"),
            r.get::<pg_sys::Oid>(2)?,
            r.get::<String>(3)?,
        )))
    })
    .map_err(spi("reading the catalog"))
    .or_raise();
    match (found, table, definition) {
        (None, _, _) => Rebuilt::No,
        (Some((oid, _, _)), None, _) | (Some((oid, _, _)), _, None) => Rebuilt::Unsure(oid),
        (Some((oid, now_table, now_definition)), Some(table), Some(definition)) => {
            if now_table == Some(table) && now_definition.as_deref() == Some(definition) {
                Rebuilt::Same(oid)
            } else {
                Rebuilt::No
            }
        }
    }
}

/// Online rebuilds on this server: the oid an index had before each, to the
/// oid it got.
fn rebuilt_as() -> std::collections::HashMap<pg_sys::Oid, pg_sys::Oid> {
    as_owner(|| {
        Spi::connect(|c| {
            c.select(
                "SELECT r.previous_relation, r.relation FROM storlab.relocations r
                  WHERE r.previous_relation IS NOT NULL AND r.system_identifier = ANY($1)
                  ORDER BY r.id",
                None,
                &[this_server().into()],
            )?
            .map(|r| {
                Ok((
                    r.get::<pg_sys::Oid>(1)?.expect("oid"),
                    r.get::<pg_sys::Oid>(2)?.expect("oid"),
                ))
            })
            .collect::<Result<std::collections::HashMap<_, _>, pgrx::spi::Error>>()
        })
        .map_err(spi("reading storlab.relocations"))
        .or_raise()
    })
}

/// A row of a history query as stored.
struct HistoryRow {
    oid: pg_sys::Oid,
    name: String,
    kind: String,
    tablespace: String,
    index_table: Option<pg_sys::Oid>,
    index_definition: Option<String>,
    shown: String,
}

/// The rows of a history query: relation, relation_name, kind, a
/// tablespace, index_table, index_definition, and how to name it (else
/// its name).
fn raw_history(query: &str, args: Vec<pgrx::datum::DatumWithOid<'static>>) -> Vec<HistoryRow> {
    as_owner(|| {
        Spi::connect(|c| {
            let rows = c.select(query, None, &args)?;
            let shown = rows.columns()? >= 7;
            rows.map(|r| {
                let name: String = r.get(2)?.expect("name");
                Ok(HistoryRow {
                    oid: r.get(1)?.expect("oid"),
                    kind: r.get(3)?.expect("kind"),
                    tablespace: r.get(4)?.expect("tablespace"),
                    index_table: r.get(5)?,
                    index_definition: r.get(6)?,
                    shown: if shown {
                        r.get(7)?.unwrap_or_else(|| name.clone())
                    } else {
                        name.clone()
                    },
                    name,
                })
            })
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
        .map_err(spi("reading storlab.relocations"))
        .or_raise()
    })
}

/// Moves the wanted relations back, one batch. Every tablespace to go back
/// to must still exist (a dropped or renamed one refuses the whole call,
/// 42704, before anything moves, naming the relation). With `whole`, a
/// relation the caller may not move refuses the call (42501); otherwise it
/// stays where it is, with a NOTICE naming it and who may move it.
fn restore(
    wanted: Vec<Wanted>,
    timeout: Duration,
    label: &str,
    whole: bool,
    undoes: Option<i64>,
    online: bool,
) -> Vec<RelocationRow> {
    let mut candidates = Vec::new();
    let mut unsure = Vec::new();
    for w in wanted {
        let (oid, name, kind, from) = (w.oid, w.name, w.kind, w.tablespace);
        if w.unsure {
            // already where it would go back: nothing to tell apart
            if tablespace_now(oid).as_deref() == Some(from.as_str()) {
                notice!(
                    "storlab: index {name} is in {from} already, where it was; nothing to restore"
                );
            } else {
                unsure.push(format!("{kind} {name}"));
            }
            continue;
        }
        match same_relation(oid, &name, &kind) {
            Ok(()) => {
                let rel = rels("WHERE c.oid = $1", vec![oid.into()])
                    .pop()
                    .expect("checked just now");
                let to = match check_target(&from) {
                    Ok(to) => to,
                    Err(e) if e.state == SqlState::UndefinedObject => Error::new(
                        SqlState::UndefinedObject,
                        format!("cannot restore {name}: tablespace \"{from}\", where it was, does not exist any more"),
                    )
                    .with_detail("It was dropped or renamed since the move. Nothing was moved.")
                    .with_hint(format!("Move {name} by hand with storlab.move(), or recreate the tablespace."))
                    .raise(),
                    // another role's relation is not the caller's to move
                    // back, whatever the caller may create where it was: it
                    // stays, with a NOTICE (or 42501 naming its owner, for
                    // undo_batch) below
                    Err(e) if e.state == SqlState::InsufficientPrivilege && !rel.owned => from.clone(),
                    Err(e) => e
                        .with_detail(format!("{name} was there before the move. Nothing was moved."))
                        .raise(),
                };
                candidates.push((rel, to));
            }
            Err(why) => {
                let other = (kind == "index" || kind == "partitioned index")
                    && read::one::<bool>(
                        "SELECT pg_catalog.to_regclass($1) IS NOT NULL",
                        &[name.clone().into()],
                    ) == Ok(Some(true));
                notice!(
                    "storlab: {name} {why}{}; nothing to restore",
                    if other {
                        " (the index of that name now is another one: its table or definition differ)"
                    } else {
                        ""
                    }
                )
            }
        }
    }
    // whole or not at all: an index storlab cannot tell again is not left
    // behind in silence
    if !unsure.is_empty() {
        Error::new(
            SqlState::ObjectNotInPrerequisiteState,
            format!(
                "cannot restore {}: an index of that name is there under another oid, and its move was recorded before storlab 0.9.0, without the table and definition that tell whether it is the moved index rebuilt (REINDEX CONCURRENTLY) or another one",
                unsure.join(", ")
            ),
        )
        .with_detail("Nothing was moved.")
        .with_hint("Move it by hand to where it was (storlab.move()), then call again: an index already there is left as it is.")
        .raise();
    }
    // a partitioned parent's tree, whole: what its default put into the
    // target since the move goes back with it
    let since = created_since(&candidates);
    candidates.extend(since);
    let (mine, others): (Vec<Step>, Vec<Step>) =
        plan(candidates).into_iter().partition(|s| s.rel.owned);
    for s in &others {
        let owner = read::one::<String>(
            "SELECT c.relowner::pg_catalog.regrole::text FROM pg_catalog.pg_class c WHERE c.oid = $1",
            &[s.rel.oid.into()],
        )
        .ok()
        .flatten()
        .unwrap_or_else(|| "its owner".into());
        if whole {
            Error::new(
                SqlState::InsufficientPrivilege,
                format!(
                    "must be owner of {} {} to move it back",
                    s.rel.kind.as_str(),
                    s.rel.qualified
                ),
            )
            .with_detail(format!("Its owner is {owner}. Nothing was moved."))
            .raise();
        }
        // storlab never does more than its caller could do by hand, and one
        // such relation no longer keeps the caller's own moves from being undone
        notice!(
            "storlab: {} {} stays in {}: only its owner ({owner}) may move it back to {}",
            s.rel.kind.as_str(),
            s.rel.qualified,
            s.rel.tablespace,
            s.to
        );
    }
    run_steps(mine, timeout, false, Some(label), undoes, online)
}

/// Partitions and index partitions created since a partitioned table or
/// index that is being restored moved, which its default put into the
/// tablespace it is leaving now: they go back with it, to where it goes
/// (with a NOTICE naming them), so that the tree is back whole, as it
/// would be had they been created before the move. "Created since" is read
/// from the oid: a relation's oid comes from the same counter as the file
/// number a move gives each relation it copies, so one created after the
/// move has an oid above every file number of the relations restored now.
/// A partition that was in the target before the move (the move left it
/// there, and recorded nothing) has a lower one, and stays; so does every
/// partition when no restored relation has a file to read the number
/// from (a later rewrite of one only raises it: a partition created in
/// between then stays where it is, named in the NOTICE).
fn created_since(candidates: &[(Rel, String)]) -> Vec<(Rel, String)> {
    let parents: HashMap<pg_sys::Oid, (String, String)> = candidates
        .iter()
        .filter(|(r, to)| {
            matches!(r.kind, Kind::PartitionedTable | Kind::PartitionedIndex) && r.tablespace != *to
        })
        .map(|(r, to)| (r.oid, (r.tablespace.clone(), to.clone())))
        .collect();
    if parents.is_empty() {
        return Vec::new();
    }
    let known: std::collections::HashSet<pg_sys::Oid> =
        candidates.iter().map(|(r, _)| r.oid).collect();
    let with_files: Vec<pg_sys::Oid> = candidates
        .iter()
        .filter(|(r, _)| r.kind.has_storage())
        .map(|(r, _)| r.oid)
        .collect();
    let newest_file = read::one::<i64>(
        "SELECT pg_catalog.max(c.relfilenode::int8) FROM pg_catalog.pg_class c
          WHERE c.oid = ANY ($1) AND c.relfilenode <> 0",
        &[with_files.into()],
    )
    .ok()
    .flatten();
    let roots: Vec<pg_sys::Oid> = parents.keys().copied().collect();
    // each partition of a restored parent's tree, with its nearest restored
    // ancestor
    let tree = Spi::connect(|c| {
        c.select(
            "SELECT d.relid::oid, (SELECT a.relid::oid
                                     FROM pg_catalog.pg_partition_ancestors(d.relid) WITH ORDINALITY a(relid, n)
                                    WHERE a.relid::oid = ANY ($1) AND a.relid <> d.relid
                                    ORDER BY a.n LIMIT 1)
               FROM pg_catalog.unnest($1::oid[]) p, pg_catalog.pg_partition_tree(p) d
              WHERE d.relid::oid <> ALL ($1)",
            None,
            &[roots.into()],
        )?
        .map(|r| Ok((r.get::<pg_sys::Oid>(1)?, r.get::<pg_sys::Oid>(2)?)))
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the partition trees"))
    .or_raise();
    let mut seen = std::collections::HashSet::new();
    let mut back = Vec::new();
    let mut stay = Vec::new();
    for (oid, ancestor) in tree {
        let (Some(oid), Some(ancestor)) = (oid, ancestor) else {
            continue;
        };
        if known.contains(&oid) || !seen.insert(oid) {
            continue;
        }
        let (leaving, to) = &parents[&ancestor];
        let Some(rel) = rels("WHERE c.oid = $1", vec![oid.into()]).pop() else {
            continue; // no storage here: a foreign table
        };
        if rel.tablespace != *leaving {
            continue; // placed elsewhere by hand: not the default's doing
        }
        match newest_file {
            Some(n) if i64::from(oid.to_u32()) > n => back.push((rel, to.clone())),
            _ => stay.push(rel.qualified.clone()),
        }
    }
    back.sort_by(|a, b| a.0.qualified.cmp(&b.0.qualified));
    stay.sort();
    if !back.is_empty() {
        notice!(
            "storlab: created since the move, where the default of their partitioned parent put them, and restored with it: {}",
            back.iter()
                .map(|(r, to)| format!("{} {} ({} -> {to})", r.kind.as_str(), r.qualified, r.tablespace))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !stay.is_empty() {
        notice!(
            "storlab: left where they are (there before the move, or not told apart from it): {}",
            stay.join(", ")
        );
    }
    back
}

/// Is the relation with this oid still the one storlab moved? Oids are
/// reused after a drop, so the oid alone may name an unrelated relation.
fn same_relation(oid: pg_sys::Oid, name: &str, kind: &str) -> Result<(), String> {
    let now = Spi::connect(|c| {
        let mut rows = c.select(
            "SELECT format('%I.%I', n.nspname, c.relname), c.relkind::text, n.nspname LIKE 'pg\\_toast%'
               FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
              WHERE c.oid = $1",
            None,
            &[oid.into()],
        )?;
        let Some(r) = rows.next() else {
            return Ok(None);
        };
        Ok::<_, pgrx::spi::Error>(Some((
            r.get::<String>(1)?.unwrap_or_default(),
            r.get::<String>(2)?.unwrap_or_default(),
            r.get::<bool>(3)?.unwrap_or(false),
        )))
    })
    .map_err(spi("reading the catalog"))
    .or_raise();
    let Some((now_name, relkind, in_toast)) = now else {
        return Err("was dropped since it was moved".into());
    };
    let now_kind = Kind::from_relkind(&relkind, in_toast).map(Kind::as_str);
    if now_name != name || now_kind != Some(kind) {
        return Err(format!(
            "is no longer the relation that was moved: its oid now belongs to {now_name} ({})",
            now_kind.unwrap_or("a relation storlab does not move")
        ));
    }
    Ok(())
}

/// Every table, index, TOAST table and index, materialized view, partitioned
/// table and index of one schema (or every user schema): where it lives and
/// how much it holds, logically and on the filesystem.
pub type LayoutRow = (
    RegClass,
    String,
    Option<RegClass>,
    Name,
    Option<i64>,
    Option<i64>,
);

pub fn layout(schema_name: Option<Name>) -> Vec<LayoutRow> {
    if let Some(schema) = &schema_name {
        // a typo is an error, as for apply_layout, not an empty answer
        let exists = read::one::<bool>(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = $1)",
            &[schema.clone().into()],
        );
        if exists != Ok(Some(true)) {
            Error::new(
                SqlState::InvalidSchemaName,
                format!("schema \"{schema}\" does not exist"),
            )
            .raise();
        }
    }
    let data = data_dir();
    let mut sizer = allocation::RelationSizer::default();
    let mut missing: Vec<String> = Vec::new();
    let rows = Spi::connect(|c| {
        c.select(
            "WITH owners AS (           -- user tables, partitioned tables, materialized views
               SELECT c.oid, c.relkind, c.reltoastrelid,
                      (SELECT i.inhparent FROM pg_catalog.pg_inherits i WHERE i.inhrelid = c.oid) AS parent
                 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                WHERE c.relkind IN ('r', 'm', 'p')
                  AND CASE WHEN $1::name IS NULL
                           THEN n.nspname NOT IN ('pg_catalog', 'information_schema')
                                AND n.nspname NOT LIKE 'pg\\_toast%'
                                -- other sessions' temporary schemas, not the caller's own
                                AND (n.nspname NOT LIKE 'pg\\_temp%' OR n.oid = pg_catalog.pg_my_temp_schema())
                           ELSE n.nspname = $1 END
             ), members AS (
               SELECT oid, parent FROM owners
               UNION ALL SELECT i.indexrelid, i.indrelid FROM pg_catalog.pg_index i JOIN owners o ON o.oid = i.indrelid
               UNION ALL SELECT reltoastrelid, oid FROM owners WHERE reltoastrelid <> 0
               UNION ALL SELECT i.indexrelid, i.indrelid FROM pg_catalog.pg_index i
                           JOIN owners o ON o.reltoastrelid = i.indrelid
             )
             -- each file's path as pg_relation_filepath() makes it, without
             -- its catalog lookup per relation (20 ms for 10 000 in a new
             -- session): user relations are never mapped, never in pg_global;
             -- a temporary relation's file names its backend (t3_16384),
             -- which only pg_relation_filepath() knows
             SELECT m.oid, c.relkind::text, n.nspname LIKE 'pg\\_toast%', m.parent,
                    coalesce(t.spcname, d.spcname)::text,
                    CASE WHEN c.relfilenode = 0 THEN NULL
                         WHEN c.relpersistence = 't' THEN pg_catalog.pg_relation_filepath(c.oid)
                         WHEN coalesce(t.oid, d.oid) = 1663 THEN 'base/' || $3 || '/' || c.relfilenode
                         ELSE 'pg_tblspc/' || coalesce(t.oid, d.oid) || '/' || $2 || '/' || $3 || '/' || c.relfilenode END
               FROM members m
               JOIN pg_catalog.pg_class c ON c.oid = m.oid
               JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
               LEFT JOIN pg_catalog.pg_tablespace t ON t.oid = c.reltablespace
              CROSS JOIN (SELECT s.spcname, s.oid FROM pg_catalog.pg_database db
                            JOIN pg_catalog.pg_tablespace s ON s.oid = db.dattablespace
                           WHERE db.datname = pg_catalog.current_database()) d
              ORDER BY n.nspname LIKE 'pg\\_toast%', n.nspname, c.relname",
            None,
            &[
                schema_name.into(),
                format!("PG_{}_{}", pg_sys::PG_MAJORVERSION_NUM, pg_sys::CATALOG_VERSION_NO).into(),
                // SAFETY: the backend's database, set at connection
                i64::from(u32::from(unsafe { pg_sys::MyDatabaseId })).into(),
            ],
        )?
        .map(|r| {
            let relkind: String = r.get(2)?.unwrap_or_default();
            let kind = Kind::from_relkind(&relkind, r.get(3)?.unwrap_or(false)).expect("selected kinds");
            let path: Option<String> = r.get(6)?;
            // relation files are read straight from disk: sizes include what
            // the filesystem really allocates, which SQL cannot see; a
            // relation without storage holds 0 bytes, one whose files are
            // missing an unknown number (NULL, and a WARNING below)
            let sizes = match &path {
                None => Some((0, 0)),
                Some(p) => sizer.sizes(&data.join(p)),
            };
            if sizes.is_none() {
                missing.push(path.clone().unwrap_or_default());
            }
            let (logical, allocated) = (sizes.map(|s| s.0 as i64), sizes.map(|s| s.1 as i64));
            Ok((
                RegClass(r.get(1)?.expect("oid")),
                kind.as_str().to_string(),
                r.get::<pg_sys::Oid>(4)?.map(RegClass),
                Name(r.get(5)?.expect("tablespace")),
                logical,
                allocated,
            ))
        })
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the catalog"))
    .or_raise();
    if !missing.is_empty() {
        warning!(
            "storlab: the files of {} relation(s) cannot be found ({}{}): their sizes are NULL, not 0",
            missing.len(),
            missing.iter().take(3).cloned().collect::<Vec<_>>().join(", "),
            if missing.len() > 3 { ", ..." } else { "" }
        );
    }
    rows
}
