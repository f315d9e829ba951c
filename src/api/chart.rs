//! `storlab.chart_svg()`: a standalone SVG chart of stored results. Reads
//! as the caller (SELECT on storlab's tables, granted to pg_monitor), as a
//! query by hand would; draws with `storlab_core::chart`.

use pgrx::prelude::*;

use crate::ops::error::{invalid, required, spi, Error, OrRaise, Raise, SqlState};
use crate::ops::suite::{NEWEST_DEPTH_PROBES, NEWEST_SUITE_PROBES};
use storlab_core::chart::{self, ExperimentBar, ProgressPoint, Series, TablespaceFigures};

/// The kinds, and whether each takes an id.
const KINDS: [(&str, bool); 6] = [
    ("experiment", true),
    ("run", true),
    ("probe", true),
    ("profile", false),
    ("depths", false),
    ("tablespaces", false),
];

/// Percentiles a probe's plot is drawn through: dense in the tail.
const PERCENTILES: [f64; 18] = [
    50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 97.0, 98.0, 99.0, 99.5, 99.7, 99.9, 99.95, 99.97, 99.99,
    99.995, 99.997, 99.999,
];

#[pg_extern(stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn chart_svg(
    kind: Option<String>,
    id: default!(Option<i64>, "NULL"),
    title: default!(Option<String>, "NULL"),
) -> String {
    let kind = required(kind, "kind");
    let Some(&(kind, takes_id)) = KINDS.iter().find(|(k, _)| *k == kind) else {
        let known: Vec<&str> = KINDS.iter().map(|(k, _)| *k).collect();
        invalid(format!("unknown chart kind \"{kind}\""))
            .with_hint(format!("Kinds: {}.", known.join(", ")))
            .raise()
    };
    let id = match (takes_id, id) {
        (true, None) => required(None, &format!("id (the {kind}'s id)")),
        (false, Some(_)) => invalid(format!(
            "a {kind} chart takes no id: it draws the newest standard-suite probes"
        ))
        .raise(),
        (_, id) => id.unwrap_or(0),
    };
    let drawn = match kind {
        "experiment" => experiment(id, title),
        "run" => run(id, title),
        "probe" => probe(id, title),
        "profile" => chart::profile(
            title
                .as_deref()
                .unwrap_or("IOPS by workers (newest standard-suite probes)"),
            &profile_series(),
        ),
        "depths" => chart::depths(
            title
                .as_deref()
                .unwrap_or("IOPS by queue depth, 1 worker (newest standard-suite probes)"),
            &depth_series(),
        ),
        _ => chart::tablespaces(
            title
                .as_deref()
                .unwrap_or("Tablespaces compared (newest standard-suite probes, 1 worker)"),
            &tablespace_figures(),
        ),
    };
    // stored rows that hold nothing to draw (a run without progress, no
    // suite yet): an error, not an empty picture
    drawn
        .map_err(|e| Error::new(SqlState::ObjectNotInPrerequisiteState, e.0))
        .or_raise()
}

/// The one text `query` finds for the stored row `id` (its name, a title),
/// or 42704 naming `what` when there is no such row.
fn stored_text(what: &str, id: i64, query: &str) -> String {
    Spi::get_one_with_args::<String>(query, &[id.into()])
        .map_err(spi(&format!("reading the {what}")))
        .or_raise()
        .unwrap_or_else(|| not_found(what, id))
}

fn not_found(what: &str, id: i64) -> ! {
    Error::new(
        SqlState::UndefinedObject,
        format!("there is no {what} with id {id}"),
    )
    .raise()
}

fn experiment(id: i64, title: Option<String>) -> chart::Result<String> {
    let name = stored_text(
        "experiment",
        id,
        "SELECT (SELECT name FROM storlab.experiments WHERE id = $1)",
    );
    let bars = Spi::connect(|c| {
        c.select(
            "SELECT layout, fillfactor, clients, tps_mean, tps_ci95_low, tps_ci95_high, improvement_pct, significant,
                    wal, ff_improvement_pct, ff_significant
               FROM storlab.experiment_report($1)",
            None,
            &[id.into()],
        )?
        .map(|r| {
            Ok(ExperimentBar {
                layout: r.get(1)?.unwrap_or_default(),
                fillfactor: r.get(2)?.unwrap_or(0),
                clients: r.get(3)?.unwrap_or(0),
                tps_mean: r.get(4)?,
                ci_low: r.get(5)?,
                ci_high: r.get(6)?,
                improvement_pct: r.get(7)?,
                significant: r.get(8)?,
                wal: r.get(9)?,
                ff_improvement_pct: r.get(10)?,
                ff_significant: r.get(11)?,
            })
        })
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the experiment's report"))
    .or_raise();
    let title = title
        .unwrap_or_else(|| format!("Experiment {id}: {name} (TPS, 95 % confidence intervals)"));
    chart::experiment(&title, &bars)
}

fn run(id: i64, title: Option<String>) -> chart::Result<String> {
    let what = stored_text(
        "benchmark run",
        id,
        "SELECT (SELECT format('Run %s: %s, %s clients%s%s', id, script, clients, ' (' || label || ')',
                               ', invalid: ' || invalid)
                   FROM storlab.bench_runs WHERE id = $1)",
    );
    let points = Spi::connect(|c| {
        c.select(
            // a partial first or last second understates: left out
            "SELECT t_s, tps, lat_avg_ms FROM storlab.bench_progress WHERE run_id = $1 AND NOT partial ORDER BY t_s",
            None,
            &[id.into()],
        )?
        .map(|r| {
            Ok(ProgressPoint {
                t_s: r.get(1)?.unwrap_or(0),
                tps: r.get(2)?,
                lat_ms: r.get(3)?,
            })
        })
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the run's progress"))
    .or_raise();
    chart::run(&title.unwrap_or(what), &points)
}

fn probe(id: i64, title: Option<String>) -> chart::Result<String> {
    let (what, workload) = Spi::get_two_with_args::<String, String>(
        "SELECT format('Probe %s: %s, %s kB blocks, %s worker%s on %s', p.id, p.workload, p.block_size / 1024, p.workers,
                       CASE WHEN p.workers > 1 THEN 's' ELSE '' END, p.tablespace), p.workload
           FROM (SELECT) one LEFT JOIN storlab.probes p ON p.id = $1",
        &[id.into()],
    )
    .map_err(spi("reading the probe"))
    .or_raise();
    let (Some(what), Some(workload)) = (what, workload) else {
        not_found("probe", id)
    };
    let points = Spi::connect(|c| {
        c.select(
            "SELECT percentile, lat_us FROM storlab.probe_latency(ARRAY[$1], $2) WHERE lat_us IS NOT NULL",
            None,
            &[id.into(), PERCENTILES.to_vec().into()],
        )?
        .map(|r| Ok((r.get::<f64>(1)?.unwrap_or(0.0), r.get::<f64>(2)?.unwrap_or(0.0))))
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the probe's histogram"))
    .or_raise();
    chart::percentiles(
        &title.unwrap_or(what),
        &[Series {
            label: workload,
            points,
        }],
    )
}

/// The newest standard-suite IOPS of one worker per (tablespace, workload,
/// iodepth), as a series per tablespace and workload measured at more than
/// the suite's own two depths.
fn depth_series() -> Vec<Series> {
    series(&format!(
        "SELECT tablespace::text || ' ' || workload, array_agg(iodepth::float8 ORDER BY iodepth), array_agg(iops ORDER BY iodepth)
           FROM ({NEWEST_DEPTH_PROBES}) newest
          GROUP BY tablespace, workload
         HAVING count(*) > 2
          ORDER BY tablespace, workload"
    ))
}

/// Series from a query of (label, x values, y values) rows.
fn series(query: &str) -> Vec<Series> {
    Spi::connect(|c| {
        c.select(query, None, &[])?
            .map(|r| {
                let xs: Vec<f64> = r.get(2)?.unwrap_or_default();
                let ys: Vec<f64> = r.get(3)?.unwrap_or_default();
                Ok(Series {
                    label: r.get(1)?.unwrap_or_default(),
                    points: xs.into_iter().zip(ys).collect(),
                })
            })
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the probes"))
    .or_raise()
}

/// The newest standard-suite IOPS per (tablespace, workload, workers), as a
/// series per tablespace and workload measured at more than one worker
/// count (compare_tablespaces alone measures one).
fn profile_series() -> Vec<Series> {
    series(&format!(
        "SELECT tablespace::text || ' ' || workload, array_agg(workers::float8 ORDER BY workers), array_agg(iops ORDER BY workers)
           FROM ({NEWEST_SUITE_PROBES}) newest
          GROUP BY tablespace, workload
         HAVING count(*) > 1
          ORDER BY tablespace, workload"
    ))
}

/// Per tablespace (and pg_wal), the newest 1-worker standard-suite figures.
fn tablespace_figures() -> Vec<TablespaceFigures> {
    let rows = Spi::connect(|c| {
        c.select(
            &format!(
                "SELECT tablespace::text,
                        max(lat_p99_us) FILTER (WHERE workload = 'randread'),
                        max(lat_p99_us) FILTER (WHERE workload = 'wal'),
                        sum(mib_s) FILTER (WHERE workload IN ('seqread', 'seqwrite'))
                   FROM ({NEWEST_SUITE_PROBES}) newest
                  WHERE workers = 1
                  GROUP BY tablespace ORDER BY tablespace"
            ),
            None,
            &[],
        )?
        .map(|r| {
            Ok(TablespaceFigures {
                tablespace: r.get(1)?.unwrap_or_default(),
                randread_p99_us: r.get(2)?,
                wal_commit_p99_us: r.get(3)?,
                seq_mib_s: r.get(4)?,
            })
        })
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    });
    rows.map_err(spi("reading the probes")).or_raise()
}
