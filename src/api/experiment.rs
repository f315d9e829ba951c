//! Experiments: `experiment_start()`, `experiment_resume()` and
//! `experiment_report()`. `CALL storlab.experiment(...)` (start and wait)
//! is PL/pgSQL in sql/catalog/grants.sql, as CALL storlab.bench is.

use std::collections::HashMap;

use pgrx::datum::{Interval, JsonB};
use pgrx::prelude::*;

use super::interval_micros;
use crate::ops::error::{required, required_elements, spi, Error, OrRaise, Raise, SqlState};
use crate::ops::{experiment, settings};
use storlab_core::report::experiment::{compare, compare_fillfactors, reference_fillfactor, Cell};
use storlab_core::report::latency::run_percentiles;
use storlab_core::request::experiment::{Args, Experiment};
use storlab_core::request::job::{JobArgs, JobSpec};

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
    experiment::resume(required(experiment_id, "experiment_id"))
}

/// The stored runs of one measured cell, as read from storlab.bench_runs.
#[derive(Default)]
struct Runs {
    tps: Vec<f64>,
    histograms: Vec<Vec<u8>>,
    wal_bytes: f64,
    transactions: i64,
    /// where pg_wal was at their start (a tablespace sharing its
    /// filesystem, else its mount point), each place once
    wal_places: Vec<String>,
}

/// Sizes of pgbench's relations under one layout at one fillfactor.
struct Sizes {
    logical: i64,
    allocated: i64,
    stored: Option<i64>,
}

/// One row per (layout, fillfactor, clients) of an experiment, its
/// measured runs only (warm-ups excluded): TPS mean, standard deviation and
/// Student t 95 % interval; p95 and p99 latency of all its transactions
/// (the runs' histograms merged); improvement over the baseline layout at
/// the same fillfactor and clients, with Welch's t-test; with several
/// fillfactors, the improvement of each over fillfactor 100 (or the
/// largest of the experiment without 100) at the same layout and clients,
/// tested the same way (NULL on the reference's rows); where pg_wal was
/// (the tablespace sharing its filesystem, else its mount point); WAL per
/// transaction; the relations' sizes; a bar scaled to the best cell. With
/// one run per cell, the interval and the test are NULL. Read as the
/// caller (SELECT on storlab.experiments and storlab.bench_runs, granted to
/// pg_monitor).
#[pg_extern(stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn experiment_report(
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
    ),
> {
    let id = required(experiment_id, "experiment_id");
    let e = experiment_of(id);
    say_left_out(id, &e);
    let runs = stored_runs(id);
    let sizes = stored_sizes(id);

    let mut cells = Vec::new();
    for &fillfactor in &e.fillfactors {
        for &clients in &e.clients {
            for layout in &e.layouts {
                cells.push(Cell {
                    layout: layout.name.clone(),
                    fillfactor,
                    clients,
                    tps: runs
                        .get(&(layout.name.clone(), fillfactor, clients))
                        .map(|r| r.tps.clone())
                        .unwrap_or_default(),
                });
            }
        }
    }
    let stats = compare(&cells, &e.layouts[0].name);
    let by_fillfactor = compare_fillfactors(&cells, reference_fillfactor(&e.fillfactors));
    let rows: Vec<_> = cells
        .into_iter()
        .zip(stats)
        .zip(by_fillfactor)
        .map(|((cell, s), ff)| {
            let key = (cell.layout.clone(), cell.fillfactor, cell.clients);
            let r = runs.get(&key);
            let latency = r.filter(|r| !r.histograms.is_empty()).map(|r| {
                run_percentiles(&r.histograms, &[95.0, 99.0])
                    .or_raise()
                    .values
            });
            let lat = |i: usize| latency.as_ref().map(|v| v[i]).filter(|v| !v.is_nan());
            let wal = r
                .filter(|r| r.transactions > 0)
                .map(|r| r.wal_bytes / r.transactions as f64);
            let size = sizes.get(&(cell.layout.clone(), cell.fillfactor));
            let wal_place = r
                .filter(|r| !r.wal_places.is_empty())
                .map(|r| r.wal_places.join(", "));
            let ff = ff.unwrap_or_default();
            (
                cell.layout,
                cell.fillfactor,
                cell.clients,
                wal_place,
                s.runs as i32,
                s.tps_mean,
                s.tps_stddev,
                s.tps_ci95_low,
                s.tps_ci95_high,
                lat(0),
                lat(1),
                s.improvement_pct,
                s.p_value,
                s.significant,
                ff.improvement_pct,
                ff.p_value,
                ff.significant,
                wal,
                size.map(|z| z.logical),
                size.map(|z| z.allocated),
                size.and_then(|z| z.stored),
                s.bar,
            )
        })
        .collect();
    TableIterator::new(rows)
}

/// The experiment as it was started (its layouts in order, baseline first).
fn experiment_of(id: i64) -> Experiment {
    let args = Spi::get_one_with_args::<JsonB>(
        "SELECT (SELECT args FROM storlab.experiments WHERE id = $1)",
        &[id.into()],
    )
    .map_err(spi("reading the experiment"))
    .or_raise();
    let Some(args) = args else {
        Error::new(
            SqlState::UndefinedObject,
            format!("there is no experiment with id {id}"),
        )
        .raise()
    };
    match JobArgs::from_json(&args.0).map(|a| a.spec) {
        Ok(JobSpec::Experiment(e)) => e,
        _ => Error::new(
            SqlState::Internal,
            format!(
                "storlab: the stored arguments of experiment {id} do not describe an experiment"
            ),
        )
        .raise(),
    }
}

/// Measured runs with a result, per (layout, fillfactor, clients).
fn stored_runs(id: i64) -> HashMap<(String, i32, i32), Runs> {
    let rows = Spi::connect(|c| {
        c.select(
            "SELECT experiment_layout, fillfactor, clients, tps, histogram,
                    coalesce(server_wal_bytes, 0)::float8, coalesce(transactions, 0),
                    coalesce(observed->'start'->'wal'->>'tablespace', observed->'start'->'wal'->>'mount_point')
               FROM storlab.bench_runs
              WHERE experiment_id = $1 AND NOT warmup AND tps IS NOT NULL AND invalid IS NULL
              ORDER BY id",
            None,
            &[id.into()],
        )?
        .map(|r| {
            Ok((
                (
                    r.get::<String>(1)?.unwrap_or_default(),
                    r.get::<i32>(2)?.unwrap_or(0),
                    r.get::<i32>(3)?.unwrap_or(0),
                ),
                r.get::<f64>(4)?.unwrap_or(0.0),
                r.get::<Vec<u8>>(5)?,
                r.get::<f64>(6)?.unwrap_or(0.0),
                r.get::<i64>(7)?.unwrap_or(0),
                r.get::<String>(8)?,
            ))
        })
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the experiment's runs"))
    .or_raise();
    let mut out: HashMap<_, Runs> = HashMap::new();
    for (key, tps, histogram, wal, transactions, wal_place) in rows {
        let r = out.entry(key).or_default();
        if let Some(place) = wal_place {
            if !r.wal_places.contains(&place) {
                r.wal_places.push(place);
            }
        }
        r.tps.push(tps);
        r.histograms.extend(histogram);
        r.wal_bytes += wal;
        r.transactions += transactions;
    }
    out
}

/// Names, in a NOTICE, the measured runs the report does not pool: those
/// whose observations disagree with their layout (`bench_runs.invalid`),
/// and any whose fillfactor is none of the experiment's.
fn say_left_out(id: i64, e: &Experiment) {
    let rows = Spi::connect(|c| {
        c.select(
            "SELECT pg_catalog.format('run %s (layout %s, repetition %s, clients %s): %s', id, experiment_layout,
                                      repetition, clients,
                                      coalesce(invalid, pg_catalog.format('fillfactor %s is none of the experiment''s', fillfactor)))
               FROM storlab.bench_runs
              WHERE experiment_id = $1 AND NOT warmup AND tps IS NOT NULL
                AND (invalid IS NOT NULL OR fillfactor IS NULL OR fillfactor OPERATOR(pg_catalog.<>) ALL ($2))
              ORDER BY id",
            None,
            &[id.into(), e.fillfactors.clone().into()],
        )?
        .map(|r| Ok(r.get::<String>(1)?.unwrap_or_default()))
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the experiment's runs"))
    .or_raise();
    if !rows.is_empty() {
        pgrx::notice!(
            "storlab: experiment {id}: {} measured run{} left out of the report, since what {} observed disagrees with {} layout: {}",
            rows.len(),
            if rows.len() == 1 { " is" } else { "s are" },
            if rows.len() == 1 { "it" } else { "they" },
            if rows.len() == 1 { "its" } else { "their" },
            rows.join("; ")
        );
    }
}

/// Sizes summed over pgbench's relations, per (layout, fillfactor); the
/// stored size only when it is known for every relation.
fn stored_sizes(id: i64) -> HashMap<(String, i32), Sizes> {
    Spi::connect(|c| {
        c.select(
            "SELECT layout, fillfactor, sum(logical_bytes)::int8, sum(allocated_bytes)::int8,
                    CASE WHEN bool_and(stored_bytes IS NOT NULL) THEN sum(stored_bytes)::int8 END
               FROM storlab.experiment_sizes WHERE experiment_id = $1
              GROUP BY layout, fillfactor",
            None,
            &[id.into()],
        )?
        .map(|r| {
            Ok((
                (
                    r.get::<String>(1)?.unwrap_or_default(),
                    r.get::<i32>(2)?.unwrap_or(0),
                ),
                Sizes {
                    logical: r.get::<i64>(3)?.unwrap_or(0),
                    allocated: r.get::<i64>(4)?.unwrap_or(0),
                    stored: r.get::<i64>(5)?,
                },
            ))
        })
        .collect::<Result<HashMap<_, _>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the experiment's sizes"))
    .or_raise()
}
