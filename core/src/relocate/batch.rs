//! One batch of moves, step by step, as the mover decides it: what the
//! call copies, whether it takes a batch id, how a lock it could not take
//! is refused, what a relation read again once locked means (moved
//! meanwhile, dropped), what is left of lock_timeout for the ALTER, and
//! the words of each step's note and of the call's warnings. Pure, from
//! what the mover read of the catalog and the filesystems; the mover
//! (`src/ops/relocate/mover.rs`) takes the locks, runs the ALTERs and
//! records the rows. The words are the user's, so they are made here, once.

use std::time::Duration;

use super::{human_bytes, note, Kind, SpaceAfter};
use crate::error::{Error, SqlState};

#[cfg(test)]
mod tests;

/// What a step's relation is, as the mover read it (in a move: again,
/// once it was locked).
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub kind: Kind,
    /// schema-qualified and quoted
    pub qualified: &'a str,
    /// an index's table
    pub table: Option<&'a str>,
    /// what the move copies
    pub bytes: i64,
    /// permanent: a reboot of volatile storage loses it
    pub logged: bool,
    /// its main file is not where the catalog says: `bytes` is unknown
    pub files_missing: bool,
}

/// The bytes a call copies in all: those of every relation with storage.
pub fn call_bytes(steps: impl IntoIterator<Item = (Kind, i64)>) -> i64 {
    steps
        .into_iter()
        .filter(|(kind, _)| kind.has_storage())
        .map(|(_, bytes)| bytes)
        .sum()
}

/// Does the call take a batch id? Only a move that moves something: a
/// dry run stores nothing, and an empty plan has nothing to group.
pub fn takes_batch(dry_run: bool, steps: usize) -> bool {
    !dry_run && steps > 0
}

/// How a relation whose lock is waited for is named in its 55P03.
pub fn lock_target(kind: Kind, qualified: &str) -> String {
    format!("{} {}", kind.as_str(), qualified)
}

/// How a relation's TOAST table or TOAST index (`part`) is named.
pub fn toast_target(part: &str, what: &str) -> String {
    format!("the TOAST {part} of {what}")
}

/// The 55P03 of a lock not taken within the call's lock_timeout, naming
/// who holds it (None: no session any more).
pub fn lock_refused(what: &str, timeout: Duration, holders: Option<String>) -> Error {
    let holders =
        holders.unwrap_or_else(|| "no session any more (it let go as storlab gave up)".into());
    Error::new(
        SqlState::LockNotAvailable,
        format!(
            "could not lock {what} within lock_timeout ({} ms): another session is using it",
            timeout.as_millis()
        ),
    )
    .with_detail(format!("Held by: {holders}. Nothing was moved."))
}

/// What a step's relation, read again once it is locked, means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relocked {
    /// it is still to move
    Move,
    /// nothing to move: the NOTICE that says why
    Skip(String),
}

/// A step's relation read again after its lock: `planned` is its name in
/// the plan, `now` its name and tablespace now (None: it was dropped).
pub fn relocked(planned: &str, now: Option<(&str, &str)>, to: &str) -> Relocked {
    match now {
        None => Relocked::Skip(format!(
            "storlab: {planned} was dropped while storlab waited for it; nothing to move"
        )),
        Some((qualified, tablespace)) if tablespace == to => Relocked::Skip(format!(
            "storlab: {qualified} is already in {to} (moved by another session meanwhile); nothing to move"
        )),
        Some(_) => Relocked::Move,
    }
}

/// lock_timeout for a step's ALTER (its own further locks, an index's
/// table): what the call's limit left after the wait for the step's
/// locks, 1 ms at least, as the setting's text.
pub fn lock_timeout_left(limit: Duration, waited: Duration) -> String {
    let left = limit.saturating_sub(waited).max(Duration::from_millis(1));
    format!("{}ms", left.as_millis().max(1))
}

/// A step's note, and what it says besides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepNote {
    pub note: String,
    /// a logged relation moved onto volatile storage: the call's warning
    /// names it once the moves are done (never in a dry run)
    pub onto_volatile: bool,
    /// a dry run's WARNING for a relation whose files cannot be found
    pub missing: Option<String>,
}

/// The note of a step to `to`: what the move does to other sessions (or
/// why its size is unknown), that `to` is volatile storage (`volatile`:
/// what it is on) for a logged relation, and in a dry run what `to` has
/// left once the call copied (`after`).
pub fn step_note(
    rel: &Facts,
    to: &str,
    call_bytes: i64,
    volatile: Option<&str>,
    dry_run: bool,
    after: Option<&SpaceAfter>,
) -> StepNote {
    let mut text = if rel.files_missing {
        // nothing to say of a copy whose size is unknown: the move would fail
        format!(
            "its files cannot be found: the size to copy is unknown, and ALTER ... SET TABLESPACE would fail (a tmpfs tablespace after a reboot?); the call copies {} besides",
            human_bytes(call_bytes)
        )
    } else {
        note(rel.kind, rel.qualified, rel.table, rel.bytes, call_bytes)
    };
    let mut onto_volatile = false;
    if let Some(fs) = volatile.filter(|_| rel.logged && rel.kind.has_storage()) {
        text.push_str(&format!(
            "; {to} is volatile storage ({fs}): a reboot loses this logged relation's files"
        ));
        onto_volatile = !dry_run;
    }
    if let (true, false, Some(a)) = (dry_run, rel.files_missing, after) {
        // the plan says what the target has left once the call copied
        text.push_str(&format!(
            "; {to} has {} free now, {} after this call{}",
            human_bytes(a.free as i64),
            human_bytes(a.left()),
            if a.fits() {
                String::new()
            } else {
                format!(
                    ": does not fit (storlab.min_free_bytes keeps {} free)",
                    human_bytes(a.reserve as i64)
                )
            }
        ));
    }
    let missing = (rel.files_missing && dry_run).then(|| {
        format!(
            "storlab: the files of {} cannot be found: bytes to copy unknown (NULL), and the move itself would fail",
            rel.qualified
        )
    });
    StepNote {
        note: text,
        onto_volatile,
        missing,
    }
}

/// The call's WARNING for the logged relations it moved onto `tablespace`,
/// volatile storage on `fs`.
pub fn volatile_warning(tablespace: &str, fs: &str, moved: &[String]) -> String {
    format!(
        "storlab: durable data moved onto volatile storage: {tablespace} is on {fs}, which a reboot empties; {} logged relation(s) went there ({}): after a reboot their files are gone and the database with them",
        moved.len(),
        moved.join(", ")
    )
}
