//! Reading without a transaction id.
//!
//! pgrx 0.18's `Spi::get_one`, `get_one_with_args`, `get_two`,
//! `get_three_with_args` and `Spi::run` all go through `Spi::connect_mut`,
//! whose `update` calls `GetCurrentTransactionId()` before the query runs.
//! A reader built on them gives its transaction an xid and a commit record
//! (wraparound pressure from a monitoring job that polls a report), and on a
//! hot standby it fails with XX000 "cannot assign TransactionIds during
//! recovery". These helpers read through `SpiClient::select` instead, which
//! runs the query read-only while the transaction has no xid (on the calling
//! statement's snapshot, as a STABLE function's queries do) and read-write
//! once something earlier in the transaction wrote, so a reader still sees
//! its own transaction's rows.
//!
//! Use them for every query that only reads; keep `Spi::get_one*` and
//! `Spi::run*` for statements that write (INSERT, UPDATE, DELETE, DDL,
//! nextval), which need the xid anyway and are refused on a standby before
//! they are reached (`ops::standby`).

use pgrx::datum::{DatumWithOid, FromDatum, IntoDatum};
use pgrx::prelude::*;
use pgrx::spi::Result;

/// The first column of the first row (an error when there is no row, as
/// `Spi::get_one` has it).
pub fn one<A: FromDatum + IntoDatum>(query: &str, args: &[DatumWithOid]) -> Result<Option<A>> {
    Spi::connect(|c| c.select(query, Some(1), args)?.first().get_one())
}

/// The first two columns of the first row.
pub fn two<A: FromDatum + IntoDatum, B: FromDatum + IntoDatum>(
    query: &str,
    args: &[DatumWithOid],
) -> Result<(Option<A>, Option<B>)> {
    Spi::connect(|c| c.select(query, Some(1), args)?.first().get_two())
}

/// The first three columns of the first row.
pub fn three<A: FromDatum + IntoDatum, B: FromDatum + IntoDatum, C: FromDatum + IntoDatum>(
    query: &str,
    args: &[DatumWithOid],
) -> Result<(Option<A>, Option<B>, Option<C>)> {
    Spi::connect(|c| c.select(query, Some(1), args)?.first().get_three())
}
