//! `storlab.check_writable(what)`: the refusal every path that writes makes
//! on a hot standby or in a read-only transaction (25006, before it does
//! anything), for storlab's PL/pgSQL functions (the fleet's), so that they
//! say it in the same words as the rest (`ops::standby`).

use pgrx::prelude::*;

use crate::ops::error::{required, OrRaise};
use crate::ops::standby;

/// Raises 25006 "cannot WHAT on a hot standby" (or "in a read-only
/// transaction") where nothing can be written; does nothing otherwise.
#[pg_extern(stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn check_writable(what: Option<String>) {
    let _called = crate::ops::error::called("storlab.check_writable");
    standby::refuse_writes(&required(what, "what")).or_raise();
}
