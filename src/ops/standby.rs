//! A hot standby, and a read-only transaction: what storlab does where it
//! cannot write.
//!
//! - Readers answer from the replicated rows (they ask for no transaction
//!   id: `ops::read`).
//! - The probes (probe, profile, fsync_cost, check, regressions,
//!   compare_tablespaces) measure the standby's own storage, which is what a
//!   DBA wants of a failover target, and return the figures without storing
//!   them: each is kept in this session only, under a negative id, so that
//!   the same session's readers of probes (probe_latency, a check reusing
//!   young figures, compare_tablespaces' max_age) see it until the session
//!   ends. The rows replicated from the primary describe the primary's
//!   storage and are never taken for this server's.
//! - Everything that writes is refused with 25006 before it does anything.
//!
//! A read-only transaction on a primary (BEGIN READ ONLY,
//! default_transaction_read_only) is refused the same way: PostgreSQL would
//! refuse the INSERT only after the probe had run.

use std::cell::RefCell;

use pgrx::datum::{DatumWithOid, JsonB};
use pgrx::prelude::*;

use super::error::{Error, SqlState};
use storlab_core::record::{Probe, Record};

/// Is this server a hot standby (replaying its primary's WAL)?
pub fn in_recovery() -> bool {
    // SAFETY: reads shared recovery state.
    unsafe { pg_sys::RecoveryInProgress() }
}

/// Is the current transaction read-only (on a primary: BEGIN READ ONLY,
/// default_transaction_read_only; always, on a standby)?
fn read_only_transaction() -> bool {
    // SAFETY: reads a backend-global flag.
    unsafe { pg_sys::XactReadOnly }
}

/// Can this transaction write (a primary, not a read-only transaction)?
pub fn can_write() -> bool {
    !in_recovery() && !read_only_transaction()
}

/// 25006 unless this server and transaction can write: for every path that
/// stores a row, moves a relation, starts a job or removes results, before
/// it does anything. `what` completes "cannot ...": "move a relation".
pub fn refuse_writes(what: &str) -> Result<(), Error> {
    if in_recovery() {
        return Err(Error::new(
            SqlState::ReadOnlySqlTransaction,
            format!("cannot {what} on a hot standby"),
        )
        .with_detail(
            "This server is in recovery: it replays its primary's WAL and writes nothing of its own. Nothing was done.",
        )
        .with_hint(
            "Run it on the primary. On a standby, storlab's reports answer from the replicated rows, and probe(), profile(), fsync_cost(), check(), regressions() and compare_tablespaces() measure this server's own storage and return the figures without storing them.",
        ));
    }
    if read_only_transaction() {
        return Err(Error::new(
            SqlState::ReadOnlySqlTransaction,
            format!("cannot {what} in a read-only transaction"),
        )
        .with_detail("It stores its result in storlab's tables. Nothing was done.")
        .with_hint(
            "Call it in a read-write transaction (outside BEGIN READ ONLY, with default_transaction_read_only off).",
        ));
    }
    Ok(())
}

/// Can a probe's figures be kept: stored on a primary in a read-write
/// transaction, kept in the session on a standby; 25006 in a read-only
/// transaction on a primary, before the probe runs.
pub fn check_probes_can_be_kept() -> Result<(), Error> {
    if in_recovery() {
        Ok(())
    } else {
        refuse_writes("store a probe's figures")
    }
}

/// At the start of every call that measures: 25006 in a read-only
/// transaction on a primary; on a standby, a NOTICE that the figures are
/// this server's own and not stored.
pub fn measuring() {
    check_probes_can_be_kept().unwrap_or_else(|e| super::error::raise(e));
    notice_unstored();
}

/// Says once per call, on a standby, that the figures are not stored.
pub fn notice_unstored() {
    if in_recovery() {
        notice!(
            "storlab: this server is a hot standby: its own storage is measured, and the figures are returned, not stored (ids below 0 name them in this session only)"
        );
    }
}

/// Probes keep at most this many unstored rows a session (the oldest go):
/// a standby session that probes all day must not grow without bound.
const KEPT: usize = 1000;

thread_local! {
    /// This session's unstored probes, oldest first, as storlab.probes rows
    /// in jsonb (with their negative ids), and the last id given.
    static UNSTORED: RefCell<(Vec<serde_json::Value>, i64)> = const { RefCell::new((Vec::new(), 0)) };
}

/// Keeps a probe measured on a standby in this session; its id (negative:
/// -1, -2, ... in the order measured, never a stored probe's).
pub fn keep_unstored(probe: &Probe) -> i64 {
    UNSTORED.with(|u| {
        let (rows, last) = &mut *u.borrow_mut();
        *last -= 1;
        let mut row = probe.to_json();
        row["id"] = (*last).into();
        // the standby's own node, as a collector keys its figures
        row["node_id"] = super::server::standby_node_id()
            .map(|u| u.to_string().into())
            .unwrap_or(serde_json::Value::Null);
        if rows.len() >= KEPT {
            rows.remove(0);
        }
        rows.push(row);
        *last
    })
}

/// The probes readers of this server's own figures read from, as a FROM
/// item: storlab.probes, or on a standby this session's unstored probes,
/// given as the jsonb parameter `$param` (`probes_arg`).
pub fn probes_from(param: usize) -> String {
    if in_recovery() {
        format!(
            "pg_catalog.jsonb_populate_recordset(NULL::{}, ${param})",
            Probe::TABLE
        )
    } else {
        Probe::TABLE.to_string()
    }
}

/// Every probe a reader of given ids may be asked for, as a FROM item: the
/// stored ones (on a standby, the primary's replicated rows) and this
/// session's unstored ones, given as `$param` (`probes_arg`).
pub fn stored_and_unstored_probes(param: usize) -> String {
    format!(
        "(SELECT * FROM {t} UNION ALL SELECT * FROM pg_catalog.jsonb_populate_recordset(NULL::{t}, ${param}))",
        t = Probe::TABLE
    )
}

/// The parameter `probes_from` names: this session's unstored probes (an
/// empty array on a primary, where it is not read).
pub fn probes_arg() -> DatumWithOid<'static> {
    let rows = if in_recovery() {
        UNSTORED.with(|u| u.borrow().0.clone())
    } else {
        Vec::new()
    };
    JsonB(serde_json::Value::Array(rows)).into()
}
