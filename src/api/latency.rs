//! `storlab.probe_latency()` and `storlab.run_latency()`: the stored HDR
//! histograms of several probes or benchmark runs, merged and read as
//! percentiles. Read as the caller: they need SELECT on the table (granted
//! to pg_monitor), as a query of it by hand would. Only what was measured
//! alike is merged: a distribution of two tablespaces, two workloads or two
//! worker counts describes none of them.

use pgrx::datum::JsonB;
use pgrx::prelude::*;

use crate::ops::error::{invalid, required_elements, spi, Error, OrRaise, Raise, SqlState};
use crate::ops::probe::sync_every_text;
use crate::ops::standby;
use storlab_core::report::latency::{self, Conditions, Merged};

/// The stored histograms of `ids` in `table` (a FROM item); an id with no row is an
/// error, and so are rows not measured alike (`conditions`: SQL giving
/// each row's id and a jsonb array of [attribute, value] pairs, a NULL
/// value not compared; `$1` the ids).
fn histograms(
    table: &str,
    what: &str,
    function: &str,
    conditions: &str,
    ids: &[i64],
) -> Vec<Vec<u8>> {
    if ids.is_empty() {
        invalid(format!("{what}_ids must list at least one id")).raise();
    }
    let rows: Vec<(i64, Option<Vec<u8>>)> = Spi::connect(|c| {
        c.select(
            &format!("SELECT t.id, t.histogram FROM {table} t WHERE t.id = ANY($1)"),
            None,
            &[ids.to_vec().into(), standby::probes_arg()],
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
    let measured: Vec<(i64, Conditions)> = Spi::connect(|c| {
        c.select(
            conditions,
            None,
            &[ids.to_vec().into(), standby::probes_arg()],
        )?
        .map(|r| {
            let pairs = r.get::<JsonB>(2)?.map(|j| j.0).unwrap_or_default();
            let pairs = pairs
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|p| {
                            let name = p.get(0)?.as_str()?.to_string();
                            let value = match p.get(1)? {
                                serde_json::Value::Null => None,
                                serde_json::Value::String(v) => Some(v.clone()),
                                v => Some(v.to_string()),
                            };
                            Some((name, value))
                        })
                        .collect()
                })
                .unwrap_or_default();
            Ok((r.get::<i64>(1)?.unwrap_or(0), pairs))
        })
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading what stored histograms measured"))
    .or_raise();
    latency::check_alike(function, what, &measured).or_raise();
    // a run that failed or is still going has no histogram yet: it adds nothing
    rows.into_iter().filter_map(|(_, h)| h).collect()
}

/// What a probe was measured with: where (tablespace, its folder, the
/// host), what (workload, block size, sync method and writes per sync,
/// sync_every (NULL compared too: a probe whose every write is synced is
/// not one synced every N writes, whose histogram holds the writes
/// alone), whether writes were rewound as fsync_cost's are, a read path's
/// io_method and effective_io_concurrency) and how (workers, queue depth,
/// engine, O_DIRECT). `{sync_every}`: `ops::probe::sync_every_text`.
const PROBE_CONDITIONS: &str = "SELECT p.id, pg_catalog.jsonb_build_array(
        pg_catalog.jsonb_build_array('tablespace', p.tablespace), pg_catalog.jsonb_build_array('location', p.location),
        pg_catalog.jsonb_build_array('hostname', p.hostname), pg_catalog.jsonb_build_array('workload', p.workload),
        pg_catalog.jsonb_build_array('block_size', p.block_size), pg_catalog.jsonb_build_array('workers', p.workers),
        pg_catalog.jsonb_build_array('iodepth', p.iodepth), pg_catalog.jsonb_build_array('engine', p.engine),
        pg_catalog.jsonb_build_array('direct', p.direct), pg_catalog.jsonb_build_array('sync_method', p.sync_method),
        pg_catalog.jsonb_build_array('writes_per_sync', p.writes_per_sync),
        pg_catalog.jsonb_build_array('sync_every', {sync_every}),
        pg_catalog.jsonb_build_array('writes rewound (fsync_cost)', p.suite IS NOT DISTINCT FROM 'fsync_cost'),
        pg_catalog.jsonb_build_array('io_method', p.io_method),
        pg_catalog.jsonb_build_array('effective_io_concurrency', p.effective_io_concurrency))
   FROM {probes} p WHERE p.id OPERATOR(pg_catalog.=) ANY ($1) ORDER BY p.id";

/// What a benchmark run was measured with: the host, script, clients,
/// threads, scale, fillfactor, warm-up or not, protocol and rate; where
/// each of pgbench's relations was at its start (every relation any of the
/// runs recorded: one a run lacked was absent), where pg_wal was; and each
/// setting its sessions ran with (a setting one run did not record is not
/// compared).
const RUN_CONDITIONS: &str = "WITH r AS (
        SELECT b.*, coalesce(b.observed->'start'->'tables', '{}') OPERATOR(pg_catalog.||) coalesce(b.observed->'start'->'indexes', '{}') AS places,
               b.observed->'start' ?| ARRAY['tables', 'indexes'] AS placed
          FROM storlab.bench_runs b WHERE b.id OPERATOR(pg_catalog.=) ANY ($1)),
      rels AS (SELECT DISTINCT k FROM r, pg_catalog.jsonb_object_keys(r.places) k)
 SELECT r.id, pg_catalog.jsonb_build_array(
        pg_catalog.jsonb_build_array('hostname', r.hostname), pg_catalog.jsonb_build_array('script', r.script),
        pg_catalog.jsonb_build_array('clients', r.clients), pg_catalog.jsonb_build_array('jobs', r.jobs),
        pg_catalog.jsonb_build_array('scale', r.scale), pg_catalog.jsonb_build_array('fillfactor', r.fillfactor),
        pg_catalog.jsonb_build_array('warmup', r.warmup),
        pg_catalog.jsonb_build_array('protocol', coalesce(r.options->>'protocol', 'simple')),
        pg_catalog.jsonb_build_array('rate', r.options->'rate'),
        pg_catalog.jsonb_build_array('where pg_wal was', r.observed->'start'->'wal'->'location'))
     OPERATOR(pg_catalog.||) coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array('where ' OPERATOR(pg_catalog.||) rels.k OPERATOR(pg_catalog.||) ' was',
                                                  CASE WHEN r.placed THEN coalesce(r.places->rels.k, '\"(absent)\"') END) ORDER BY rels.k)
                                  FROM rels), '[]')
     OPERATOR(pg_catalog.||) coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(s.key, s.value) ORDER BY s.key)
                                  FROM pg_catalog.jsonb_each(r.settings) s), '[]')
   FROM r ORDER BY r.id";

fn rows(percentiles: &[f64], merged: Result<Merged, Error>) -> Vec<(f64, Option<f64>, i64)> {
    let merged = merged.or_raise();
    percentiles
        .iter()
        .zip(merged.values)
        .map(|(p, v)| (*p, (!v.is_nan()).then_some(v), merged.samples as i64))
        .collect()
}

/// Latency percentiles (microseconds) of the given probes' operations taken
/// together, e.g. every repetition of one workload on one tablespace; probes
/// not measured alike are refused (22023).
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
    let _called = crate::ops::error::called("storlab.probe_latency");
    let ids = required_elements(probe_ids, "probe_ids");
    let percentiles = required_elements(percentiles, "percentiles");
    // stored probes, and on a standby this session's unstored ones ($2)
    let probes = standby::stored_and_unstored_probes(2);
    let blobs = histograms(
        &probes,
        "probe",
        "probe_latency",
        &PROBE_CONDITIONS
            .replace("{probes}", &probes)
            .replace("{sync_every}", &sync_every_text("p.")),
        &ids,
    );
    TableIterator::new(rows(
        &percentiles,
        latency::probe_percentiles(&blobs, &percentiles),
    ))
}

/// Transaction latency percentiles (milliseconds) of the given benchmark
/// runs taken together, e.g. the repetitions of one layout. `samples`
/// counts the logged transactions (fast read-only scripts log a sample).
/// Runs not measured alike are refused (22023).
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
    let _called = crate::ops::error::called("storlab.run_latency");
    let ids = required_elements(run_ids, "run_ids");
    let percentiles = required_elements(percentiles, "percentiles");
    let blobs = histograms(
        "storlab.bench_runs",
        "run",
        "run_latency",
        RUN_CONDITIONS,
        &ids,
    );
    TableIterator::new(rows(
        &percentiles,
        latency::run_percentiles(&blobs, &percentiles),
    ))
}
