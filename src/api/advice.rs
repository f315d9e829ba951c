//! `storlab.recommend()`: the settings and placements the stored
//! measurements support, each with the statement that applies it and the
//! evidence (probe ids, experiment ids, figures). Reads as the caller, like
//! chart_svg; the formulas are `storlab_core::advice`. A topic without evidence
//! says what to measure first, and the call that measures it.

use std::collections::BTreeMap;

use pgrx::datum::JsonB;
use pgrx::prelude::*;
use serde_json::{json, Value};

use crate::ops::error::{spi, OrRaise};
use crate::ops::suite::{NEWEST_DEPTH_PROBES, NEWEST_SUITE_PROBES};
use storlab_core::advice::{self, ConcurrencyBasis, Costs};
use storlab_core::pgbench::scripts::quote_ident;
use storlab_core::stats;

type Row = (
    String,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    JsonB,
);

#[pg_extern(stable)]
#[search_path(pg_catalog, pg_temp)]
fn recommend() -> TableIterator<
    'static,
    (
        name!(topic, String),
        name!(target, Option<String>),
        name!(advice, String),
        name!(statement, Option<String>),
        name!(expected_gain, Option<String>),
        name!(evidence, JsonB),
    ),
> {
    let figures = newest_figures();
    let experiments = done_experiments();
    let mut rows = costs(&figures);
    rows.push(wal(&figures));
    rows.push(placement("indexes", &figures, &experiments));
    rows.push(placement("temp", &figures, &experiments));
    rows.push(fillfactor(&experiments));
    TableIterator::new(rows)
}

fn row(
    topic: &str,
    target: Option<&str>,
    advice: String,
    statement: Option<String>,
    gain: Option<String>,
    evidence: Value,
) -> Row {
    (
        topic.to_string(),
        target.map(str::to_string),
        advice,
        statement,
        gain,
        JsonB(evidence),
    )
}

fn measure_first(topic: &str, what: &str, call: &str) -> Row {
    row(
        topic,
        None,
        format!("nothing measured yet: {what}; measure first"),
        Some(call.to_string()),
        None,
        json!({}),
    )
}

fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The newest 1-worker standard-suite probe of one workload.
#[derive(Debug, Clone)]
struct Probe {
    id: i64,
    mean_us: f64,
    p50_us: f64,
    p99_us: f64,
    mib_s: f64,
}

#[derive(Debug, Default)]
struct Figures {
    volatile: bool,
    mount: Option<String>,
    workloads: BTreeMap<String, Probe>,
    /// randread IOPS by workers (the newest probe at each count), with ids
    scaling: Vec<(i32, f64, i64)>,
    /// randread IOPS of one reader by queue depth (the newest probe at
    /// each depth, depth 1 included), with ids
    depths: Vec<(i32, f64, i64)>,
}

/// Per tablespace (and pg_wal): the newest standard-suite figures.
fn newest_figures() -> BTreeMap<String, Figures> {
    let mut out: BTreeMap<String, Figures> = BTreeMap::new();
    Spi::connect(|c| {
        let rows = c.select(
            &format!(
                "SELECT tablespace::text, workload, id, coalesce(lat_mean_us, 0),
                        coalesce(lat_p50_us, 0), coalesce(lat_p99_us, 0), mib_s,
                        coalesce(env ->> 'fs_type', ''), coalesce(env ->> 'device', ''), env ->> 'mount_point'
                   FROM ({NEWEST_SUITE_PROBES}) newest
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
            f.workloads.insert(
                r.get(2)?.unwrap_or_default(),
                Probe {
                    id: r.get(3)?.unwrap_or(0),
                    mean_us: r.get(4)?.unwrap_or(0.0),
                    p50_us: r.get(5)?.unwrap_or(0.0),
                    p99_us: r.get(6)?.unwrap_or(0.0),
                    mib_s: r.get(7)?.unwrap_or(0.0),
                },
            );
        }
        let by_workers = format!(
            "SELECT tablespace::text, workers, iops, id FROM ({NEWEST_SUITE_PROBES}) newest
              WHERE workload = 'randread' ORDER BY tablespace, workers"
        );
        add_curve(c, &by_workers, &mut out, |f| &mut f.scaling)?;
        let by_depth = format!(
            "SELECT tablespace::text, iodepth, iops, id FROM ({NEWEST_DEPTH_PROBES}) newest
              WHERE workload = 'randread' ORDER BY tablespace, iodepth"
        );
        add_curve(c, &by_depth, &mut out, |f| &mut f.depths)?;
        Ok::<_, pgrx::spi::Error>(())
    })
    .map_err(spi("reading the probes"))
    .or_raise();
    out
}

/// Adds the rows of a curve query, (tablespace, concurrency, iops, probe
/// id) each, to the curve that `curve` picks from the tablespace's figures.
fn add_curve(
    c: &pgrx::spi::SpiClient<'_>,
    query: &str,
    out: &mut BTreeMap<String, Figures>,
    curve: fn(&mut Figures) -> &mut Vec<(i32, f64, i64)>,
) -> Result<(), pgrx::spi::Error> {
    for r in c.select(query, None, &[])? {
        let ts = r.get::<String>(1)?.unwrap_or_default();
        if let Some(f) = out.get_mut(&ts) {
            curve(f).push((
                r.get(2)?.unwrap_or(0),
                r.get(3)?.unwrap_or(0.0),
                r.get(4)?.unwrap_or(0),
            ));
        }
    }
    Ok(())
}

fn costs(figures: &BTreeMap<String, Figures>) -> Vec<Row> {
    let seq = |f: &Figures| {
        f.workloads
            .get("seqread")
            .and_then(|p| advice::seq_page_us(p.mib_s))
    };
    let Some(unit) = figures.get("pg_default").and_then(seq) else {
        return vec![measure_first(
            "costs",
            "pg_default's sequential reads, the unit every cost is relative to",
            "SELECT * FROM storlab.compare_tablespaces()",
        )];
    };
    let (blks_read, blks_hit) = Spi::get_two::<i64, i64>(
        "SELECT blks_read, blks_hit FROM pg_catalog.pg_stat_database WHERE datname = pg_catalog.current_database()",
    )
    .map_err(spi("reading pg_stat_database"))
    .or_raise();
    let (miss, measured) = advice::miss_ratio(blks_read.unwrap_or(0), blks_hit.unwrap_or(0));
    let miss_said = if measured {
        format!(
            "{:.1} % of this database's block reads miss shared buffers (pg_stat_database)",
            miss * 100.0
        )
    } else {
        format!("PostgreSQL's own assumption that {:.0} % of random reads miss every cache (this database has read too little to tell)", miss * 100.0)
    };
    let mut rows = Vec::new();
    for (ts, f) in figures.iter().filter(|(ts, _)| *ts != "pg_wal") {
        let (Some(rand), Some(seq_us)) = (f.workloads.get("randread"), seq(f)) else {
            continue;
        };
        let Some(Costs {
            seq_page_cost,
            random_page_cost,
        }) = advice::costs(rand.mean_us, seq_us, unit, miss)
        else {
            continue;
        };
        let readers: Vec<(i32, f64)> = f.scaling.iter().map(|s| (s.0, s.1)).collect();
        let depths: Vec<(i32, f64)> = f.depths.iter().map(|s| (s.0, s.1)).collect();
        let eic = advice::io_concurrency(&depths, &readers);
        let mut set =
            format!("random_page_cost = {random_page_cost}, seq_page_cost = {seq_page_cost}");
        let mut said = format!(
            "plans priced by this storage's measured costs: 8 kB random reads take {:.1} us on average, a sequential page {:.2} us (pg_default's: {:.2} us); with {miss_said}, a random page costs {random_page_cost} and a sequential one {seq_page_cost} of pg_default's sequential page",
            rand.mean_us, seq_us, unit
        );
        let finer = format!(
            "SELECT * FROM storlab.profile({}, iodepths => '{{1,2,4,8,16,32,64}}')",
            quote_literal(ts)
        );
        match eic {
            Some((n, ConcurrencyBasis::QueueDepth)) => {
                set.push_str(&format!(", effective_io_concurrency = {n}"));
                let measured: Vec<String> = depths.iter().map(|d| d.0.to_string()).collect();
                let who = if n == 1 {
                    "one read at a time already gets".to_string()
                } else {
                    format!("one reader keeping {n} reads in flight reaches")
                };
                said.push_str(&format!(
                    "; {who} four fifths of the highest read IOPS measured (queue depths {})",
                    measured.join(", ")
                ));
                // the suite's depths 1 and 32 bound the knee, they do not
                // place it (nothing is below 1)
                if n > 1 && depths.len() < 4 {
                    said.push_str(&format!("; {finer} places it more finely"));
                }
            }
            Some((n, ConcurrencyBasis::Workers)) => {
                set.push_str(&format!(", effective_io_concurrency = {n}"));
                said.push_str(&format!("; {n} concurrent readers reach four fifths of the highest read IOPS measured"));
            }
            None => said.push_str(&format!(
                "; for effective_io_concurrency, measure reads at several queue depths first: {finer}"
            )),
        }
        rows.push(row(
            "costs",
            Some(ts),
            said,
            Some(format!("ALTER TABLESPACE {} SET ({set})", quote_ident(ts))),
            // the gain is in the plans chosen: no figure to promise
            None,
            json!({
                "probes": [rand.id, f.workloads["seqread"].id],
                "scaling_probes": f.scaling.iter().map(|s| s.2).collect::<Vec<_>>(),
                "randread_mean_us": rand.mean_us, "seq_page_us": seq_us, "unit_seq_page_us": unit,
                "miss_ratio": miss, "miss_ratio_measured": measured,
                "iops_by_workers": readers,
                "iops_by_iodepth": depths,
                "depth_probes": f.depths.iter().map(|s| s.2).collect::<Vec<_>>(),
            }),
        ));
    }
    if rows.is_empty() {
        rows.push(measure_first(
            "costs",
            "random and sequential reads of any tablespace",
            "SELECT * FROM storlab.compare_tablespaces()",
        ));
    }
    rows
}

fn wal(figures: &BTreeMap<String, Figures>) -> Row {
    let Some(now) = figures.get("pg_wal").and_then(|f| f.workloads.get("wal")) else {
        return measure_first(
            "wal",
            "pg_wal's commit latency",
            "SELECT * FROM storlab.compare_tablespaces()",
        );
    };
    let here = figures["pg_wal"]
        .mount
        .clone()
        .unwrap_or_else(|| "its volume".into());
    // A tablespace on pg_wal's own volume is no place to move it to: two
    // probes of one volume differ by noise alone.
    let wal_mount = figures["pg_wal"].mount.clone();
    let best = figures
        .iter()
        .filter(|(ts, f)| *ts != "pg_wal" && !f.volatile)
        .filter(|(_, f)| wal_mount.is_none() || f.mount != wal_mount)
        .filter_map(|(ts, f)| Some((ts, f, f.workloads.get("wal")?)))
        .min_by(|a, b| a.2.p99_us.total_cmp(&b.2.p99_us));
    let on_volatile = figures["pg_wal"].volatile;
    let mut evidence = json!({"probes": [now.id], "pg_wal_commit_p50_us": now.p50_us, "pg_wal_commit_p99_us": now.p99_us, "pg_wal_mount": here, "pg_wal_volatile": on_volatile});
    // WAL on storage that a reboot empties (tmpfs, zram) loses the cluster:
    // no commit latency makes that a place to stay, and the advice is the
    // durable volume with the fastest commits, however much slower it is
    if on_volatile && best.is_none() {
        return row(
            "wal",
            Some("pg_wal"),
            format!(
                "pg_wal is on volatile storage ({here}): a reboot loses the WAL, and the cluster with it, however fast it commits ({:.0} us p99); no durable volume has WAL figures yet: measure one, then move pg_wal there",
                now.p99_us
            ),
            Some("SELECT * FROM storlab.compare_tablespaces()".into()),
            None,
            evidence,
        );
    }
    match best {
        Some((ts, f, p)) if on_volatile || advice::worth_moving(now.p99_us, p.p99_us) => {
            let mount = f.mount.clone().unwrap_or_else(|| format!("the volume of tablespace {ts}"));
            evidence["probes"] = json!([now.id, p.id]);
            evidence["best"] = json!({"tablespace": ts, "mount": mount, "commit_p50_us": p.p50_us, "commit_p99_us": p.p99_us});
            let why = if on_volatile {
                format!("pg_wal is on volatile storage ({here}): a reboot loses the WAL, and the cluster with it. Of the durable volumes measured, tablespace {ts}'s ({mount}) commits fastest, in {:.0} us p99 (pg_wal now: {:.0} us)", p.p99_us, now.p99_us)
            } else {
                format!("pg_wal (on {here}) commits in {:.0} us p99; the volume of tablespace {ts} ({mount}) in {:.0} us", now.p99_us, p.p99_us)
            };
            row(
                "wal",
                Some(ts),
                format!(
                    "{why}. Moving pg_wal is done offline: stop the server (pg_ctl stop -m fast), make the new folder (mkdir -m 700 {dest}, owned by the server's user), move the WAL's files there, wherever pg_wal points now (mv \"$(readlink -f $PGDATA/pg_wal)\"/* {dest}/), replace pg_wal by a link to it (rm -r $PGDATA/pg_wal && ln -s {dest} $PGDATA/pg_wal: rm removes a link itself, not what it points to), start the server; a new cluster takes initdb --waldir",
                    dest = wal_folder_on(&mount)
                ),
                None,
                Some(format!(
                    "WAL commit p99 {:.0} -> {:.0} us ({}), p50 {:.0} -> {:.0} us",
                    now.p99_us,
                    p.p99_us,
                    percent(stats::improvement_pct(now.p99_us, p.p99_us)),
                    now.p50_us,
                    p.p50_us
                )),
                evidence,
            )
        }
        _ => row(
            "wal",
            Some("pg_wal"),
            format!(
                "pg_wal (on {here}) commits in {:.0} us p99: no durable volume measured commits more than a tenth faster; leave it where it is",
                now.p99_us
            ),
            None,
            None,
            evidence,
        ),
    }
}

/// Where the WAL goes on a volume: `pg_wal` at its mount point, spelled
/// without a double slash when that is the root.
fn wal_folder_on(mount: &str) -> String {
    format!("{}/pg_wal", mount.trim_end_matches('/'))
}

/// A done experiment, its layouts' placements and its report.
struct Experiment {
    id: i64,
    name: String,
    /// (name, placement) in order, the baseline first
    layouts: Vec<(String, Value)>,
    cells: Vec<Cell>,
}

struct Cell {
    layout: String,
    fillfactor: i32,
    clients: i32,
    improvement_pct: Option<f64>,
    p_value: Option<f64>,
    significant: Option<bool>,
    logical_bytes: Option<i64>,
    stored_bytes: Option<i64>,
}

fn done_experiments() -> Vec<Experiment> {
    let heads: Vec<(i64, String, Value)> = Spi::connect(|c| {
        c.select(
            "SELECT id, name, args FROM storlab.experiments WHERE status = 'done' ORDER BY id DESC LIMIT 20",
            None,
            &[],
        )?
        .map(|r| Ok((r.get(1)?.unwrap_or(0), r.get(2)?.unwrap_or_default(), r.get::<JsonB>(3)?.map(|j| j.0).unwrap_or_default())))
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the experiments"))
    .or_raise();
    heads
        .into_iter()
        .map(|(id, name, args)| {
            let layouts = args["layouts"]
                .as_array()
                .map(|ls| ls.iter().map(|l| (l["name"].as_str().unwrap_or("").to_string(), l["placement"].clone())).collect())
                .unwrap_or_default();
            let cells = Spi::connect(|c| {
                c.select(
                    "SELECT layout, fillfactor, clients, improvement_pct, p_value, significant, logical_bytes, stored_bytes
                       FROM storlab.experiment_report($1)",
                    None,
                    &[id.into()],
                )?
                .map(|r| {
                    Ok(Cell {
                        layout: r.get(1)?.unwrap_or_default(),
                        fillfactor: r.get(2)?.unwrap_or(0),
                        clients: r.get(3)?.unwrap_or(0),
                        improvement_pct: r.get(4)?,
                        p_value: r.get(5)?,
                        significant: r.get(6)?,
                        logical_bytes: r.get(7)?,
                        stored_bytes: r.get(8)?,
                    })
                })
                .collect::<Result<Vec<_>, pgrx::spi::Error>>()
            })
            .map_err(spi("reading an experiment's report"))
            .or_raise();
            Experiment { id, name, layouts, cells }
        })
        .collect()
}

/// Where indexes (or temp files) should go: the experiment whose layout
/// placing them elsewhere than its baseline won significantly (the largest
/// such gain), or else the probes' fastest tablespace for the purpose.
fn placement(what: &str, figures: &BTreeMap<String, Figures>, experiments: &[Experiment]) -> Row {
    let won = experiments
        .iter()
        .flat_map(|e| e.cells.iter().map(move |c| (e, c)))
        .filter(|(_, c)| c.significant == Some(true) && c.improvement_pct.is_some_and(|i| i > 0.0))
        .filter_map(|(e, c)| {
            let base = e.layouts.first()?.1.get(what).and_then(Value::as_str);
            let mine = e
                .layouts
                .iter()
                .find(|l| l.0 == c.layout)?
                .1
                .get(what)?
                .as_str()?;
            (Some(mine) != base).then_some((e, c, mine))
        })
        .max_by(|a, b| {
            a.1.improvement_pct
                .unwrap_or(0.0)
                .total_cmp(&b.1.improvement_pct.unwrap_or(0.0))
        });
    if let Some((e, c, ts)) = won {
        let gain = format!(
            "TPS {:+.1} % (Welch p = {:.4}) at {} clients, fillfactor {}, in experiment {} \"{}\"",
            c.improvement_pct.unwrap_or(0.0),
            c.p_value.unwrap_or(f64::NAN),
            c.clients,
            c.fillfactor,
            e.id,
            e.name
        );
        return row(
            what,
            Some(ts),
            format!("{what} on {ts}: the experiment's layout \"{}\" put them there and beat its baseline significantly (evidence: an experiment)", c.layout),
            Some(placement_statement(what, ts)),
            Some(gain),
            json!({"experiment": e.id, "layout": c.layout, "clients": c.clients, "fillfactor": c.fillfactor,
                   "improvement_pct": c.improvement_pct, "p_value": c.p_value}),
        );
    }
    // probes: indexes want fast random reads and must survive a reboot;
    // temp files want sequential throughput and may live on RAM
    let candidates = figures
        .iter()
        .filter(|(ts, f)| *ts != "pg_wal" && (what == "temp" || !f.volatile));
    let best = if what == "indexes" {
        candidates
            .filter_map(|(ts, f)| {
                Some((
                    ts,
                    f.workloads.get("randread")?.p99_us,
                    vec![f.workloads["randread"].id],
                ))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
    } else {
        candidates
            .filter_map(|(ts, f)| {
                let (r, w) = (f.workloads.get("seqread")?, f.workloads.get("seqwrite")?);
                Some((ts, -(r.mib_s + w.mib_s), vec![r.id, w.id]))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
    };
    let Some((ts, figure, ids)) = best else {
        return measure_first(
            what,
            "the tablespaces' random and sequential I/O",
            "SELECT * FROM storlab.compare_tablespaces()",
        );
    };
    let (said, evidence) = if what == "indexes" {
        (
            format!("indexes on {ts}: the lowest 8 kB random read p99 of the durable tablespaces ({figure:.0} us); evidence: probes only, no experiment placed indexes differently and won"),
            json!({"probes": ids, "randread_p99_us": figure}),
        )
    } else {
        let volatile = if figures[ts].volatile {
            " It is RAM: size it for the largest sort or hash that spills."
        } else {
            ""
        };
        (
            format!("temp files on {ts}: the highest sequential read + write throughput ({:.0} MiB/s); evidence: probes only, no experiment placed temp files differently and won.{volatile}", -figure),
            json!({"probes": ids, "seq_read_plus_write_mib_s": -figure}),
        )
    };
    row(
        what,
        Some(ts),
        said,
        Some(placement_statement(what, ts)),
        None,
        evidence,
    )
}

fn placement_statement(what: &str, ts: &str) -> String {
    if what == "indexes" {
        format!(
            "SELECT * FROM storlab.apply_layout(NULL, {}, 'public')",
            quote_literal(ts)
        )
    } else {
        let db =
            Spi::get_one::<String>("SELECT pg_catalog.quote_ident(pg_catalog.current_database())")
                .map_err(spi("reading the database's name"))
                .or_raise()
                .unwrap_or_default();
        format!(
            "ALTER DATABASE {db} SET temp_tablespaces = {}",
            quote_literal(ts)
        )
    }
}

/// From experiments that compared fillfactors: the fillfactor that beat
/// the experiment's highest one significantly (Welch's test on the
/// baseline layout's runs at the same clients), with the space it costs.
fn fillfactor(experiments: &[Experiment]) -> Row {
    let compared: Vec<&Experiment> = experiments
        .iter()
        .filter(|e| {
            let mut ffs: Vec<i32> = e.cells.iter().map(|c| c.fillfactor).collect();
            ffs.sort();
            ffs.dedup();
            ffs.len() > 1
        })
        .collect();
    if compared.is_empty() {
        return measure_first(
            "fillfactor",
            "no experiment compared fillfactors",
            "SELECT storlab.experiment_start('fillfactor', '{\"here\": {}}', fillfactors => '{100,90,70}')",
        );
    }
    let mut best: Option<(f64, Value, String)> = None;
    for e in &compared {
        let Some((base, _)) = e.layouts.first() else {
            continue;
        };
        let top = e.cells.iter().map(|c| c.fillfactor).max().unwrap_or(100);
        for c in e
            .cells
            .iter()
            .filter(|c| c.layout == *base && c.fillfactor != top)
        {
            let (a, b) = (
                run_tps(e.id, base, c.fillfactor, c.clients),
                run_tps(e.id, base, top, c.clients),
            );
            let (Some(w), Some(sa), Some(sb)) = (
                stats::welch(&a, &b),
                stats::summarize(&a),
                stats::summarize(&b),
            ) else {
                continue;
            };
            let (ma, mb) = (sa.mean, sb.mean);
            if !(w.significant(stats::ALPHA, stats::Sides::Two) && ma > mb) {
                continue;
            }
            let Some(gain) = stats::improvement_pct(mb, ma) else {
                continue;
            };
            if best.as_ref().is_some_and(|b| b.0 >= gain) {
                continue;
            }
            let top_cell = e
                .cells
                .iter()
                .find(|x| x.layout == *base && x.fillfactor == top && x.clients == c.clients);
            let space = |f: fn(&Cell) -> Option<i64>| {
                stats::improvement_pct(f(top_cell?)? as f64, f(c)? as f64)
            };
            let (logical, stored) = (space(|x| x.logical_bytes), space(|x| x.stored_bytes));
            best = Some((
                gain,
                json!({"experiment": e.id, "layout": base, "clients": c.clients, "fillfactor": c.fillfactor,
                       "against_fillfactor": top, "tps_mean": ma, "against_tps_mean": mb, "p_value": w.p_value,
                       "logical_bytes_change_pct": logical, "stored_bytes_change_pct": stored}),
                format!(
                    "TPS {gain:+.1} % (Welch p = {:.4}) at {} clients in experiment {} \"{}\"; space: logical {}, stored {}",
                    w.p_value,
                    c.clients,
                    e.id,
                    e.name,
                    percent(logical),
                    percent(stored)
                ),
            ));
        }
    }
    match best {
        Some((_, evidence, gain)) => {
            let ff = evidence["fillfactor"].as_i64().unwrap_or(0);
            let statement = Spi::get_one::<bool>("SELECT pg_catalog.to_regclass('public.pgbench_accounts') IS NOT NULL")
                .ok()
                .flatten()
                .unwrap_or(false)
                .then(|| format!("ALTER TABLE public.pgbench_accounts SET (fillfactor = {ff})"));
            row(
                "fillfactor",
                Some(&ff.to_string()),
                format!(
                    "fillfactor {ff} for tables updated like pgbench's: it beat {} significantly; it applies to pages written from now on (a rewrite, e.g. VACUUM FULL, repacks the old ones)",
                    evidence["against_fillfactor"]
                ),
                statement,
                Some(gain),
                evidence,
            )
        }
        None => row(
            "fillfactor",
            None,
            format!(
                "no fillfactor beat the highest one significantly in the experiments that compared them ({}): keep the default",
                compared.iter().map(|e| e.id.to_string()).collect::<Vec<_>>().join(", ")
            ),
            None,
            None,
            json!({"experiments": compared.iter().map(|e| e.id).collect::<Vec<_>>()}),
        ),
    }
}

fn run_tps(experiment: i64, layout: &str, fillfactor: i32, clients: i32) -> Vec<f64> {
    Spi::get_one_with_args::<Vec<f64>>(
        "SELECT coalesce(array_agg(tps ORDER BY id), '{}') FROM storlab.bench_runs
          WHERE experiment_id = $1 AND experiment_layout = $2 AND fillfactor = $3 AND clients = $4
            AND NOT warmup AND tps IS NOT NULL
            -- a run whose observations disagree (bench_runs.invalid) is
            -- left out, as experiment_report leaves it out
            AND invalid IS NULL",
        &[
            experiment.into(),
            layout.into(),
            fillfactor.into(),
            clients.into(),
        ],
    )
    .map_err(spi("reading an experiment's runs"))
    .or_raise()
    .unwrap_or_default()
}

/// A change in percent as the advice writes it, "unknown" when it is.
fn percent(change: Option<f64>) -> String {
    change.map_or("unknown".into(), |x| format!("{x:+.0} %"))
}
