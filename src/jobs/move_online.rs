//! The `move_online` job: tables moved to another tablespace while writes
//! go on, each through pg_repack (the tool DBAs trust for this; storlab
//! does not swap files itself), then each index that must end elsewhere
//! than pg_repack left it through REINDEX CONCURRENTLY. One batch of
//! storlab.relocations, each row written once its move is done.
//!
//! pg_repack runs as the job's role, over a client connection, with
//! `--no-kill-backend` (it never cancels other sessions) and the call's
//! lock_timeout as `--wait-timeout`. While it runs the worker samples
//! pg_locks every 20 ms: the longest wait of any other session for a lock
//! on the table or its indexes is the writers' stall, stored with the row;
//! pg_repack's own waits for its exclusive locks are its lock_wait_s. The
//! phase (copy, index build, log replay, swap) is read from pg_repack's
//! `--echo` output and shown in the job's detail.
//!
//! Another session's request queued behind pg_repack's locks (a
//! migration's ALTER TABLE or TRUNCATE) makes every writer queue behind it:
//! once one has waited lock_timeout the job ends pg_repack's sessions, so
//! that it goes through, and fails naming it (55P03).
//!
//! However the run ends (done, a lock given up on, cancel(), the worker
//! killed and the server restarted), what pg_repack left is removed:
//! its trigger on the table, its log table, its copy and its type
//! (`repack.repack_drop`), with every lock wait bounded. The table is then
//! where it was, or moved and recorded. What a session's lock keeps longer
//! is removed by the worker after the job's end, once that session's
//! transaction ends (`tidy_after_end`).

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use pgrx::prelude::*;
use pgrx::JsonB;

use super::client::{
    connection, psql_commands, psql_commands_watched, psql_tidying, server_program, with_env,
};
use super::job::{as_caller, bookkeeping, store_detail, Job, JobEnd};
use super::reindex::{cancel_backends, drop_invalid_leftovers};
use super::stop::{stop_requested_after, wait_signalled};
use crate::ops::read;
use crate::ops::record;
use crate::ops::relocate::{index_identity, lock_holders, where_now};
use crate::ops::server::{hostname, system_identifier};
use storlab_core::error::SqlState;
use storlab_core::pgbench::process::{self, Outcome};
use storlab_core::pgbench::Connection;
use storlab_core::record::{Record, Relocation};
use storlab_core::relocate::{human_bytes, psql_timing_s};
use storlab_core::repack::outcome::{
    left_before, running_now, Outcome as RunOutcome, RunEnd, TIDY_FOR,
};
use storlab_core::repack::{self, Phase, PhaseTracker, Version};
use storlab_core::request::relocate::{
    MoveOnline, OnlineIndex, OnlineParent, OnlineTable, ONLINE_LABEL,
};
use storlab_core::sql_text::ident;

/// The stop reason of a pg_repack run that gave up on its lock and did not
/// finish removing its objects in time.
const GAVE_UP: &str = "pg_repack gave up on its lock and was still removing its objects";

/// The stop reason of a pg_repack run whose attempts at an exclusive lock
/// one transaction kept queued longer than `repack::queued_budget_ms`.
const QUEUED_TOO_LONG: &str = "pg_repack's exclusive lock was queued too long";

/// The stop reason of a pg_repack run that another session's request (DDL,
/// LOCK TABLE) was queued behind for lock_timeout, the writers behind it.
const BEHIND_REPACK: &str = "a session was queued behind pg_repack's locks for lock_timeout";

/// How often pg_locks is sampled while pg_repack takes or holds its
/// exclusive lock.
const SAMPLE: Duration = Duration::from_millis(20);

/// How often the job's status is read, and pg_locks in the other phases.
const QUIET: Duration = Duration::from_millis(250);

pub(super) fn run(job: &Job, m: &MoveOnline, dir: &Path) -> Result<(), JobEnd> {
    steps(job, m, dir).map_err(|e| with_progress(m, e))
}

/// An error of a job that moved part of its batch says what moved, what
/// did not, and that undo_batch takes back what moved (the job's rows are
/// written as each move is done, so the batch holds exactly what moved).
fn with_progress(m: &MoveOnline, e: JobEnd) -> JobEnd {
    let moved = bookkeeping(|| {
        Spi::connect(|c| {
            c.select(
                "SELECT kind, relation_name, to_tablespace::text FROM storlab.relocations WHERE batch_id = $1 ORDER BY id",
                None,
                &[m.batch.into()],
            )?
            .map(|r| {
                Ok((
                    r.get::<String>(1)?.unwrap_or_default(),
                    r.get::<String>(2)?.unwrap_or_default(),
                    r.get::<String>(3)?.unwrap_or_default(),
                ))
            })
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
    });
    let Some(said) = m.progress(&moved) else {
        return e;
    };
    // in the message: CALL storlab.wait raises the message alone
    match e {
        JobEnd::Error(e) => JobEnd::Error(storlab_core::error::Error {
            message: format!("{}. {said}", e.message),
            ..e
        }),
        JobEnd::Raised {
            message,
            sqlstate,
            detail,
        } => JobEnd::Raised {
            message: format!("{message}. {said}"),
            sqlstate,
            detail,
        },
        JobEnd::Failed(why) => JobEnd::Failed(format!("{why}. {said}")),
        JobEnd::Stopped(why) => JobEnd::Stopped(format!("{why}. {said}")),
    }
}

fn steps(job: &Job, m: &MoveOnline, dir: &Path) -> Result<(), JobEnd> {
    let conn = connection(job);
    // known when some table moves (the call checked pg_repack then); a job
    // that only rebuilds indexes never runs it
    let version = || {
        Version::parse(&m.repack_version).ok_or_else(|| {
            JobEnd::Failed(format!(
                "pg_repack's version is not known: {}",
                m.repack_version
            ))
        })
    };
    store_detail(job, serde_json::json!({ "batch_id": m.batch }));
    for t in &m.tables {
        let oid = pg_sys::Oid::from(t.relation);
        let Some((now, _)) = as_caller(|| Ok::<_, pgrx::spi::Error>(where_now(oid))) else {
            note_skipped(job, t, "it was dropped since the call");
            continue;
        };
        if t.moves() && now == t.to {
            note_skipped(job, t, &format!("it is in {} already", t.to));
        } else if t.moves() {
            repack_table(job, m, t, &conn, dir, version()?)?;
        }
        for index in t.reindexed() {
            reindex(job, m, t, index, &conn, dir)?;
        }
    }
    for p in &m.parents {
        move_parent(job, m, p, &conn, dir)?;
    }
    store_detail(job, serde_json::json!({ "phase": "done" }));
    Ok(())
}

/// Said in the job's detail (key `skipped`), never silently.
fn note_skipped(job: &Job, t: &OnlineTable, why: &str) {
    bookkeeping(|| {
        Spi::run_with_args(
            "UPDATE storlab.job_records
                SET detail = coalesce(detail, '{}') || pg_catalog.jsonb_build_object('skipped',
                      coalesce(detail->'skipped', '[]') || pg_catalog.jsonb_build_array($2::text))
              WHERE id = $1",
            &[job.id.into(), format!("{}: {why}", t.name).into()],
        )
    });
}

/// What the sampling saw of the locks on the table while pg_repack ran.
#[derive(Default)]
struct Waits {
    /// the longest wait of any other session, in seconds
    others_max: f64,
    /// the time during which some other session was waiting, summed over
    /// the samples that saw one (each counts the time since the sample
    /// before it)
    others_total: f64,
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
    fn own_total(&self) -> f64 {
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
fn locked_relations(oid: pg_sys::Oid) -> Vec<pg_sys::Oid> {
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

/// The backend of a pg_repack run on the table now: it holds pg_repack's
/// advisory lock on it (pg_try_advisory_lock(16185446, -2147483648 + oid)).
fn repack_running(oid: pg_sys::Oid) -> Option<i32> {
    as_caller(|| {
        read::one::<i32>(
            "SELECT pg_catalog.min(l.pid) FROM pg_catalog.pg_locks l
              WHERE l.locktype = 'advisory' AND l.classid = 16185446 AND l.objsubid = 2
                AND l.objid = (($1::oid::int8 + 2147483648) % 4294967296)::oid
                AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                                   WHERE d.datname = pg_catalog.current_database())",
            &[oid.into()],
        )
    })
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

/// A session as the job's role sees it in pg_stat_activity: its pid, kind
/// and application, and its statement when that role may read it (another
/// role's needs pg_read_all_stats: storlab shows no more than its caller
/// could read).
fn describe_session(pid: i32) -> String {
    as_caller(|| {
        read::one::<String>(
            "SELECT pg_catalog.format('backend pid %s (%s%s)%s', a.pid, a.backend_type,
                      CASE WHEN a.application_name <> '' THEN ', application ' || a.application_name ELSE '' END,
                      CASE WHEN a.query IS NULL OR a.query = '<insufficient privilege>'
                           THEN ', whose statement role ' || CURRENT_USER || ' may not read (pg_read_all_stats may)'
                           WHEN pg_catalog.length(a.query) > 300 THEN ', running: ' || pg_catalog.left(a.query, 300) || '...'
                           ELSE ', running: ' || a.query END)
               FROM pg_catalog.pg_stat_activity a WHERE a.pid = $1",
            &[pid.into()],
        )
    })
    .unwrap_or_else(|| format!("backend pid {pid} (ended since)"))
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

/// The phase shown in the job's detail, with the table and since when.
fn show_phase(job: &Job, t: &OnlineTable, phase: &str) {
    store_detail(
        job,
        serde_json::json!({
            "phase": phase,
            "table": t.name,
            "phase_since": chrono_now(),
        }),
    );
}

fn chrono_now() -> String {
    bookkeeping(|| read::one::<String>("SELECT pg_catalog.clock_timestamp()::text", &[]))
        .unwrap_or_default()
}

/// The objects an interrupted pg_repack run of the table left: its
/// trigger, log table, copy and type. Read as the job's role.
fn leftovers(oid: pg_sys::Oid) -> Vec<String> {
    as_caller(|| {
        read::one::<Vec<String>>(
            "SELECT pg_catalog.array_remove(ARRAY[
                      CASE WHEN EXISTS (SELECT FROM pg_catalog.pg_trigger t
                                         WHERE t.tgrelid = $1 AND t.tgname = 'repack_trigger')
                           THEN pg_catalog.format('trigger repack_trigger on %s', $1::regclass) END,
                      CASE WHEN pg_catalog.to_regclass('repack.log_' || $1::text) IS NOT NULL
                           THEN 'table repack.log_' || $1::text END,
                      CASE WHEN pg_catalog.to_regclass('repack.table_' || $1::text) IS NOT NULL
                           THEN 'table repack.table_' || $1::text END,
                      CASE WHEN pg_catalog.to_regtype('repack.pk_' || $1::text) IS NOT NULL
                           THEN 'type repack.pk_' || $1::text END], NULL)",
            &[oid.into()],
        )
    })
    .unwrap_or_default()
}

/// Removes what an interrupted pg_repack run of the table left, with
/// pg_repack's own function (repack.repack_drop, as its documentation
/// advises), as the job's role, over a client connection (a lock timeout
/// there is an error of that session, not of the worker). It takes ACCESS
/// EXCLUSIVE on the table: each attempt waits at most 100 ms (a queued
/// request blocks the table's writers), once a second, until `limit`.
/// Returns what is still there.
pub(super) fn drop_leftovers(
    conn: &Connection,
    dir: &Path,
    oid: pg_sys::Oid,
    limit: Duration,
) -> Vec<String> {
    let start = Instant::now();
    loop {
        let left = leftovers(oid);
        if left.is_empty() || start.elapsed() >= limit {
            return left;
        }
        if drop_attempt(conn, dir, oid) {
            continue;
        }
        // each attempt queues the table's writers for up to 100 ms: one a
        // second at most
        std::thread::sleep(Duration::from_millis(900));
    }
}

/// One attempt at removing pg_repack's objects on the table, its lock
/// waited for at most 100 ms, while no pg_repack runs on it: the attempt
/// holds pg_repack's own advisory lock on the table (the one a run takes
/// at its start, pg_try_advisory_lock(16185446, -2147483648 + oid)) for its
/// transaction, so that it never removes the objects of a run under way,
/// and no run starts meanwhile. Not cut short by a stop request: it tidies
/// after one. Did it succeed?
fn drop_attempt(conn: &Connection, dir: &Path, oid: pg_sys::Oid) -> bool {
    let key = (i64::from(oid.to_u32()) - 2_147_483_648) as i32;
    let sql = format!(
        "DO $storlab$ BEGIN
           IF NOT pg_catalog.pg_try_advisory_xact_lock(16185446, {key}) THEN
             RAISE EXCEPTION 'pg_repack runs on the table';
           END IF;
           PERFORM repack.repack_drop({}, 4);
         END $storlab$",
        oid.to_u32()
    );
    with_env("PGOPTIONS", "-c lock_timeout=100ms", || {
        psql_tidying(conn, &[&sql], dir, Duration::from_secs(30)).is_ok()
    })
}

thread_local! {
    /// The tables whose pg_repack objects this job left: removed after
    /// the job's end, by [`tidy_after_end`].
    static TIDY: std::cell::RefCell<Vec<(u32, String)>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn tidy_later(t: &OnlineTable) {
    TIDY.with(|v| {
        let mut v = v.borrow_mut();
        if !v.iter().any(|(r, _)| *r == t.relation) {
            v.push((t.relation, t.name.clone()));
        }
    });
}

/// After the job's end, which reported pg_repack's objects left on a table
/// (a session's lock kept them), the worker removes them as soon as the
/// sessions that held a lock on the table at the last attempt have ended
/// their transactions: it reads pg_locks once a second meanwhile and makes
/// no attempt (each queues the table's writers for up to 100 ms) while one
/// of them is still open. It gives up after [`TIDY_FOR`], when another
/// online move of the table is queued or runs (which removes them first),
/// when a pg_repack runs on it, or when the worker is told to stop. Each
/// table's outcome is in the job's detail (key `tidy`).
pub(super) fn tidy_after_end(job: &Job, dir: &Path) {
    let mut pending = TIDY.with(|v| std::mem::take(&mut *v.borrow_mut()));
    if pending.is_empty() {
        return;
    }
    let conn = connection(job);
    let start = Instant::now();
    let mut said = serde_json::Map::new();
    let mut say = |name: &str, what: String| {
        said.insert(name.to_string(), what.into());
        store_detail(job, serde_json::json!({ "tidy": said.clone() }));
    };
    // per table: the transactions holding a lock on it at the last attempt
    let mut holders: HashMap<u32, Vec<String>> = HashMap::new();
    for (_, name) in &pending {
        say(
            name,
            "pg_repack's objects are left: removed once the sessions holding a lock on the table let go".into(),
        );
    }
    loop {
        pending.retain(|(relation, name)| {
            let oid = pg_sys::Oid::from(*relation);
            if leftovers(oid).is_empty() {
                say(
                    name,
                    format!("pg_repack's objects are gone at {}", chrono_now()),
                );
                return false;
            }
            if let Some(other) = other_online_move(job, *relation) {
                say(
                    name,
                    format!("left to {other}, which removes them before it moves the table"),
                );
                return false;
            }
            if let Some(pid) = repack_running(oid) {
                say(
                    name,
                    format!("left alone: a pg_repack runs on the table (backend pid {pid})"),
                );
                return false;
            }
            if holders.get(relation).is_some_and(|h| still_open(h)) {
                return true;
            }
            if drop_attempt(&conn, dir, oid) && leftovers(oid).is_empty() {
                say(
                    name,
                    format!("pg_repack's objects removed at {}", chrono_now()),
                );
                return false;
            }
            holders.insert(*relation, holding_transactions(oid));
            true
        });
        if pending.is_empty() {
            return;
        }
        let stop = if start.elapsed() >= TIDY_FOR {
            Some(format!("still there after {} min", TIDY_FOR.as_secs() / 60))
        } else if wait_signalled(Duration::from_secs(1)) {
            Some("the worker was told to stop".to_string())
        } else {
            None
        };
        if let Some(why) = stop {
            for (relation, name) in &pending {
                say(
                    name,
                    format!(
                        "{why}: pg_repack's objects are left ({}); the next online move of the table removes them first, or SELECT repack.repack_drop('{}'::regclass, 4)",
                        leftovers(pg_sys::Oid::from(*relation)).join(", "),
                        name.replace('\'', "''")
                    ),
                );
            }
            return;
        }
    }
}

/// The transactions (virtual transaction ids) holding a lock on the table
/// now, other than the worker's own.
fn holding_transactions(oid: pg_sys::Oid) -> Vec<String> {
    as_caller(|| {
        read::one::<Vec<String>>(
            "SELECT ARRAY(SELECT DISTINCT l.virtualtransaction FROM pg_catalog.pg_locks l
                           WHERE l.locktype = 'relation' AND l.relation = $1 AND l.granted
                             AND l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid()
                             AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                                                WHERE d.datname = pg_catalog.current_database()))",
            &[oid.into()],
        )
    })
    .unwrap_or_default()
}

/// Is one of these transactions still open?
fn still_open(transactions: &[String]) -> bool {
    as_caller(|| {
        read::one::<bool>(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_locks l WHERE l.virtualtransaction = ANY ($1))",
            &[transactions.to_vec().into()],
        )
    })
    .unwrap_or(false)
}

/// Another online move of the table, queued or running: it removes what
/// pg_repack left before it runs pg_repack.
fn other_online_move(job: &Job, relation: u32) -> Option<String> {
    bookkeeping(|| {
        read::one::<String>(
            "SELECT (SELECT pg_catalog.format('storlab job %s', j.id)
                       FROM storlab.jobs j
                      WHERE j.kind = 'move_online' AND j.status IN ('queued', 'running', 'cancelling')
                        AND j.id <> $2 AND j.database = pg_catalog.current_database()
                        AND j.args->'tables' @> pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('relation', $1::int8))
                      ORDER BY j.id LIMIT 1)",
            &[i64::from(relation).into(), job.id.into()],
        )
    })
}

/// Runs a statement that takes ACCESS EXCLUSIVE on a table over a client
/// connection as the job's role, its lock waited for at most 100 ms. Did
/// it succeed?
fn brief_lock_statement(job: &Job, conn: &Connection, dir: &Path, sql: &str) -> bool {
    with_env("PGOPTIONS", "-c lock_timeout=100ms", || {
        psql_commands(job, conn, &[sql], dir).is_ok()
    })
}

/// Cancels the job's pg_repack sessions still running a statement (found
/// by application_name and role, in this database), as the job's role;
/// waits up to two seconds for them to be gone. A pg_repack client killed
/// mid-copy leaves its backend copying until it next talks to it.
fn cancel_sessions(role: &str, since: &str) {
    let busy = || {
        as_caller(|| {
            read::one::<i64>(
                "SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity
                  WHERE application_name = 'pg_repack' AND usename = $1 AND backend_start >= $2::timestamptz
                    AND datname = pg_catalog.current_database() AND pid <> pg_catalog.pg_backend_pid()",
                &[role.into(), since.into()],
            )
        })
        .unwrap_or(0)
    };
    as_caller(|| {
        read::one::<i64>(
            "SELECT pg_catalog.count(pg_catalog.pg_terminate_backend(pid)) FROM pg_catalog.pg_stat_activity
              WHERE application_name = 'pg_repack' AND usename = $1 AND backend_start >= $2::timestamptz
                AND datname = pg_catalog.current_database() AND pid <> pg_catalog.pg_backend_pid()",
            &[role.into(), since.into()],
        )
    });
    let start = Instant::now();
    while busy() > 0 && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// pg_repack of one table into its target: run, watched, observed after,
/// recorded when the table moved, tidied however it ended.
fn repack_table(
    job: &Job,
    m: &MoveOnline,
    t: &OnlineTable,
    conn: &Connection,
    dir: &Path,
    version: Version,
) -> Result<(), JobEnd> {
    let oid = pg_sys::Oid::from(t.relation);
    let limit = Duration::from_millis(m.lock_timeout_ms);
    // a pg_repack run by hand (or another tool) on the table now: its
    // objects are its own, and pg_repack would refuse anyway
    if let Some(pid) = repack_running(oid) {
        return Err(running_now(&t.name, pid, &t.from).into());
    }
    // an earlier run cut short left its objects (pg_repack refuses a table
    // with its trigger): removed first
    let left = drop_leftovers(conn, dir, oid, limit);
    if !left.is_empty() {
        return Err(left_before(&t.name, &left).into());
    }
    let (from, bytes) = as_caller(|| Ok::<_, pgrx::spi::Error>(where_now(oid)))
        .unwrap_or_else(|| (t.from.clone(), t.bytes));
    let run = repack::Run {
        table: &t.name,
        tablespace: &t.to,
        move_indexes: t.repack_moves_indexes(),
        lock_timeout_ms: m.lock_timeout_ms,
    };
    let indexes_before = index_places(oid);
    let relations = locked_relations(oid);
    let since = chrono_now();
    show_phase(job, t, Phase::Starting.as_str());
    let program = server_program("pg_repack");
    let args = run.args(version, conn);
    std::fs::create_dir_all(dir)
        .map_err(|e| JobEnd::Failed(format!("cannot create {}: {e}", dir.display())))?;
    let mut waits = Waits::default();
    let mut phases: Vec<(Phase, Instant)> = vec![(Phase::Starting, Instant::now())];
    let started = Instant::now();
    let mut last_check = Instant::now();
    let stderr_path = dir.join("stderr");
    let mut tracker = PhaseTracker::default();
    let mut read = 0u64;
    // pg_repack gave up on a lock: it removes its objects then, and 1.4
    // retries that (reconnecting) for as long as a session holds a lock on
    // the table; it gets lock_timeout and 2 s for it, then the job stops
    // it and tidies itself
    let mut gave_up_at: Option<Instant> = None;
    let tidy_limit = Duration::from_millis(m.lock_timeout_ms) + Duration::from_secs(2);
    let mut last_sample: Option<Instant> = None;
    let mut own: Vec<i32> = Vec::new();
    let mut held_by: Option<String> = None;
    // another session queued behind pg_repack for lock_timeout: it, as the
    // job's role sees it, and how long it had waited
    let mut behind: Option<(String, f64)> = None;
    // the soonest another session's queued request reaches lock_timeout
    let mut due: Option<Duration> = None;
    let budget_ms = repack::queued_budget_ms(m.lock_timeout_ms);
    let mut stop = || {
        // what pg_repack echoed since the last look: the phase
        let now = tracker.feed(&read_from(&stderr_path, &mut read));
        if phases.last().map(|p| p.0) != Some(now) {
            phases.push((now, Instant::now()));
            show_phase(job, t, now.as_str());
        }
        if tracker.gave_up() {
            let at = *gave_up_at.get_or_insert_with(Instant::now);
            if at.elapsed() > tidy_limit {
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
        if last_sample.is_none_or(|at| at.elapsed() >= every(due)) {
            if last_sample.is_none_or(|at| at.elapsed() >= QUIET) || own.len() < 2 {
                own = repack_pids(&job.role, &since);
            }
            let gap = last_sample.map_or(0.0, |at| at.elapsed().as_secs_f64());
            let lock = now.exclusive_lock().unwrap_or(0);
            let look = sample(&relations, &own, lock, gap, limit, &mut waits);
            due = look.due;
            last_sample = Some(Instant::now());
            // a session queued behind pg_repack (DDL, a LOCK TABLE) for
            // lock_timeout, every writer queued behind it: pg_repack goes,
            // so that it goes through
            if let Some((pid, waited)) = look.behind {
                behind = Some((describe_session(pid), waited));
                terminate(&own);
                return Some(BEHIND_REPACK.to_string());
            }
            // queued behind something that does not let go: stopped before
            // the writers queue behind its retries for the whole wait
            let budget = Duration::from_millis(budget_ms);
            if lock > 0 && waits.longest_in_way(lock) > budget {
                // what keeps it queued may itself be queued behind
                // pg_repack's other session: a wait for each other
                let pids = waits.in_way_pids(lock, budget);
                if let Some((pid, waited)) = queued_behind_own(&relations, &own, &pids) {
                    behind = Some((describe_session(pid), waited));
                    terminate(&own);
                    return Some(BEHIND_REPACK.to_string());
                }
                held_by = as_caller(|| Ok::<_, pgrx::spi::Error>(lock_holders(oid)));
                // its queued request goes at once, with its sessions; the
                // program follows (process::run stops it)
                terminate(&own);
                return Some(QUEUED_TOO_LONG.to_string());
            }
        }
        // the job's status every 250 ms, and at once when the latch is set
        // (a committed cancel() sets it) or a signal came (kept for the
        // look below: this wait is the one that sees it)
        let signalled = wait_signalled(every(due));
        if signalled || last_check.elapsed() >= QUIET {
            last_check = Instant::now();
            return stop_requested_after(job.id, Duration::ZERO);
        }
        None
    };
    // PGAPPNAME is pg_repack's own ("pg_repack"): it leaves other pg_repack
    // sessions out of the transactions it waits for. Its sessions'
    // lock_timeout is the call's and a second: pg_repack sets its own
    // around each attempt at its exclusive lock and RESETs it after, back
    // to this one, so that every other lock it waits for is bounded too
    // (its cleanup's repack_drop would otherwise queue for ACCESS EXCLUSIVE
    // with no limit, and block the table's writers behind it). The second
    // lets the watcher above act first on what it knows: a session's DDL
    // queued behind pg_repack, in front of pg_repack's own next request, is
    // its doing to name (pg_repack would fail with PostgreSQL's bare "lock
    // timeout", naming no one).
    let outcome = with_env(
        "PGOPTIONS",
        &format!("-c lock_timeout={}ms", m.lock_timeout_ms + 1000),
        || {
            process::run(
                &program,
                &args,
                dir,
                Duration::from_secs(7 * 24 * 3600),
                &mut stop,
            )
        },
    )
    .map_err(|e| JobEnd::Failed(format!("cannot run {}: {e}", program.display())));
    let elapsed = started.elapsed();
    let stdout = std::fs::read_to_string(dir.join("stdout")).unwrap_or_default();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    // the rest, a last line without its newline too
    tracker.feed(stderr.get(read as usize..).unwrap_or_default());
    let last_phase = tracker.finish();
    if phases.last().map(|p| p.0) != Some(last_phase) {
        phases.push((last_phase, Instant::now()));
    }
    let stopped = match outcome? {
        // stopped by the job itself, not cancelled: the outcome (RunEnd) says why
        Outcome::Stopped(why)
            if why == GAVE_UP || why == QUEUED_TOO_LONG || why == BEHIND_REPACK =>
        {
            cancel_sessions(&job.role, &since);
            None
        }
        Outcome::Stopped(why) => {
            // its sessions go on without their client until told
            cancel_sessions(&job.role, &since);
            Some(why)
        }
        Outcome::Exited(_) => None,
    };
    // only what this run made: a run refused at its start (another
    // pg_repack holds the table's advisory lock) made nothing, and the
    // objects there are that other run's
    let made = phases
        .iter()
        .any(|p| p.0 != Phase::Starting && p.0 != Phase::SetupLock);
    let left = if made {
        drop_leftovers(conn, dir, oid, limit.max(Duration::from_secs(2)))
    } else {
        Vec::new()
    };
    let now = as_caller(|| Ok::<_, pgrx::spi::Error>(where_now(oid)));
    let mut end = RunEnd {
        table: t.name.clone(),
        to: t.to.clone(),
        from,
        now: now.map(|(ts, _)| ts),
        lock_timeout_ms: m.lock_timeout_ms,
        version,
        stopped,
        left,
        said: format!("{stdout}{stderr}"),
        last_phase,
        behind,
        held_by,
        others_max_s: waits.others_max,
        others_total_s: waits.others_total,
        holders: None,
    };
    if end.moved() {
        record_table(
            job,
            m,
            t,
            &end.from,
            bytes,
            &run,
            version,
            elapsed,
            &waits,
            &phases,
            &indexes_before,
        );
    }
    // pg_locks is read again only when the outcome names who holds a lock
    if end.names_holders() {
        end.holders = as_caller(|| Ok::<_, pgrx::spi::Error>(lock_holders(oid)));
    }
    if end.tidied_later() {
        tidy_later(t);
    }
    match end.outcome() {
        RunOutcome::Moved => Ok(()),
        RunOutcome::Stopped(why) => Err(JobEnd::Stopped(why)),
        RunOutcome::Refused(e) => Err(e.into()),
        RunOutcome::Failed(why) => Err(JobEnd::Failed(why)),
    }
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

/// Each valid index of the table: its oid, name, tablespace and bytes.
fn index_places(oid: pg_sys::Oid) -> Vec<(u32, String, String, i64)> {
    as_caller(|| {
        Spi::connect(|c| {
            c.select(
                "SELECT i.indexrelid FROM pg_catalog.pg_index i WHERE i.indrelid = $1 AND i.indisvalid ORDER BY i.indexrelid",
                None,
                &[oid.into()],
            )?
            .map(|r| Ok(r.get::<pg_sys::Oid>(1)?.expect("oid")))
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
        .map(|oids| {
            oids.into_iter()
                .filter_map(|o| {
                    let name = read::one::<String>(
                        "SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) FROM pg_catalog.pg_class c
                           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1",
                        &[o.into()],
                    )
                    .ok()
                    .flatten()?;
                    let (ts, bytes) = where_now(o)?;
                    Some((o.to_u32(), name, ts, bytes))
                })
                .collect()
        })
    })
}

/// The rows of a pg_repack run that moved its table: the table's, and one
/// for each index it moved with `--moveidx`.
#[allow(clippy::too_many_arguments)]
fn record_table(
    job: &Job,
    m: &MoveOnline,
    t: &OnlineTable,
    from: &str,
    bytes: i64,
    run: &repack::Run,
    version: Version,
    elapsed: Duration,
    waits: &Waits,
    phases: &[(Phase, Instant)],
    indexes_before: &[(u32, String, String, i64)],
) {
    let timeline: Vec<String> = phases
        .windows(2)
        .filter(|w| w[0].0 != Phase::Starting)
        .map(|w| {
            format!(
                "{} {:.2} s",
                w[0].0.as_str(),
                w[1].1.duration_since(w[0].1).as_secs_f64()
            )
        })
        .collect();
    let note = format!(
        "moved online by pg_repack {version}: writes went on; its exclusive locks (to install its trigger, to swap, to drop) were queued {:.3} s in all ({} ms at most each time), and the longest another session waited for a lock on the table meanwhile was {:.3} s, some session waiting during {:.3} s in all (pg_locks sampled every {} ms while pg_repack took or held its exclusive lock, every {} ms otherwise); {} copied; its WAL is not known here (other sessions wrote theirs meanwhile){}",
        waits.own_total(),
        repack::queued_budget_ms(m.lock_timeout_ms),
        waits.others_max,
        waits.others_total,
        SAMPLE.as_millis(),
        QUIET.as_millis(),
        human_bytes(bytes),
        if timeline.is_empty() {
            String::new()
        } else {
            format!("; phases as seen: {}", timeline.join(", "))
        }
    );
    let base = Relocation {
        relation: t.relation,
        relation_name: t.name.clone(),
        kind: "table".into(),
        from_tablespace: from.to_string(),
        to_tablespace: t.to.clone(),
        bytes: Some(bytes),
        duration_s: Some(elapsed.as_secs_f64()),
        lock_wait_s: Some(waits.own_total()),
        statement: run.statement(),
        note: Some(note),
        writers_blocked_s: Some(waits.others_max),
        ..row(job, m)
    };
    write(&base);
    if run.move_indexes {
        for (oid, name, was, ibytes) in indexes_before {
            if *was == t.to {
                continue;
            }
            let (index_table, index_definition) =
                as_caller(|| Ok::<_, pgrx::spi::Error>(index_identity(pg_sys::Oid::from(*oid))));
            write(&Relocation {
                relation: *oid,
                relation_name: name.clone(),
                kind: "index".into(),
                index_table,
                index_definition,
                from_tablespace: was.clone(),
                bytes: Some(*ibytes),
                duration_s: None,
                lock_wait_s: None,
                note: Some(format!(
                    "rebuilt online in {} by the pg_repack run of its table {} (--moveidx): its time is that row's",
                    t.to, t.name
                )),
                writers_blocked_s: None,
                ..base.clone()
            });
        }
    }
}

/// What every row of the job shares: its batch, role, label, server and
/// the batch it undoes; online, and nothing measured yet.
fn row(job: &Job, m: &MoveOnline) -> Relocation {
    Relocation {
        batch_id: Some(m.batch),
        moved_by: job.role.clone(),
        label: Some(m.label.clone().unwrap_or_else(|| ONLINE_LABEL.into())),
        system_identifier: system_identifier(),
        hostname: hostname(),
        undoes_batch: m.undoes_batch,
        online: true,
        ..Default::default()
    }
}

fn write(r: &Relocation) {
    bookkeeping(|| {
        Spi::run_with_args(
            &record::insert_sql(r, &[("moved_at", "pg_catalog.clock_timestamp()")])?,
            &[JsonB(r.to_json()).into()],
        )
    });
}

/// One index into its target with REINDEX (TABLESPACE ...) INDEX
/// CONCURRENTLY, after pg_repack left it where it was (its target is not
/// the table's): recorded like move_indexes_online's rebuilds.
fn reindex(
    job: &Job,
    m: &MoveOnline,
    t: &OnlineTable,
    index: &OnlineIndex,
    conn: &Connection,
    dir: &Path,
) -> Result<(), JobEnd> {
    let oid = pg_sys::Oid::from(index.relation);
    let Some((from, bytes)) = as_caller(|| Ok::<_, pgrx::spi::Error>(where_now(oid))) else {
        note_skipped(
            job,
            t,
            &format!("its index {} was dropped since the call", index.name),
        );
        return Ok(());
    };
    if from == index.to {
        return Ok(());
    }
    show_phase(
        job,
        t,
        &format!("REINDEX CONCURRENTLY of {} into {}", index.name, index.to),
    );
    let sql = format!(
        "REINDEX (TABLESPACE {}) INDEX CONCURRENTLY {}",
        ident(&index.to),
        index.name
    );
    let tag = format!("storlab job {} (online move)", job.id);
    // REINDEX CONCURRENTLY waits for the transactions older than each of
    // its steps, of any table, and fails with PostgreSQL's bare "lock
    // timeout" when one outlives lock_timeout: the sessions it waits for
    // are read while it waits, to name them then
    let mut waited_for: Option<String> = None;
    let mut last_look: Option<Instant> = None;
    let mut watch = || {
        if last_look.is_some_and(|at| at.elapsed() < QUIET) {
            return;
        }
        last_look = Some(Instant::now());
        if let Some(who) = reindex_waits_for(&tag) {
            waited_for = Some(who);
        }
    };
    let out = with_env("PGAPPNAME", &tag, || {
        with_env(
            "PGOPTIONS",
            &format!("-c lock_timeout={}ms", m.lock_timeout_ms),
            || psql_commands_watched(job, conn, &["\\timing on", &sql], dir, &mut watch),
        )
    });
    let stdout = match out {
        Ok(stdout) => stdout,
        Err(e) => {
            cancel_backends(&tag);
            drop_invalid_leftovers(job, conn, t.relation as i64, dir);
            return Err(match e {
                JobEnd::Failed(said) if said.contains("lock timeout") => JobEnd::error(SqlState::LockNotAvailable, format!(
                        "could not rebuild index {} into {} within lock_timeout ({} ms): REINDEX CONCURRENTLY waits for every transaction older than its steps, of any table, and {} outlived lock_timeout",
                        index.name,
                        index.to,
                        m.lock_timeout_ms,
                        waited_for.as_deref().unwrap_or("a transaction")
                    ), Some(format!(
                        "The index is where it was, in {from} (its unfinished copy dropped). Move it again once that transaction is done, or with a longer lock_timeout."
                    ))),
                e => e,
            });
        }
    };
    // REINDEX CONCURRENTLY gives the index a new oid under the old name
    let new_oid = as_caller(|| {
        read::one::<i64>(
            "SELECT pg_catalog.to_regclass($1)::oid::int8",
            &[index.name.clone().into()],
        )
    })
    .unwrap_or(index.relation as i64);
    let (index_table, index_definition) =
        as_caller(|| Ok::<_, pgrx::spi::Error>(index_identity(pg_sys::Oid::from(new_oid as u32))));
    write(&Relocation {
        relation: new_oid as u32,
        relation_name: index.name.clone(),
        kind: "index".into(),
        index_table,
        index_definition,
        from_tablespace: from,
        to_tablespace: index.to.clone(),
        bytes: Some(bytes),
        duration_s: psql_timing_s(&stdout),
        statement: sql,
        note: Some(
            "rebuilt concurrently: writes went on, with brief locks at start and end".into(),
        ),
        previous_relation: Some(index.relation),
        ..row(job, m)
    });
    Ok(())
}

/// The sessions the job's REINDEX CONCURRENTLY (its backend found by
/// `tag`, its application_name) waits for now, as the job's role sees them;
/// None while it waits for no lock. pg_blocking_pids takes the lock
/// manager's partition locks: asked only while the REINDEX waits on one.
fn reindex_waits_for(tag: &str) -> Option<String> {
    let pids = as_caller(|| {
        read::one::<Vec<i32>>(
            "SELECT ARRAY(SELECT DISTINCT b FROM pg_catalog.pg_stat_activity r,
                                 pg_catalog.unnest(CASE WHEN r.wait_event_type = 'Lock'
                                                        THEN pg_catalog.pg_blocking_pids(r.pid) END) b
                           WHERE r.application_name = $1 AND r.pid <> pg_catalog.pg_backend_pid()
                           ORDER BY b)",
            &[tag.into()],
        )
    })
    .unwrap_or_default();
    if pids.is_empty() {
        return None;
    }
    Some(
        pids.iter()
            .map(|&p| {
                if p == 0 {
                    "a prepared transaction (pg_prepared_xacts)".to_string()
                } else {
                    describe_session(p)
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// A partitioned table or index: where its future partitions go, a change
/// of the catalog under ACCESS EXCLUSIVE on it. Each attempt waits at most
/// 100 ms for that lock (a queued request blocks its writers), retried
/// until the call's lock_timeout; then 55P03, the partitions moved and
/// recorded, the default unchanged.
fn move_parent(
    job: &Job,
    m: &MoveOnline,
    p: &OnlineParent,
    conn: &Connection,
    dir: &Path,
) -> Result<(), JobEnd> {
    let oid = pg_sys::Oid::from(p.relation);
    let Some((from, _)) = as_caller(|| Ok::<_, pgrx::spi::Error>(where_now(oid))) else {
        return Ok(());
    };
    if from == p.to {
        return Ok(());
    }
    let keyword = if p.kind == "partitioned index" {
        "INDEX"
    } else {
        "TABLE"
    };
    let sql = format!("ALTER {keyword} {} SET TABLESPACE {}", p.name, ident(&p.to));
    let start = Instant::now();
    let limit = Duration::from_millis(m.lock_timeout_ms);
    loop {
        if brief_lock_statement(job, conn, dir, &sql) {
            break;
        }
        if start.elapsed() >= limit {
            return Err(JobEnd::error(SqlState::LockNotAvailable, format!(
                    "could not lock {} {} within lock_timeout ({} ms): its partitions moved, where its new partitions go did not change",
                    p.kind, p.name, m.lock_timeout_ms
                ), as_caller(|| Ok::<_, pgrx::spi::Error>(lock_holders(oid)))
                    .map(|h| format!("Held by: {h}."))));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    write(&Relocation {
        relation: p.relation,
        relation_name: p.name.clone(),
        kind: p.kind.clone(),
        from_tablespace: from,
        to_tablespace: p.to.clone(),
        bytes: Some(0),
        lock_wait_s: Some(start.elapsed().as_secs_f64()),
        statement: sql,
        note: Some("a change of the catalog only: where new partitions go (its brief exclusive lock tried 100 ms at a time)".into()),
        // ALTER ... SET TABLESPACE under a brief exclusive lock, not a
        // rebuild while writes go on
        online: false,
        ..row(job, m)
    });
    Ok(())
}

/// After a crash restart: removes what the interrupted pg_repack run left
/// on each table of the job, and records a table the run had swapped into
/// its target before the crash (its row was not written yet). Returns what
/// it did, for the job's error.
pub(super) fn recover(job: &Job, m: &MoveOnline, dir: &Path) -> String {
    let mut tidied = Vec::new();
    let conn = connection(job);
    let mut recorded = 0;
    let version = Version::parse(&m.repack_version);
    for t in &m.tables {
        let oid = pg_sys::Oid::from(t.relation);
        // a REINDEX CONCURRENTLY cut short left an invalid copy
        let copies = drop_invalid_leftovers(job, &conn, t.relation as i64, dir);
        if copies > 0 {
            tidied.push(format!(
                "{copies} invalid index copies of {} dropped",
                t.name
            ));
        }
        let had = leftovers(oid);
        if had.is_empty() && !t.moves() {
            continue;
        }
        // a pg_repack of someone else's has started on it since the restart
        if repack_running(oid).is_some() {
            tidied.push(format!(
                "{}: pg_repack runs on it now, its objects were left alone",
                t.name
            ));
            continue;
        }
        let left = drop_leftovers(
            &conn,
            dir,
            oid,
            Duration::from_millis(m.lock_timeout_ms).max(Duration::from_secs(2)),
        );
        if !had.is_empty() {
            tidied.push(if left.is_empty() {
                format!("pg_repack's objects on {} dropped", t.name)
            } else {
                tidy_later(t);
                format!(
                    "pg_repack's objects on {} could not be dropped yet: {} (the job's worker removes them once the sessions holding a lock on the table let go: storlab.jobs' detail->'tidy')",
                    t.name,
                    left.join(", ")
                )
            });
        }
        let now = as_caller(|| Ok::<_, pgrx::spi::Error>(where_now(oid)));
        let recorded_already = bookkeeping(|| {
            read::one::<bool>(
                "SELECT EXISTS (SELECT FROM storlab.relocations WHERE batch_id = $1 AND relation = $2::oid)",
                &[m.batch.into(), oid.into()],
            )
        })
        .unwrap_or(false);
        if let (Some((ts, bytes)), false, Some(version)) = (now, recorded_already, version) {
            if ts == t.to && t.moves() {
                let run = repack::Run {
                    table: &t.name,
                    tablespace: &t.to,
                    move_indexes: t.repack_moves_indexes(),
                    lock_timeout_ms: m.lock_timeout_ms,
                };
                let mut r = Relocation {
                    relation: t.relation,
                    relation_name: t.name.clone(),
                    kind: "table".into(),
                    from_tablespace: t.from.clone(),
                    to_tablespace: t.to.clone(),
                    bytes: Some(bytes),
                    statement: run.statement(),
                    note: Some(format!("moved online by pg_repack {version}; its swap committed before a server restart interrupted the job, whose worker recorded it after the restart (duration and lock waits unknown)")),
                    ..row(job, m)
                };
                write(&r);
                if run.move_indexes {
                    for i in &t.indexes {
                        if i.from != t.to {
                            r.relation = i.relation;
                            r.relation_name = i.name.clone();
                            r.kind = "index".into();
                            (r.index_table, r.index_definition) = as_caller(|| {
                                Ok::<_, pgrx::spi::Error>(index_identity(pg_sys::Oid::from(
                                    i.relation,
                                )))
                            });
                            r.from_tablespace = i.from.clone();
                            r.bytes = Some(i.bytes);
                            write(&r);
                        }
                    }
                }
                recorded += 1;
            }
        }
    }
    format!(
        "{}; tables swapped before the restart and recorded after it: {recorded}",
        if tidied.is_empty() {
            "no pg_repack objects were left".to_string()
        } else {
            tidied.join("; ")
        }
    )
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
