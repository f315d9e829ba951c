//! What the end of a pg_repack run means for an online move's job: moved,
//! or which of its errors (the SQLSTATE, message and detail the waiting
//! CALL raises) says why not. Pure, from what the job saw: whether the
//! table is in its target now, what is left of pg_repack's objects, a stop
//! request, what its watcher of pg_locks found (a session queued behind
//! pg_repack, a transaction that did not let go) and what pg_repack said.
//! The job (`src/jobs/move_online/repack_run.rs`) gathers these and acts
//! on the outcome; the words are the user's, so they are all made here,
//! once.

use std::time::Duration;

use super::{queued_budget_ms, refusal, Phase, Refusal, Version};
use crate::error::{Error, SqlState};

/// How long the worker of a job that ended with pg_repack's objects left
/// on a table (their lock holder did not let go within lock_timeout) goes
/// on waiting for the holder, to remove them once it lets go.
pub const TIDY_FOR: Duration = Duration::from_secs(15 * 60);

/// What the job saw of one pg_repack run of a table, once it ended.
#[derive(Debug, Clone)]
pub struct RunEnd {
    /// schema-qualified and quoted, as the job names it
    pub table: String,
    /// the target tablespace
    pub to: String,
    /// where the table was before the run
    pub from: String,
    /// where the table is now; None when it is gone
    pub now: Option<String>,
    /// the call's lock_timeout
    pub lock_timeout_ms: u64,
    pub version: Version,
    /// the reason of a stop request (cancel(), a signal) that ended the
    /// run; not the job's own stops, whose reasons are the fields below
    pub stopped: Option<String>,
    /// pg_repack's objects still on the table after the job's cleanup
    pub left: Vec<String>,
    /// pg_repack's stdout and stderr
    pub said: String,
    /// the phase pg_repack was last seen in
    pub last_phase: Phase,
    /// another session queued behind pg_repack's locks for lock_timeout
    /// (every writer queued behind it), as the job's role sees it, and how
    /// long it had waited: the job stopped pg_repack for it
    pub behind: Option<(String, f64)>,
    /// who held the lock pg_repack's exclusive request stayed queued
    /// behind for longer than its budget: the job stopped pg_repack then
    pub held_by: Option<String>,
    /// the longest another session waited for a lock on the table, and
    /// the time during which one was waiting, in seconds
    pub others_max_s: f64,
    pub others_total_s: f64,
    /// who holds a lock on the table now ("no session any more" when no
    /// one does): read only when [`RunEnd::names_holders`] says so
    pub holders: Option<String>,
}

/// What became of the run, for the job.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// the table is in its target and pg_repack's objects are gone
    Moved,
    /// a stop request ended the run: the job ends cancelled with this
    Stopped(String),
    /// the job fails with this error
    Refused(Error),
    /// pg_repack ended without moving the table and without saying why:
    /// the job fails with this, no SQLSTATE of its own
    Failed(String),
}

impl RunEnd {
    /// Is the table in its target now (its rows are then written)?
    pub fn moved(&self) -> bool {
        self.now.as_deref() == Some(self.to.as_str())
    }

    /// Does the outcome say who holds a lock on the table now (pg_locks
    /// read for [`RunEnd::holders`])? When pg_repack's objects are left,
    /// and when the run gave up on a lock by itself.
    pub fn names_holders(&self) -> bool {
        !self.left.is_empty()
            || (self.stopped.is_none()
                && !self.moved()
                && self.behind.is_none()
                && self.held_by.is_none()
                && self.gave_up_on_a_lock())
    }

    /// Does the job's worker remove what is left once the job has ended
    /// (`tidy_after_end`)? Not after a stop request, which a server
    /// shutdown is too: the worker must exit then.
    pub fn tidied_later(&self) -> bool {
        !self.left.is_empty() && self.stopped.is_none()
    }

    fn gave_up_on_a_lock(&self) -> bool {
        match refusal(&self.said) {
            Some(Refusal::LockTimeout) => true,
            Some(Refusal::Said(words)) => words.contains("lock timeout"),
            None => false,
        }
    }

    fn holders(&self) -> &str {
        self.holders.as_deref().unwrap_or("no session any more")
    }

    /// What is left of pg_repack's objects, and who removes them.
    fn tidy(&self) -> String {
        if self.left.is_empty() {
            return "pg_repack's objects are removed".to_string();
        }
        let later = if self.tidied_later() {
            format!(
                "the job's worker removes them as soon as the sessions holding a lock on the table let go (for up to {} min after the job ends; storlab.jobs' detail->'tidy' says when), and ",
                TIDY_FOR.as_secs() / 60
            )
        } else {
            String::new()
        };
        format!(
            "pg_repack's objects could not be removed within lock_timeout: {} (a lock on the table is held by {}); every write to the table is logged into them until they go: {later}the next online move of the table removes them first; by hand: SELECT repack.repack_drop('{}'::regclass, 4)",
            self.left.join(", "),
            self.holders(),
            self.table.replace('\'', "''")
        )
    }

    /// The outcome: a stop request first (whatever else happened), then
    /// a move, then why the table did not move, the job's own reasons
    /// to stop pg_repack before pg_repack's words.
    pub fn outcome(&self) -> Outcome {
        let (table, to, from) = (&self.table, &self.to, &self.from);
        let tidy = self.tidy();
        if let Some(why) = &self.stopped {
            return Outcome::Stopped(if self.moved() {
                format!(
                    "{why}; {table} had been swapped into {to} already, and is recorded as moved; {tidy}"
                )
            } else {
                format!("{why}; {table} is where it was, in {from}; {tidy}")
            });
        }
        if self.moved() {
            return if self.left.is_empty() {
                Outcome::Moved
            } else {
                Outcome::Refused(Error::new(
                    SqlState::ObjectNotInPrerequisiteState,
                    format!("table {table} moved to {to}, but {tidy}"),
                ))
            };
        }
        let lock_timeout_ms = self.lock_timeout_ms;
        let stall = format!(
            "Meanwhile the table's writers waited for a lock {:.3} s at most, and some writer was waiting during {:.3} s in all",
            self.others_max_s, self.others_total_s
        );
        let lock = |message: String, detail: String| {
            Outcome::Refused(Error::new(SqlState::LockNotAvailable, message).with_detail(detail))
        };
        if let Some((session, waited)) = &self.behind {
            return lock(
                format!(
                    "could not move table {table} online: {session} was queued for a lock on it behind pg_repack's for {waited:.3} s, over lock_timeout ({lock_timeout_ms} ms), and every writer of the table queues behind such a request, so the job stopped pg_repack (it cancels no one)"
                ),
                format!(
                    "pg_repack's sessions ended, so that session's request waits for them no more. The table is where it was, in {from}; {tidy}. {stall}. Move the table again once that session is done.",
                ),
            );
        }
        if let Some(holders) = &self.held_by {
            return lock(
                format!(
                    "could not lock table {table} without holding up its writers: pg_repack's exclusive lock ({}) was queued for over {} ms behind a transaction that does not let go, so the job stopped it (it cancels no one)",
                    self.last_phase.as_str(),
                    queued_budget_ms(lock_timeout_ms)
                ),
                format!(
                    "Held by: {holders}.{} Every writer that arrives queues behind a queued ACCESS EXCLUSIVE request: pg_repack's retries would have held them up for up to lock_timeout. The table is where it was, in {from}; {tidy}. {stall}.",
                    autovacuum_in_the_way(holders, self.version)
                ),
            );
        }
        let held = format!(
            "Held by: {}. The table is where it was, in {from}; {tidy}. {stall}.",
            self.holders()
        );
        match refusal(&self.said) {
            Some(Refusal::LockTimeout) => lock(
                format!(
                    "could not lock table {table} within lock_timeout ({lock_timeout_ms} ms): pg_repack gave up on its exclusive lock, and cancelled no one"
                ),
                held,
            ),
            // a lock pg_repack's own session waited for past its
            // lock_timeout (the watcher names what it saw in the way first)
            Some(Refusal::Said(words)) if words.contains("lock timeout") => lock(
                format!(
                    "could not move table {table} online: a session of pg_repack waited for a lock past lock_timeout ({lock_timeout_ms} ms): {words}"
                ),
                held,
            ),
            Some(Refusal::Said(words)) => Outcome::Refused(
                Error::new(
                    SqlState::ObjectNotInPrerequisiteState,
                    format!("pg_repack did not move table {table}: {words}"),
                )
                .with_detail(format!("The table is where it was, in {from}; {tidy}.")),
            ),
            None => Outcome::Failed(format!(
                "pg_repack ended without moving table {table} and without saying why (its last phase: {}); the table is in {}",
                self.last_phase.as_str(),
                self.now.as_deref().unwrap_or("no tablespace: it is gone")
            )),
        }
    }
}

/// What to do about an autovacuum among the holders of a lock pg_repack
/// waited for (storlab cancels no one; `Version::keeps_autovacuum_out`).
fn autovacuum_in_the_way(holders: &str, version: Version) -> String {
    if !holders.contains("(autovacuum worker)") {
        return String::new();
    }
    format!(
        " An autovacuum of the table is in the way: PostgreSQL cancels one only for a lock request that waits deadlock_timeout, longer than pg_repack's attempts{}. VACUUM the table (it is then not due for one) and move it again.",
        if version.keeps_autovacuum_out() {
            String::new()
        } else {
            format!(", and pg_repack {version} lets one start during its copy")
        }
    )
}

/// The refusal before a run: a pg_repack runs on the table now (by hand,
/// or another tool's), whose objects are its own.
pub fn running_now(table: &str, pid: i32, from: &str) -> Error {
    Error::new(
        SqlState::ObjectInUse,
        format!("pg_repack runs on table {table} now (backend pid {pid})"),
    )
    .with_detail(format!(
        "Nothing was moved; the table is where it was, in {from}."
    ))
}

/// The refusal before a run: an earlier run cut short left its objects on
/// the table (pg_repack refuses a table with its trigger), and they could
/// not be removed.
pub fn left_before(table: &str, left: &[String]) -> Error {
    Error::new(
        SqlState::ObjectNotInPrerequisiteState,
        format!(
            "an interrupted pg_repack run left its objects on table {table}: {}",
            left.join(", ")
        ),
    )
    .with_detail(format!(
        "They could not be dropped within lock_timeout: a session holds a lock on the table. Drop them with SELECT repack.repack_drop('{}'::regclass, 4) once it ends; until then every write to the table is logged twice.",
        table.replace('\'', "''")
    ))
}

#[cfg(test)]
mod tests;
