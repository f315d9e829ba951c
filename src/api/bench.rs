//! Benchmarks as jobs: `storlab.scripts()`, `bench_init()`, `bench_start()`,
//! `cancel()`, `job_status()`. The waiting side (`CALL storlab.wait`,
//! `CALL storlab.bench`) is PL/pgSQL in sql/catalog/grants.sql, since only a
//! procedure can COMMIT between polls.

use pgrx::datum::{Interval, JsonB};
use pgrx::prelude::*;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

use crate::ops::identity::{self, as_owner};
use super::name::Name;
use super::probe::{hostname, interval_micros, invalid, required, system_identifier, Failure};
use crate::pgbench::{self, Protocol};

pub static MAX_BENCH_DURATION_S: GucSetting<i32> = GucSetting::<i32>::new(3600);
pub static CONNINFO: GucSetting<Option<std::ffi::CString>> =
    GucSetting::<Option<std::ffi::CString>>::new(None);

pub fn init_gucs() {
    GucRegistry::define_int_guc(
        c"storlab.max_bench_duration",
        c"Longest duration one storlab benchmark run may have.",
        c"Guards a production server against a run started with a mistaken duration.",
        &MAX_BENCH_DURATION_S,
        1,
        7 * 24 * 3600,
        GucContext::Suset,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_string_guc(
        c"storlab.conninfo",
        c"How jobs' pgbench and psql connect to this server: host, port, user, passfile.",
        c"Empty: the server's own socket folder and port, as the calling role. Set it when pg_hba.conf needs more, e.g. 'host=127.0.0.1 passfile=/var/lib/postgresql/.pgpass'.",
        &CONNINFO,
        GucContext::Suset,
        GucFlags::default(),
    );
}

/// pgbench's builtin scripts and storlab's own, with what each stresses.
#[pg_extern(immutable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn scripts() -> TableIterator<
    'static,
    (
        name!(name, String),
        name!(source, String),
        name!(description, String),
        name!(script, Option<String>),
    ),
> {
    TableIterator::new(pgbench::scripts::all().into_iter().map(|s| {
        let source = match s.source {
            pgbench::ScriptSource::Builtin => "pgbench builtin",
            pgbench::ScriptSource::Storlab => "storlab",
        };
        (
            s.name.to_string(),
            source.to_string(),
            s.description.to_string(),
            s.text.map(str::to_string),
        )
    }))
}

/// Marks jobs whose worker is gone (a crash, a restart) as failed, so that
/// nobody waits for them forever.
fn sweep_dead_jobs() {
    as_owner(|| {
        Spi::run(
            "UPDATE storlab.jobs SET status = 'failed', finished_at = pg_catalog.clock_timestamp(),
                    error = 'the job''s worker exited before finishing it (an error in the worker, a crash or a server restart: the server log says which)'
              WHERE (status IN ('running', 'cancelling')
                     AND NOT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a WHERE a.pid = worker_pid))
                 OR (status = 'queued' AND created_at < pg_catalog.clock_timestamp() - interval '2 minutes')",
        )
    })
    .unwrap_or_else(|e| error!("could not check storlab.jobs: {e}"));
}

fn tablespace_must_exist(ts: &Option<Name>) {
    if let Some(ts) = ts {
        let found = Spi::get_one_with_args::<bool>(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_tablespace WHERE spcname = $1)",
            &[ts.clone().into()],
        );
        if found != Ok(Some(true)) {
            // checked here: pgbench -i drops the old tables before it notices
            Failure::new(
                PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
                format!("tablespace \"{ts}\" does not exist"),
            )
            .raise();
        }
    }
}

/// Inserts the job row and starts its worker; the worker waits until the
/// caller's transaction commits and the row becomes visible.
fn start_job(kind: &str, mut args: serde_json::Value) -> i64 {
    sweep_dead_jobs();
    // the worker does not see this session's settings: carry the value along
    if let Some(conninfo) = CONNINFO
        .get()
        .map(|c| c.to_string_lossy().into_owned())
        .filter(|c| !c.trim().is_empty())
    {
        if let Err(e) = crate::jobs::conninfo::parse(&conninfo) {
            invalid(e).raise();
        }
        args["conninfo"] = conninfo.into();
    }
    // the role the job runs as: read before switching to the owner
    let role = identity::caller();
    let id = as_owner(|| {
        Spi::get_one_with_args::<i64>(
            "INSERT INTO storlab.jobs (kind, args, role) VALUES ($1, $2, $3) RETURNING id",
            &[kind.into(), JsonB(args).into(), Name(role).into()],
        )
    })
    .unwrap_or_else(|e| error!("could not create the job: {e}"))
    .expect("RETURNING id");
    if let Err(e) = crate::jobs::launch(id) {
        Failure::new(
            PgSqlErrorCode::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            format!("could not start a background worker for the job: {e}"),
        )
        .with_detail("max_worker_processes may be too low for the workers already running.")
        .raise();
    }
    id
}

/// Creates pgbench's tables (pgbench -i) in this database, in the given
/// tablespaces, as a job; returns its id (CALL storlab.wait(id) to wait).
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn bench_init(
    scale: default!(Option<i32>, 10),
    fillfactor: default!(Option<i32>, 100),
    tablespace: default!(Option<Name>, "NULL"),
    index_tablespace: default!(Option<Name>, "NULL"),
    partitions: default!(Option<i32>, 0),
) -> i64 {
    let scale = required(scale, "scale");
    let fillfactor = required(fillfactor, "fillfactor");
    let partitions = required(partitions, "partitions");
    if scale < 1 {
        invalid(format!("scale must be at least 1, not {scale}")).raise();
    }
    if !(10..=100).contains(&fillfactor) {
        invalid(format!(
            "fillfactor must be between 10 and 100, not {fillfactor}"
        ))
        .raise();
    }
    if partitions < 0 {
        invalid(format!(
            "partitions must be 0 (none) or more, not {partitions}"
        ))
        .raise();
    }
    tablespace_must_exist(&tablespace);
    tablespace_must_exist(&index_tablespace);
    start_job(
        "bench_init",
        serde_json::json!({
            "scale": scale, "fillfactor": fillfactor, "partitions": partitions,
            "tablespace": tablespace.map(|t| t.0), "index_tablespace": index_tablespace.map(|t| t.0),
        }),
    )
}

const OPTION_KEYS: [&str; 6] = [
    "protocol",
    "rate",
    "progress_interval",
    "sampling_rate",
    "vacuum",
    "checkpoint_before",
];

fn check_options(options: &serde_json::Value) -> Result<(), String> {
    let obj = options
        .as_object()
        .ok_or("options must be a JSON object, e.g. '{\"protocol\": \"prepared\"}'")?;
    for (key, value) in obj {
        let ok = match key.as_str() {
            "protocol" => value
                .as_str()
                .map(|p| Protocol::parse(p).is_ok())
                .unwrap_or(false),
            "rate" => value.as_f64().is_some_and(|r| r > 0.0),
            "progress_interval" => value.as_i64().is_some_and(|p| p >= 1),
            "sampling_rate" => value.as_f64().is_some_and(|s| s > 0.0 && s <= 1.0),
            "vacuum" | "checkpoint_before" => value.is_boolean(),
            _ => {
                return Err(format!(
                    "unknown option \"{key}\"; allowed: {}",
                    OPTION_KEYS.join(", ")
                ))
            }
        };
        if !ok {
            return Err(format!(
                "option {key} = {value} is out of range: protocol is simple, extended or prepared; rate > 0; \
                 progress_interval >= 1; sampling_rate in (0, 1]; vacuum and checkpoint_before are booleans"
            ));
        }
    }
    Ok(())
}

/// A run starts from a CHECKPOINT, run as the caller: only a superuser or
/// a member of pg_checkpoint may. Unless the caller asked for it, a role
/// that may not checkpoint runs without one, and the stored options say so;
/// asking for one without the privilege is refused.
fn checkpoint_option(mut options: serde_json::Value) -> serde_json::Value {
    let may = Spi::get_one::<bool>(
        "SELECT r.rolsuper OR pg_catalog.pg_has_role(r.oid, 'pg_checkpoint', 'USAGE')
           FROM pg_catalog.pg_roles r WHERE r.oid = pg_catalog.to_regrole(current_user)",
    ) == Ok(Some(true));
    match options.get("checkpoint_before").and_then(|v| v.as_bool()) {
        Some(true) if !may => Failure::new(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "checkpoint_before needs the privilege to run CHECKPOINT",
        )
        .with_detail("Only superusers and members of pg_checkpoint may run CHECKPOINT.")
        .raise(),
        Some(_) => {}
        None => options["checkpoint_before"] = may.into(),
    }
    options
}

/// Starts a pgbench run as a job; returns its storlab.bench_runs id (which is
/// also its job id).
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn bench_start(
    script: default!(Option<String>, "'tpcb-like'"),
    clients: default!(Option<i32>, 8),
    jobs: default!(Option<i32>, 2),
    duration: default!(Option<Interval>, "'60 seconds'"),
    label: default!(Option<String>, "NULL"),
    options: default!(Option<JsonB>, "'{}'"),
) -> i64 {
    let script = required(script, "script");
    let clients = required(clients, "clients");
    let jobs = required(jobs, "jobs");
    let duration_us = interval_micros(&required(duration, "duration"));
    let options = required(options, "options").0;
    let max = MAX_BENCH_DURATION_S.get().max(1) as i64;
    if let Err(e) = pgbench::scripts::find(&script) {
        invalid(e).raise();
    }
    if clients < 1 {
        invalid(format!("clients must be at least 1, not {clients}")).raise();
    }
    if jobs < 1 || jobs > clients {
        invalid(format!(
            "jobs must be between 1 and clients ({clients}), not {jobs}"
        ))
        .raise();
    }
    if duration_us < 1_000_000 || duration_us > max * 1_000_000 {
        invalid(format!(
            "duration must be at least 1 s and at most storlab.max_bench_duration ({max} s), not {} s",
            duration_us as f64 / 1e6
        ))
        .raise();
    }
    check_options(&options).unwrap_or_else(|e| invalid(e).raise());
    // pgbench finds its tables through the role's default search_path,
    // "$user", public unless ALTER ROLE / DATABASE changed it; this
    // function runs behind a fixed one, so it looks where pgbench will.
    // The job checks again with the role's real settings.
    let tables = Spi::get_one::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                         WHERE c.relname = 'pgbench_accounts' AND c.relkind IN ('r', 'p')
                           AND n.nspname IN (current_user, 'public'))",
    );
    if tables != Ok(Some(true)) {
        Failure::new(
            PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
            "pgbench's tables are missing in this database: create them with SELECT storlab.bench_init()",
        )
        .raise();
    }
    let options = checkpoint_option(options);
    let duration_s = duration_us as f64 / 1e6;
    let id = start_job(
        "bench",
        serde_json::json!({
            "script": script, "clients": clients, "jobs": jobs, "duration_s": duration_s, "options": options,
        }),
    );
    as_owner(|| {
        Spi::run_with_args(
            "INSERT INTO storlab.bench_runs (id, job_id, script, clients, jobs, duration_s, options, label,
                                             system_identifier, hostname)
             VALUES ($1, $1, $2, $3, $4, $5, $6, $7, $8, $9)",
            &[
                id.into(),
                script.into(),
                clients.into(),
                jobs.into(),
                duration_s.into(),
                JsonB(options).into(),
                label.into(),
                system_identifier().into(),
                hostname().into(),
            ],
        )
    })
    .unwrap_or_else(|e| error!("could not record the run: {e}"));
    id
}

/// Moves every index of a table (or materialized view) to `tablespace` with
/// REINDEX (TABLESPACE ...) INDEX CONCURRENTLY, as a job: writes go on during
/// the move. Returns the job id; each index moved is recorded in
/// storlab.relocations.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn move_indexes_online(
    relation: Option<super::regclass::RegClass>,
    tablespace: Option<Name>,
) -> i64 {
    let relation = required(relation, "relation");
    let tablespace = required(tablespace, "tablespace");
    super::relocate::check_movable(relation.0).unwrap_or_else(|f| f.raise());
    super::relocate::check_target(tablespace.as_str()).unwrap_or_else(|f| f.raise());
    let (kind, owned, name) = Spi::get_three_with_args::<String, bool, String>(
        "SELECT c.relkind::text, pg_catalog.pg_has_role(c.relowner, 'USAGE'), c.oid::regclass::text
           FROM pg_catalog.pg_class c WHERE c.oid = $1",
        &[relation.0.into()],
    )
    .unwrap_or_else(|e| error!("{e}"));
    if !matches!(kind.as_deref(), Some("r") | Some("m")) {
        invalid(format!(
            "{} is not a table or materialized view: move_indexes_online rebuilds a table's indexes (for a partitioned table, use storlab.move)",
            name.unwrap_or_default()
        ))
        .raise();
    }
    if owned != Some(true) {
        Failure::new(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("must be owner of table {}", name.unwrap_or_default()),
        )
        .raise();
    }
    start_job(
        "move_indexes",
        serde_json::json!({ "relation": u32::from(relation.0), "relation_name": name, "tablespace": tablespace.0 }),
    )
}

/// The rule pg_cancel_backend applies to sessions: a role may stop the jobs
/// of roles whose privileges it has (its own), a member of
/// pg_signal_backend those of any role but a superuser, a superuser all.
fn may_cancel(job_id: i64) -> Result<(), Failure> {
    let role = as_owner(|| {
        Spi::get_one_with_args::<String>(
            "SELECT role::text FROM storlab.jobs WHERE id = $1",
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
        Err(Failure::new(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("permission denied to cancel storlab job {job_id}"),
        )
        .with_detail(format!(
            "Only roles with the privileges of role \"{role}\", which started it, may cancel it (or members of pg_signal_backend, unless that role is a superuser)."
        )))
    }
}

/// Asks a queued or running job to stop; true if it was still going. Its
/// worker stops pgbench (the whole process group) within a second or two.
///
/// Besides marking the row, the worker is signalled directly: the caller's
/// transaction may never commit (CALL storlab.wait cancels the job from an
/// error handler, and the error then rolls the UPDATE back), yet the job
/// must stop.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn cancel(job_id: i64) -> bool {
    may_cancel(job_id).unwrap_or_else(|f| f.raise());
    let worker = as_owner(|| {
        Spi::get_one_with_args::<i32>(
            "SELECT j.worker_pid FROM storlab.jobs j
               JOIN pg_catalog.pg_stat_activity a ON a.pid = j.worker_pid AND a.backend_type = 'storlab job'
              WHERE j.id = $1 AND j.status IN ('running', 'cancelling')",
            &[job_id.into()],
        )
    })
    .ok()
    .flatten();
    let marked = as_owner(|| {
        Spi::get_one_with_args::<bool>(
            "WITH c AS (
               UPDATE storlab.jobs
                  SET status = CASE status WHEN 'queued' THEN 'cancelled' ELSE 'cancelling' END,
                      finished_at = CASE status WHEN 'queued' THEN pg_catalog.clock_timestamp() END,
                      error = CASE status WHEN 'queued' THEN 'cancelled with storlab.cancel() before it started' END
                WHERE id = $1 AND status IN ('queued', 'running')
                RETURNING 1)
             SELECT EXISTS (SELECT FROM c)",
            &[job_id.into()],
        )
    })
    .ok()
    .flatten()
    .unwrap_or(false);
    if let Some(pid) = worker {
        // SAFETY: signals a storlab job worker of this server (checked above);
        // its SIGTERM handler only sets a flag and its latch.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    marked
}

/// A job's status and error, for storlab.wait(); no row when there is no such job.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn job_status(
    job_id: i64,
) -> TableIterator<'static, (name!(status, String), name!(error, Option<String>))> {
    sweep_dead_jobs();
    let row = as_owner(|| {
        Spi::get_two_with_args::<String, String>(
            "SELECT status, error FROM storlab.jobs WHERE id = $1",
            &[job_id.into()],
        )
    });
    TableIterator::new(match row {
        Ok((Some(status), error)) => vec![(status, error)],
        _ => vec![],
    })
}
