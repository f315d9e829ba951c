//! The watcher of a pg_repack run: pg_repack's phase from its `--echo`
//! output, pg_locks sampled for the writers' longest wait and for another
//! session queued behind pg_repack, pg_repack's own waits for its exclusive
//! locks and the transactions that keep them queued, and the job's stop
//! requests; it says when the job stops pg_repack, and why.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pgrx::prelude::*;

use super::shared::{describe_session, show_phase, QUIET, SAMPLE};
use crate::jobs::job::{as_caller, Job};
use crate::jobs::stop::{stop_requested_after, wait_signalled};
use crate::ops::read;
use crate::ops::relocate::lock_holders;
use storlab_core::repack::{self, Phase, PhaseTracker};
use storlab_core::request::relocate::OnlineTable;

/// The stop reason of a pg_repack run that gave up on its lock and did not
/// finish removing its objects in time.
const GAVE_UP: &str = "pg_repack gave up on its lock and was still removing its objects";

/// The stop reason of a pg_repack run whose attempts at an exclusive lock
/// one transaction kept queued longer than `repack::queued_budget_ms`.
const QUEUED_TOO_LONG: &str = "pg_repack's exclusive lock was queued too long";

/// The stop reason of a pg_repack run that another session's request (DDL,
/// LOCK TABLE) was queued behind for lock_timeout, the writers behind it.
const BEHIND_REPACK: &str = "a session was queued behind pg_repack's locks for lock_timeout";

/// One pg_repack run of a table watched: [`Watcher::look`] is called
/// between the program's polls and returns the reason to stop it, if any.
pub(super) struct Watcher<'a> {
    job: &'a Job,
    t: &'a OnlineTable,
    oid: pg_sys::Oid,
    /// the call's lock_timeout
    limit: Duration,
    /// the relations whose locks a writer of the table needs
    relations: Vec<pg_sys::Oid>,
    /// when the run began, as PostgreSQL's clock said it
    since: String,
    stderr_path: PathBuf,
    tracker: PhaseTracker,
    /// how much of pg_repack's stderr has been read
    read: u64,
    /// each phase seen, with when it was first seen
    pub(super) phases: Vec<(Phase, Instant)>,
    pub(super) waits: Waits,
    last_check: Instant,
    /// pg_repack gave up on a lock: it removes its objects then, and 1.4
    /// retries that (reconnecting) for as long as a session holds a lock on
    /// the table; it gets lock_timeout and 2 s for it, then the job stops
    /// it and tidies itself
    gave_up_at: Option<Instant>,
    tidy_limit: Duration,
    last_sample: Option<Instant>,
    /// pg_repack's sessions
    own: Vec<i32>,
    /// who held the lock pg_repack's exclusive request stayed queued behind
    pub(super) held_by: Option<String>,
    /// another session queued behind pg_repack for lock_timeout: it, as the
    /// job's role sees it, and how long it had waited
    pub(super) behind: Option<(String, f64)>,
    /// the soonest another session's queued request reaches lock_timeout
    due: Option<Duration>,
    budget_ms: u64,
}

impl<'a> Watcher<'a> {
    pub(super) fn new(
        job: &'a Job,
        t: &'a OnlineTable,
        lock_timeout_ms: u64,
        relations: Vec<pg_sys::Oid>,
        since: String,
        dir: &Path,
    ) -> Self {
        Watcher {
            job,
            t,
            oid: pg_sys::Oid::from(t.relation),
            limit: Duration::from_millis(lock_timeout_ms),
            relations,
            since,
            stderr_path: dir.join("stderr"),
            tracker: PhaseTracker::default(),
            read: 0,
            phases: vec![(Phase::Starting, Instant::now())],
            waits: Waits::default(),
            last_check: Instant::now(),
            gave_up_at: None,
            tidy_limit: Duration::from_millis(lock_timeout_ms) + Duration::from_secs(2),
            last_sample: None,
            own: Vec::new(),
            held_by: None,
            behind: None,
            due: None,
            budget_ms: repack::queued_budget_ms(lock_timeout_ms),
        }
    }

    /// One look between pg_repack's polls: its phase, pg_locks when due,
    /// the job's status; the reason to stop pg_repack, if there is one.
    pub(super) fn look(&mut self) -> Option<String> {
        // what pg_repack echoed since the last look: the phase
        let now = self
            .tracker
            .feed(&read_from(&self.stderr_path, &mut self.read));
        if self.phases.last().map(|p| p.0) != Some(now) {
            self.phases.push((now, Instant::now()));
            show_phase(self.job, self.t, now.as_str());
        }
        if self.tracker.gave_up() {
            let at = *self.gave_up_at.get_or_insert_with(Instant::now);
            if at.elapsed() > self.tidy_limit {
                return Some(GAVE_UP.to_string());
            }
        }
        // pg_locks is read under every partition lock of the lock manager,
        // which each session's locking then waits for: often only while
        // pg_repack takes or holds its exclusive lock (the only time its
        // own request can block the table's writers), seldom otherwise,
        // and when another session's queued request reaches lock_timeout
        let cadence = if now.exclusive() { SAMPLE } else { QUIET };
        let every = |due: Option<Duration>| due.map_or(cadence, |d| d.clamp(SAMPLE, cadence));
        if self
            .last_sample
            .is_none_or(|at| at.elapsed() >= every(self.due))
        {
            if self.last_sample.is_none_or(|at| at.elapsed() >= QUIET) || self.own.len() < 2 {
                self.own = repack_pids(&self.job.role, &self.since);
            }
            let gap = self
                .last_sample
                .map_or(0.0, |at| at.elapsed().as_secs_f64());
            let lock = now.exclusive_lock().unwrap_or(0);
            let look = sample(
                &self.relations,
                &self.own,
                lock,
                gap,
                self.limit,
                &mut self.waits,
            );
            self.due = look.due;
            self.last_sample = Some(Instant::now());
            // a session queued behind pg_repack (DDL, a LOCK TABLE) for
            // lock_timeout, every writer queued behind it: pg_repack goes,
            // so that it goes through
            if let Some((pid, waited)) = look.behind {
                self.behind = Some((describe_session(pid), waited));
                terminate(&self.own);
                return Some(BEHIND_REPACK.to_string());
            }
            // queued behind something that does not let go: stopped before
            // the writers queue behind its retries for the whole wait
            let budget = Duration::from_millis(self.budget_ms);
            if lock > 0 && self.waits.longest_in_way(lock) > budget {
                // what keeps it queued may itself be queued behind
                // pg_repack's other session: a wait for each other
                let pids = self.waits.in_way_pids(lock, budget);
                if let Some((pid, waited)) = queued_behind_own(&self.relations, &self.own, &pids) {
                    self.behind = Some((describe_session(pid), waited));
                    terminate(&self.own);
                    return Some(BEHIND_REPACK.to_string());
                }
                let oid = self.oid;
                self.held_by = as_caller(|| Ok::<_, pgrx::spi::Error>(lock_holders(oid)));
                // its queued request goes at once, with its sessions; the
                // program follows (process::run stops it)
                terminate(&self.own);
                return Some(QUEUED_TOO_LONG.to_string());
            }
        }
        // the job's status every 250 ms, and at once when the latch is set
        // (a committed cancel() sets it) or a signal came (kept for the
        // look below: this wait is the one that sees it)
        let signalled = wait_signalled(every(self.due));
        if signalled || self.last_check.elapsed() >= QUIET {
            self.last_check = Instant::now();
            return stop_requested_after(self.job.id, Duration::ZERO);
        }
        None
    }

    /// Once pg_repack has ended: the rest of its stderr (`stderr`, whole),
    /// a last line without its newline too; the phase it was last in.
    pub(super) fn finish(&mut self, stderr: &str) -> Phase {
        self.tracker
            .feed(stderr.get(self.read as usize..).unwrap_or_default());
        let last_phase = self.tracker.finish();
        if self.phases.last().map(|p| p.0) != Some(last_phase) {
            self.phases.push((last_phase, Instant::now()));
        }
        last_phase
    }

    /// Did the run make objects of its own? Not a run refused at its start
    /// (another pg_repack holds the table's advisory lock): the objects
    /// there are that other run's.
    pub(super) fn made(&self) -> bool {
        self.phases
            .iter()
            .any(|p| p.0 != Phase::Starting && p.0 != Phase::SetupLock)
    }
}

/// Was `why` a stop of the job's own, not a cancel? The outcome (RunEnd)
/// then says why.
pub(super) fn stopped_itself(why: &str) -> bool {
    why == GAVE_UP || why == QUEUED_TOO_LONG || why == BEHIND_REPACK
}

/// What the sampling saw of the locks on the table while pg_repack ran.
#[derive(Default)]
pub(super) struct Waits {
    /// the longest wait of any other session, in seconds
    pub(super) others_max: f64,
    /// the time during which some other session was waiting, summed over
    /// the samples that saw one (each counts the time since the sample
    /// before it)
    pub(super) others_total: f64,
    /// pg_repack's own waits for its locks: each wait (pid, start) with the
    /// longest it was seen to last
    own: HashMap<(i32, String), f64>,
    /// The transactions that kept pg_repack's requests queued: each
    /// (exclusive lock, blocker's pid and virtual transaction id) with when
    /// the sampling first and last saw it in the way. A transaction is
    /// known by its virtual transaction id, which every role may read in
    /// pg_locks (xact_start is hidden from a role without
    /// pg_read_all_stats): a writer's next transaction is another one.
    in_way: HashMap<(u8, String), (Instant, Instant)>,
}

impl Waits {
    pub(super) fn own_total(&self) -> f64 {
        // from +0.0: the sum of no f64 is -0.0, which a note printed as
        // "queued -0.000 s"
        self.own.values().fold(0.0, |a, b| a + b)
    }

    /// The backends (pid 0: a prepared transaction) that have kept
    /// pg_repack's attempts at its exclusive lock `lock` queued longer
    /// than `budget`.
    fn in_way_pids(&self, lock: u8, budget: Duration) -> Vec<i32> {
        self.in_way
            .iter()
            .filter(|(k, (first, last))| k.0 == lock && last.duration_since(*first) > budget)
            .filter_map(|(k, _)| k.1.split(' ').next()?.parse().ok())
            .collect()
    }

    /// The longest one transaction has kept pg_repack's attempts at its
    /// exclusive lock `lock` queued so far. Not the attempts' queued time
    /// in all: under a busy write load each attempt waits for the
    /// transactions in flight when it was made, and on a slow machine
    /// several of its first, short attempts (100 ms, 200 ms, ...) can
    /// time out one after the other behind different, short transactions
    /// that all let go; pg_repack then gets its lock. Only a transaction
    /// that stays in the way is a reason to stop it.
    fn longest_in_way(&self, lock: u8) -> Duration {
        self.in_way
            .iter()
            .filter(|(k, _)| k.0 == lock)
            .map(|(_, (first, last))| last.duration_since(*first))
            .max()
            .unwrap_or_default()
    }
}

/// Every relation whose locks a writer of the table needs: the table, its
/// TOAST table and index, its indexes.
pub(super) fn locked_relations(oid: pg_sys::Oid) -> Vec<pg_sys::Oid> {
    as_caller(|| {
        read::one::<Vec<pg_sys::Oid>>(
            "SELECT ARRAY(SELECT $1::oid
                          UNION ALL SELECT c.reltoastrelid FROM pg_catalog.pg_class c WHERE c.oid = $1 AND c.reltoastrelid <> 0
                          UNION ALL SELECT i.indexrelid FROM pg_catalog.pg_index i
                                     WHERE i.indrelid = $1
                                        OR i.indrelid = (SELECT c.reltoastrelid FROM pg_catalog.pg_class c WHERE c.oid = $1))",
            &[oid.into()],
        )
    })
    .unwrap_or_else(|| vec![oid])
}

/// pg_repack's sessions: its application_name, the job's role, started
/// since the run began. Read apart from pg_locks, and less often.
fn repack_pids(role: &str, since: &str) -> Vec<i32> {
    as_caller(|| {
        read::one::<Vec<i32>>(
            "SELECT ARRAY(SELECT a.pid FROM pg_catalog.pg_stat_activity a
                           WHERE a.application_name = 'pg_repack' AND a.usename = $1
                             AND a.backend_start >= $2::timestamptz)",
            &[role.into(), since.into()],
        )
    })
    .unwrap_or_default()
}

/// Ends pg_repack's sessions (the job's role's own) at once.
fn terminate(pids: &[i32]) {
    as_caller(|| {
        read::one::<i64>(
            "SELECT pg_catalog.count(pg_catalog.pg_terminate_backend(p)) FROM pg_catalog.unnest($1::int4[]) p",
            &[pids.to_vec().into()],
        )
    });
}

/// What one look at pg_locks found beyond the figures it adds to `Waits`.
#[derive(Default)]
struct Look {
    /// another session queued for a lock on the table or its indexes
    /// behind pg_repack's own locks (held or queued) for lock_timeout:
    /// its pid and how long it has waited
    behind: Option<(i32, f64)>,
    /// the soonest another session's queued request reaches lock_timeout
    due: Option<Duration>,
}

/// One look at pg_locks: each lock request on `relations` not granted yet,
/// by pid, how long it has waited; pg_repack's own (`own`) apart, with the
/// transactions in their way while it is after its exclusive lock `lock`
/// (by pg_blocking_pids, asked only then and only while pg_repack waits:
/// it takes the lock manager's partition locks exclusively). A writer
/// waiting for a row of the table (the transaction that holds the row,
/// while it holds the row's tuple lock) waits for the table too. Another
/// session's request queued `lock_timeout` is asked whether pg_repack is in
/// its way (the only other time pg_blocking_pids is called): a request that
/// conflicts with the writers' (DDL, a lock taken by hand) makes every
/// writer queue behind it, so one queued behind pg_repack stalls them all.
/// ShareUpdateExclusiveLock (VACUUM, ANALYZE, CREATE INDEX CONCURRENTLY)
/// holds up no writer and is left out. `since` is the time since the last
/// look.
fn sample(
    relations: &[pg_sys::Oid],
    own: &[i32],
    lock: u8,
    since: f64,
    lock_timeout: Duration,
    waits: &mut Waits,
) -> Look {
    let blocked: &[i32] = if lock > 0 { own } else { &[] };
    let rows = as_caller(|| {
        Spi::connect(|c| {
            c.select(
                "WITH l AS MATERIALIZED (
                   SELECT l.locktype, l.pid, l.relation, l.virtualxid, l.mode, l.granted, l.waitstart
                     FROM pg_catalog.pg_locks l
                    WHERE l.locktype = 'virtualxid'
                       OR (l.locktype = 'transactionid' AND NOT l.granted)
                       OR (l.locktype IN ('relation', 'tuple') AND l.relation = ANY ($1)
                           AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                                              WHERE d.datname = pg_catalog.current_database())))
                 SELECT w.pid, w.waitstart::text, s.waited,
                        CASE WHEN w.pid = ANY ($2) THEN ARRAY(
                          -- a prepared transaction blocks as pid 0 and has
                          -- no virtualxid lock: one key for all of them
                          SELECT b::text || ' ' || coalesce((SELECT v.virtualxid FROM l v
                                                              WHERE v.locktype = 'virtualxid' AND v.pid = b
                                                              LIMIT 1), '')
                            FROM pg_catalog.unnest(pg_catalog.pg_blocking_pids(w.pid)) b) END,
                        s.stalls,
                        CASE WHEN s.stalls AND s.waited >= $4
                             THEN pg_catalog.pg_blocking_pids(w.pid) OPERATOR(pg_catalog.&&) $3
                             ELSE false END
                   FROM l w,
                        LATERAL (SELECT pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() - w.waitstart)::float8 AS waited,
                                        w.locktype = 'relation' AND w.pid <> ALL ($3)
                                          AND w.mode <> 'ShareUpdateExclusiveLock' AS stalls) s
                  WHERE NOT w.granted AND w.waitstart IS NOT NULL
                    AND (w.locktype IN ('relation', 'tuple')
                         OR (w.locktype = 'transactionid'
                             AND EXISTS (SELECT FROM l t WHERE t.locktype = 'tuple' AND t.granted AND t.pid = w.pid)))",
                None,
                &[
                    relations.to_vec().into(),
                    blocked.to_vec().into(),
                    own.to_vec().into(),
                    lock_timeout.as_secs_f64().into(),
                ],
            )?
            .map(|r| {
                Ok((
                    r.get::<i32>(1)?.unwrap_or(0),
                    r.get::<String>(2)?.unwrap_or_default(),
                    r.get::<f64>(3)?.unwrap_or(0.0),
                    r.get::<Vec<String>>(4)?.unwrap_or_default(),
                    r.get::<bool>(5)?.unwrap_or(false),
                    r.get::<bool>(6)?.unwrap_or(false),
                ))
            })
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
    });
    let now = Instant::now();
    let mut others = false;
    let mut look = Look::default();
    for (pid, start, waited, blockers, stalls, behind) in rows {
        if own.contains(&pid) {
            let w = waits.own.entry((pid, start)).or_insert(0.0);
            *w = w.max(waited);
            for b in blockers {
                waits.in_way.entry((lock, b)).or_insert((now, now)).1 = now;
            }
            continue;
        }
        waits.others_max = waits.others_max.max(waited);
        others = true;
        if behind && look.behind.is_none_or(|(_, w)| waited > w) {
            look.behind = Some((pid, waited));
        } else if stalls && waited < lock_timeout.as_secs_f64() {
            let left = lock_timeout.saturating_sub(Duration::from_secs_f64(waited));
            look.due = Some(look.due.map_or(left, |d| d.min(left)));
        }
    }
    if others {
        waits.others_total += since;
    }
    look
}

/// Of the sessions `pids` (those in the way of pg_repack's own request),
/// one that is itself queued for a lock on the table behind pg_repack, and
/// how long it has waited: the two wait for each other through pg_repack's
/// client, which PostgreSQL's deadlock detector cannot see.
fn queued_behind_own(relations: &[pg_sys::Oid], own: &[i32], pids: &[i32]) -> Option<(i32, f64)> {
    let (pid, waited) = as_caller(|| {
        read::two::<i32, f64>(
            "SELECT q.pid, q.waited FROM (SELECT 1) one LEFT JOIN (
               SELECT l.pid, pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() - l.waitstart)::float8 AS waited
                 FROM pg_catalog.pg_locks l
                WHERE l.locktype = 'relation' AND NOT l.granted AND l.relation = ANY ($1)
                  AND l.pid = ANY ($3) AND l.pid <> ALL ($2)
                  AND pg_catalog.pg_blocking_pids(l.pid) OPERATOR(pg_catalog.&&) $2
                ORDER BY l.waitstart LIMIT 1) q ON true",
            &[relations.to_vec().into(), own.to_vec().into(), pids.to_vec().into()],
        )
    });
    Some((pid?, waited.unwrap_or(0.0)))
}

/// The whole lines a file holds past `offset` (a log being written),
/// moving `offset` past them: a line still being written, and with it a
/// character cut in two, waits for the next look.
fn read_from(path: &Path, offset: &mut u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(*offset)).is_err() || f.read_to_end(&mut buf).is_err() {
        return String::new();
    }
    let Some(end) = buf.iter().rposition(|&b| b == b'\n') else {
        return String::new();
    };
    buf.truncate(end + 1);
    *offset += buf.len() as u64;
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::Waits;

    /// The sum of no wait is +0: a note printed it as "queued -0.000 s"
    /// (the f64 sum of an empty iterator is -0.0).
    #[test]
    fn no_wait_is_zero_not_minus_zero() {
        let w = Waits::default();
        assert!(w.own_total().is_sign_positive());
        assert_eq!(format!("{:.3}", w.own_total()), "0.000");
    }
}
