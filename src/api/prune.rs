//! `storlab.prune_cutoff()`: the checks `CALL storlab.prune()` makes before
//! it deletes anything (sql/catalog/prune.sql), and the cutoff it deletes
//! before. It deletes nothing itself.

use pgrx::datum::{Interval, TimestampWithTimeZone};
use pgrx::prelude::*;

use super::interval_micros;
use crate::ops::error::{required, OrRaise};
use crate::ops::prune;
use storlab_core::request::prune::check_age;

/// The cutoff of a prune of results older than `older_than`: now() minus
/// that age, once the age is positive (22023), the caller is a superuser
/// or storlab's owner (42501) and, unless `dry_run`, the call is outside a
/// transaction block (25001).
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn prune_cutoff(
    older_than: Option<Interval>,
    dry_run: default!(Option<bool>, false),
) -> TimestampWithTimeZone {
    let _called = crate::ops::error::called("storlab.prune_cutoff");
    let shown = older_than
        .as_ref()
        .map(|i| i.to_string())
        .unwrap_or_else(|| "NULL".into());
    check_age(older_than.as_ref().map(interval_micros), &shown).or_raise();
    let older_than = older_than.expect("check_age refuses NULL");
    prune::cutoff(older_than, required(dry_run, "dry_run"))
}
