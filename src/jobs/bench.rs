//! pgbench's two steps: pgbench -i (a `bench_init` job is one) and one
//! measured run with the server's own counters around it (a `bench` job is
//! one). An experiment is a sequence of the same two steps, so it calls
//! them here; they call no other job kind.

use std::path::Path;
use std::time::{Duration, Instant};

use pgrx::prelude::*;
use pgrx::JsonB;

use super::client::{connection, pgbench_path, psql_with, run_program, with_pgoptions, Output};
use super::job::{as_caller, bookkeeping, store_detail, Job, JobEnd};
use super::observe::{observe, pg_stat_statements_schema, pgbench_schema};
use crate::ops::jobs::check_pgbench_tables_complete;
use crate::ops::read;
use crate::ops::record;
use crate::ops::server::data_dir;
use crate::ops::targets::all_targets;
use crate::sqltypes::Name;
use storlab_core::bench_run::{self, devices};
use storlab_core::pgbench::{self, InitOptions};
use storlab_core::record::{snapshot_sql, Counters, Record};
use storlab_core::report::experiment::{disagreement, Expected, Observation};
use storlab_core::request::bench::{BenchInit, BenchRun};
use storlab_core::sql_text::{ident, literal};

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
pub(super) fn run(
    job: &Job,
    run_id: i64,
    r: &BenchRun,
    dir: &Path,
    pgoptions: Option<&str>,
    expected: Option<&Expected>,
) -> Result<(), JobEnd> {
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
    let o = bench_run::options(r, &job.database, dir, scale, connection(job));
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
    // the devices beneath the tablespaces the run uses, and the memory the
    // server could cache pgbench's data in
    let watched = watched_devices(&start, &settings);
    let memory = storlab_core::env::cgroup::cache_memory();
    // the sessions of a run just before (a warm-up) add their counts when
    // they exit: read once they have
    wait_for_pgbench_sessions(&job.role);
    let before = counters(&schema);
    let statements_before = statements();
    let sys_dev_block = Path::new("/sys/dev/block");
    let disk_before = devices::read_counters(&watched, sys_dev_block);
    let disk_clock = Instant::now();
    // pgbench's own vacuum and start-up come before the timed run; allow them a minute
    let out = run_pgbench_with(
        job,
        &args,
        dir,
        Duration::from_secs(u64::from(r.duration_s) + 60),
        pgoptions,
    )?;
    let disk_after = devices::read_counters(&watched, sys_dev_block);
    let device_io = devices::record(
        &watched,
        &disk_before,
        &disk_after,
        disk_clock.elapsed().as_millis() as u64,
    );
    let stdout = out.stdout;
    // pgbench's own progress lines (with progress_interval) and warnings
    let report = pgbench::parse_stderr(&out.stderr).ok();
    // the job's detail is one run's: an experiment's many runs keep
    // their per-second rows in bench_progress only
    if let (true, Some(detail)) = (
        run_id == job.id,
        report.as_ref().and_then(bench_run::progress_detail),
    ) {
        store_detail(job, detail);
    }
    // pgbench's sessions add their counts (rows updated, blocks read) to
    // the statistics when they exit, a moment after pgbench itself
    wait_for_pgbench_sessions(&job.role);
    let after = counters(&schema);
    let statements_after = statements();
    let end = observe(&schema, wal_wanted);
    let invalid = bench_run::invalid(
        settings_error.as_deref(),
        disagreement(
            expected.unwrap_or(&Expected::default()),
            &start,
            &end,
            &settings,
        ),
    );
    let observed = serde_json::json!({ "start": start, "end": end });

    let summary = pgbench::parse_summary(&stdout)
        .map_err(|e| JobEnd::Failed(format!("pgbench's summary: {e}")))?;
    if let Some(why) = bench_run::no_figure(&summary, r.duration_s, report.as_ref()) {
        return Err(JobEnd::Failed(why));
    }
    let tx = pgbench::read_tx_logs(dir, "tx", o.tx_log_format())
        .map_err(|e| JobEnd::Failed(format!("pgbench's transaction log: {e}")))?;
    let p = tx.histogram.percentiles();
    let histogram = tx.histogram.to_bytes().ok();
    let progress = tx.timeline(r.sampling_rate());
    let version = std::process::Command::new(pgbench_path())
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());

    let result = bench_run::Measured {
        summary: &summary,
        percentiles: p.as_ref(),
        histogram,
        pgbench_version: version,
        observed,
        invalid: invalid.clone(),
        counters: before.delta(&after),
        device_io: Some(device_io),
        memory,
    }
    .result();
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
    let list = bench_run::settings_to_read(extra)
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
    bench_run::settings_printed(&out).map_err(JobEnd::Failed)
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

/// The block devices beneath the tablespaces a run uses: those of
/// pgbench's relations at its start (`start`), the temporary tablespaces
/// its sessions have (`settings`, as they read them) and pg_wal's folder,
/// each resolved as storlab.tablespaces() resolves it.
fn watched_devices(start: &Observation, settings: &serde_json::Value) -> devices::Watched {
    let names = devices::run_tablespaces(start, settings["temp_tablespaces"].as_str());
    // the folders: read as the caller (pg_tablespace is readable by all)
    let targets = as_caller(|| Ok(all_targets()));
    let resolved: Vec<devices::Resolved> = names
        .into_iter()
        .map(|name| {
            let folder = if name == devices::WAL {
                Some(data_dir().join("pg_wal"))
            } else {
                targets
                    .iter()
                    .find(|t| t.kind == "tablespace" && t.name == name)
                    .map(|t| t.folder.clone())
            };
            let place = match folder {
                None => Err(format!("there is no tablespace {name}")),
                Some(folder) => storlab_core::env::devices_of(&folder)
                    .map(|d| (d.fs_type, d.devices))
                    .map_err(|e| format!("{}: {e}", folder.display())),
            };
            devices::Resolved {
                tablespace: name,
                place,
            }
        })
        .collect();
    devices::watch(&resolved, &|dev| {
        storlab_core::env::diskstats::device_name(Path::new("/sys/dev/block"), dev)
    })
}

/// Waits (at most 10 s) until the sessions of the job's pgbench are gone:
/// a backend adds what it counted to the statistics (pg_stat_user_tables,
/// pg_stat_database) when it exits, a moment after pgbench closed its
/// connection, and it leaves pg_stat_activity a moment before it does so,
/// so its process is waited for too. One run at a time uses a database's
/// pgbench tables (55006): its sessions are the role's `pgbench` ones in
/// this database (`role`: the job's).
fn wait_for_pgbench_sessions(role: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen: Vec<i32> = Vec::new();
    loop {
        // each poll a transaction of its own: a fresh pg_stat_activity
        let pids = as_caller(|| {
            read::one::<Vec<i32>>(
                "SELECT coalesce(pg_catalog.array_agg(a.pid), '{}') FROM pg_catalog.pg_stat_activity a
                  WHERE a.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()
                    AND a.usename OPERATOR(pg_catalog.=) $1
                    AND a.application_name OPERATOR(pg_catalog.=) 'pgbench'
                    AND a.pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()",
                &[Name(role.to_string()).into()],
            )
        })
        .unwrap_or_default();
        for pid in &pids {
            if !seen.contains(pid) {
                seen.push(*pid);
            }
        }
        if pids.is_empty() || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for pid in seen {
        while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
