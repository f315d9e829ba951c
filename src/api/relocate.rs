//! Relocation in SQL: `storlab.layout()`, `move()`, `apply_layout()`,
//! `restore_layout()`, `undo_batch()`. The work is in `ops::relocate`.
//!
//! A call is one transaction: every relation is locked, moved and recorded in
//! storlab.relocations inside the caller's transaction, so an error or a
//! cancel leaves every relation where it was and no row behind. With
//! `online => true` a call checks and plans, and a job moves the tables
//! through pg_repack while writes go on (`ops::relocate::online`).

use std::time::Duration;

use pgrx::datum::{Interval, TimestampWithTimeZone};
use pgrx::prelude::*;

use super::interval_micros;
use crate::ops::error::{required, OrRaise};
use crate::ops::relocate;
use crate::sqltypes::{Name, RegClass};
use storlab_core::request::relocate::lock_timeout;

fn timeout_of(lock_timeout_arg: Option<Interval>) -> Duration {
    lock_timeout(interval_micros(&required(lock_timeout_arg, "lock_timeout"))).or_raise()
}

/// Moves a table (its TOAST goes along) and, with `with_indexes`, its indexes;
/// an index; a materialized view and its indexes; or a partitioned table's
/// every partition (and their indexes) and its default for future partitions.
#[pg_extern(volatile, parallel_unsafe, name = "move")]
#[search_path(pg_catalog, pg_temp)]
fn move_relation_or_online(
    relation: Option<RegClass>,
    tablespace: Option<Name>,
    with_indexes: default!(Option<bool>, true),
    lock_timeout: default!(Option<Interval>, "'5 seconds'"),
    dry_run: default!(Option<bool>, false),
    online: default!(Option<bool>, false),
) -> SetOfIterator<'static, pgrx::composite_type!('static, "relocations")> {
    let _called = crate::ops::error::called("storlab.move");
    crate::ops::standby::refuse_writes("move a relation").or_raise();
    let relation = required(relation, "relation");
    let tablespace = required(tablespace, "tablespace");
    let timeout = timeout_of(lock_timeout);
    SetOfIterator::new(relocate::move_relation(
        relation.0,
        tablespace.as_str(),
        required(with_indexes, "with_indexes"),
        timeout,
        required(dry_run, "dry_run"),
        required(online, "online"),
    ))
}

/// "Data here, indexes there" in one call: every table, partitioned table and
/// materialized view of a schema to `tables_tablespace`, every index to
/// `indexes_tablespace`; NULL leaves that part where it is.
#[pg_extern(volatile, parallel_unsafe, name = "apply_layout")]
#[search_path(pg_catalog, pg_temp)]
fn apply_layout_or_online(
    tables_tablespace: Option<Name>,
    indexes_tablespace: Option<Name>,
    schema_name: default!(Option<Name>, "'public'"),
    lock_timeout: default!(Option<Interval>, "'5 seconds'"),
    dry_run: default!(Option<bool>, false),
    online: default!(Option<bool>, false),
) -> SetOfIterator<'static, pgrx::composite_type!('static, "relocations")> {
    let _called = crate::ops::error::called("storlab.apply_layout");
    crate::ops::standby::refuse_writes("apply a layout").or_raise();
    let schema = required(schema_name, "schema_name");
    let timeout = timeout_of(lock_timeout);
    SetOfIterator::new(relocate::apply_layout(
        tables_tablespace,
        indexes_tablespace,
        schema,
        timeout,
        required(dry_run, "dry_run"),
        required(online, "online"),
    ))
}

/// Moves every relation that storlab moved since `at` back to where it was
/// at `at`, batch by batch, each whole or not at all. A relation is
/// restored only while it is still the one that was moved: the same oid,
/// name and kind. One dropped since, or whose oid now belongs to another
/// relation, is skipped with a NOTICE.
#[pg_extern(volatile, parallel_unsafe, name = "restore_layout")]
#[search_path(pg_catalog, pg_temp)]
fn restore_layout_or_online(
    at: Option<TimestampWithTimeZone>,
    lock_timeout: default!(Option<Interval>, "'5 seconds'"),
    online: default!(Option<bool>, false),
) -> SetOfIterator<'static, pgrx::composite_type!('static, "relocations")> {
    let _called = crate::ops::error::called("storlab.restore_layout");
    crate::ops::standby::refuse_writes("restore a layout").or_raise();
    let at = required(at, "at");
    let timeout = timeout_of(lock_timeout);
    SetOfIterator::new(relocate::restore_layout(
        at,
        timeout,
        required(online, "online"),
    ))
}

/// Undoes one batch (one call) of storlab.relocations: each of its relations
/// goes back to where that call took it from, whole or not at all.
#[pg_extern(volatile, parallel_unsafe, name = "undo_batch")]
#[search_path(pg_catalog, pg_temp)]
fn undo_batch_or_online(
    batch_id: Option<i64>,
    lock_timeout: default!(Option<Interval>, "'5 seconds'"),
    online: default!(Option<bool>, false),
) -> SetOfIterator<'static, pgrx::composite_type!('static, "relocations")> {
    let _called = crate::ops::error::called("storlab.undo_batch");
    crate::ops::standby::refuse_writes("undo a batch of moves").or_raise();
    let batch = required(batch_id, "batch_id");
    let timeout = timeout_of(lock_timeout);
    SetOfIterator::new(relocate::undo_batch(
        batch,
        timeout,
        required(online, "online"),
    ))
}

// The C symbols of these four before 0.8.0 added `online`: an install not
// updated yet (new binaries, ALTER EXTENSION storlab UPDATE not run) still
// calls them with the arguments it declares, so each stays, with its old
// arguments, and moves as it always did (never online). No SQL object of
// 0.8.0 names them (`sql = false`).

#[pg_extern(volatile, parallel_unsafe, sql = false)]
fn move_relation(
    relation: Option<RegClass>,
    tablespace: Option<Name>,
    with_indexes: Option<bool>,
    lock_timeout: Option<Interval>,
    dry_run: Option<bool>,
) -> SetOfIterator<'static, pgrx::composite_type!('static, "relocations")> {
    let _called = crate::ops::error::called("storlab.move");
    move_relation_or_online(
        relation,
        tablespace,
        with_indexes,
        lock_timeout,
        dry_run,
        Some(false),
    )
}

#[pg_extern(volatile, parallel_unsafe, sql = false)]
fn apply_layout(
    tables_tablespace: Option<Name>,
    indexes_tablespace: Option<Name>,
    schema_name: Option<Name>,
    lock_timeout: Option<Interval>,
    dry_run: Option<bool>,
) -> SetOfIterator<'static, pgrx::composite_type!('static, "relocations")> {
    let _called = crate::ops::error::called("storlab.apply_layout");
    apply_layout_or_online(
        tables_tablespace,
        indexes_tablespace,
        schema_name,
        lock_timeout,
        dry_run,
        Some(false),
    )
}

#[pg_extern(volatile, parallel_unsafe, sql = false)]
fn restore_layout(
    at: Option<TimestampWithTimeZone>,
    lock_timeout: Option<Interval>,
) -> SetOfIterator<'static, pgrx::composite_type!('static, "relocations")> {
    let _called = crate::ops::error::called("storlab.restore_layout");
    restore_layout_or_online(at, lock_timeout, Some(false))
}

#[pg_extern(volatile, parallel_unsafe, sql = false)]
fn undo_batch(
    batch_id: Option<i64>,
    lock_timeout: Option<Interval>,
) -> SetOfIterator<'static, pgrx::composite_type!('static, "relocations")> {
    let _called = crate::ops::error::called("storlab.undo_batch");
    undo_batch_or_online(batch_id, lock_timeout, Some(false))
}

/// Every table, index, TOAST table and index, materialized view, partitioned
/// table and index of one schema (or every user schema): where it lives and
/// how much it holds, logically and on the filesystem.
#[pg_extern(stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn layout(
    schema_name: default!(Option<Name>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(relation, RegClass),
        name!(kind, String),
        name!(parent, Option<RegClass>),
        name!(tablespace, Name),
        name!(logical_bytes, Option<i64>),
        name!(allocated_bytes, Option<i64>),
    ),
> {
    let _called = crate::ops::error::called("storlab.layout");
    TableIterator::new(relocate::layout(schema_name))
}
