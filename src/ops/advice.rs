//! The figures `storlab.recommend()` decides from, read as the caller
//! (SELECT on storlab's tables, granted to pg_monitor, and the catalog),
//! handed to `storlab_core::advice`, which decides.

use pgrx::prelude::*;

use super::error::{spi, OrRaise};
use super::pgbench::pgbench_schema;
use super::probe::without_sync_every;
use super::read;
use super::read_path::{aio_settings, server_version_num};
use super::report::experiment_report;
use super::server::this_server;
use super::suite::{newest_suite_probes, newest_sweep, SweepAxis};
use storlab_core::advice::read_path::{AioSettings, ReadPathPoint};
use storlab_core::advice::{
    self, Advice, ByTablespace, Cell, ConcurrencyBasis, Context, Experiment, Probe, Sweep,
    SweepPoint,
};
use storlab_core::newest::NewestPerGroup;
use storlab_core::request::read_path::unsupported_major;
use storlab_core::sql_text::ident;

/// Repeated probes read per tablespace and workload, the newest.
const REPEATS_READ: i64 = 10;

/// Every topic's advice.
pub fn recommend() -> Vec<Advice> {
    let figures = newest_figures();
    let experiments = done_experiments();
    advice::recommend(&figures, &experiments, &context())
}

/// The database's facts: its counters, name, pgbench's schema, where
/// pgbench's indexes and temp files are now.
fn context() -> Context {
    let (blks_read, blks_hit) = read::two::<i64, i64>(
        "SELECT blks_read, blks_hit FROM pg_catalog.pg_stat_database WHERE datname = pg_catalog.current_database()", &[],
    )
    .map_err(spi("reading pg_stat_database"))
    .or_raise();
    let (database, default_ts) = read::two::<String, String>(
        "SELECT d.datname::text, t.spcname::text
           FROM pg_catalog.pg_database d JOIN pg_catalog.pg_tablespace t ON t.oid = d.dattablespace
          WHERE d.datname = pg_catalog.current_database()",
        &[],
    )
    .map_err(spi("reading the database's default tablespace"))
    .or_raise();
    let default_ts = default_ts.unwrap_or_else(|| "pg_default".into());
    let schema = pgbench_schema();
    // pgbench_accounts' primary key stands for pgbench's indexes
    let index_tablespace = schema.as_ref().and_then(|s| {
        read::one::<String>(
            "SELECT (SELECT t.spcname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_tablespace t ON t.oid = c.reltablespace
                      WHERE c.oid = pg_catalog.to_regclass(pg_catalog.format('%I.pgbench_accounts_pkey', $1)))",
            &[s.as_str().into()],
        )
        .map_err(spi("reading where pgbench's indexes are"))
        .or_raise()
    });
    let temp = read::one::<String>("SELECT pg_catalog.current_setting('temp_tablespaces')", &[])
        .map_err(spi("reading temp_tablespaces"))
        .or_raise()
        .unwrap_or_default();
    let temp_tablespace = temp
        .split(',')
        .map(|t| t.trim().trim_matches('"').to_string())
        .find(|t| !t.is_empty());
    Context {
        blks_read: blks_read.unwrap_or(0),
        blks_hit: blks_hit.unwrap_or(0),
        quoted_database: ident(&database.unwrap_or_default()),
        pgbench_schema: schema,
        index_tablespace: index_tablespace.unwrap_or_else(|| default_ts.clone()),
        temp_tablespace: temp_tablespace.unwrap_or(default_ts),
        aio: aio(),
    }
}

/// The server's asynchronous I/O settings, on PostgreSQL 18 and later.
fn aio() -> Option<AioSettings> {
    if unsupported_major(server_version_num()).is_some() {
        return None;
    }
    let a = aio_settings();
    Some(AioSettings {
        io_method: a["io_method"].as_str().unwrap_or("sync").to_string(),
        io_workers: a["io_workers"].as_i64().map(|v| v as i32),
        io_combine_limit: a["io_combine_limit"].as_str().map(str::to_owned),
    })
}

/// The newest read-path scans of this server (probe_read_path), their
/// repetitions grouped by (tablespace, scan, io_method, value).
fn add_read_path(
    c: &pgrx::spi::SpiClient<'_>,
    out: &mut ByTablespace,
) -> Result<(), pgrx::spi::Error> {
    let rows = c.select(
        "SELECT tablespace::text, workload, io_method, effective_io_concurrency,
                pg_catalog.array_agg(mib_s ORDER BY id), pg_catalog.array_agg(id ORDER BY id), file_size
           FROM (SELECT p.*, pg_catalog.row_number() OVER (
                          PARTITION BY tablespace, workload, io_method, effective_io_concurrency, file_size
                          ORDER BY started_at DESC, id DESC) AS n
                   FROM storlab.probes p
                  WHERE suite = 'read_path' AND ops > 0 AND system_identifier = ANY($1)) newest
          WHERE n <= $2
          GROUP BY 1, 2, 3, 4, 7 ORDER BY 1, 2, 3, 4, 7",
        None,
        &[this_server().into(), REPEATS_READ.into()],
    )?;
    for r in rows {
        let f = out
            .entry(r.get::<String>(1)?.unwrap_or_default())
            .or_default();
        f.read_path.push(ReadPathPoint {
            scan: r.get(2)?.unwrap_or_default(),
            io_method: r.get(3)?.unwrap_or_default(),
            eic: r.get(4)?.unwrap_or(0),
            table_bytes: r.get(7)?.unwrap_or(0),
            mib_s: r.get::<Vec<f64>>(5)?.unwrap_or_default(),
            ids: r.get::<Vec<i64>>(6)?.unwrap_or_default(),
        });
    }
    Ok(())
}

/// Per tablespace (and pg_wal): the newest standard-suite figures, and
/// the repeated probes a difference is tested on.
fn newest_figures() -> ByTablespace {
    let mut out = ByTablespace::new();
    let newest_suite = newest_suite_probes();
    let sweeps = [
        (
            ConcurrencyBasis::QueueDepth,
            newest_sweep(SweepAxis::QueueDepth),
        ),
        (ConcurrencyBasis::Workers, newest_sweep(SweepAxis::Workers)),
    ];
    Spi::connect(|c| {
        let rows = c.select(
            &format!(
                "SELECT tablespace::text, workload, id, coalesce(lat_mean_us, 0),
                        coalesce(lat_p50_us, 0), coalesce(lat_p99_us, 0), mib_s,
                        coalesce(env ->> 'fs_type', ''), coalesce(env ->> 'device', ''), env ->> 'mount_point',
                        env ->> 'location'
                   FROM ({newest_suite}) newest
                  WHERE workers = 1"
            ),
            None,
            &[],
        )?;
        for r in rows {
            let f = out.entry(r.get::<String>(1)?.unwrap_or_default()).or_default();
            let (fs, device): (String, String) = (r.get(8)?.unwrap_or_default(), r.get(9)?.unwrap_or_default());
            f.volatile |= storlab_core::env::is_volatile(&fs, &device);
            f.mount = r.get(10)?;
            f.location = r.get(11)?;
            f.device = (!device.is_empty()).then_some(device);
            f.workloads.insert(r.get(2)?.unwrap_or_default(), probe(&r, 3)?);
        }
        // effective_io_concurrency's sweep: the newest profile() call over
        // queue depths, else over workers
        for (basis, sweep) in &sweeps {
            add_sweeps(c, *basis, sweep, &mut out)?;
        }
        // every probe of one worker at depth 1, direct, at the standard
        // suite's block size (the suite's own and probe()'s alike, but a
        // probe() synced every N writes or once at the end: another
        // measurement), newest first
        let filter = format!(
            // the predicate of the index probes_newest_direct, and sync_every
            "ops > 0 AND workers = 1 AND iodepth = 1 AND direct
             AND ((workload = 'randread' AND block_size = 8192)
                  OR (workload IN ('seqread', 'seqwrite') AND block_size = 131072))
             AND {}",
            without_sync_every("")
        );
        let repeats = c.select(
            &format!(
                "SELECT tablespace::text, workload, id, coalesce(lat_mean_us, 0), coalesce(lat_p50_us, 0),
                        coalesce(lat_p99_us, 0), mib_s
                   FROM ({}) newest",
                NewestPerGroup {
                    table: "storlab.probes",
                    groups: &["tablespace", "workload"],
                    filter: &filter,
                    newest_first: "started_at DESC, id DESC",
                    per_group: "$1",
                }
                .sql()
            ),
            None,
            &[REPEATS_READ.into()],
        )?;
        for r in repeats {
            let ts = r.get::<String>(1)?.unwrap_or_default();
            if let Some(f) = out.get_mut(&ts) {
                f.repeats
                    .entry(r.get(2)?.unwrap_or_default())
                    .or_default()
                    .push(probe(&r, 3)?);
            }
        }
        add_read_path(c, &mut out)?;
        Ok::<_, pgrx::spi::Error>(())
    })
    .map_err(spi("reading the probes"))
    .or_raise();
    // a tablespace measured as its volume (compare_tablespaces() probes a
    // filesystem once, under its first tablespace's name) has its figures
    // and a sweep of one tablespace of a volume is a sweep of its device:
    // each tablespace there gets the volume's newest one
    for (member, peers) in super::compare::volume_members() {
        if !out.contains_key(&member) {
            if let Some(mut f) = peers.iter().find_map(|p| out.get(p).cloned()) {
                // the scratch folder was the other tablespace's
                f.location = None;
                out.insert(member.clone(), f);
            }
        }
        let newest = std::iter::once(&member)
            .chain(&peers)
            .filter_map(|t| out.get(t).and_then(|f| f.sweep.clone()))
            .max_by(|a, b| a.measured_at.cmp(&b.measured_at));
        if let (Some(f), Some(sweep)) = (out.get_mut(&member), newest) {
            f.sweep = Some(sweep);
        }
    }
    out
}

/// A probe's figures from the columns id, mean, p50, p99, MiB/s at `at`..
fn probe(r: &pgrx::spi::SpiHeapTupleData<'_>, at: usize) -> Result<Probe, pgrx::spi::Error> {
    Ok(Probe {
        id: r.get(at)?.unwrap_or(0),
        mean_us: r.get(at + 1)?.unwrap_or(0.0),
        p50_us: r.get(at + 2)?.unwrap_or(0.0),
        p99_us: r.get(at + 3)?.unwrap_or(0.0),
        mib_s: r.get(at + 4)?.unwrap_or(0.0),
    })
}

/// Each tablespace's newest profile() sweep (`sweep_sql`, along the axis
/// `basis` names), its 8 kB random
/// reads' repetitions at each point, where the tablespace has no sweep yet
/// (depths are read first: they are what the setting means).
fn add_sweeps(
    c: &pgrx::spi::SpiClient<'_>,
    basis: ConcurrencyBasis,
    sweep_sql: &str,
    out: &mut ByTablespace,
) -> Result<(), pgrx::spi::Error> {
    let query = format!("SELECT * FROM ({sweep_sql}) s WHERE workload = 'randread'");
    let mut found: ByTablespaceSweeps = Default::default();
    for r in c.select(&query, None, &[])? {
        let ts = r.get::<String>(1)?.unwrap_or_default();
        // the call and its time are the same on every row of a tablespace
        let sweep = match found.entry(ts) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => e.insert(Sweep {
                call: r.get(6)?.unwrap_or_default(),
                measured_at: r.get(7)?.unwrap_or_default(),
                basis,
                points: Vec::new(),
            }),
        };
        let readers = r.get::<f64>(3)?.unwrap_or(0.0) as i32;
        if sweep.points.last().map(|p| p.readers) != Some(readers) {
            sweep.points.push(SweepPoint {
                readers,
                ..Default::default()
            });
        }
        let point = sweep.points.last_mut().expect("pushed");
        point.iops.push(r.get(4)?.unwrap_or(0.0));
        point.ids.push(r.get(5)?.unwrap_or(0));
    }
    for (ts, sweep) in found {
        if let Some(f) = out.get_mut(&ts) {
            f.sweep.get_or_insert(sweep);
        }
    }
    Ok(())
}

type ByTablespaceSweeps = std::collections::BTreeMap<String, Sweep>;

/// The newest done experiments (20), their layouts and their reports.
fn done_experiments() -> Vec<Experiment> {
    let heads: Vec<(i64, String)> = Spi::connect(|c| {
        c.select(
            "SELECT id, name FROM storlab.experiments WHERE status = 'done' ORDER BY id DESC LIMIT 20",
            None,
            &[],
        )?
        .map(|r| Ok((r.get(1)?.unwrap_or(0), r.get(2)?.unwrap_or_default())))
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the experiments"))
    .or_raise();
    heads
        .into_iter()
        .map(|(id, name)| {
            let (e, rows) = experiment_report(id);
            let layouts = e
                .layouts
                .iter()
                .map(|l| {
                    let placement = serde_json::to_value(&l.placement).unwrap_or_default();
                    (l.name.clone(), placement)
                })
                .collect();
            let cells = rows
                .into_iter()
                .map(|r| Cell {
                    layout: r.layout,
                    fillfactor: r.fillfactor,
                    clients: r.clients,
                    tps: r.tps,
                    improvement_pct: r.improvement_pct,
                    p_value: r.p_value,
                    significant: r.significant,
                    decision: r.decision,
                    decided_after: r.decided_after,
                    seq_ci_low_pct: r.seq_ci_low_pct,
                    seq_ci_high_pct: r.seq_ci_high_pct,
                    logical_bytes: r.logical_bytes,
                    stored_bytes: r.stored_bytes,
                })
                .collect();
            Experiment {
                id,
                name,
                layouts,
                sequential: e.stop.is_some(),
                cells,
            }
        })
        .collect()
}
