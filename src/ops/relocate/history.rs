//! History and undo: storlab.relocations read back as the owner, each
//! relation followed to the oid it has now (storlab's online rebuilds, a
//! REINDEX CONCURRENTLY by hand), and moved back to where it was:
//! `undo_batch` (one batch, whole) and `restore_layout` (every batch since a
//! time), through the mover.

use std::collections::HashMap;
use std::time::Duration;

use pgrx::datum::TimestampWithTimeZone;
use pgrx::prelude::*;

use super::catalog::{rels, tablespace_now, Rel, RelocationRow, Step};
use super::checks::check_target;
use super::mover::{plan, run_steps};
use crate::ops::error::{spi, Error, OrRaise, Raise, SqlState};
use crate::ops::identity::as_owner;
use crate::ops::read;
use crate::ops::server::this_server;
use storlab_core::relocate::Kind;

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
    crate::ops::prune::refuse_restore_before_horizon(at);
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
    crate::ops::prune::refuse_undo_across_horizon(batch, !wanted.is_empty());
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
