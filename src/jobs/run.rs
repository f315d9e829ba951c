//! What each kind of job does: `bench_init` (pgbench -i) and `bench` (a
//! measured pgbench run with the server's own counters around it).

use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pgrx::bgworkers::BackgroundWorker;
use pgrx::prelude::*;
use pgrx::JsonB;

use super::{as_caller, bookkeeping, stop_requested, Job};
use crate::ops::jobs::check_pgbench_tables_complete;
use crate::ops::read;
use crate::ops::record;
use crate::ops::server::data_dir;
use crate::sqltypes::Name;
use storlab_core::pgbench::process::{self, Outcome};
use storlab_core::pgbench::{self, conninfo, BenchOptions, Connection, InitOptions};
use storlab_core::record::{snapshot_sql, Counters, Record, RunResult};
use storlab_core::report::experiment::{
    disagreement, wal_tablespace, Expected, Observation, WalPlace,
};
use storlab_core::request::bench::{BenchInit, BenchRun};
use storlab_core::request::job::JobSpec;
use storlab_core::sql_text::{ident, literal};

pub enum JobEnd {
    Stopped(String),
    /// A failure outside PostgreSQL (pgbench's exit, a file): the job's
    /// error; CALL storlab.wait raises it as 38000.
    Failed(String),
    /// An ERROR with its own SQLSTATE (a lock timeout, a privilege, a
    /// check of ours): CALL storlab.wait raises it with that SQLSTATE.
    Error {
        message: String,
        sqlstate: String,
        detail: Option<String>,
    },
}

impl From<storlab_core::error::Error> for JobEnd {
    fn from(e: storlab_core::error::Error) -> Self {
        JobEnd::Error {
            message: e.message,
            sqlstate: e.state.code().to_string(),
            detail: e.detail.or(e.hint),
        }
    }
}

pub fn run(job: &Job) -> Result<(), JobEnd> {
    let dir = RunDir::new(run_dir(job.id));
    match &job.args.spec {
        JobSpec::BenchInit(r) => init(job, r, &dir.0),
        JobSpec::Bench(r) => bench(job, job.id, r, &dir.0, None, None),
        JobSpec::MoveIndexes(r) => super::move_indexes::run(job, r, &dir.0),
        JobSpec::MoveOnline(m) => super::move_online::run(job, m, &dir.0),
        JobSpec::Experiment(e) => super::experiment::run(job, e, &dir.0),
    }
}

/// What a job's worker, started again by the postmaster after a crash
/// restart interrupted the job, does before it marks the job failed: the
/// sentence that says so. Only move_indexes jobs ask to be started again
/// (ops::jobs::launch): a rebuild cut short leaves an invalid index behind.
/// So do move_online jobs: pg_repack cut short leaves its trigger on the
/// table, which logs every write until dropped.
pub fn recover(job: &Job) -> String {
    let dir = RunDir::new(run_dir(job.id));
    let said = "the server restarted (a crash of one of its processes) while the job ran";
    match &job.args.spec {
        JobSpec::MoveIndexes(r) => {
            format!("{said}; {}", super::move_indexes::recover(job, r, &dir.0))
        }
        JobSpec::MoveOnline(m) => {
            format!("{said}; {}", super::move_online::recover(job, m, &dir.0))
        }
        _ => said.to_string(),
    }
}

/// What a job's worker does once its job has ended (its status stored, so
/// that CALL storlab.wait returns): an online move removes the pg_repack
/// objects that a session's lock kept it from removing in time, once that
/// session lets go.
pub fn after_end(job: &Job) {
    if matches!(job.args.spec, JobSpec::MoveOnline(_)) {
        let dir = RunDir::new(run_dir(job.id));
        super::move_online::tidy_after_end(job, &dir.0);
    }
}

/// The job's folder of logs and scripts, removed however the job ends (an
/// ERROR unwinds through here too).
struct RunDir(PathBuf);

impl RunDir {
    fn new(path: PathBuf) -> Self {
        let _ = std::fs::remove_dir_all(&path);
        RunDir(path)
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Logs and scripts go in pg_default's temp folder, named like PostgreSQL's
/// own temp files so that a restart removes whatever a crash left.
fn run_dir(job_id: i64) -> PathBuf {
    data_dir()
        .join("base/pgsql_tmp")
        // job ids are per database, the folder is per server: the pid keeps them apart
        .join(format!(
            "pgsql_tmp_storlab_job_{}_{job_id}",
            std::process::id()
        ))
}

/// A client program of the server's own version (pg_repack), from the
/// server's bin folder.
pub(super) fn server_program(name: &str) -> PathBuf {
    pgbench_path().with_file_name(name)
}

/// pgbench of the server's own version, from the server's bin folder.
fn pgbench_path() -> PathBuf {
    // SAFETY: my_exec_path is set at startup to the postgres executable.
    let exe = unsafe { CStr::from_ptr((&raw const pg_sys::my_exec_path).cast()) }
        .to_string_lossy()
        .into_owned();
    Path::new(&exe).with_file_name("pgbench")
}

/// How pgbench reaches this server: its own socket folder and port, the
/// job's database and role.
pub(super) fn connection(job: &Job) -> Connection {
    // server facts storlab needs to connect, not the caller's to read
    // (unix_socket_directories needs pg_read_all_settings)
    let (sockets, port) = bookkeeping(|| {
        read::two::<String, String>(
            "SELECT pg_catalog.current_setting('unix_socket_directories'), pg_catalog.current_setting('port')", &[],
        )
    });
    let host = sockets.and_then(|s| {
        s.split(',')
            .map(str::trim)
            .find(|s| !s.is_empty())
            .map(String::from)
    });
    let mut conn = Connection {
        host: Some(host.unwrap_or_else(|| "127.0.0.1".into())),
        port: port.and_then(|p| p.parse().ok()),
        user: Some(job.role.clone()),
        dbname: job.database.clone(),
    };
    // storlab.conninfo as the caller had it (checked when the job started)
    if let Some(c) = &job.args.conninfo {
        if let Ok(Some(passfile)) = conninfo::apply(&mut conn, c) {
            // SAFETY: the worker is single-threaded; its children inherit this
            unsafe { std::env::set_var("PGPASSFILE", passfile) };
        }
    }
    conn
}

fn run_pgbench(
    job: &Job,
    args: &[std::ffi::OsString],
    dir: &Path,
    deadline: Duration,
) -> Result<Output, JobEnd> {
    run_program(job, &pgbench_path(), args, dir, deadline)
}

/// pgbench with session settings for its connections (PGOPTIONS, which
/// libpq sends at connect): set only around this one child.
fn run_pgbench_with(
    job: &Job,
    args: &[std::ffi::OsString],
    dir: &Path,
    deadline: Duration,
    pgoptions: Option<&str>,
) -> Result<Output, JobEnd> {
    with_pgoptions(pgoptions, || run_pgbench(job, args, dir, deadline))
}

/// Runs `f` (which starts a client program) with PGOPTIONS set to
/// `pgoptions`, and only then.
fn with_pgoptions<R>(pgoptions: Option<&str>, f: impl FnOnce() -> R) -> R {
    match pgoptions {
        Some(options) => with_env("PGOPTIONS", options, f),
        None => f(),
    }
}

/// Runs `f` with an environment variable set for the client programs it
/// starts, and only then.
pub(super) fn with_env<R>(name: &str, value: &str, f: impl FnOnce() -> R) -> R {
    // SAFETY: the worker is single-threaded; only its children read this
    unsafe { std::env::set_var(name, value) };
    let out = f();
    // SAFETY: as above
    unsafe { std::env::remove_var(name) };
    out
}

/// The settings that every run records, beside those its layout declares.
const RECORDED_SETTINGS: [&str; 16] = [
    "shared_buffers",
    "wal_sync_method",
    "synchronous_commit",
    "full_page_writes",
    "checkpoint_timeout",
    "max_wal_size",
    "wal_buffers",
    "wal_compression",
    "effective_io_concurrency",
    "random_page_cost",
    "fsync",
    "wal_level",
    "track_io_timing",
    "work_mem",
    "temp_tablespaces",
    "server_version",
];

/// The settings pgbench's sessions run with, read in a session opened as
/// pgbench opens its own: the same role, database and connection, and the
/// same PGOPTIONS (role and database defaults, ALTER SYSTEM and the
/// layout's settings all as they reach pgbench). `extra`: the layout's own
/// settings, read too.
fn session_settings(
    job: &Job,
    dir: &Path,
    pgoptions: Option<&str>,
    extra: &[String],
) -> Result<serde_json::Value, JobEnd> {
    let mut names: Vec<String> = RECORDED_SETTINGS.iter().map(|s| s.to_string()).collect();
    for n in extra {
        let n = n.to_lowercase();
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let list = names
        .iter()
        .map(|n| literal(n))
        .collect::<Vec<_>>()
        .join(", ");
    // the caller's own session: every name qualified, whatever its search_path
    let sql = format!(
        "SELECT pg_catalog.jsonb_object_agg(s.name, pg_catalog.current_setting(s.name))
           FROM pg_catalog.pg_settings s
          WHERE s.name OPERATOR(pg_catalog.=) ANY (ARRAY[{list}]::pg_catalog.text[])"
    );
    let out = with_pgoptions(pgoptions, || {
        psql_with(job, &connection(job), &[&sql], dir, &["-A", "-t"])
    })?;
    serde_json::from_str(out.trim()).map_err(|e| {
        JobEnd::Failed(format!(
            "reading the settings of pgbench's sessions: {e} in {:?}",
            out.trim()
        ))
    })
}

/// Where pg_wal is now: its folder (links resolved) and filesystem, read
/// by the worker (the data folder's path is the server's, not the
/// caller's to read), with a tablespace whose folder shares that
/// filesystem (`preferred`, the layout's `wal`, when it does).
pub(super) fn observe_wal(preferred: Option<&str>) -> Result<WalPlace, String> {
    let wal = data_dir().join("pg_wal");
    let here = storlab_core::env::place(&wal)
        .map_err(|e| format!("cannot tell where pg_wal is ({}): {e}", wal.display()))?;
    let sharing = tablespaces_on(here.dev);
    Ok(WalPlace {
        location: here.location.to_string_lossy().into_owned(),
        mount_point: here.mount_point.to_string_lossy().into_owned(),
        fs_type: here.fs_type,
        tablespace: wal_tablespace(&sharing, preferred),
    })
}

/// The tablespaces whose folders are on the filesystem with st_dev `dev`
/// (pg_default and pg_global: the data folder's).
fn tablespaces_on(dev: u64) -> Vec<String> {
    let data = data_dir();
    let all: Vec<(String, String)> = as_caller(|| {
        Spi::connect(|c| {
            c.select(
                "SELECT spcname::pg_catalog.text, coalesce(pg_catalog.pg_tablespace_location(oid), '')
                   FROM pg_catalog.pg_tablespace ORDER BY spcname",
                None,
                &[],
            )?
            .map(|r| Ok((r.get::<String>(1)?.unwrap_or_default(), r.get::<String>(2)?.unwrap_or_default())))
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
    });
    all.into_iter()
        .filter(|(_, location)| {
            // an in-place tablespace's location is relative to the data folder
            let folder = if location.is_empty() {
                data.clone()
            } else {
                data.join(location)
            };
            storlab_core::env::device_of(&folder).ok() == Some(dev)
        })
        .map(|(name, _)| name)
        .collect()
}

/// Where pgbench's relations are now (read from pg_class, as the caller),
/// pgbench_accounts' fillfactor and where pg_wal is (`wal`: the layout's
/// tablespace for it, if any): what a run observes at its start and at its
/// end.
pub(super) fn observe(schema: &str, wal: Option<&str>) -> Observation {
    let mut o = observe_relations(schema);
    o.wal = observe_wal(wal).ok();
    o
}

pub(super) fn observe_relations(schema: &str) -> Observation {
    let json = as_caller(|| {
        read::one::<JsonB>(
            "SELECT pg_catalog.jsonb_build_object(
                 'tables', coalesce(pg_catalog.jsonb_object_agg(r.relname, r.ts)
                                      FILTER (WHERE r.relkind OPERATOR(pg_catalog.=) 'r'), '{}'),
                 'indexes', coalesce(pg_catalog.jsonb_object_agg(r.relname, r.ts)
                                      FILTER (WHERE r.relkind OPERATOR(pg_catalog.=) 'i'), '{}'),
                 'fillfactor', (SELECT coalesce((SELECT o.option_value::pg_catalog.int4
                                                  FROM pg_catalog.pg_options_to_table(c.reloptions) o
                                                 WHERE o.option_name OPERATOR(pg_catalog.=) 'fillfactor'), 100)
                                  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
                                 WHERE n.nspname OPERATOR(pg_catalog.=) $1 AND c.relname OPERATOR(pg_catalog.=) 'pgbench_accounts'
                                   AND c.relkind OPERATOR(pg_catalog.=) 'r'))
               FROM (SELECT c.relname::pg_catalog.text AS relname, c.relkind,
                            coalesce(t.spcname, d.spcname)::pg_catalog.text AS ts
                       FROM pg_catalog.pg_class c
                       JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
                       LEFT JOIN pg_catalog.pg_tablespace t ON t.oid OPERATOR(pg_catalog.=) c.reltablespace
                      CROSS JOIN (SELECT s.spcname FROM pg_catalog.pg_database db
                                    JOIN pg_catalog.pg_tablespace s ON s.oid OPERATOR(pg_catalog.=) db.dattablespace
                                   WHERE db.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) d
                      WHERE n.nspname OPERATOR(pg_catalog.=) $1 AND c.relkind IN ('r', 'i')
                        AND coalesce((SELECT tc.relname FROM pg_catalog.pg_index ix
                                        JOIN pg_catalog.pg_class tc ON tc.oid OPERATOR(pg_catalog.=) ix.indrelid
                                       WHERE ix.indexrelid OPERATOR(pg_catalog.=) c.oid), c.relname)
                            OPERATOR(pg_catalog.~) '^(pgbench_(accounts|branches|tellers|history)|storlab_bench_append)$') r",
            &[Name(schema.to_string()).into()],
        )
    });
    json.and_then(|j| serde_json::from_value(j.0).ok())
        .unwrap_or_default()
}

/// What a finished client program printed.
struct Output {
    stdout: String,
    stderr: String,
}

/// Runs a client program of the server's own bin folder for the job; what
/// it printed, or why it failed (its stderr) or was stopped.
fn run_program(
    job: &Job,
    program: &Path,
    args: &[std::ffi::OsString],
    dir: &Path,
    deadline: Duration,
) -> Result<Output, JobEnd> {
    run_program_with(program, args, dir, deadline, &mut || stop_requested(job.id))
}

/// [`run_program`], stopped when `stop` says (or at `deadline`).
fn run_program_with(
    program: &Path,
    args: &[std::ffi::OsString],
    dir: &Path,
    deadline: Duration,
    stop: &mut dyn FnMut() -> Option<String>,
) -> Result<Output, JobEnd> {
    std::fs::create_dir_all(dir)
        .map_err(|e| JobEnd::Failed(format!("cannot create {}: {e}", dir.display())))?;
    let out = process::run(program, args, dir, deadline, stop)
        .map_err(|e| JobEnd::Failed(format!("cannot run {}: {e}", program.display())))?;
    let stdout = std::fs::read_to_string(dir.join("stdout")).unwrap_or_default();
    let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    match out {
        Outcome::Exited(s) if s.success() => Ok(Output { stdout, stderr }),
        // the cause first: pgbench -i prints its progress before it
        Outcome::Exited(s) => Err(JobEnd::Failed(format!(
            "{} exited with {}: {}",
            program.file_name().unwrap_or_default().to_string_lossy(),
            s.code()
                .map_or("a signal".to_string(), |c| format!("status {c}")),
            pgbench::cause_first(&stderr)
        ))),
        Outcome::Stopped(why) => Err(JobEnd::Stopped(why)),
    }
}

pub(super) fn init(job: &Job, r: &BenchInit, dir: &Path) -> Result<(), JobEnd> {
    let mut o = InitOptions::new(r.scale, &job.database);
    o.fillfactor = Some(r.fillfactor);
    o.tablespace = r.tablespace.clone();
    o.index_tablespace = r.index_tablespace.clone();
    o.partitions = r.partitions;
    o.connection = connection(job);
    let args = o.args().map_err(|e| JobEnd::Failed(e.to_string()))?;
    std::fs::create_dir_all(dir).map_err(|e| JobEnd::Failed(e.to_string()))?;
    // std::fs paths: pgbench -i writes nothing there but its output
    let out = run_pgbench(job, &args, dir, Duration::from_secs(24 * 3600))?;
    // how long each step of pgbench -i took, from its last stderr line
    if let Ok(Some(t)) = pgbench::parse_init_timings(&out.stderr) {
        let steps: serde_json::Map<String, serde_json::Value> = t
            .steps
            .into_iter()
            .map(|(step, s)| (step, s.into()))
            .collect();
        store_detail(
            job,
            serde_json::json!({ "init_total_s": t.total_s, "init_steps_s": steps }),
        );
    }
    // storlab's insert-append script appends to a table of its own, made
    // by the caller beside pgbench's tables (in the schema pgbench -i chose;
    // the DDL names no function, and runs as the caller)
    let schema = ident(&pgbench_schema()?);
    let ddl = format!(
        "SET LOCAL search_path TO {schema}, pg_catalog;\n{}",
        pgbench::scripts::append_table_ddl(o.tablespace.as_deref(), o.index_tablespace.as_deref())
    );
    as_caller(|| Spi::run(&ddl));
    Ok(())
}

/// The schema of the pgbench tables the job's pgbench will use:
/// `pgbench_accounts` as the job's role finds it with its own default
/// search_path, as pgbench's connection does. The one lookup of a name
/// through a search_path not our own; the function itself is qualified.
pub(super) fn pgbench_schema() -> Result<String, JobEnd> {
    let found = BackgroundWorker::transaction(|| {
        read::one::<String>(
            "SELECT n.nspname::text FROM pg_catalog.pg_class c
               JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
              WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass('pgbench_accounts')",
            &[],
        )
        .ok()
        .flatten()
    });
    found.ok_or_else(|| {
        JobEnd::Failed(
            "pgbench's tables are missing for this role: pgbench_accounts is not found with its default search_path"
                .into(),
        )
    })
}

/// The server's cumulative counters, read in a transaction of their own
/// (statistics snapshots last a transaction) from the views of the major
/// this library was built for; the keys are [`Counters`]' fields.
fn counters(schema: &str) -> Counters {
    as_caller(|| {
        read::one::<JsonB>(
            &snapshot_sql::counters(pg_sys::PG_MAJORVERSION_NUM),
            &[Name(schema.to_string()).into()],
        )
    })
    // a snapshot that cannot be read gives no difference (all None)
    .and_then(|j| serde_json::from_value(j.0).ok())
    .unwrap_or_default()
}

/// The schema of pg_stat_statements, quoted, when the extension is
/// installed in this database and preloaded (querying it otherwise fails).
/// A server fact (shared_preload_libraries needs pg_read_all_settings); the
/// statistics themselves are read as the caller.
pub(super) fn pg_stat_statements_schema() -> Option<String> {
    bookkeeping(|| {
        read::one::<String>(
            // a scalar subquery: one row (NULL) when the extension is absent
            "SELECT (SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
                      WHERE e.extname = 'pg_stat_statements'
                        AND current_setting('shared_preload_libraries') ~ '(^|[ ,])pg_stat_statements($|[ ,])')", &[],
        )
    })
    .map(|schema| ident(&schema))
}

/// pg_stat_statements' counters per statement, when the extension is
/// installed in this database and preloaded (querying it otherwise fails).
fn statements() -> Option<serde_json::Value> {
    let schema = pg_stat_statements_schema()?;
    as_caller(|| {
        read::one::<JsonB>(&format!(
            "SELECT coalesce(jsonb_object_agg(queryid::text, jsonb_build_object(
                        'query', left(query, 500), 'calls', calls, 'total_ms', total_exec_time, 'rows', rows,
                        'shared_blks_read', shared_blks_read, 'shared_blks_hit', shared_blks_hit)), '{{}}')
               FROM {schema}.pg_stat_statements
              WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND queryid IS NOT NULL"
        ), &[])
    })
    .map(|j| j.0)
}

/// One measured run into the storlab.bench_runs row `run_id` (the job's own
/// id for bench_start(); a run of an experiment has one of its own), with
/// `pgoptions` given to pgbench's sessions.
///
/// The run observes, at its start and at its end, where pgbench's relations
/// are and pgbench_accounts' fillfactor, and reads the settings its
/// sessions run with in a session opened as theirs are; all three are
/// stored (`observed`, `settings`). A run whose observations disagree with
/// each other, or with `expected` (an experiment's cell), is stored with
/// the reason in `invalid`, and no report pools it.
pub(super) fn bench(
    job: &Job,
    run_id: i64,
    r: &BenchRun,
    dir: &Path,
    pgoptions: Option<&str>,
    expected: Option<&Expected>,
) -> Result<(), JobEnd> {
    let duration_s = r.duration_s as i32;
    let sampling_rate = r.sampling_rate();

    let schema = pgbench_schema()?;
    // checked again here: an initialisation may have failed since the call
    as_caller(|| Ok(check_pgbench_tables_complete(&schema)))?;
    let quoted = ident(&schema);
    let accounts = literal(&format!("{quoted}.pgbench_accounts"));
    let (scale, fillfactor) = as_caller(|| {
        read::two::<i32, i32>(&format!(
            // a partitioned pgbench_accounts has no storage and no
            // fillfactor of its own: its partitions carry it
            "SELECT (SELECT pg_catalog.count(*)::int FROM {quoted}.pgbench_branches),
                    (SELECT coalesce((SELECT o.option_value::int FROM pg_catalog.pg_options_to_table(c.reloptions) o
                                       WHERE o.option_name = 'fillfactor'), 100)
                       FROM pg_catalog.pg_class c
                      WHERE c.relkind = 'r'
                        AND (c.oid = {accounts}::regclass
                             OR c.oid IN (SELECT i.inhrelid FROM pg_catalog.pg_inherits i
                                           WHERE i.inhparent = {accounts}::regclass))
                      ORDER BY c.relname LIMIT 1)",
        ), &[])
    });
    let mut o = BenchOptions::new(&r.script, &job.database, dir);
    o.scale = scale;
    o.clients = r.clients;
    o.jobs = r.jobs;
    o.duration_s = duration_s;
    o.protocol = r.options.protocol();
    o.rate_tps = r.options.rate;
    // pgbench's own progress lines land in the job's stderr file; the stored
    // per-second rows come from the transaction log either way
    o.progress_s = r.options.progress_interval.map(|p| p as i32);
    o.log = true;
    o.sampling_rate = sampling_rate;
    o.log_prefix = "tx".into();
    o.no_vacuum = !r.options.vacuum.unwrap_or(true);
    o.connection = connection(job);
    o.prepare_run_dir()
        .map_err(|e| JobEnd::Failed(e.to_string()))?;
    let args = o.args().map_err(|e| JobEnd::Failed(e.to_string()))?;

    // The state the run starts from: a checkpoint, so that one run does not
    // pay for the previous one's dirty buffers; the layout; the settings.
    if r.options.checkpoint_before.unwrap_or(true) {
        // as the caller: bench_start refused the option for a role that
        // may not checkpoint (superuser or pg_checkpoint)
        as_caller(|| Spi::run("CHECKPOINT"));
    }
    let declared: Vec<String> = expected
        .map(|e| e.settings.iter().map(|(n, _)| n.clone()).collect())
        .unwrap_or_default();
    // psql connects as pgbench will: when it cannot, pgbench fails next,
    // and the job's error is pgbench's own
    let (settings, settings_error) =
        match session_settings(job, &dir.join("settings"), pgoptions, &declared) {
            Ok(s) => (s, None),
            Err(JobEnd::Failed(why)) => (serde_json::Value::Null, Some(why)),
            Err(e) => return Err(e),
        };
    let wal_wanted = expected.and_then(|e| e.wal.as_deref());
    let start = observe(&schema, wal_wanted);
    bookkeeping(|| {
        Spi::run_with_args(
            "UPDATE storlab.bench_runs SET scale = $2, fillfactor = $3, started_at = pg_catalog.clock_timestamp(),
                 layout = (SELECT jsonb_agg(jsonb_build_object('relation', c.relname, 'kind', l.kind,
                               'tablespace', l.tablespace, 'logical_bytes', l.logical_bytes,
                               'allocated_bytes', l.allocated_bytes)
                               ORDER BY c.relname)
                             FROM storlab.layout($4) l JOIN pg_catalog.pg_class c ON c.oid = l.relation
                            WHERE c.relname ~ '^(pgbench_|storlab_bench_append)'),
                 settings = nullif($5, 'null'::jsonb), observed = jsonb_build_object('start', $6::jsonb)
              WHERE id = $1",
            &[
                run_id.into(),
                scale.into(),
                fillfactor.into(),
                Name(schema.clone()).into(),
                JsonB(settings.clone()).into(),
                JsonB(serde_json::to_value(&start).unwrap_or_default()).into(),
            ],
        )
    });
    let before = counters(&schema);
    let statements_before = statements();
    // pgbench's own vacuum and start-up come before the timed run; allow them a minute
    let out = run_pgbench_with(
        job,
        &args,
        dir,
        Duration::from_secs(duration_s as u64 + 60),
        pgoptions,
    )?;
    let stdout = out.stdout;
    // pgbench's own progress lines (with progress_interval) and warnings
    let report = pgbench::parse_stderr(&out.stderr).ok();
    if let Some(report) = &report {
        let progress: Vec<serde_json::Value> = report
            .progress
            .iter()
            .map(|p| {
                serde_json::json!({ "t_s": p.t_s, "tps": p.tps, "lat_avg_ms": p.lat_avg_ms,
                    "lat_stddev_ms": p.lat_stddev_ms, "failed": p.failed, "lag_ms": p.lag_ms,
                    "skipped": p.skipped })
            })
            .collect();
        // the job's detail is one run's: an experiment's many runs keep
        // their per-second rows in bench_progress only
        if run_id == job.id && (!progress.is_empty() || !report.messages.is_empty()) {
            store_detail(
                job,
                serde_json::json!({ "pgbench_progress": progress, "pgbench_messages": report.messages }),
            );
        }
    }
    let after = counters(&schema);
    let statements_after = statements();
    let end = observe(&schema, wal_wanted);
    let mut invalid = disagreement(
        expected.unwrap_or(&Expected::default()),
        &start,
        &end,
        &settings,
    );
    if let Some(why) = settings_error {
        let unread = format!("the settings of its sessions could not be read ({why})");
        invalid = Some(match invalid {
            Some(more) => format!("{unread}; {more}"),
            None => unread,
        });
    }
    let observed = serde_json::json!({ "start": start, "end": end });

    let summary = pgbench::parse_summary(&stdout)
        .map_err(|e| JobEnd::Failed(format!("pgbench's summary: {e}")))?;
    // a run that completed nothing has no TPS or latency to give: stored,
    // it would read as 0 TPS in every comparison
    if summary.transactions == Some(0) {
        return Err(JobEnd::Failed(format!(
            "pgbench completed no transaction in {duration_s} s: there is no figure to store{}",
            report
                .as_ref()
                .and_then(|r| r.first_error().map(|e| format!(" ({e})")))
                .unwrap_or_default()
        )));
    }
    let tx = pgbench::read_tx_logs(dir, "tx", o.tx_log_format())
        .map_err(|e| JobEnd::Failed(format!("pgbench's transaction log: {e}")))?;
    let p = tx.histogram.percentiles();
    let histogram = tx.histogram.to_bytes().ok();
    let progress = tx.timeline(sampling_rate);
    let version = std::process::Command::new(pgbench_path())
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());

    let result = RunResult {
        tps: summary.tps,
        transactions: summary.transactions,
        failures: summary.failed,
        lat_avg_ms: summary.lat_avg_ms,
        // pgbench prints it only with --rate or --progress; the
        // histogram always has it (of the logged sample)
        lat_stddev_ms: summary
            .lat_stddev_ms
            .or(p.as_ref().map(|p| p.lat_stddev_ms)),
        lat_p50_ms: p.as_ref().map(|p| p.lat_p50_ms),
        lat_p90_ms: p.as_ref().map(|p| p.lat_p90_ms),
        lat_p95_ms: p.as_ref().map(|p| p.lat_p95_ms),
        lat_p99_ms: p.as_ref().map(|p| p.lat_p99_ms),
        lat_max_ms: p.as_ref().map(|p| p.lat_max_ms),
        histogram,
        pgbench_version: version,
        observed,
        invalid: invalid.clone(),
        counters: before.delta(&after),
    };
    // the run's top ten statements by execution time, from
    // pg_stat_statements' counters before ($3) and after ($4) the run
    let statements_sql = "(SELECT jsonb_agg(s ORDER BY (s->>'total_ms')::float8 DESC) FROM (
                 SELECT jsonb_build_object(
                          'query', a.value->>'query',
                          'calls', (a.value->>'calls')::bigint - coalesce((b.value->>'calls')::bigint, 0),
                          'total_ms', round(((a.value->>'total_ms')::numeric - coalesce((b.value->>'total_ms')::numeric, 0)), 3),
                          'rows', (a.value->>'rows')::bigint - coalesce((b.value->>'rows')::bigint, 0),
                          'shared_blks_read', (a.value->>'shared_blks_read')::bigint - coalesce((b.value->>'shared_blks_read')::bigint, 0),
                          'shared_blks_hit', (a.value->>'shared_blks_hit')::bigint - coalesce((b.value->>'shared_blks_hit')::bigint, 0)) AS s
                   FROM jsonb_each($4::jsonb) a LEFT JOIN jsonb_each($3::jsonb) b ON b.key = a.key
                  WHERE (a.value->>'calls')::bigint > coalesce((b.value->>'calls')::bigint, 0)
                  ORDER BY (a.value->>'total_ms')::numeric - coalesce((b.value->>'total_ms')::numeric, 0) DESC
                  LIMIT 10) t)";
    let computed = [
        ("finished_at", "pg_catalog.clock_timestamp()"),
        ("statements", statements_sql),
    ];
    bookkeeping(|| {
        Spi::run_with_args(
            &record::update_sql(&result, "id", &computed)?,
            &[
                run_id.into(),
                JsonB(result.to_json()).into(),
                statements_before.clone().map(JsonB).into(),
                statements_after.clone().map(JsonB).into(),
            ],
        )?;
        // partial seconds (the first and last) would understate the rate
        // the first and last seconds are partial: kept, and marked so,
        // since their tps understates the rate
        for row in &progress {
            Spi::run_with_args(
                "INSERT INTO storlab.bench_progress (run_id, t_s, tps, lat_avg_ms, lat_max_ms, failures, partial)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[
                    run_id.into(),
                    (row.t_s as i32).into(),
                    row.tps.into(),
                    row.lat_avg_ms.into(),
                    row.lat_max_ms.into(),
                    (row.failures as i64).into(),
                    (!row.complete).into(),
                ],
            )?;
        }
        Ok(())
    });
    // a run of its own (not an experiment's) says it in its job's row
    // (storlab.jobs), and job_status() with a NOTICE: reports leave it out
    if let (true, Some(why)) = (run_id == job.id, &invalid) {
        store_detail(job, serde_json::json!({ "run_invalid": why }));
    }
    Ok(())
}

/// Adds facts of the run to the job's `detail`.
pub(super) fn store_detail(job: &Job, detail: serde_json::Value) {
    bookkeeping(|| {
        Spi::run_with_args(
            "UPDATE storlab.job_records SET detail = coalesce(detail, '{}') || $2 WHERE id = $1",
            &[job.id.into(), JsonB(detail).into()],
        )
    });
}

/// Statements that must run at top level (REINDEX ... CONCURRENTLY cannot run
/// in a transaction block, so not through SPI) go over a client connection.
pub(super) fn psql(job: &Job, conn: &Connection, sql: &str, dir: &Path) -> Result<String, JobEnd> {
    psql_with(job, conn, &[sql], dir, &[])
}

/// psql with several `-c` commands in one session, each a statement or one
/// backslash command (`\timing on` before a statement prints its duration).
pub(super) fn psql_commands(
    job: &Job,
    conn: &Connection,
    commands: &[&str],
    dir: &Path,
) -> Result<String, JobEnd> {
    psql_with(job, conn, commands, dir, &[])
}

/// [`psql_commands`], `watch` called every quarter of a second or so while
/// psql runs (it looks at what the statement waits for).
pub(super) fn psql_commands_watched(
    job: &Job,
    conn: &Connection,
    commands: &[&str],
    dir: &Path,
    watch: &mut dyn FnMut(),
) -> Result<String, JobEnd> {
    let args = psql_args(conn, commands, &[]);
    let psql = pgbench_path().with_file_name("psql");
    run_program_with(
        &psql,
        &args,
        dir,
        Duration::from_secs(24 * 3600),
        &mut || {
            watch();
            stop_requested(job.id)
        },
    )
    .map(|o| o.stdout)
}

/// psql as [`psql_commands`] runs it, for a statement that tidies after a
/// stop (its own lock_timeout bounds its waits): a stop request, which
/// would end it before it did anything once the job is stopping, does not
/// cut it short; `deadline` does.
pub(super) fn psql_tidying(
    conn: &Connection,
    commands: &[&str],
    dir: &Path,
    deadline: Duration,
) -> Result<String, JobEnd> {
    let args = psql_args(conn, commands, &[]);
    let psql = pgbench_path().with_file_name("psql");
    run_program_with(&psql, &args, dir, deadline, &mut || {
        std::thread::sleep(Duration::from_millis(10));
        None
    })
    .map(|o| o.stdout)
}

/// psql as [`psql`] runs it: `commands` as its `-c`s in one session, with
/// more options (`-A -t`: bare values).
fn psql_with(
    job: &Job,
    conn: &Connection,
    commands: &[&str],
    dir: &Path,
    options: &[&str],
) -> Result<String, JobEnd> {
    let psql = pgbench_path().with_file_name("psql");
    let args = psql_args(conn, commands, options);
    run_program(job, &psql, &args, dir, Duration::from_secs(24 * 3600)).map(|o| o.stdout)
}

/// psql's arguments: quiet, stopping at the first error, the connection,
/// `options`, then `commands` as its `-c`s.
fn psql_args(conn: &Connection, commands: &[&str], options: &[&str]) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "-X".into(),
        "-q".into(),
        "-v".into(),
        "ON_ERROR_STOP=1".into(),
    ];
    args.extend(options.iter().map(std::ffi::OsString::from));
    if let Some(h) = &conn.host {
        args.push(format!("--host={h}").into());
    }
    if let Some(p) = conn.port {
        args.push(format!("--port={p}").into());
    }
    if let Some(u) = &conn.user {
        args.push(format!("--username={u}").into());
    }
    // spelled as a connection string, so that a database name is never taken for one
    args.push(format!("--dbname=dbname={}", conninfo::quote(&conn.dbname)).into());
    for c in commands {
        args.push("-c".into());
        args.push(c.into());
    }
    args
}
