//! `storlab.prune_cutoff()`: the checks `CALL storlab.prune()` makes before
//! it deletes anything (sql/catalog/prune.sql), and the cutoff it deletes
//! before. It deletes nothing itself.

use pgrx::datum::{Interval, TimestampWithTimeZone};
use pgrx::prelude::*;

use crate::ops::error::required;
use crate::ops::prune;

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
    prune::cutoff(older_than, required(dry_run, "dry_run"))
}
