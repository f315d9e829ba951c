//! Readers of a collector's copies (sql/catalog/fleet.sql): every fleet
//! server's tablespaces side by side, and two servers compared figure by
//! figure. They read only what storlab.fleet_sync() copied: a collector
//! cannot probe another server's storage.

use pgrx::datum::{Interval, TimestampWithTimeZone};
use pgrx::prelude::*;

use super::error::{spi, Error, OrRaise, Raise, SqlState};
use super::identity::as_owner;
use super::read;
use storlab_core::env;
use storlab_core::report::compare::{rank, Ranking};
use storlab_core::report::volumes::{figures, item_of, Rep, VolumeFigures};
use storlab_core::request::checks::Metric;
use storlab_core::request::probe::{SuiteItem, SUITE};
use storlab_core::stats::{improvement_pct, welch, ALPHA};

/// 42704 unless every name is a fleet server, or one removed whose results
/// were kept.
pub fn check_servers(names: &[String]) {
    let unknown = as_owner(|| {
        read::one::<Vec<String>>(
            "SELECT array_agg(n ORDER BY n) FROM unnest($1::text[]) n
              WHERE NOT EXISTS (SELECT FROM storlab.fleet_members m WHERE m.name = n)
                AND NOT EXISTS (SELECT FROM storlab.fleet_probes p WHERE p.server = n)
                AND NOT EXISTS (SELECT FROM storlab.fleet_bench_runs r WHERE r.server = n)",
            &[names.to_vec().into()],
        )
    })
    .map_err(spi("reading the fleet"))
    .or_raise();
    if let Some(unknown) = unknown.filter(|u| !u.is_empty()) {
        Error::new(
            SqlState::UndefinedObject,
            format!("no fleet server named {}", unknown.join(", ")),
        )
        .with_hint("storlab.fleet_servers lists the fleet.")
        .raise();
    }
}

/// One stored probe of a fleet server, as the readers need it.
struct Copied {
    server: String,
    tablespace: String,
    workload: String,
    block_size: i32,
    sync_method: String,
    workers: i32,
    iodepth: i32,
    lat_p50_us: Option<f64>,
    lat_p99_us: Option<f64>,
    iops: f64,
    mib_s: f64,
    started_at: TimestampWithTimeZone,
    fs_type: Option<String>,
    device: Option<String>,
    metrics: Vec<Option<f64>>,
}

impl Copied {
    /// Is it a probe of `item` (one worker at the item's depth)?
    fn is(&self, item: &SuiteItem) -> bool {
        self.workload == item.workload.as_str()
            && self.block_size as usize == item.block_size
            && self.sync_method == item.sync.as_str()
            && self.workers == 1
            && self.iodepth as u32 == item.iodepth
    }

    fn metric(&self, m: Metric) -> Option<f64> {
        let i = Metric::ALL.iter().position(|x| *x == m)?;
        self.metrics[i]
    }
}

/// The standard-suite probes of the fleet younger than `max_age` (of the
/// named servers, or all), newest first within each group; every one when
/// `all` (compare_servers tests repeated figures), else the newest of each
/// kind of probe only.
fn copied(servers: Option<&[String]>, max_age: &Interval, all: bool) -> Vec<Copied> {
    let metrics = Metric::ALL
        .iter()
        .map(|m| m.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let distinct = if all {
        ""
    } else {
        "DISTINCT ON (server, tablespace, workload, block_size, sync_method, workers, iodepth)"
    };
    let sql = format!(
        "SELECT {distinct} server, tablespace::text, workload, block_size, sync_method, workers, iodepth,
                lat_p50_us, lat_p99_us, iops, mib_s, started_at, env->>'fs_type', env->>'device', {metrics}
           FROM storlab.fleet_probes
          WHERE suite = 'standard' AND ops > 0 AND (workers = 1 OR iodepth = 1)
            AND ($1::text[] IS NULL OR server = ANY ($1)) AND started_at > pg_catalog.now() - $2
          ORDER BY server, tablespace, workload, block_size, sync_method, workers, iodepth, started_at DESC"
    );
    let servers: Option<Vec<String>> = servers.map(|s| s.to_vec());
    as_owner(|| {
        Spi::connect(|c| {
            c.select(&sql, None, &[servers.into(), max_age.clone().into()])?
                .map(|r| {
                    let mut metrics = Vec::with_capacity(Metric::ALL.len());
                    for i in 0..Metric::ALL.len() {
                        metrics.push(r.get::<f64>(15 + i)?);
                    }
                    Ok(Copied {
                        server: r.get(1)?.unwrap_or_default(),
                        tablespace: r.get(2)?.unwrap_or_default(),
                        workload: r.get(3)?.unwrap_or_default(),
                        block_size: r.get(4)?.unwrap_or_default(),
                        sync_method: r.get(5)?.unwrap_or_default(),
                        workers: r.get(6)?.unwrap_or_default(),
                        iodepth: r.get(7)?.unwrap_or_default(),
                        lat_p50_us: r.get(8)?,
                        lat_p99_us: r.get(9)?,
                        iops: r.get(10)?.unwrap_or(0.0),
                        mib_s: r.get(11)?.unwrap_or(0.0),
                        started_at: r.get(12)?.expect("started_at is NOT NULL"),
                        fs_type: r.get(13)?,
                        device: r.get(14)?,
                        metrics,
                    })
                })
                .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
    })
    .map_err(spi("reading the fleet's probes"))
    .or_raise()
}

/// One row of compare_fleet().
pub struct FleetRow {
    pub server: String,
    pub tablespace: String,
    pub fs_type: Option<String>,
    pub device: Option<String>,
    pub figures: VolumeFigures<TimestampWithTimeZone>,
    pub volatile: bool,
    pub ranking: Ranking,
    /// the first tablespace of the same server on the same device
    pub same_volume_as: Option<String>,
}

/// Every (server, tablespace) of the fleet with its volume's standard-suite
/// figures younger than `max_age`, ranked against all the others: the
/// same figures, intervals and roles as compare_tablespaces(), over many
/// servers. A server's tablespaces on one device are one volume; every
/// copy of a suite item on it younger than max_age is a repetition (as
/// compare_servers() tests them), the copies carrying no suite call.
pub fn compare_fleet(servers: Option<Vec<String>>, max_age: Interval) -> Vec<FleetRow> {
    if let Some(s) = &servers {
        check_servers(s);
    }
    let rows = copied(servers.as_deref(), &max_age, true);
    // (server, tablespace) in order, with the newest copy's storage facts
    let mut places: Vec<&Copied> = Vec::new();
    for r in &rows {
        match places
            .iter_mut()
            .find(|p| (&p.server, &p.tablespace) == (&r.server, &r.tablespace))
        {
            Some(p) if r.started_at > p.started_at => *p = r,
            Some(_) => {}
            None => places.push(r),
        }
    }
    // a volume: the places of one server on one device (or a place alone
    // where its device is unknown)
    let volume_of = |p: &Copied| -> usize {
        places
            .iter()
            .position(|q| {
                q.server == p.server
                    && match (&q.device, &p.device) {
                        (Some(a), Some(b)) => a == b,
                        _ => q.tablespace == p.tablespace,
                    }
            })
            .expect("a place is among the places")
    };
    let firsts: Vec<usize> = places.iter().map(|p| volume_of(p)).collect();
    let mut vols: Vec<usize> = firsts.clone();
    vols.sort_unstable();
    vols.dedup();
    let mut figs = Vec::new();
    let mut scores = Vec::new();
    for &v in &vols {
        let reps: Vec<Rep<TimestampWithTimeZone>> = rows
            .iter()
            .filter(|r| {
                places
                    .iter()
                    .position(|p| (&p.server, &p.tablespace) == (&r.server, &r.tablespace))
                    .is_some_and(|i| firsts[i] == v)
            })
            .filter_map(|r| {
                Some(Rep {
                    call: String::new(),
                    item: item_of(
                        &r.workload,
                        r.block_size,
                        &r.sync_method,
                        r.workers,
                        r.iodepth,
                    )?,
                    lat_p50_us: r.lat_p50_us,
                    lat_p99_us: r.lat_p99_us,
                    iops: r.iops,
                    mib_s: r.mib_s,
                    at: r.started_at,
                })
            })
            .collect();
        let f = figures(&reps.iter().collect::<Vec<_>>());
        let p = places[v];
        let mut s = f.scores.clone();
        s.volatile = env::is_volatile(
            p.fs_type.as_deref().unwrap_or(""),
            p.device.as_deref().unwrap_or(""),
        );
        s.wal_only = places
            .iter()
            .zip(&firsts)
            .filter(|(_, f)| **f == v)
            .all(|(q, _)| q.tablespace == "pg_wal");
        scores.push(s);
        figs.push(f);
    }
    let names: Vec<String> = vols
        .iter()
        .map(|&v| format!("{}:{}", places[v].server, places[v].tablespace))
        .collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let ranks = rank(&scores, &name_refs, None);
    places
        .iter()
        .zip(&firsts)
        .enumerate()
        .map(|(i, (p, &first))| {
            let k = vols.binary_search(&first).expect("a volume of the places");
            FleetRow {
                server: p.server.clone(),
                tablespace: p.tablespace.clone(),
                fs_type: p.fs_type.clone(),
                device: p.device.clone(),
                figures: figs[k].clone(),
                volatile: scores[k].volatile,
                ranking: ranks[k].clone(),
                same_volume_as: (first != i).then(|| places[first].tablespace.clone()),
            }
        })
        .collect()
}

/// One row of compare_servers(): a figure of server a against the same
/// figure of server b.
pub struct ServerDiff {
    pub tablespace: Option<String>,
    pub workload: String,
    pub metric: String,
    pub a_value: f64,
    pub b_value: f64,
    pub change_pct: Option<f64>,
    pub a_n: i32,
    pub b_n: i32,
    pub p_value: Option<f64>,
    pub significant: Option<bool>,
    pub verdict: String,
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// The one verdict of a figure compared across two servers: Welch's test
/// of every figure of each side younger than max_age, two-sided at ALPHA.
fn diff(
    tablespace: Option<String>,
    workload: String,
    metric: &str,
    higher_is_better: bool,
    a: &[f64],
    b: &[f64],
) -> ServerDiff {
    let (am, bm) = (mean(a), mean(b));
    let test = welch(a, b);
    let significant = test.map(|w| w.p_value < ALPHA);
    let verdict = match significant {
        None => "cannot test: fewer than two figures on a side".to_string(),
        Some(false) => "no significant difference".to_string(),
        Some(true) if (bm > am) == higher_is_better => "b is better".to_string(),
        Some(true) => "b is worse".to_string(),
    };
    ServerDiff {
        tablespace,
        workload,
        metric: metric.to_string(),
        a_value: am,
        b_value: bm,
        change_pct: improvement_pct(am, bm),
        a_n: a.len() as i32,
        b_n: b.len() as i32,
        p_value: test.map(|w| w.p_value),
        significant,
        verdict,
    }
}

/// A pgbench run copied from a fleet server: its script, clients and the
/// figures compared.
struct Run {
    server: String,
    script: String,
    clients: i32,
    tps: f64,
    lat_avg_ms: Option<f64>,
}

fn runs(a: &str, b: &str, max_age: &Interval) -> Vec<Run> {
    as_owner(|| {
        Spi::connect(|c| {
            c.select(
                // single runs that finished valid (an experiment's runs are
                // judged by its own report, layout by layout)
                "SELECT server, script, clients, tps, lat_avg_ms FROM storlab.fleet_bench_runs
                  WHERE server IN ($1, $2) AND experiment_id IS NULL AND NOT warmup AND invalid IS NULL
                    AND finished_at IS NOT NULL AND tps IS NOT NULL AND started_at > pg_catalog.now() - $3
                  ORDER BY script, clients, server, id",
                None,
                &[a.into(), b.into(), max_age.clone().into()],
            )?
            .map(|r| {
                Ok(Run {
                    server: r.get(1)?.unwrap_or_default(),
                    script: r.get(2)?.unwrap_or_default(),
                    clients: r.get(3)?.unwrap_or_default(),
                    tps: r.get(4)?.unwrap_or_default(),
                    lat_avg_ms: r.get(5)?,
                })
            })
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
    })
    .map_err(spi("reading the fleet's bench runs"))
    .or_raise()
}

/// Server a against server b: every standard-suite figure of each
/// tablespace both have (by name: pg_default and pg_wal always), and the
/// tps and mean latency of pgbench runs of the same script and clients;
/// `workloads` keeps suite items (randread, randread_qd32, randwrite, wal,
/// seqread, seqwrite) or scripts by name.
pub fn compare_servers(
    a: &str,
    b: &str,
    workloads: Option<Vec<String>>,
    max_age: Interval,
) -> Vec<ServerDiff> {
    if a == b {
        Error::new(
            SqlState::InvalidParameterValue,
            format!("compare_servers compares two servers: a and b are both \"{a}\""),
        )
        .raise();
    }
    check_servers(&[a.to_string(), b.to_string()]);
    let probes = copied(Some(&[a.to_string(), b.to_string()]), &max_age, true);
    let runs = runs(a, b, &max_age);
    if let Some(w) = &workloads {
        let known: Vec<String> = SUITE
            .iter()
            .map(|i| i.name())
            .chain(runs.iter().map(|r| r.script.clone()))
            .collect();
        let unknown: Vec<&String> = w.iter().filter(|x| !known.contains(x)).collect();
        if !unknown.is_empty() {
            let mut known = known;
            known.dedup();
            Error::new(
                SqlState::InvalidParameterValue,
                format!(
                    "unknown workload {}: compare_servers knows {}",
                    unknown
                        .iter()
                        .map(|s| format!("\"{s}\""))
                        .collect::<Vec<_>>()
                        .join(", "),
                    known.join(", ")
                ),
            )
            .with_hint("The pgbench scripts it knows are those both servers' copied runs used within max_age.")
            .raise();
        }
    }
    let wanted = |name: &str| {
        workloads
            .as_ref()
            .is_none_or(|w| w.iter().any(|x| x == name))
    };
    let mut out = Vec::new();
    let mut tablespaces: Vec<&str> = probes
        .iter()
        .filter(|p| p.server == a)
        .map(|p| p.tablespace.as_str())
        .filter(|t| probes.iter().any(|p| p.server == b && p.tablespace == *t))
        .collect();
    tablespaces.dedup();
    for ts in tablespaces {
        for item in SUITE.iter().filter(|i| wanted(&i.name())) {
            let side = |server: &str| -> Vec<&Copied> {
                probes
                    .iter()
                    .filter(|p| p.server == server && p.tablespace == ts && p.is(item))
                    .collect()
            };
            let (pa, pb) = (side(a), side(b));
            for &metric in Metric::compared_for(item.workload, item.block_size) {
                let va: Vec<f64> = pa.iter().filter_map(|p| p.metric(metric)).collect();
                let vb: Vec<f64> = pb.iter().filter_map(|p| p.metric(metric)).collect();
                if va.is_empty() || vb.is_empty() {
                    continue;
                }
                out.push(diff(
                    Some(ts.to_string()),
                    item.name(),
                    metric.as_str(),
                    metric.higher_is_better(),
                    &va,
                    &vb,
                ));
            }
        }
    }
    // pgbench: runs grouped by script and clients (sorted so in SQL)
    let mut groups: Vec<(&str, i32)> = runs
        .iter()
        .map(|r| (r.script.as_str(), r.clients))
        .collect();
    groups.dedup();
    for (script, clients) in groups.into_iter().filter(|(s, _)| wanted(s)) {
        let side = |server: &str| -> Vec<&Run> {
            runs.iter()
                .filter(|r| r.server == server && r.script == script && r.clients == clients)
                .collect()
        };
        let (ra, rb) = (side(a), side(b));
        if ra.is_empty() || rb.is_empty() {
            continue;
        }
        let workload = format!(
            "pgbench {script}, {clients} client{}",
            if clients == 1 { "" } else { "s" }
        );
        let tps = |rs: &[&Run]| rs.iter().map(|r| r.tps).collect::<Vec<_>>();
        out.push(diff(
            None,
            workload.clone(),
            "tps",
            true,
            &tps(&ra),
            &tps(&rb),
        ));
        let lat = |rs: &[&Run]| rs.iter().filter_map(|r| r.lat_avg_ms).collect::<Vec<_>>();
        let (la, lb) = (lat(&ra), lat(&rb));
        if !la.is_empty() && !lb.is_empty() {
            out.push(diff(None, workload, "lat_avg_ms", false, &la, &lb));
        }
    }
    out
}
