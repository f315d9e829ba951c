//! Benchmarks as jobs: `storlab.scripts()`, `bench_init()`, `bench_start()`,
//! `move_indexes_online()`, `cancel()`, `job_status()`. Each parses its
//! arguments into a typed request and starts a job (`ops::jobs`). The
//! waiting side (`CALL storlab.wait`, `CALL storlab.bench`) is PL/pgSQL in
//! sql/catalog/procedures.sql, since only a procedure can COMMIT between polls.

use pgrx::datum::{Interval, JsonB};
use pgrx::prelude::*;

use super::interval_micros;
use crate::ops::error::{invalid, required, spi, Error, OrRaise, Raise, SqlState};
use crate::ops::identity::as_owner;
use crate::ops::server::{hostname, system_identifier};
use crate::ops::{jobs, relocate, settings};
use crate::sqltypes::{Name, RegClass};
use storlab_core::pgbench;
use storlab_core::request::bench::{BenchInit, BenchRun, MoveIndexes};
use storlab_core::request::job::JobSpec;

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
    let _called = crate::ops::error::called("storlab.scripts");
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
    let _called = crate::ops::error::called("storlab.bench_init");
    crate::ops::standby::refuse_writes("start a bench_init job").or_raise();
    let request = BenchInit::new(
        required(scale, "scale"),
        required(fillfactor, "fillfactor"),
        tablespace.clone().map(|t| t.0),
        index_tablespace.clone().map(|t| t.0),
        required(partitions, "partitions"),
    )
    .or_raise();
    // checked here, as move() checks them (exists, may create in it):
    // pgbench -i drops the old tables before it would notice
    for ts in [&tablespace, &index_tablespace].into_iter().flatten() {
        relocate::check_target(ts.as_str()).or_raise();
    }
    jobs::start(JobSpec::BenchInit(request))
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
    let _called = crate::ops::error::called("storlab.bench_start");
    crate::ops::standby::refuse_writes("start a benchmark job").or_raise();
    let mut request = BenchRun::new(
        required(script, "script"),
        required(clients, "clients"),
        required(jobs, "jobs"),
        interval_micros(&required(duration, "duration")),
        settings::max_bench_duration_s(),
        &required(options, "options").0,
    )
    .or_raise();
    // pgbench finds its tables through the role's default search_path;
    // the job checks again with the role's real settings.
    let schema = crate::ops::pgbench::pgbench_schema();
    let Some(schema) = schema else {
        Error::new(
            SqlState::UndefinedTable,
            "pgbench's tables are missing in this database: create them with SELECT storlab.bench_init()",
        )
        .raise()
    };
    jobs::check_pgbench_tables_complete(&schema).or_raise();
    request.options = jobs::checkpoint_option(request.options);
    let row = request.clone();
    let id = jobs::start(JobSpec::Bench(request));
    as_owner(|| {
        Spi::run_with_args(
            "INSERT INTO storlab.bench_runs (id, job_id, script, clients, jobs, duration_s, options, label,
                                             system_identifier, hostname)
             VALUES ($1, $1, $2, $3, $4, $5, $6, $7, $8, $9)",
            &[
                id.into(),
                row.script.into(),
                row.clients.into(),
                row.jobs.into(),
                (row.duration_s as f64).into(),
                JsonB(row.options.to_json()).into(),
                label.into(),
                system_identifier().into(),
                hostname().into(),
            ],
        )
    })
    .map_err(spi("recording the run"))
    .or_raise();
    id
}

/// Moves every index of a table (or materialized view) to `tablespace` with
/// REINDEX (TABLESPACE ...) INDEX CONCURRENTLY, as a job: writes go on during
/// the move. Returns the job id; each index moved is recorded in
/// storlab.relocations.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn move_indexes_online(relation: Option<RegClass>, tablespace: Option<Name>) -> i64 {
    let _called = crate::ops::error::called("storlab.move_indexes_online");
    crate::ops::standby::refuse_writes("move indexes online").or_raise();
    let relation = required(relation, "relation");
    let tablespace = required(tablespace, "tablespace");
    relocate::check_movable(relation.0).or_raise();
    relocate::check_target(tablespace.as_str()).or_raise();
    let (kind, owned, name) = Spi::get_three_with_args::<String, bool, String>(
        "SELECT c.relkind::text, pg_catalog.pg_has_role(c.relowner, 'USAGE'),
                pg_catalog.format('%I.%I', n.nspname, c.relname)
           FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
          WHERE c.oid = $1",
        &[relation.0.into()],
    )
    .map_err(spi("reading the catalog"))
    .or_raise();
    let name = name.unwrap_or_default();
    if !matches!(kind.as_deref(), Some("r") | Some("m")) {
        invalid(format!(
            "{name} is not a table or materialized view: move_indexes_online rebuilds a table's indexes (for a partitioned table, use storlab.move)"
        ))
        .raise();
    }
    if owned != Some(true) {
        Error::new(
            SqlState::InsufficientPrivilege,
            format!("must be owner of table {name}"),
        )
        .raise();
    }
    // nor those of a table an online move has queued or runs on: its
    // swap would throw the rebuilt indexes away (55006)
    relocate::refuse_moving_online(&[(relation.0, format!("table {name}"))]);
    // the indexes of a table a running benchmark or experiment uses stay
    // where its run records them (55006)
    jobs::pgbench_relations_free(
        &[(relation.0, format!("the indexes of table {name}"))],
        None,
        std::time::Duration::from_secs(5),
    )
    .or_raise();
    // What the job (another session, REINDEX CONCURRENTLY) cannot do is
    // refused or said here, before anything runs.
    let (temporary, stays, movable) = Spi::get_three_with_args::<bool, String, i64>(
        "SELECT c.relpersistence = 't',
                (SELECT pg_catalog.string_agg(pg_catalog.format('%I.%I', n.nspname, ic.relname), ', ' ORDER BY ic.relname)
                   FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
                   JOIN pg_catalog.pg_namespace n ON n.oid = ic.relnamespace
                  WHERE i.indrelid = c.oid
                    AND EXISTS (SELECT FROM pg_catalog.pg_constraint x WHERE x.conindid = i.indexrelid AND x.contype = 'x')),
                (SELECT pg_catalog.count(*) FROM pg_catalog.pg_index i
                  WHERE i.indrelid = c.oid
                    AND NOT EXISTS (SELECT FROM pg_catalog.pg_constraint x WHERE x.conindid = i.indexrelid AND x.contype = 'x'))
           FROM pg_catalog.pg_class c WHERE c.oid = $1",
        &[relation.0.into()],
    )
    .map_err(spi("reading the catalog"))
    .or_raise();
    if temporary == Some(true) {
        invalid(format!(
            "{name} is a temporary table: only the session that made it can rebuild its indexes, and the online move runs in a session of its own"
        ))
        .with_hint("storlab.move() moves it within this session.")
        .raise();
    }
    if let Some(stays) = stays {
        let why = "REINDEX CONCURRENTLY cannot rebuild an index that backs an exclusion constraint";
        if movable == Some(0) {
            invalid(format!("nothing of {name} can move online: {stays} backs an exclusion constraint, and {why}"))
                .with_hint("storlab.move() moves such an index, under ACCESS EXCLUSIVE.")
                .raise();
        }
        notice!(
            "storlab: {stays} stays where it is: {why}; the other indexes of {name} move online (storlab.move() moves it, under ACCESS EXCLUSIVE)"
        );
    }
    jobs::start(JobSpec::MoveIndexes(MoveIndexes {
        relation: u32::from(relation.0),
        relation_name: name,
        tablespace: tablespace.0,
    }))
}

/// Asks a queued or running job to stop; true if it was still going. It
/// takes effect when the calling transaction commits (a ROLLBACK takes it
/// back); the worker then stops pgbench (the whole process group) within a
/// second or two. A role may cancel its own jobs; members of
/// pg_signal_backend those of any role but a superuser; superusers all.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn cancel(job_id: Option<i64>) -> bool {
    let _called = crate::ops::error::called("storlab.cancel");
    crate::ops::standby::refuse_writes("cancel a job").or_raise();
    jobs::cancel(required(job_id, "job_id"))
}

/// Stops a running job at once by signalling its worker, outside any
/// transaction: CALL storlab.wait uses it when the waiting statement is
/// itself cancelled. Same rule as cancel(); everywhere else use cancel(),
/// which takes effect when its transaction commits.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn stop_now(job_id: Option<i64>) -> bool {
    let _called = crate::ops::error::called("storlab.stop_now");
    crate::ops::standby::refuse_writes("stop a job").or_raise();
    jobs::stop_now(required(job_id, "job_id"))
}

/// A job's status, error and the error's SQLSTATE (NULL for a failure
/// outside PostgreSQL, such as pgbench's exit), for storlab.wait(); no row
/// when there is no such job.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn job_status(
    job_id: Option<i64>,
) -> TableIterator<
    'static,
    (
        name!(status, String),
        name!(error, Option<String>),
        name!(sqlstate, Option<String>),
    ),
> {
    let _called = crate::ops::error::called("storlab.job_status");
    TableIterator::new(jobs::status(required(job_id, "job_id")))
}
