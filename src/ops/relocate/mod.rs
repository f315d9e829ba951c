//! Relocation: where relations live (`layout`), and moving them (`move`,
//! `apply_layout`, `restore_layout`), run as the caller: storlab moves only
//! what the caller could move by hand. Only the history rows are written as
//! the extension's owner.
//!
//! A call is one transaction: every relation is locked, moved and recorded in
//! storlab.relocations inside the caller's transaction, so an error or a
//! cancel leaves every relation where it was and no row behind.
//!
//! Its parts, each using only those above it:
//! - `catalog`: what a move reads of the catalog (no locks), a plan's step
//!   and the row a call returns;
//! - `checks`: what refuses a call before anything is locked or moved (an
//!   online move's claim on its tables among them, beside every other
//!   move's check against it);
//! - `online`: an online move's checks at the call (pg_repack there and
//!   agreeing, a key, no invalid index), its plan handed to a job;
//! - `mover`: a call's plan, locked, moved and recorded in this
//!   transaction, or handed to `online`;
//! - `history`: the history read back, and undone (`undo_batch`,
//!   `restore_layout`) through the mover;
//! - `layout`: the `layout()` reader.

mod catalog;
mod checks;
mod history;
mod layout;
mod mover;
mod online;

pub use catalog::{index_identity, lock_holders, where_now, RelocationRow};
pub use checks::{check_movable, check_target, refuse_moving_online};
pub use history::{restore_layout, undo_batch};
pub use layout::{layout, LayoutRow};
pub use mover::{apply_layout, apply_pgbench_placement, move_relation};
