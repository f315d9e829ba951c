//! Jobs from the caller's side: starting one (its row, written as the
//! extension's owner, and a background worker that runs it as the caller),
//! cancelling one (with pg_cancel_backend's rule for who may), its status.
//! The worker itself is `crate::jobs`.

use pgrx::datum::JsonB;
use pgrx::prelude::*;

use super::error::{invalid, spi, Error, OrRaise, Raise, SqlState};
use super::identity::{self, as_owner};
use super::read;
use super::settings;
use crate::sqltypes::Name;
use storlab_core::pgbench::conninfo;
use storlab_core::request::bench::RunOptions;
use storlab_core::request::job::{JobArgs, JobSpec};

/// Starts the worker of a job row this transaction has just inserted.
///
/// A worker asked to be `restarted` is started again by the postmaster
/// after a crash restart (a process of the server killed), and finds its
/// job still 'running': it tidies after it and ends it (jobs::dispatch::recover).
/// Only move_indexes jobs ask: an interrupted REINDEX CONCURRENTLY leaves
/// an invalid index that slows every write to the table. A worker that
/// returns (exit code 0) is never started again.
fn launch(job_id: i64, restarted: bool) -> Result<(), String> {
    // SAFETY: reads the backend's database and user ids.
    let (db, role) = unsafe { (pg_sys::MyDatabaseId, pg_sys::GetUserId()) };
    // the worker asks after this transaction: gone with a rollback, the job
    // must not keep a worker waiting for a row that will never appear
    let creator = Spi::get_one::<String>("SELECT pg_catalog.pg_current_xact_id()::text")
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    pgrx::bgworkers::BackgroundWorkerBuilder::new(&format!("storlab job {job_id}"))
        .set_type("storlab job")
        .set_library("storlab")
        .set_function("storlab_job_main")
        .set_argument(job_id.into_datum())
        .set_extra(&format!("{} {} {creator}", u32::from(db), u32::from(role)))
        .enable_spi_access()
        .set_restart_time(restarted.then_some(std::time::Duration::from_secs(1)))
        .load_dynamic()
        .map(|_| ())
        .map_err(|e| format!("{e:?}"))
}

/// Stores as failed the jobs whose worker is gone, as the view
/// storlab.jobs already shows them, so that the row itself says so.
/// The runs the dead job was measuring end too (the time it was found
/// dead: the run ended before it), marked invalid, and an experiment's row
/// says where it stopped, as when its worker ends it (jobs::finish_with).
///
/// Only when there is one, and only where this transaction can write: the
/// readers that call this (job_status, a wait) must assign no transaction
/// id to find nothing, and on a standby the jobs are the primary's.
pub fn sweep_dead_jobs() {
    if !super::standby::can_write() {
        return;
    }
    let any_dead = as_owner(|| {
        read::one::<bool>(
            "SELECT EXISTS (SELECT FROM storlab.jobs v
                             WHERE v.status = 'failed'
                               AND v.id = ANY (ARRAY(SELECT u.id FROM storlab.job_records u
                                                      WHERE u.status IN ('queued', 'running', 'cancelling'))))",
            &[],
        )
    })
    .map_err(spi("checking storlab.jobs"))
    .or_raise();
    if any_dead != Some(true) {
        return;
    }
    as_owner(|| {
        Spi::run(
            "WITH dead AS (
               -- the view filtered by the ids of the few unfinished jobs
               -- (a filter it hands to each of its arms: a join would not)
               UPDATE storlab.job_records r
                  SET status = 'failed', error = v.error, finished_at = pg_catalog.clock_timestamp()
                 FROM storlab.jobs v
                WHERE v.id = r.id AND v.status = 'failed' AND r.status IN ('queued', 'running', 'cancelling')
                  AND v.id = ANY (ARRAY(SELECT u.id FROM storlab.job_records u
                                         WHERE u.status IN ('queued', 'running', 'cancelling')))
               RETURNING r.id),
             runs AS (
               UPDATE storlab.bench_runs b
                  SET finished_at = pg_catalog.clock_timestamp(),
                      invalid = coalesce(b.invalid, 'its job''s worker exited before the run finished (found at '
                                         OPERATOR(pg_catalog.||) pg_catalog.clock_timestamp()::pg_catalog.text
                                         OPERATOR(pg_catalog.||) ')')
                 FROM dead
                WHERE b.job_id = dead.id AND b.finished_at IS NULL
               RETURNING 1)
             -- the sentence storlab.experiments shows for a dead job: every
             -- part of this statement sees the rows as they were before it,
             -- so the view still says so, and stores its own words
             UPDATE storlab.experiment_records e
                SET current_action = x.current_action
               FROM dead, storlab.experiments x
              WHERE e.id = dead.id AND x.id = dead.id",
        )
    })
    .map_err(spi("checking storlab.jobs"))
    .or_raise();
}

/// The advisory lock that serializes the start of jobs on one database's
/// pgbench tables (held to the end of the transaction that takes it). A
/// job's start (the caller's, and its worker's when it turns the job
/// 'running') takes it exclusively; storlab's moves of pgbench's relations
/// take it shared ([`pgbench_relations_free`]), so that moves do not wait
/// for each other, but a job never starts between a move's check and the
/// move's commit.
pub const PGBENCH_TABLES_LOCK: &str =
    "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('storlab: pgbench tables of ' || pg_catalog.current_database(), 0))";

/// The one rule of which jobs use a database's pgbench tables, as a
/// relation (id, kind, status, role, schema): a running one, or a queued
/// one (for a worker given as $1: one queued before it), of kind
/// bench_init, bench or experiment, other than $1. `schema` is where its
/// worker found pgbench's tables when it started (NULL while it is queued:
/// it may use those of any schema).
const PGBENCH_TABLE_USERS: &str = "
    SELECT j.id, j.kind, j.status, j.role, j.detail->>'pgbench_schema' AS schema
      FROM storlab.jobs j
     WHERE j.database = pg_catalog.current_database() AND j.kind IN ('bench_init', 'bench', 'experiment')
       AND (j.status IN ('running', 'cancelling') OR (j.status = 'queued' AND ($1 = 0 OR j.id < $1)))
       AND j.id <> $1";

/// How a job of [`PGBENCH_TABLE_USERS`] is named in a message (`u` its row).
const JOB_NAME: &str =
    "pg_catalog.format('storlab job %s (%s, %s, role %s)', u.id, u.kind, u.status, u.role)";

/// The job that uses this database's pgbench tables, if any (see
/// [`PGBENCH_TABLE_USERS`]), named.
pub fn pgbench_tables_user_query() -> String {
    format!("SELECT (SELECT {JOB_NAME} FROM ({PGBENCH_TABLE_USERS}) u ORDER BY u.id LIMIT 1)")
}

/// Jobs on one database's pgbench tables exclude each other: pgbench -i
/// drops the tables a running benchmark uses, and two runs at once measure
/// each other. A start waits (bounded by lock_timeout) only for another
/// start's transaction, or a move of pgbench's relations, to end, then
/// refuses while a job is using them.
fn pgbench_tables_free() -> Result<(), Error> {
    let busy = as_owner(|| {
        Spi::run(PGBENCH_TABLES_LOCK)?;
        Spi::get_one_with_args::<String>(&pgbench_tables_user_query(), &[0i64.into()])
    })
    .map_err(spi("checking running jobs"))?;
    match busy {
        None => Ok(()),
        Some(job) => Err(Error::new(
            SqlState::ObjectInUse,
            format!("pgbench's tables in this database are in use by {job}"),
        )
        .with_hint("Wait for it with CALL storlab.wait(id), or stop it with storlab.cancel(id).")),
    }
}

/// The relations of pgbench (its four tables, storlab's append table, the
/// partitions of a partitioned pgbench_accounts, their indexes, TOAST
/// tables and TOAST indexes) that a job of [`PGBENCH_TABLE_USERS`] uses,
/// among the oids in $2: (job named, relation oid), one row per relation,
/// naming the first job. A job uses those of the schema it found them in;
/// a queued one (no schema yet) those of any schema.
fn used_relations_query() -> String {
    format!(
        "WITH RECURSIVE users AS ({PGBENCH_TABLE_USERS}),
         tables AS (
           SELECT c.oid, n.nspname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relname OPERATOR(pg_catalog.~) '^(pgbench_(accounts|branches|tellers|history)|storlab_bench_append)$'
              AND c.relkind IN ('r', 'p')
           UNION
           SELECT i.inhrelid, t.nspname FROM pg_catalog.pg_inherits i JOIN tables t ON i.inhparent = t.oid),
         rels AS (
           SELECT t.oid, t.nspname FROM tables t
           UNION ALL SELECT c.reltoastrelid, t.nspname FROM tables t JOIN pg_catalog.pg_class c ON c.oid = t.oid
                      WHERE c.reltoastrelid <> 0
           UNION ALL SELECT i.indexrelid, t.nspname FROM tables t JOIN pg_catalog.pg_index i ON i.indrelid = t.oid
           UNION ALL SELECT i.indexrelid, t.nspname FROM tables t JOIN pg_catalog.pg_class c ON c.oid = t.oid
                       JOIN pg_catalog.pg_index i ON i.indrelid = c.reltoastrelid)
         SELECT DISTINCT ON (r.oid) (SELECT {JOB_NAME} FROM users u
                                      WHERE u.schema IS NULL OR u.schema = r.nspname ORDER BY u.id LIMIT 1),
                r.oid
           FROM rels r
          WHERE r.oid = ANY ($2)
            AND EXISTS (SELECT FROM users u WHERE u.schema IS NULL OR u.schema = r.nspname)
          ORDER BY r.oid"
    )
}

/// Refuses (55006) a move of relations that a running or queued job of
/// this database uses (pgbench's tables and their indexes, TOAST included,
/// in the schema the job uses), naming the job and the first such relation
/// of `rels` (oid, what to call it), before anything moves. `own_job` is
/// the job that moves them itself (an experiment placing its cells).
///
/// The race with a job that starts meanwhile: the check and the move must
/// not interleave with a job's start. Both sides take the same advisory
/// lock, [`PGBENCH_TABLES_LOCK`]: a job's start exclusively (the caller's
/// transaction, and the worker's short transaction that turns the job
/// 'running'), a move shared, from before this check to the end of the
/// move's transaction. So a job becomes 'running' either before the check
/// (which then sees it) or after the move committed (and its run observes
/// the new layout from its start). A lock rather than a row lock on
/// storlab.job_records: a job that does not exist yet has no row to lock.
/// The jobs are read with the latest snapshot, not the transaction's:
/// under REPEATABLE READ or SERIALIZABLE, the transaction's snapshot may
/// predate a job that started before this lock was granted. The wait for
/// the lock is bounded by the move's lock_timeout (55P03).
pub fn pgbench_relations_free(
    rels: &[(pg_sys::Oid, String)],
    own_job: Option<i64>,
    timeout: std::time::Duration,
) -> Result<(), Error> {
    if rels.is_empty() {
        return Ok(());
    }
    let start = std::time::Instant::now();
    loop {
        let got = as_owner(|| {
            read::one::<bool>(
                "SELECT pg_catalog.pg_try_advisory_xact_lock_shared(pg_catalog.hashtextextended('storlab: pgbench tables of ' || pg_catalog.current_database(), 0))", &[],
            )
        })
        .map_err(spi("locking pgbench's tables"))?;
        if got == Some(true) {
            break;
        }
        if start.elapsed() >= timeout {
            return Err(Error::new(
                SqlState::LockNotAvailable,
                format!(
                    "could not check pgbench's tables within lock_timeout ({} ms): a storlab job is being started",
                    timeout.as_millis()
                ),
            )
            .with_detail("Nothing was moved."));
        }
        pg_sys::check_for_interrupts!();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let oids: Vec<pg_sys::Oid> = rels.iter().map(|r| r.0).collect();
    let used =
        as_owner(|| latest_snapshot_pairs(&used_relations_query(), own_job.unwrap_or(0), &oids))
            .map_err(|e| {
                Error::new(
                    SqlState::Internal,
                    format!("storlab: checking running jobs: {e}"),
                )
            })?;
    let found = rels.iter().find_map(|(oid, what)| {
        used.iter()
            .find(|(_, o)| o == oid)
            .map(|(job, _)| (job.clone(), what.clone()))
    });
    let Some((job, what)) = found else {
        return Ok(());
    };
    Err(Error::new(
        SqlState::ObjectInUse,
        format!("cannot move {what}: {job} uses it"),
    )
    .with_detail(format!(
        "A run measures the layout it records: while {job} runs, storlab moves none of pgbench's relations it uses. Nothing was moved."
    ))
    .with_hint("Wait for it with CALL storlab.wait(id), or stop it with storlab.cancel(id)."))
}

/// Runs a query of two columns (text, oid) with $1 int8 and $2 oid[],
/// under the latest snapshot (as a foreign key's check reads the rows
/// other transactions committed since the transaction's own snapshot).
fn latest_snapshot_pairs(
    query: &str,
    job: i64,
    oids: &[pg_sys::Oid],
) -> Result<Vec<(String, pg_sys::Oid)>, String> {
    use pgrx::IntoDatum;
    let query = std::ffi::CString::new(query).map_err(|e| e.to_string())?;
    Spi::connect(|_| {
        // SAFETY: SPI is connected (Spi::connect); the plan, its datums and
        // the result are used within this connection, on the backend's thread.
        unsafe {
            let mut types = [pg_sys::INT8OID, pg_sys::OIDARRAYOID];
            let plan = pg_sys::SPI_prepare(query.as_ptr(), 2, types.as_mut_ptr());
            if plan.is_null() {
                let result = pg_sys::SPI_result;
                return Err(format!("SPI_prepare failed ({result})"));
            }
            let mut values = [
                job.into_datum().expect("int8"),
                oids.to_vec().into_datum().expect("oid[]"),
            ];
            let nulls = [b' ' as std::ffi::c_char, b' ' as std::ffi::c_char];
            let rc = pg_sys::SPI_execute_snapshot(
                plan,
                values.as_mut_ptr(),
                nulls.as_ptr(),
                pg_sys::GetLatestSnapshot(),
                std::ptr::null_mut(),
                false,
                false,
                0,
            );
            if rc != pg_sys::SPI_OK_SELECT as i32 {
                return Err(format!("SPI_execute_snapshot failed ({rc})"));
            }
            let table = pg_sys::SPI_tuptable;
            let mut out = Vec::new();
            for i in 0..pg_sys::SPI_processed as usize {
                let tuple = *(*table).vals.add(i);
                let mut isnull = false;
                let name = pg_sys::SPI_getbinval(tuple, (*table).tupdesc, 1, &mut isnull);
                let name = if isnull {
                    None
                } else {
                    String::from_datum(name, false)
                };
                let oid = pg_sys::SPI_getbinval(tuple, (*table).tupdesc, 2, &mut isnull);
                let oid = if isnull {
                    None
                } else {
                    pg_sys::Oid::from_datum(oid, false)
                };
                if let (Some(name), Some(oid)) = (name, oid) {
                    out.push((name, oid));
                }
            }
            Ok(out)
        }
    })
}

/// pgbench's tables as `pgbench -i` leaves them when it finished: its last
/// step gives pgbench_accounts its primary key. Tables a failed or
/// cancelled initialisation left half-loaded have none, and a run on them
/// would measure a fraction of the data: refused (55000), naming bench_init.
pub fn check_pgbench_tables_complete(schema: &str) -> Result<(), Error> {
    // every table a pgbench script uses (pgbench_history takes the
    // tpcb-like inserts): one missing fails every run
    let missing = Spi::get_one_with_args::<String>(
        "SELECT pg_catalog.string_agg(t, ', ' ORDER BY t)
           FROM pg_catalog.unnest(ARRAY['pgbench_accounts', 'pgbench_branches', 'pgbench_history', 'pgbench_tellers']) t
          WHERE pg_catalog.to_regclass(pg_catalog.format('%I.%I', $1, t)) IS NULL",
        &[schema.into()],
    )
    .map_err(spi("reading pgbench's tables"))?;
    if let Some(missing) = missing {
        return Err(Error::new(
            SqlState::UndefinedTable,
            format!("pgbench's tables in schema \"{schema}\" are incomplete: {missing} missing"),
        )
        .with_hint("Make them again with SELECT storlab.bench_init()."));
    }
    let complete = Spi::get_one_with_args::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_index i
                         WHERE i.indrelid = pg_catalog.to_regclass(pg_catalog.format('%I.pgbench_accounts', $1))
                           AND i.indisprimary AND i.indisvalid)",
        &[schema.into()],
    )
    .map_err(spi("reading pgbench's tables"))?;
    if complete == Some(true) {
        return Ok(());
    }
    Err(Error::new(
        SqlState::ObjectNotInPrerequisiteState,
        format!("pgbench's tables in schema \"{schema}\" are incomplete: pgbench_accounts has no primary key"),
    )
    .with_detail("pgbench -i makes the primary keys last: an initialisation that failed or was cancelled leaves tables that hold only part of the data.")
    .with_hint("Make them again with SELECT storlab.bench_init()."))
}

/// Inserts the job row and starts its worker, which waits until the
/// caller's transaction commits and the row becomes visible. Returns the id.
pub fn start(spec: JobSpec) -> i64 {
    sweep_dead_jobs();
    // the worker does not see this session's settings: carry the value along
    let conninfo = settings::conninfo();
    if let Some(c) = &conninfo {
        conninfo::parse(c).map_err(invalid).or_raise();
    }
    let kind = spec.kind();
    if spec.uses_pgbench_tables() {
        pgbench_tables_free().or_raise();
    }
    let args = JobArgs { spec, conninfo }.to_json();
    // the role the job runs as: read before switching to the owner
    let role = identity::caller();
    let id = as_owner(|| {
        Spi::get_one_with_args::<i64>(
            "INSERT INTO storlab.job_records (kind, args, role) VALUES ($1, $2, $3) RETURNING id",
            &[kind.into(), JsonB(args).into(), Name(role).into()],
        )
    })
    .map_err(spi("creating the job"))
    .or_raise()
    .expect("RETURNING id");
    launch_or_raise(id, matches!(kind, "move_indexes" | "move_online"));
    id
}

/// Starts a failed or cancelled job again, on the same row (an experiment
/// resumed: its id stays the one the caller knows). Only roles with the
/// privileges of the job's role may: the job runs as that role.
/// `done_may_resume`: the job ended done without finishing (an experiment
/// stopped where pg_wal must move), and may be queued again too.
pub fn restart(job_id: i64, kind: &str, done_may_resume: bool) {
    sweep_dead_jobs();
    let row = as_owner(|| {
        Spi::get_three_with_args::<String, String, String>(
            "SELECT j.kind, j.status, j.role::text
               FROM (SELECT) one LEFT JOIN storlab.jobs j ON j.id = $1",
            &[job_id.into()],
        )
    })
    .map_err(spi("reading the job"))
    .or_raise();
    let (Some(found), Some(status), Some(role)) = row else {
        Error::new(
            SqlState::UndefinedObject,
            format!("there is no {kind} with id {job_id}"),
        )
        .raise()
    };
    if found != kind {
        Error::new(
            SqlState::UndefinedObject,
            format!("there is no {kind} with id {job_id}: storlab job {job_id} is a {found}"),
        )
        .raise();
    }
    let may = identity::is_superuser(identity::current_user())
        || identity::role_oid(&role).is_some_and(identity::has_privs_of);
    if !may {
        Error::new(
            SqlState::InsufficientPrivilege,
            format!("permission denied to resume storlab job {job_id}"),
        )
        .with_detail(format!(
            "It runs as role \"{role}\", which started it: only roles with its privileges may resume it."
        ))
        .raise();
    }
    if !(matches!(status.as_str(), "failed" | "cancelled") || (done_may_resume && status == "done"))
    {
        Error::new(
            SqlState::ObjectInUse,
            format!("storlab job {job_id} is {status}: only a failed or cancelled {kind} can be resumed"),
        )
        .raise();
    }
    pgbench_tables_free().or_raise();
    // created_at moves too: the view takes a queued job for dead two minutes
    // after it
    as_owner(|| {
        Spi::run_with_args(
            "UPDATE storlab.job_records
                SET status = 'queued', error = NULL, worker_pid = NULL, started_at = NULL, finished_at = NULL,
                    created_at = pg_catalog.clock_timestamp()
              WHERE id = $1",
            &[job_id.into()],
        )
    })
    .map_err(spi("queueing the job again"))
    .or_raise();
    launch_or_raise(job_id, false);
}

fn launch_or_raise(job_id: i64, restarted: bool) {
    // A queued job is one that others see (and storlab.jobs takes for dead
    // when no worker has taken it up two minutes after created_at): it is
    // queued when the transaction that starts it commits, however long it
    // stayed open, so created_at is set again just before that commit.
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::PreCommit, move || {
        // the statement's snapshot is gone by now: SQL here needs one of
        // its own, as deferred triggers get at the same point of a commit
        // SAFETY: a transaction is in progress; popped below on success
        // (an ERROR aborts the transaction, which pops it)
        unsafe { pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot()) };
        as_owner(|| {
            Spi::run_with_args(
                "UPDATE storlab.job_records SET created_at = pg_catalog.clock_timestamp()
                  WHERE id = $1 AND status = 'queued'",
                &[job_id.into()],
            )
        })
        .map_err(spi("queueing the job at commit"))
        .or_raise();
        // SAFETY: pushed above
        unsafe { pg_sys::PopActiveSnapshot() };
    });
    if let Err(e) = launch(job_id, restarted) {
        Error::new(
            SqlState::ConfigurationLimitExceeded,
            format!("could not start a background worker for the job: {e}"),
        )
        .with_detail("max_worker_processes may be too low for the workers already running.")
        .raise();
    }
}

/// May the current role run CHECKPOINT (a superuser, or a member of
/// pg_checkpoint)?
pub fn may_checkpoint() -> bool {
    identity::is_superuser(identity::current_user())
        || identity::has_privs_of(pg_sys::Oid::from(pg_sys::ROLE_PG_CHECKPOINT))
}

/// A run starts from a CHECKPOINT, run as the caller: only a superuser or
/// a member of pg_checkpoint may. Unless the caller asked for it, a role
/// that may not checkpoint runs without one, and the stored options say so;
/// asking for one without the privilege is refused.
pub fn checkpoint_option(mut options: RunOptions) -> RunOptions {
    let may = may_checkpoint();
    match options.checkpoint_before {
        Some(true) if !may => Error::new(
            SqlState::InsufficientPrivilege,
            "checkpoint_before needs the privilege to run CHECKPOINT",
        )
        .with_detail("Only superusers and members of pg_checkpoint may run CHECKPOINT.")
        .raise(),
        Some(_) => {}
        None => options.checkpoint_before = Some(may),
    }
    options
}

/// The rule pg_cancel_backend applies to sessions: a role may stop the jobs
/// of roles whose privileges it has (its own), a member of
/// pg_signal_backend those of any role but a superuser, a superuser all.
fn may_cancel(job_id: i64) -> Result<(), Error> {
    let role = as_owner(|| {
        Spi::get_one_with_args::<String>(
            "SELECT role::text FROM storlab.job_records WHERE id = $1",
            &[job_id.into()],
        )
    })
    .ok()
    .flatten();
    let Some(role) = role else {
        return Ok(()); // no such job: cancel() answers false
    };
    let me = identity::current_user();
    let allowed = match identity::role_oid(&role) {
        _ if identity::is_superuser(me) => true,
        None => false, // the role was dropped: superusers only
        Some(owner) => {
            identity::has_privs_of(owner)
                || (!identity::is_superuser(owner)
                    && identity::has_privs_of(pg_sys::Oid::from(pg_sys::ROLE_PG_SIGNAL_BACKEND)))
        }
    };
    if allowed {
        Ok(())
    } else {
        Err(Error::new(SqlState::InsufficientPrivilege,
            format!("permission denied to cancel storlab job {job_id}"),
        )
        .with_detail(format!(
            "Only roles with the privileges of role \"{role}\", which started it, may cancel it (or members of pg_signal_backend, unless that role is a superuser)."
        )))
    }
}

/// Marks a queued or running job to stop; true if it was still going. Like
/// everything in a transaction, it takes effect at commit: then the worker
/// is signalled, and stops pgbench within a second or two. A queued job is
/// cancelled before it starts.
pub fn cancel(job_id: i64) -> bool {
    may_cancel(job_id).or_raise();
    let who = identity::caller();
    let (marked, pid) = as_owner(|| {
        Spi::get_two_with_args::<bool, i32>(
            "WITH c AS (
               UPDATE storlab.job_records
                  SET status = CASE status WHEN 'queued' THEN 'cancelled' ELSE 'cancelling' END,
                      finished_at = CASE status WHEN 'queued' THEN pg_catalog.clock_timestamp() END,
                      error = CASE status WHEN 'queued' THEN pg_catalog.format('cancelled with storlab.cancel() by %s before it started', $2)
                                          ELSE pg_catalog.format('cancelled with storlab.cancel() by %s', $2) END
                WHERE id = $1 AND status IN ('queued', 'running')
                RETURNING worker_pid)
             SELECT EXISTS (SELECT FROM c), (SELECT worker_pid FROM c)",
            &[job_id.into(), who.into()],
        )
    })
    .map_err(spi("cancelling the job"))
    .or_raise();
    let marked = marked.unwrap_or(false);
    if let Some(pid) = pid.filter(|p| is_job_worker(*p)) {
        // after the commit that makes 'cancelling' visible to the worker;
        // never on rollback
        pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || {
            signal_worker(pid)
        });
    }
    marked
}

/// Stops a running job at once, outside any transaction: for CALL
/// storlab.wait, whose statement is being cancelled (its transaction rolls
/// back, so cancel() would never take effect). Only the caller's own jobs
/// (started by its current role): a superuser or a member of
/// pg_signal_backend whose wait on someone else's job is cancelled must not
/// stop that job as a side effect; stopping another role's job is cancel()'s.
pub fn stop_now(job_id: i64) -> bool {
    // the caller's own job (no such job: false, below) needs no other right
    let role = as_owner(|| {
        Spi::get_one_with_args::<String>(
            "SELECT (SELECT role::text FROM storlab.job_records WHERE id = $1)",
            &[job_id.into()],
        )
    })
    .map_err(spi("reading the job"))
    .or_raise();
    if let Some(role) = role.filter(|r| *r != identity::caller()) {
        Error::new(
            SqlState::InsufficientPrivilege,
            format!("storlab.stop_now() stops the caller's own jobs only: job {job_id} was started by role \"{role}\""),
        )
        .with_hint(format!("storlab.cancel({job_id}) stops another role's job, where pg_cancel_backend's rule allows."))
        .raise();
    }
    let pid = as_owner(|| {
        Spi::get_one_with_args::<i32>(
            // one row always: no such job (or one not running) is no pid
            "SELECT (SELECT worker_pid FROM storlab.jobs WHERE id = $1 AND status IN ('running', 'cancelling'))",
            &[job_id.into()],
        )
    })
    .map_err(spi("reading the job"))
    .or_raise();
    match pid.filter(|p| is_job_worker(*p)) {
        Some(pid) => {
            signal_worker(pid);
            true
        }
        None => false,
    }
}

/// Is `pid` a storlab job worker of this server (not some other process
/// that got the pid of one that exited)?
fn is_job_worker(pid: i32) -> bool {
    Spi::get_one_with_args::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_stat_activity WHERE pid = $1 AND backend_type = 'storlab job')",
        &[pid.into()],
    ) == Ok(Some(true))
}

/// SIGTERM to a job's worker (checked with [`is_job_worker`]): its handler
/// only sets a flag and its latch.
fn signal_worker(pid: i32) {
    // SAFETY: kill() of a pid checked to be a storlab job worker.
    unsafe { libc::kill(pid, libc::SIGTERM) };
}

/// A job's status and error as storlab.jobs shows them (a job whose worker
/// is gone is failed, and is stored so); None when there is no such job.
pub fn status(job_id: i64) -> Option<(String, Option<String>, Option<String>)> {
    sweep_dead_jobs();
    let row = as_owner(|| {
        read::three::<String, String, String>(
            "SELECT status, error, detail->>'error_sqlstate' FROM storlab.jobs WHERE id = $1",
            &[job_id.into()],
        )
    });
    if matches!(&row, Ok((Some(s), _, _)) if s == "done") {
        // a run that observed its relations moved while it ran is stored
        // invalid, and left out of every report: the caller waiting for
        // it (CALL storlab.wait, storlab.bench) is told so
        let invalid = as_owner(|| {
            read::one::<String>(
                "SELECT detail->>'run_invalid' FROM storlab.job_records WHERE id = $1",
                &[job_id.into()],
            )
        });
        if let Ok(Some(why)) = invalid {
            notice!("storlab: run {job_id} is invalid ({why}): reports leave it out");
        }
    }
    match row {
        Ok((Some(status), error, sqlstate)) => Some((status, error, sqlstate)),
        _ => None,
    }
}
