//! `storlab.prune()`: its checks before anything is deleted (the age, who
//! may prune, whether it may commit as it goes), and the horizon a prune
//! leaves in the relocation history, which undo_batch and restore_layout
//! respect. The deleting itself is the procedure's, in SQL
//! (sql/catalog/prune.sql), batch by batch.

use pgrx::datum::{Interval, TimestampWithTimeZone};
use pgrx::prelude::*;

use super::error::{spi, Error, OrRaise, Raise, SqlState};
use super::identity::{
    as_owner, current_user, extension_owner, has_privs_of, is_superuser, role_name,
};
use super::read;

/// The cutoff of a prune, `now() - older_than` (an age the caller checked
/// positive: `request::prune::check_age`), once the caller may delete
/// stored results (42501) and, unless it is a dry run, the call may commit
/// between batches (25001): never inside a transaction block, which would
/// hold every batch's locks and dead rows to its end.
pub fn cutoff(older_than: Interval, dry_run: bool) -> TimestampWithTimeZone {
    let me = current_user();
    let owner = extension_owner();
    if !is_superuser(me) && !has_privs_of(owner) {
        Error::new(
            SqlState::InsufficientPrivilege,
            "permission denied to prune storlab's results",
        )
        .with_detail(format!(
            "Only a superuser or storlab's owner ({}, who owns its tables) may delete stored results; role {} is neither. Nothing was deleted.",
            role_name(owner),
            role_name(me)
        ))
        .raise();
    }
    if !dry_run {
        // a dry run only counts: it works on a standby too
        super::standby::refuse_writes("prune stored results").or_raise();
    }
    // SAFETY: a plain read of the transaction state.
    if !dry_run && unsafe { pg_sys::IsTransactionBlock() } {
        Error::new(
            SqlState::ActiveSqlTransaction,
            "storlab.prune cannot run inside a transaction block",
        )
        .with_detail("It commits after each batch of deletes, so that no lock and no dead row is held for the whole prune. Nothing was deleted.")
        .with_hint("CALL it on its own, outside BEGIN ... COMMIT; a dry run (dry_run => true) works anywhere.")
        .raise();
    }
    read::one::<TimestampWithTimeZone>(
        "SELECT pg_catalog.now() OPERATOR(pg_catalog.-) $1",
        &[older_than.into()],
    )
    .map_err(spi("computing the cutoff"))
    .or_raise()
    .expect("a timestamp minus an interval")
}

/// The newest prune that deleted relocations and whose horizon a question
/// about the history crosses (`condition` on `p`, with `$1`): its cutoff and
/// when it ran, as text.
fn crossing_prune(
    condition: &str,
    arg: pgrx::datum::DatumWithOid<'static>,
) -> Option<(String, String)> {
    let query = format!(
        "SELECT p.cutoff::pg_catalog.text, p.started_at::pg_catalog.text FROM storlab.prunes p
          WHERE p.relocations OPERATOR(pg_catalog.>) 0 AND {condition}
          ORDER BY p.cutoff DESC LIMIT 1"
    );
    as_owner(|| {
        Spi::connect(|c| {
            c.select(&query, None, &[arg])?
                .next()
                .map(|r| {
                    Ok((
                        r.get::<String>(1)?.expect("cutoff"),
                        r.get::<String>(2)?.expect("started_at"),
                    ))
                })
                .transpose()
        })
        .map_err(spi("reading storlab.prunes"))
        .or_raise()
    })
}

/// 22023 when `at` is before the horizon of a prune that deleted
/// relocations: the history since `at` has a hole, and restoring from it
/// would move some relations back and silently leave others.
pub fn refuse_restore_before_horizon(at: TimestampWithTimeZone) {
    if let Some((cutoff, when)) = crossing_prune("$1 OPERATOR(pg_catalog.<) p.cutoff", at.into()) {
        Error::new(
            SqlState::InvalidParameterValue,
            format!("cannot restore the layout of {at}: storlab.prune deleted the relocation history before {cutoff}"),
        )
        .with_detail(format!("The prune of {when} kept only the moves at or after its horizon, {cutoff}. Nothing was moved."))
        .with_hint("Restore to a time at or after the horizon (storlab.prunes lists every prune).")
        .raise();
    }
}

/// 22023 for undo_batch of a batch at or before the newest one a prune
/// deleted (`relocation_batches_upto`): either the batch itself is gone, or
/// a later batch that may have moved its relations again is, and the check
/// that refuses such an undo (55000) could no longer see it. `exists`: the
/// batch is still in the history (a batch that was under way across the
/// cutoff, while a later, shorter one ended before it).
pub fn refuse_undo_across_horizon(batch: i64, exists: bool) {
    if let Some((cutoff, when)) = crossing_prune(
        "$1 OPERATOR(pg_catalog.<=) p.relocation_batches_upto",
        batch.into(),
    ) {
        let (message, detail) = if exists {
            (
                format!("cannot undo relocation batch {batch}: storlab.prune deleted later batches, which the history cut at {cutoff} no longer shows"),
                format!("The prune of {when} deleted batches numbered after this one; they may have moved its relations again. Nothing was moved."),
            )
        } else {
            (
                format!("cannot undo relocation batch {batch}: it is not in the history any more, which storlab.prune cut at {cutoff}"),
                format!("The prune of {when} deleted the batches whose moves were all before {cutoff}. Nothing was moved."),
            )
        };
        Error::new(SqlState::InvalidParameterValue, message)
            .with_detail(detail)
            .with_hint("storlab.layout() shows where each relation is now; move it by hand with storlab.move().")
            .raise();
    }
}
