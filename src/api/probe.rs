//! `storlab.probe()`: one measured workload on one tablespace (or the WAL
//! folder), stored as a row of `storlab.probes`.

use pgrx::datum::Interval;
use pgrx::prelude::*;

use super::interval_micros;
use crate::ops::error::{required, OrRaise};
use crate::ops::probe::{fetch_rows, measure, spec_for, ProbeRow};
use crate::ops::settings::max_probe_duration;
use crate::ops::targets::resolve;
use crate::sqltypes::Name;
use storlab_core::request::probe::{self as request, RawProbeArgs};

/// Measure one workload on one tablespace (or 'pg_wal') and store the result
/// in storlab.probes; returns the stored row. `sync_every` (randwrite and
/// seqwrite): a sync after every N writes of each worker and after its last
/// (0: only after its last, as iozone -e), timed inside the probe; NULL:
/// each write synced as sync_method says.
#[allow(clippy::too_many_arguments)]
#[pg_extern(volatile, parallel_unsafe, name = "probe")]
#[search_path(pg_catalog, pg_temp)]
fn probe_sync_every(
    tablespace: Option<Name>,
    workload: default!(Option<String>, "'randread'"),
    block_size: default!(Option<i32>, 8192),
    duration: default!(Option<Interval>, "'5 seconds'"),
    workers: default!(Option<i32>, 1),
    file_size: default!(Option<i64>, 268435456),
    direct: default!(Option<bool>, true),
    sync_method: default!(Option<String>, "NULL"),
    label: default!(Option<String>, "NULL"),
    iodepth: default!(Option<i32>, 1),
    engine: default!(Option<String>, "NULL"),
    precision_pct: default!(Option<f32>, "NULL"),
    sync_every: default!(Option<i32>, "NULL"),
) -> pgrx::composite_type!('static, "probes") {
    let _called = crate::ops::error::called("storlab.probe");
    run_probe(
        tablespace,
        workload,
        block_size,
        duration,
        workers,
        file_size,
        direct,
        sync_method,
        label,
        iodepth,
        engine,
        precision_pct,
        sync_every,
    )
}

/// probe() as the SQL of 0.11.0 and before declares it (twelve arguments,
/// this C symbol), for an install whose library is newer than its ALTER
/// EXTENSION UPDATE: the probe it always was (sync_every NULL).
#[allow(clippy::too_many_arguments)]
#[pg_extern(sql = false)]
fn probe(
    tablespace: Option<Name>,
    workload: Option<String>,
    block_size: Option<i32>,
    duration: Option<Interval>,
    workers: Option<i32>,
    file_size: Option<i64>,
    direct: Option<bool>,
    sync_method: Option<String>,
    label: Option<String>,
    iodepth: Option<i32>,
    engine: Option<String>,
    precision_pct: Option<f32>,
) -> pgrx::composite_type!('static, "probes") {
    let _called = crate::ops::error::called("storlab.probe");
    run_probe(
        tablespace,
        workload,
        block_size,
        duration,
        workers,
        file_size,
        direct,
        sync_method,
        label,
        iodepth,
        engine,
        precision_pct,
        None,
    )
}

#[allow(clippy::too_many_arguments)]
fn run_probe(
    tablespace: Option<Name>,
    workload: Option<String>,
    block_size: Option<i32>,
    duration: Option<Interval>,
    workers: Option<i32>,
    file_size: Option<i64>,
    direct: Option<bool>,
    sync_method: Option<String>,
    label: Option<String>,
    iodepth: Option<i32>,
    engine: Option<String>,
    precision_pct: Option<f32>,
    sync_every: Option<i32>,
) -> ProbeRow {
    crate::ops::standby::measuring();
    let tablespace = required(tablespace, "tablespace");
    let workload = required(workload, "workload");
    let raw = RawProbeArgs {
        workload: &workload,
        block_size: required(block_size, "block_size") as i64,
        duration_us: interval_micros(&required(duration, "duration")),
        workers: required(workers, "workers") as i64,
        file_size: required(file_size, "file_size"),
        sync_method: sync_method.as_deref(),
        iodepth: required(iodepth, "iodepth") as i64,
        engine: engine.as_deref(),
        precision_pct: precision_pct.map(f64::from),
        sync_every: sync_every.map(i64::from),
    };
    let args = request::check(&raw, max_probe_duration()).or_raise();
    let target = resolve(tablespace.as_str()).or_raise();
    let spec = spec_for(&target, &args, required(direct, "direct"));
    let id = measure(&target, spec, label.as_deref(), None, None).or_raise();
    fetch_rows(&[id]).pop().expect("the row just stored")
}
