//! An experiment's report: its measured runs, pooled per (layout,
//! fillfactor, clients) cell, compared with the baseline layout and the
//! reference fillfactor (`storlab_core::report::experiment`), with latency
//! percentiles, WAL per transaction and sizes. Read as the caller (SELECT
//! on storlab.experiments, storlab.bench_runs and storlab.experiment_sizes,
//! granted to pg_monitor). `experiment_report()`, `recommend()` and
//! `chart_svg('experiment', id)` read it from here.

use std::collections::HashMap;

use pgrx::datum::JsonB;
use pgrx::prelude::*;

use super::error::{spi, Error, OrRaise, Raise, SqlState};
use super::read;
use storlab_core::record::RunDeviceIo;
use storlab_core::report::devices::{self, CellFigures, DeviceRow, RunFigures};
use storlab_core::report::experiment::{compare, compare_fillfactors, reference_fillfactor, Cell};
use storlab_core::report::latency::run_percentiles;
use storlab_core::report::pooled::{self, StoredRun};
use storlab_core::report::sequential::{self, Comparison};
use storlab_core::request::experiment::{session_settings, Experiment};
use storlab_core::request::job::{JobArgs, JobSpec};
use storlab_core::sequential::Decision;

/// One row of an experiment's report: one (layout, fillfactor, clients) cell.
#[derive(Debug, Clone)]
pub struct ReportRow {
    pub layout: String,
    pub fillfactor: i32,
    pub clients: i32,
    pub wal: Option<String>,
    pub runs: i32,
    /// TPS of each pooled run, in the order they were stored
    pub tps: Vec<f64>,
    pub tps_mean: Option<f64>,
    pub tps_stddev: Option<f64>,
    pub tps_ci95_low: Option<f64>,
    pub tps_ci95_high: Option<f64>,
    pub lat_p95_ms: Option<f64>,
    pub lat_p99_ms: Option<f64>,
    pub improvement_pct: Option<f64>,
    pub p_value: Option<f64>,
    pub significant: Option<bool>,
    pub ff_improvement_pct: Option<f64>,
    pub ff_p_value: Option<f64>,
    pub ff_significant: Option<bool>,
    pub wal_bytes_per_tx: Option<f64>,
    pub logical_bytes: Option<i64>,
    pub allocated_bytes: Option<i64>,
    pub stored_bytes: Option<i64>,
    pub bar: String,
    /// A sequential experiment's layouts against the baseline: different,
    /// equivalent, open or undecided (None: the baseline, a fixed experiment)
    pub decision: Option<Decision>,
    /// The repetitions at the look that decided it
    pub decided_after: Option<i32>,
    /// That look's repeated confidence interval of the improvement, in %
    /// (for an open or undecided one, the last look's)
    pub seq_ci_low_pct: Option<f64>,
    pub seq_ci_high_pct: Option<f64>,
    /// HOT updates over updates of pgbench's tables, checkpoints begun
    /// per run, the block devices' reads per transaction, and what a DBA
    /// must know before trusting the cell (storlab_core::report::devices)
    pub hot_ratio: Option<f64>,
    pub checkpoints_per_run: Option<f64>,
    pub device_reads_per_tx: Option<f64>,
    pub caveats: Vec<String>,
}

/// The report of experiment `id` (42704 when there is none), with a NOTICE
/// naming the runs it leaves out.
pub fn experiment_report(id: i64) -> (Experiment, Vec<ReportRow>) {
    let e = experiment_of(id);
    let judged = judged_runs(id, &e);
    say_left_out(id, &judged);
    let ids = pooled_ids(&judged);
    let runs = stored_runs(&ids);
    let sizes = stored_sizes(id);
    let figures = run_figures(&ids);

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
    // a sequential experiment's looks, up to the last repetition with a
    // run, made of the runs just read
    let compared = match e.stop {
        Some(_) => {
            let r: sequential::Runs = runs
                .iter()
                .map(|(cell, r)| {
                    (
                        cell.clone(),
                        r.repetitions
                            .iter()
                            .copied()
                            .zip(r.tps.iter().copied())
                            .collect(),
                    )
                })
                .collect();
            sequential::comparisons(&e, &r, sequential::reached(&r))
        }
        None => Vec::new(),
    };
    let by_fillfactor = compare_fillfactors(&cells, reference_fillfactor(&e.fillfactors));
    let rows = cells
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
            let v = sequential::decision_of(&compared, &cell.layout, cell.fillfactor, cell.clients);
            let f = cell_figures(&figures, &key);
            ReportRow {
                hot_ratio: f.hot_ratio,
                checkpoints_per_run: f.checkpoints_per_run,
                device_reads_per_tx: f.device_reads_per_tx,
                caveats: f.caveats.iter().map(|c| c.text()).collect(),
                decision: v.map(|v| v.decision),
                decided_after: v
                    .filter(|v| v.decision.decided())
                    .and_then(|v| v.look)
                    .map(|n| n as i32),
                seq_ci_low_pct: v.and_then(|v| v.ci_low_pct),
                seq_ci_high_pct: v.and_then(|v| v.ci_high_pct),
                layout: cell.layout,
                fillfactor: cell.fillfactor,
                clients: cell.clients,
                wal: wal_place,
                runs: s.runs as i32,
                tps: cell.tps,
                tps_mean: s.tps_mean,
                tps_stddev: s.tps_stddev,
                tps_ci95_low: s.tps_ci95_low,
                tps_ci95_high: s.tps_ci95_high,
                lat_p95_ms: lat(0),
                lat_p99_ms: lat(1),
                improvement_pct: s.improvement_pct,
                p_value: s.p_value,
                significant: s.significant,
                ff_improvement_pct: ff.improvement_pct,
                ff_p_value: ff.p_value,
                ff_significant: ff.significant,
                wal_bytes_per_tx: wal,
                logical_bytes: size.map(|z| z.logical),
                allocated_bytes: size.map(|z| z.allocated),
                stored_bytes: size.and_then(|z| z.stored),
                bar: s.bar,
            }
        })
        .collect();
    (e, rows)
}

/// The stored runs of one measured cell, as read from storlab.bench_runs.
#[derive(Default)]
struct Runs {
    tps: Vec<f64>,
    /// the repetition of each, in the same order
    repetitions: Vec<i32>,
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

/// The experiment as it was started (its layouts in order, baseline first).
pub fn experiment_of(id: i64) -> Experiment {
    let args = read::one::<JsonB>(
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

/// The runs a report pools, `$1` their ids ([`pooled_ids`]).
const POOLED_RUNS: &str = "FROM storlab.bench_runs WHERE id OPERATOR(pg_catalog.=) ANY ($1)";

/// The experiment's measured runs (no warm-up, with a result), in the
/// order they were measured, each with why the report leaves it out (None:
/// pooled): its stored reason, a fillfactor that is none of the
/// experiment's, or conditions other than the runs before it had
/// (`storlab_core::report::pooled`). Read as the caller (the report) or the
/// owner (the job); the job marks what it finds, this finds it for runs
/// stored before storlab judged conditions too.
pub fn judged_runs(id: i64, e: &Experiment) -> Vec<(StoredRun, Option<String>)> {
    let rows = Spi::connect(|c| {
        c.select(
            "SELECT id, experiment_layout, fillfactor, clients, repetition, invalid, settings,
                    observed->'start'->'tables', observed->'start'->'indexes'
               FROM storlab.bench_runs
              WHERE experiment_id = $1 AND NOT warmup AND tps IS NOT NULL
              ORDER BY id",
            None,
            &[id.into()],
        )?
        .map(|r| {
            let names = |j: Option<JsonB>| {
                j.and_then(|j| {
                    j.0.as_object()
                        .map(|o| o.keys().cloned().collect::<Vec<_>>())
                })
            };
            let (tables, indexes) = (names(r.get::<JsonB>(8)?), names(r.get::<JsonB>(9)?));
            Ok(StoredRun {
                id: r.get::<i64>(1)?.unwrap_or(0),
                layout: r.get::<String>(2)?.unwrap_or_default(),
                fillfactor: r.get::<i32>(3)?,
                clients: r.get::<i32>(4)?.unwrap_or(0),
                repetition: r.get::<i32>(5)?.unwrap_or(0),
                invalid: r.get::<String>(6)?,
                settings: r.get::<JsonB>(7)?.and_then(|j| {
                    j.0.as_object().map(|o| {
                        o.iter()
                            .map(|(k, v)| {
                                (
                                    k.clone(),
                                    v.as_str().map_or_else(|| v.to_string(), String::from),
                                )
                            })
                            .collect()
                    })
                }),
                // runs that recorded neither (before storlab observed them)
                relations: match (tables, indexes) {
                    (None, None) => None,
                    (t, i) => Some(t.into_iter().chain(i).flatten().collect()),
                },
            })
        })
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the experiment's runs"))
    .or_raise();
    let declared = e
        .layouts
        .iter()
        .flat_map(|l| session_settings(&l.placement))
        .map(|(name, _)| name.to_lowercase())
        .collect();
    let why = pooled::left_out(&rows, &e.fillfactors, &declared);
    rows.into_iter().zip(why).collect()
}

/// The ids of the runs a report pools.
pub fn pooled_ids(judged: &[(StoredRun, Option<String>)]) -> Vec<i64> {
    judged
        .iter()
        .filter(|(_, why)| why.is_none())
        .map(|(r, _)| r.id)
        .collect()
}

/// The (layout, fillfactor, clients) of a run, from the first three
/// columns of a query on POOLED_RUNS.
fn cell_of(r: &pgrx::spi::SpiHeapTupleData<'_>) -> Result<(String, i32, i32), pgrx::spi::Error> {
    Ok((
        r.get::<String>(1)?.unwrap_or_default(),
        r.get::<i32>(2)?.unwrap_or(0),
        r.get::<i32>(3)?.unwrap_or(0),
    ))
}

/// The runs `ids` (those a report pools), per (layout, fillfactor, clients).
fn stored_runs(ids: &[i64]) -> HashMap<(String, i32, i32), Runs> {
    let rows = Spi::connect(|c| {
        c.select(
            &format!(
                "SELECT experiment_layout, fillfactor, clients, tps, histogram,
                        coalesce(server_wal_bytes, 0)::float8, coalesce(transactions, 0),
                        coalesce(observed->'start'->'wal'->>'tablespace', observed->'start'->'wal'->>'mount_point'),
                        repetition
                   {POOLED_RUNS} ORDER BY id"
            ),
            None,
            &[ids.to_vec().into()],
        )?
        .map(|r| {
            Ok((
                cell_of(&r)?,
                r.get::<f64>(4)?.unwrap_or(0.0),
                r.get::<Vec<u8>>(5)?,
                r.get::<f64>(6)?.unwrap_or(0.0),
                r.get::<i64>(7)?.unwrap_or(0),
                r.get::<String>(8)?,
                r.get::<i32>(9)?.unwrap_or(0),
            ))
        })
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the experiment's runs"))
    .or_raise();
    let mut out: HashMap<_, Runs> = HashMap::new();
    for (key, tps, histogram, wal, transactions, wal_place, repetition) in rows {
        let r = out.entry(key).or_default();
        if let Some(place) = wal_place {
            if !r.wal_places.contains(&place) {
                r.wal_places.push(place);
            }
        }
        r.tps.push(tps);
        r.repetitions.push(repetition);
        r.histograms.extend(histogram);
        r.wal_bytes += wal;
        r.transactions += transactions;
    }
    out
}

/// The runs a report pools as (repetition, TPS) per (layout, fillfactor,
/// clients): what a sequential experiment's looks are made of, for its job
/// deciding which runs are still needed and for experiment_resume (the
/// report takes them from the runs it reads anyway).
pub fn sequential_runs(id: i64, e: &Experiment) -> sequential::Runs {
    let ids = pooled_ids(&judged_runs(id, e));
    let rows = Spi::connect(|c| {
        c.select(
            &format!("SELECT experiment_layout, fillfactor, clients, repetition, tps {POOLED_RUNS} ORDER BY id"),
            None,
            &[ids.into()],
        )?
        .map(|r| Ok((cell_of(&r)?, r.get::<i32>(4)?.unwrap_or(0), r.get::<f64>(5)?.unwrap_or(0.0))))
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the experiment's runs"))
    .or_raise();
    let mut out = sequential::Runs::new();
    for (key, repetition, tps) in rows {
        out.entry(key).or_default().push((repetition, tps));
    }
    out
}

/// Where a sequential experiment's comparisons stand after repetition
/// `done` (none for a fixed experiment).
pub fn comparisons(id: i64, e: &Experiment, done: u32) -> Vec<Comparison> {
    if e.stop.is_none() {
        return Vec::new();
    }
    sequential::comparisons(e, &sequential_runs(id, e), done)
}

/// Names, in a NOTICE, the measured runs the report does not pool, each
/// with why ([`judged_runs`]).
fn say_left_out(id: i64, judged: &[(StoredRun, Option<String>)]) {
    let rows: Vec<String> = judged
        .iter()
        .filter_map(|(r, why)| {
            why.as_ref().map(|why| {
                format!(
                    "run {} (layout {}, repetition {}, clients {}): {why}",
                    r.id, r.layout, r.repetition, r.clients
                )
            })
        })
        .collect();
    if !rows.is_empty() {
        pgrx::notice!(
            "storlab: experiment {id}: {} measured run{} left out of the report, since what {} observed disagrees with {} layout or with the runs before {}: {}",
            rows.len(),
            if rows.len() == 1 { " is" } else { "s are" },
            if rows.len() == 1 { "it" } else { "they" },
            if rows.len() == 1 { "its" } else { "their" },
            if rows.len() == 1 { "it" } else { "them" },
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

/// An experiment's pg_stat_io figures per cell (`storlab.experiment_io()`):
/// the measured runs experiment_report() pools, as the caller reads them.
/// The order: layouts as the experiment lists them, then fillfactor,
/// clients, backend type, object, context.
pub fn experiment_io(id: i64) -> Vec<storlab_core::report::io::IoRow> {
    let e = experiment_of(id);
    let ids = pooled_ids(&judged_runs(id, &e));
    let runs = Spi::connect(|c| {
        c.select(
            &format!(
                "SELECT experiment_layout, fillfactor, clients, server_io {POOLED_RUNS} ORDER BY id"
            ),
            None,
            &[ids.into()],
        )?
        .map(|r| Ok((cell_of(&r)?, r.get::<JsonB>(4)?.map(|j| j.0))))
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the experiment's runs"))
    .or_raise();
    let mut rows = storlab_core::report::io::per_cell(&runs);
    let rank = |layout: &str| {
        e.layouts
            .iter()
            .position(|l| l.name == layout)
            .unwrap_or(usize::MAX)
    };
    rows.sort_by(|a, b| {
        (
            rank(&a.cell.0),
            a.cell.1,
            a.cell.2,
            &a.backend_type,
            &a.object,
            &a.context,
        )
            .cmp(&(
                rank(&b.cell.0),
                b.cell.1,
                b.cell.2,
                &b.backend_type,
                &b.object,
                &b.context,
            ))
    });
    rows
}

/// What the pooled runs `ids` did beneath PostgreSQL, in the order they
/// were measured: their devices' counters, rows updated and HOT updated,
/// checkpoints, the size of pgbench's data at their start and the memory
/// the server could cache it in.
///
/// Under a newer library before ALTER EXTENSION UPDATE (recommend() and
/// the charts read the report too), bench_runs lacks 0.12.0's columns:
/// their figures are then unknown, not an error.
fn run_figures(ids: &[i64]) -> Vec<RunFigures> {
    let updated = read::one::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_attribute
                         WHERE attrelid = 'storlab.bench_runs'::pg_catalog.regclass
                           AND attname = 'device_io' AND NOT attisdropped)",
        &[],
    )
    .map_err(spi("reading the experiment's runs"))
    .or_raise()
    .unwrap_or(false);
    let added = if updated {
        "run_n_tup_upd, run_n_tup_hot_upd, device_io, memory_bytes, memory_source"
    } else {
        "NULL::int8, NULL::int8, NULL::jsonb, NULL::int8, NULL::text"
    };
    Spi::connect(|c| {
        c.select(
            &format!(
                "SELECT experiment_layout, fillfactor, clients, duration_s, transactions, server_checkpoints,
                        server_wal_bytes::float8, {added},
                        (SELECT sum((l->>'logical_bytes')::int8)::int8 FROM jsonb_array_elements(layout) l),
                        settings->>'checkpoint_timeout', settings->>'max_wal_size'
                   {POOLED_RUNS} ORDER BY id"
            ),
            None,
            &[ids.to_vec().into()],
        )?
        .map(|r| {
            Ok(RunFigures {
                cell: cell_of(&r)?,
                duration_s: r.get::<f64>(4)?.unwrap_or(0.0),
                transactions: r.get::<i64>(5)?,
                checkpoints: r.get::<i64>(6)?,
                wal_bytes: r.get::<f64>(7)?,
                n_tup_upd: r.get::<i64>(8)?,
                n_tup_hot_upd: r.get::<i64>(9)?,
                device_io: r
                    .get::<JsonB>(10)?
                    .and_then(|j| serde_json::from_value::<RunDeviceIo>(j.0).ok()),
                memory_bytes: r.get::<i64>(11)?,
                memory_source: r.get::<String>(12)?,
                data_bytes: r.get::<i64>(13)?,
                checkpoint_timeout: r.get::<String>(14)?,
                max_wal_size: r.get::<String>(15)?,
            })
        })
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the experiment's runs"))
    .or_raise()
}

/// The figures and caveats of the cell `key` from its runs in `figures`.
fn cell_figures(figures: &[RunFigures], key: &(String, i32, i32)) -> CellFigures {
    let of_cell: Vec<&RunFigures> = figures.iter().filter(|r| &r.cell == key).collect();
    devices::cell_figures(&of_cell)
}

/// An experiment's block devices per cell (`storlab.experiment_devices()`):
/// the runs experiment_report() pools, as the caller reads them, layouts
/// in the experiment's order, then fillfactor and clients; in a cell its
/// devices by name, then its tablespaces on no block device.
pub fn experiment_devices(id: i64) -> Vec<DeviceRow> {
    let e = experiment_of(id);
    let figures = run_figures(&pooled_ids(&judged_runs(id, &e)));
    let mut rows = devices::per_device(&figures);
    let rank = |layout: &str| {
        e.layouts
            .iter()
            .position(|l| l.name == layout)
            .unwrap_or(usize::MAX)
    };
    // stable: a cell's rows keep their order
    rows.sort_by_key(|r| (rank(&r.cell.0), r.cell.1, r.cell.2));
    rows
}

/// The caveats of experiment `id` as a whole, each said once
/// (`devices::experiment_caveats`): what its job ends with and
/// `CALL storlab.experiment` prints. Read as the owner, by the job.
pub fn experiment_caveats(id: i64, e: &Experiment) -> Vec<String> {
    let figures = run_figures(&pooled_ids(&judged_runs(id, e)));
    let mut cells = Vec::new();
    for &fillfactor in &e.fillfactors {
        for &clients in &e.clients {
            for layout in &e.layouts {
                let key = (layout.name.clone(), fillfactor, clients);
                let f = cell_figures(&figures, &key);
                if !f.caveats.is_empty() {
                    cells.push((key, f));
                }
            }
        }
    }
    devices::experiment_caveats(&cells)
}
