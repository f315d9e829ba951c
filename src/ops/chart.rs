//! The stored figures `storlab.chart_svg()` draws, read as the caller
//! (SELECT on storlab's tables, granted to pg_monitor), as a query by hand
//! would; `storlab_core::chart::data` shapes them.

use pgrx::prelude::*;

use super::error::{spi, Error, OrRaise, Raise, SqlState};
use super::read;
use super::report::experiment_report;
use super::suite::{newest_sweep, SweepAxis};
use storlab_core::chart::data::{CurvePoint, ProbeHead, RunHead, SuiteFigure};
use storlab_core::chart::{ExperimentBar, ProgressPoint};
use storlab_core::newest::NewestPerGroup;
use storlab_core::report::latency;

fn not_found(what: &str, id: i64) -> ! {
    Error::new(
        SqlState::UndefinedObject,
        format!("there is no {what} with id {id}"),
    )
    .raise()
}

/// An experiment's name and its report's cells as bars (42704 when there
/// is no such experiment).
pub fn experiment(id: i64) -> (String, Vec<ExperimentBar>) {
    let name = read::one::<String>(
        "SELECT (SELECT name FROM storlab.experiments WHERE id = $1)",
        &[id.into()],
    )
    .map_err(spi("reading the experiment"))
    .or_raise()
    .unwrap_or_else(|| not_found("experiment", id));
    let (e, rows) = experiment_report(id);
    let bars = rows
        .into_iter()
        .map(|r| ExperimentBar {
            layout: r.layout,
            fillfactor: r.fillfactor,
            clients: r.clients,
            tps_mean: r.tps_mean,
            ci_low: r.tps_ci95_low,
            ci_high: r.tps_ci95_high,
            improvement_pct: r.improvement_pct,
            significant: r.significant,
            wal: r.wal,
            ff_improvement_pct: r.ff_improvement_pct,
            ff_significant: r.ff_significant,
            decision: r.decision,
            sequential: e.stop.is_some(),
        })
        .collect();
    (name, bars)
}

/// A benchmark run and its whole seconds of progress (42704 when there is
/// no such run).
pub fn run(id: i64) -> (RunHead, Vec<ProgressPoint>) {
    Spi::connect(|c| {
        let mut head = c.select(
            "SELECT script, clients, label, invalid FROM storlab.bench_runs WHERE id = $1",
            None,
            &[id.into()],
        )?;
        let Some(h) = head.next() else {
            return Ok(None);
        };
        let head = RunHead {
            id,
            script: h.get(1)?,
            clients: h.get(2)?,
            label: h.get(3)?,
            invalid: h.get(4)?,
        };
        let points = c
            .select(
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
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()?;
        Ok::<_, pgrx::spi::Error>(Some((head, points)))
    })
    .map_err(spi("reading the run's progress"))
    .or_raise()
    .unwrap_or_else(|| not_found("benchmark run", id))
}

/// A probe and the latency at each of `percentiles` of its histogram
/// (NaN where it has none; 42704 when there is no such probe).
pub fn probe(id: i64, percentiles: &[f64]) -> (ProbeHead, Vec<f64>) {
    let found = Spi::connect(|c| {
        let mut rows = c.select(
            "SELECT workload, block_size, workers, tablespace::text, histogram FROM storlab.probes WHERE id = $1",
            None,
            &[id.into()],
        )?;
        let Some(r) = rows.next() else {
            return Ok(None);
        };
        let head = ProbeHead {
            id,
            workload: r.get(1)?.unwrap_or_default(),
            block_size: r.get(2)?.unwrap_or(0),
            workers: r.get(3)?.unwrap_or(0),
            tablespace: r.get(4)?.unwrap_or_default(),
        };
        Ok::<_, pgrx::spi::Error>(Some((head, r.get::<Vec<u8>>(5)?)))
    })
    .map_err(spi("reading the probe"))
    .or_raise();
    let Some((head, histogram)) = found else {
        not_found("probe", id)
    };
    // a probe that stored no histogram adds nothing
    let blobs: Vec<Vec<u8>> = histogram.into_iter().collect();
    let merged = latency::probe_percentiles(&blobs, percentiles).or_raise();
    (head, merged.values)
}

/// IOPS by workers: of each tablespace, the newest profile() call that ran
/// more than one worker count, every point of that one call (points of
/// different calls, minutes and loads apart, never make one curve).
pub fn by_workers() -> Vec<CurvePoint> {
    curve_points(&newest_sweep(SweepAxis::Workers))
}

/// IOPS of one reader by queue depth: of each tablespace, the newest
/// profile() call that swept depths, every point of that one call.
pub fn by_depth() -> Vec<CurvePoint> {
    curve_points(&newest_sweep(SweepAxis::QueueDepth))
}

fn curve_points(query: &str) -> Vec<CurvePoint> {
    Spi::connect(|c| {
        c.select(query, None, &[])?
            .map(|r| {
                Ok(CurvePoint {
                    tablespace: r.get(1)?.unwrap_or_default(),
                    workload: r.get(2)?.unwrap_or_default(),
                    x: r.get(3)?.unwrap_or(0.0),
                    iops: r.get(4)?.unwrap_or(0.0),
                })
            })
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the probes"))
    .or_raise()
}

/// What compare_tablespaces() would rank of the stored figures (any age),
/// one bar per volume named by its tablespaces ("pg_default, lab_disk,
/// pg_wal"): the means of one suite call's repetitions, as the comparison
/// shows them.
pub fn suite_figures() -> Vec<SuiteFigure> {
    let rows = super::compare::stored();
    let mut out = Vec::new();
    for r in rows.iter().filter(|r| r.same_volume_as.is_none()) {
        let mut names = vec![r.target.name.clone()];
        names.extend(
            rows.iter()
                .filter(|o| o.same_volume_as.as_deref() == Some(r.target.name.as_str()))
                .map(|o| o.target.name.clone()),
        );
        let label = names.join(", ");
        let f = &r.figures;
        let mean = |e: Option<storlab_core::report::compare::Estimate>| e.map(|e| e.mean);
        for (workload, p99, mib_s) in [
            ("randread", mean(f.randread_p99_us), None),
            ("wal", mean(f.wal_commit_p99_us), None),
            ("seqwrite", None, mean(f.seqwrite_mib_s)),
            ("seqread", None, mean(f.seqread_mib_s)),
        ] {
            if p99.is_some() || mib_s.is_some() {
                out.push(SuiteFigure {
                    tablespace: label.clone(),
                    workload: workload.to_string(),
                    p99_us: p99,
                    mib_s,
                });
            }
        }
    }
    out
}

/// The newest 1-worker standard-suite probes of every fleet server's
/// tablespaces (storlab.fleet_probes, copied by fleet_sync), each named
/// "server/tablespace". Through the index fleet_probes_suite.
pub fn fleet_suite_figures() -> Vec<SuiteFigure> {
    let newest = NewestPerGroup {
        table: "storlab.fleet_probes",
        groups: &["server", "tablespace", "workload"],
        filter: "suite = 'standard' AND ops > 0 AND workers = 1 AND iodepth = 1",
        newest_first: "started_at DESC, id DESC",
        per_group: "1",
    }
    .sql();
    figures_from(
        &format!("SELECT server || '/' || tablespace, workload, lat_p99_us, mib_s FROM ({newest}) newest"),
        "reading the fleet's probes",
    )
}

/// The rows of `sql` (name, workload, p99 in µs, MiB/s) as the tablespaces
/// chart draws them.
fn figures_from(sql: &str, what: &'static str) -> Vec<SuiteFigure> {
    Spi::connect(|c| {
        c.select(sql, None, &[])?
            .map(|r| {
                Ok(SuiteFigure {
                    tablespace: r.get(1)?.unwrap_or_default(),
                    workload: r.get(2)?.unwrap_or_default(),
                    p99_us: r.get(3)?,
                    mib_s: r.get(4)?,
                })
            })
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi(what))
    .or_raise()
}
