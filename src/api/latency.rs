//! `storlab.probe_latency()` and `storlab.run_latency()`: the stored HDR
//! histograms of several probes or benchmark runs, merged and read as
//! percentiles. Read as the caller: they need SELECT on the table (granted
//! to pg_monitor), as a query of it by hand would.

use pgrx::prelude::*;

use crate::ops::error::{invalid, required_elements, spi, Error, OrRaise, Raise, SqlState};
use storlab_core::report::latency::{self, Merged};

/// The stored histograms of `ids` in `table`; an id with no row is an error.
fn histograms(table: &str, what: &str, ids: &[i64]) -> Vec<Vec<u8>> {
    if ids.is_empty() {
        invalid(format!("{what}_ids must list at least one id")).raise();
    }
    let rows: Vec<(i64, Option<Vec<u8>>)> = Spi::connect(|c| {
        c.select(
            &format!("SELECT t.id, t.histogram FROM storlab.{table} t WHERE t.id = ANY($1)"),
            None,
            &[ids.to_vec().into()],
        )?
        .map(|r| Ok((r.get::<i64>(1)?.unwrap_or(0), r.get::<Vec<u8>>(2)?)))
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading stored histograms"))
    .or_raise();
    let mut missing: Vec<i64> = ids
        .iter()
        .copied()
        .filter(|id| !rows.iter().any(|(found, _)| found == id))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(i64::to_string).collect();
        Error::new(
            SqlState::UndefinedObject,
            format!("no stored {what} with id {}", list.join(", ")),
        )
        .raise();
    }
    // a run that failed or is still going has no histogram yet: it adds nothing
    rows.into_iter().filter_map(|(_, h)| h).collect()
}

fn rows(percentiles: &[f64], merged: Result<Merged, Error>) -> Vec<(f64, Option<f64>, i64)> {
    let merged = merged.or_raise();
    percentiles
        .iter()
        .zip(merged.values)
        .map(|(p, v)| (*p, (!v.is_nan()).then_some(v), merged.samples as i64))
        .collect()
}

/// Latency percentiles (microseconds) of the given probes' operations taken
/// together, e.g. every repetition of one workload on one tablespace.
#[pg_extern(stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn probe_latency(
    probe_ids: Option<Vec<Option<i64>>>,
    percentiles: default!(Option<Vec<Option<f64>>>, "'{50,90,99,99.9}'"),
) -> TableIterator<
    'static,
    (
        name!(percentile, f64),
        name!(lat_us, Option<f64>),
        name!(samples, i64),
    ),
> {
    let ids = required_elements(probe_ids, "probe_ids");
    let percentiles = required_elements(percentiles, "percentiles");
    let blobs = histograms("probes", "probe", &ids);
    TableIterator::new(rows(
        &percentiles,
        latency::probe_percentiles(&blobs, &percentiles),
    ))
}

/// Transaction latency percentiles (milliseconds) of the given benchmark
/// runs taken together, e.g. the repetitions of one layout. `samples`
/// counts the logged transactions (fast read-only scripts log a sample).
#[pg_extern(stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn run_latency(
    run_ids: Option<Vec<Option<i64>>>,
    percentiles: default!(Option<Vec<Option<f64>>>, "'{50,90,99,99.9}'"),
) -> TableIterator<
    'static,
    (
        name!(percentile, f64),
        name!(lat_ms, Option<f64>),
        name!(samples, i64),
    ),
> {
    let ids = required_elements(run_ids, "run_ids");
    let percentiles = required_elements(percentiles, "percentiles");
    let blobs = histograms("bench_runs", "run", &ids);
    TableIterator::new(rows(
        &percentiles,
        latency::run_percentiles(&blobs, &percentiles),
    ))
}
