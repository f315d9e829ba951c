//! Experiments: `experiment_start()`, `experiment_resume()` and
//! `experiment_report()`. `CALL storlab.experiment(...)` (start and wait)
//! is PL/pgSQL in sql/catalog/procedures.sql, as CALL storlab.bench is.

use pgrx::datum::{Interval, JsonB};
use pgrx::prelude::*;

use super::interval_micros;
use crate::ops::error::{required, required_elements, OrRaise};
use crate::ops::{experiment, report, settings};
use storlab_core::request::experiment::{Args, Experiment};

/// Starts an experiment as one job: for each fillfactor, pgbench -i and the
/// relations' sizes under each layout; then `repetitions` times every
/// (layout, clients) cell, in an order that alternates between repetitions,
/// each a warm-up and a measured run. Returns its id; follow it in
/// storlab.experiments, read it with storlab.experiment_report(id).
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
#[allow(clippy::too_many_arguments)]
fn experiment_start(
    name: Option<String>,
    layouts: Option<JsonB>,
    script: default!(Option<String>, "'tpcb-like'"),
    clients: default!(Option<Vec<Option<i32>>>, "'{8}'"),
    jobs: default!(Option<i32>, 2),
    duration: default!(Option<Interval>, "'60 seconds'"),
    repetitions: default!(Option<i32>, 3),
    warmup: default!(Option<Interval>, "'10 seconds'"),
    scale: default!(Option<i32>, 10),
    fillfactors: default!(Option<Vec<Option<i32>>>, "'{100}'"),
    options: default!(Option<JsonB>, "'{}'"),
) -> i64 {
    let _called = crate::ops::error::called("storlab.experiment_start");
    crate::ops::standby::refuse_writes("start an experiment").or_raise();
    let layouts = required(layouts, "layouts").0;
    let options = required(options, "options").0;
    let e = Experiment::new(Args {
        name: required(name, "name"),
        layouts: &layouts,
        script: required(script, "script"),
        clients: required_elements(clients, "clients"),
        jobs: required(jobs, "jobs"),
        duration_us: interval_micros(&required(duration, "duration")),
        repetitions: required(repetitions, "repetitions"),
        warmup_us: interval_micros(&required(warmup, "warmup")),
        scale: required(scale, "scale"),
        fillfactors: required_elements(fillfactors, "fillfactors"),
        options: &options,
        max_duration_s: settings::max_bench_duration_s(),
    })
    .or_raise();
    experiment::start(e)
}

/// Continues an experiment that failed (its worker died, the server
/// restarted, a move timed out) or was cancelled: the runs already measured
/// are kept, the missing ones run. Returns its id.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn experiment_resume(experiment_id: Option<i64>) -> i64 {
    let _called = crate::ops::error::called("storlab.experiment_resume");
    crate::ops::standby::refuse_writes("resume an experiment").or_raise();
    experiment::resume(required(experiment_id, "experiment_id"))
}

/// One row per (layout, fillfactor, clients) of an experiment, its
/// measured runs only (warm-ups excluded): TPS mean, standard deviation and
/// Student t 95 % interval; p95 and p99 latency of all its transactions
/// (the runs' histograms merged); improvement over the baseline layout at
/// the same fillfactor and clients, with Welch's t-test (a fixed-sample
/// test: for a sequential experiment read `decision`); with several
/// fillfactors, the improvement of each over fillfactor 100 (or the
/// largest of the experiment without 100) at the same layout and clients,
/// tested the same way (NULL on the reference's rows); where pg_wal was
/// (the tablespace sharing its filesystem, else its mount point); WAL per
/// transaction; the relations' sizes; a bar scaled to the best cell. With
/// one run per cell, the interval and the test are NULL. A sequential
/// experiment's layouts (options stop "sequential") also get `decision`
/// (different, equivalent, open while repetitions are left, undecided at
/// the maximum), `decided_after` (the repetitions of the deciding look)
/// and `seq_ci_low_pct` .. `seq_ci_high_pct`, the improvement's repeated
/// confidence interval at that look, valid however early it stopped
/// (storlab_core::sequential); tps_ci95_*, p_value and significant are
/// fixed-sample figures and are not. Appended by 0.12.0: the HOT ratio of
/// pgbench's updates, the checkpoints begun per run, the reads of the
/// block devices beneath the runs' tablespaces per transaction, and the
/// caveats a DBA must read before trusting the cell (a writing workload
/// whose runs contained no checkpoint; pgbench's data small enough for the
/// server's memory, where the runs may have measured the page cache).
/// Read as the caller (SELECT on storlab.experiments and
/// storlab.bench_runs, granted to pg_monitor).
#[pg_extern(stable, parallel_safe, name = "experiment_report")]
#[search_path(pg_catalog, pg_temp)]
fn experiment_cells(
    experiment_id: Option<i64>,
) -> TableIterator<
    'static,
    (
        name!(layout, String),
        name!(fillfactor, i32),
        name!(clients, i32),
        name!(wal, Option<String>),
        name!(runs, i32),
        name!(tps_mean, Option<f64>),
        name!(tps_stddev, Option<f64>),
        name!(tps_ci95_low, Option<f64>),
        name!(tps_ci95_high, Option<f64>),
        name!(lat_p95_ms, Option<f64>),
        name!(lat_p99_ms, Option<f64>),
        name!(improvement_pct, Option<f64>),
        name!(p_value, Option<f64>),
        name!(significant, Option<bool>),
        name!(ff_improvement_pct, Option<f64>),
        name!(ff_p_value, Option<f64>),
        name!(ff_significant, Option<bool>),
        name!(wal_bytes_per_tx, Option<f64>),
        name!(logical_bytes, Option<i64>),
        name!(allocated_bytes, Option<i64>),
        name!(stored_bytes, Option<i64>),
        name!(bar, String),
        name!(decision, Option<&'static str>),
        name!(decided_after, Option<i32>),
        name!(seq_ci_low_pct, Option<f64>),
        name!(seq_ci_high_pct, Option<f64>),
        name!(hot_ratio, Option<f64>),
        name!(checkpoints_per_run, Option<f64>),
        name!(device_reads_per_tx, Option<f64>),
        name!(caveats, Vec<String>),
    ),
> {
    let _called = crate::ops::error::called("storlab.experiment_report");
    let id = required(experiment_id, "experiment_id");
    let (_, rows) = report::experiment_report(id);
    TableIterator::new(rows.into_iter().map(|r| {
        (
            r.layout,
            r.fillfactor,
            r.clients,
            r.wal,
            r.runs,
            r.tps_mean,
            r.tps_stddev,
            r.tps_ci95_low,
            r.tps_ci95_high,
            r.lat_p95_ms,
            r.lat_p99_ms,
            r.improvement_pct,
            r.p_value,
            r.significant,
            r.ff_improvement_pct,
            r.ff_p_value,
            r.ff_significant,
            r.wal_bytes_per_tx,
            r.logical_bytes,
            r.allocated_bytes,
            r.stored_bytes,
            r.bar,
            r.decision.map(|d| d.as_str()),
            r.decided_after,
            r.seq_ci_low_pct,
            r.seq_ci_high_pct,
            r.hot_ratio,
            r.checkpoints_per_run,
            r.device_reads_per_tx,
            r.caveats,
        )
    }))
}

/// experiment_report() as storlab 0.11.0 and older declared it (26
/// columns, this C symbol): reached only between installing a newer
/// package and ALTER EXTENSION UPDATE, where the report's rows have four
/// columns more than the function declares. It says so (55000). No SQL is
/// generated for it: 0.12.0's experiment_report() is `experiment_cells`.
#[pg_extern(sql = false)]
fn experiment_report(
    _experiment_id: Option<i64>,
) -> TableIterator<'static, (name!(layout, String),)> {
    crate::ops::identity::raise_update_needed(
        "experiment_report() of this database's storlab returns 26 columns, and this library's 30 (hot_ratio, checkpoints_per_run, device_reads_per_tx, caveats)",
    )
}

/// The block devices beneath an experiment's runs, per (layout,
/// fillfactor, clients) cell: one row per device (a device two tablespaces
/// share is one row, with both named), with means per run of the reads and
/// writes the kernel counted on it (`/sys/block/<dev>/stat`, the whole
/// device's, every process's I/O included), per transaction, bytes,
/// flushes, the time it was busy and its requests' time in the queue (ms),
/// and busy as a share of the runs' time; a tablespace on no block device
/// (tmpfs) is a row without a device or figures. The runs are those
/// experiment_report() pools; runs stored before 0.12.0 have no device
/// figures and give no rows. Read as the caller.
#[pg_extern(stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn experiment_devices(
    experiment_id: Option<i64>,
) -> TableIterator<
    'static,
    (
        name!(layout, String),
        name!(fillfactor, i32),
        name!(clients, i32),
        name!(device, Option<String>),
        name!(tablespaces, Vec<String>),
        name!(runs, i32),
        name!(reads, Option<f64>),
        name!(writes, Option<f64>),
        name!(reads_per_tx, Option<f64>),
        name!(writes_per_tx, Option<f64>),
        name!(read_bytes, Option<f64>),
        name!(write_bytes, Option<f64>),
        name!(flushes, Option<f64>),
        name!(busy_ms, Option<f64>),
        name!(queue_ms, Option<f64>),
        name!(busy_pct, Option<f64>),
    ),
> {
    let _called = crate::ops::error::called("storlab.experiment_devices");
    let id = required(experiment_id, "experiment_id");
    TableIterator::new(report::experiment_devices(id).into_iter().map(|r| {
        (
            r.cell.0,
            r.cell.1,
            r.cell.2,
            r.device,
            r.tablespaces,
            r.runs,
            r.reads,
            r.writes,
            r.reads_per_tx,
            r.writes_per_tx,
            r.read_bytes,
            r.write_bytes,
            r.flushes,
            r.busy_ms,
            r.queue_ms,
            r.busy_pct,
        )
    }))
}

/// What the server read, wrote, extended and synced during an experiment's
/// measured runs (pg_stat_io's differences each run stored, PostgreSQL 16
/// and later), per (layout, fillfactor, clients) and per backend type,
/// object and context: means per run, times in ms. The runs are those
/// experiment_report() pools; runs without pg_stat_io figures (on 15) are
/// left out, so an experiment run on 15 has no rows. Read as the caller.
#[pg_extern(stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn experiment_io(
    experiment_id: Option<i64>,
) -> TableIterator<
    'static,
    (
        name!(layout, String),
        name!(fillfactor, i32),
        name!(clients, i32),
        name!(backend_type, String),
        name!(object, String),
        name!(context, String),
        name!(runs, i32),
        name!(reads, Option<f64>),
        name!(read_ms, Option<f64>),
        name!(writes, Option<f64>),
        name!(write_ms, Option<f64>),
        name!(extends, Option<f64>),
        name!(fsyncs, Option<f64>),
        name!(fsync_ms, Option<f64>),
        name!(hits, Option<f64>),
        name!(evictions, Option<f64>),
        name!(reuses, Option<f64>),
    ),
> {
    let _called = crate::ops::error::called("storlab.experiment_io");
    let id = required(experiment_id, "experiment_id");
    TableIterator::new(report::experiment_io(id).into_iter().map(|r| {
        let m = |i: usize| r.means[i];
        (
            r.cell.0,
            r.cell.1,
            r.cell.2,
            r.backend_type,
            r.object,
            r.context,
            r.runs,
            m(0),
            m(1),
            m(2),
            m(3),
            m(4),
            m(5),
            m(6),
            m(7),
            m(8),
            m(9),
        )
    }))
}
