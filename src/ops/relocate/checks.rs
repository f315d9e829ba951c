//! What refuses a move before anything is locked or moved, with the
//! reason: what storlab never moves, a target the caller may not create in,
//! a relation the caller does not own, one a running job uses or an online
//! move has claimed or runs on, a target the copies would fill past
//! storlab.min_free_bytes, an index alone online. And an online move's own
//! claim on its tables, which every other move checks here.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use pgrx::prelude::*;

use super::catalog::{rels, table_of, Step};
use crate::ops::error::{invalid, spi, Error, OrRaise, Raise, SqlState};
use crate::ops::identity::as_owner;
use crate::ops::jobs::pgbench_relations_free;
use crate::ops::read;
use crate::ops::settings::min_free_bytes;
use crate::ops::targets::resolve;
use crate::sqltypes::Name;
use storlab_core::env::space;
use storlab_core::relocate::{human_bytes, space_after, Kind, SpaceAfter};
use storlab_core::request::relocate::OnlineTable;

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
        refuse_moving_online(&tables_of(steps));
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

/// The tables the steps touch (an index's table), named for a message.
fn tables_of(steps: &[Step]) -> Vec<(pg_sys::Oid, String)> {
    steps
        .iter()
        .filter_map(|s| match s.rel.kind {
            Kind::Table => Some((s.rel.oid, format!("table {}", s.rel.qualified))),
            Kind::Index => Some((table_of(s.rel.oid), format!("index {}", s.rel.qualified))),
            _ => None,
        })
        .filter(|(oid, _)| *oid != pg_sys::InvalidOid)
        .collect()
}

/// Refuses (55006, naming the job) a move of a table, or of one of its
/// indexes, that an online move has queued or runs on (a job of this
/// call's own transaction included): whatever moved meanwhile, pg_repack's
/// swap would throw away, and its history would say otherwise.
pub fn refuse_moving_online(tables: &[(pg_sys::Oid, String)]) {
    for (table, what) in tables {
        // Another session's uncommitted call that starts an online move of
        // the table holds its claim (`claim`): this call's move would come
        // before that job's in time and after it in the history, and an
        // undo would take the wrong one back. The claim is taken shared
        // here, to this transaction's end, so an online move cannot start
        // meanwhile either (a transaction's own claim does not conflict).
        let free = Spi::get_one_with_args::<bool>(
            "SELECT pg_catalog.pg_try_advisory_xact_lock_shared(pg_catalog.hashtextextended(
                      'storlab: online move of ' || $1::oid::text || ' in ' || pg_catalog.current_database(), 0))",
            &[(*table).into()],
        )
        .map_err(spi("checking for an online move being started"))
        .or_raise();
        if free != Some(true) {
            Error::new(
                SqlState::ObjectInUse,
                format!(
                    "{what} is being moved online by another session, whose transaction has not committed yet"
                ),
            )
            .with_detail(
                "pg_repack's swap would throw away whatever moved meanwhile, and the history would put the moves in the wrong order. Nothing was moved.",
            )
            .with_hint("Try again once that transaction ends.")
            .raise();
        }
        let other = as_owner(|| {
            Spi::get_one_with_args::<String>(
                "SELECT (SELECT pg_catalog.format('storlab job %s (%s, role %s)', j.id, j.status, j.role)
                           FROM storlab.jobs j
                          WHERE j.kind = 'move_online' AND j.status IN ('queued', 'running', 'cancelling')
                            AND j.database = pg_catalog.current_database()
                            AND j.args->'tables' @> pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('relation', $1::int8))
                          ORDER BY j.id LIMIT 1)",
                &[(table.to_u32() as i64).into()],
            )
        })
        .map_err(spi("reading storlab.jobs"))
        .or_raise();
        if let Some(other) = other {
            Error::new(
                SqlState::ObjectInUse,
                format!("{what} is being moved online, by {other}"),
            )
            .with_detail(
                "pg_repack's swap would throw away whatever moved meanwhile. Nothing was moved.",
            )
            .with_hint(
                "Wait for that job (CALL storlab.wait(id)), or cancel it with storlab.cancel(id).",
            )
            .raise();
        }
    }
}

/// Two sessions starting an online move of one table: the second waits for
/// no one, it is refused (55006) while the first's transaction, which
/// holds a transaction-level advisory lock on the table, is open; once it
/// commits, its job is what refuses the second.
pub(super) fn claim(tables: &[OnlineTable]) {
    for t in tables.iter().filter(|t| t.moves()) {
        let got = Spi::get_one_with_args::<bool>(
            "SELECT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtextextended(
                      'storlab: online move of ' || $1::oid::text || ' in ' || pg_catalog.current_database(), 0))",
            &[pg_sys::Oid::from(t.relation).into()],
        )
        .map_err(spi("claiming the table"))
        .or_raise();
        if got != Some(true) {
            Error::new(
                SqlState::ObjectInUse,
                format!(
                    "{} is being moved online by another session, whose transaction has not committed yet",
                    t.name
                ),
            )
            .with_hint("Try again once that transaction ends.")
            .raise();
        }
    }
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

/// An index does not move online alone through storlab.move: pg_repack
/// moves tables (with their indexes), REINDEX CONCURRENTLY every index of
/// a table (move_indexes_online).
pub(super) fn refuse_online_alone(relation: pg_sys::Oid) {
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
