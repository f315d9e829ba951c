//! Planner costs per tablespace and effective_io_concurrency.
//! PostgreSQL's costs are relative to `seq_page_cost` = 1,
//! one 8 kB page read as part of a sequential scan. Its default
//! `random_page_cost` = 4 models a random read 40 times as slow as a
//! sequential one with 90 % of random reads found in a cache (40 x 0.1).
//! Here each is measured instead, from repeated probes (at least
//! [`MIN_REPEATS`] of each figure, the newest ten at most; fewer and the row
//! gives the call that measures them):
//!   t_seq(ts)  = 8192 / mean sequential read throughput (bytes/s), the
//!                time of one page at the standard suite's 128 kB direct reads;
//!   t_rand(ts) = the mean of the 8 kB direct random reads' mean latencies,
//!                one worker;
//!   miss       = 1 - the database's buffer hit ratio (pg_stat_database),
//!                or PostgreSQL's own 0.1 while it has read too few blocks
//!                to tell;
//!   seq_page_cost(ts)    = t_seq(ts) / t_seq(pg_default): pg_default's
//!                          sequential page is the unit the server-wide
//!                          seq_page_cost = 1 stands for;
//!   random_page_cost(ts) = max(seq_page_cost(ts), t_rand(ts) / t_seq(pg_default) x miss):
//!                          a cached random read costs no more than a
//!                          sequential one.
//! Each figure is said with its 95 % interval and its probes.
//!
//! effective_io_concurrency comes from one depth sweep, the newest
//! `profile()` call that measured one reader's 8 kB random reads at several
//! queue depths (or, without one, at several workers), never from points of
//! different calls: the smallest depth whose IOPS is not significantly
//! below four fifths of the best depth's (Welch, one-sided at
//! [`stats::ALPHA`], on each depth's repetitions), so that one noisy probe
//! neither crowns a depth nor hides a knee. A sweep with fewer than
//! [`MIN_REPEATS`] probes at a depth decides nothing: the row gives the
//! call that measures one with repetitions.

use serde_json::json;

use super::figures::{ByTablespace, ConcurrencyBasis, Figures, Probe, Sweep, SweepPoint};
use super::placement::MIN_REPEATS;
use super::read_path::{choose_eic, eic_said};
use super::Advice;
use crate::sql_text::{ident, literal};
use crate::stats::{self, estimate, Estimate, Sides};

/// Costs proposed for one tablespace.
#[derive(Debug, Clone, PartialEq)]
pub struct Costs {
    pub seq_page_cost: f64,
    pub random_page_cost: f64,
}

/// PostgreSQL's own assumption of the share of random reads that miss
/// every cache (its random_page_cost = 4 is 40 x 0.1).
pub const DEFAULT_MISS: f64 = 0.1;
/// Below this many block reads and hits, a hit ratio says nothing about a
/// workload (a new database's are its catalog lookups).
pub const MIN_BLOCKS_FOR_RATIO: i64 = 1_000_000;

/// The time of one 8 kB page read sequentially, in microseconds.
pub fn seq_page_us(seqread_mib_s: f64) -> Option<f64> {
    (seqread_mib_s > 0.0).then(|| 8192.0 / (seqread_mib_s * 1_048_576.0) * 1e6)
}

/// The share of reads that miss shared buffers, or the default while the
/// database has not read enough to tell.
pub fn miss_ratio(blks_read: i64, blks_hit: i64) -> (f64, bool) {
    let total = blks_read + blks_hit;
    if total < MIN_BLOCKS_FOR_RATIO {
        return (DEFAULT_MISS, false);
    }
    (blks_read as f64 / total as f64, true)
}

/// A cost as ALTER TABLESPACE should get it: two decimals, at least 0.01.
fn rounded(x: f64) -> f64 {
    ((x * 100.0).round() / 100.0).max(0.01)
}

pub fn costs(rand_mean_us: f64, seq_us: f64, unit_seq_us: f64, miss: f64) -> Option<Costs> {
    if !(rand_mean_us > 0.0 && seq_us > 0.0 && unit_seq_us > 0.0) {
        return None;
    }
    let seq_page_cost = rounded(seq_us / unit_seq_us);
    let random_page_cost =
        rounded((rand_mean_us / unit_seq_us * miss).max(seq_us / unit_seq_us)).max(seq_page_cost);
    Some(Costs {
        seq_page_cost,
        random_page_cost,
    })
}

impl ConcurrencyBasis {
    fn noun(self) -> &'static str {
        match self {
            ConcurrencyBasis::QueueDepth => "queue depth",
            ConcurrencyBasis::Workers => "number of concurrent readers",
        }
    }

    /// The evidence's name of the sweep's axis.
    pub fn key(self) -> &'static str {
        match self {
            ConcurrencyBasis::QueueDepth => "iodepth",
            ConcurrencyBasis::Workers => "workers",
        }
    }
}

/// The widest 95 % interval (± % of the mean) a costs figure may have: a
/// cost from a figure known only to ±50 % could be off by half, and
/// ALTER TABLESPACE would carry that into every plan.
pub const MAX_COST_CI_PCT: f64 = 25.0;

/// The share of the best depth's IOPS a depth must reach (not be
/// significantly below): the knee, where more reads in flight stop paying.
pub const KNEE_SHARE: f64 = 0.8;

/// effective_io_concurrency read from one sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct EicPick {
    pub value: i32,
    /// the depth (or readers) with the highest mean IOPS
    pub best: i32,
    /// each point's readers and IOPS estimate, in ascending readers
    pub points: Vec<(i32, Estimate)>,
}

/// Why a sweep decides nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EicShort {
    /// no one-reader point, or no other point to compare it with
    TooFewPoints,
    /// a point has fewer than MIN_REPEATS probes (the fewest)
    TooFewRepetitions(usize),
}

/// The smallest number of reads in flight whose IOPS is not significantly
/// below four fifths of the best point's: Welch's one-sided test of the
/// point's repetitions against the best's scaled by [`KNEE_SHARE`] (a
/// scaled sample has the scaled mean and spread, so the test is the
/// ordinary one). The best point always qualifies.
pub fn eic_from_sweep(points: &[SweepPoint]) -> Result<EicPick, EicShort> {
    let mut pts: Vec<&SweepPoint> = points.iter().filter(|p| p.readers > 0).collect();
    pts.sort_by_key(|p| p.readers);
    pts.dedup_by_key(|p| p.readers);
    if pts.len() < 2 || pts[0].readers != 1 {
        return Err(EicShort::TooFewPoints);
    }
    let fewest = pts
        .iter()
        .map(|p| stats::usable(&p.iops).len())
        .min()
        .unwrap_or(0);
    if fewest < MIN_REPEATS {
        return Err(EicShort::TooFewRepetitions(fewest));
    }
    let estimates: Vec<(i32, Estimate)> = pts
        .iter()
        .filter_map(|p| estimate(&p.iops).map(|e| (p.readers, e)))
        .collect();
    let (best_at, _) = estimates
        .iter()
        .enumerate()
        .max_by(|a, b| a.1 .1.mean.total_cmp(&b.1 .1.mean))
        .expect("two points at least");
    let knee: Vec<f64> = stats::usable(&pts[best_at].iops)
        .iter()
        .map(|x| x * KNEE_SHARE)
        .collect();
    let value = pts
        .iter()
        .enumerate()
        .find(|(i, p)| {
            *i == best_at
                || !stats::welch(&stats::usable(&p.iops), &knee)
                    .is_some_and(|w| w.significant(stats::ALPHA, Sides::Less))
        })
        .map(|(_, p)| p.readers.min(1000))
        .expect("the best point qualifies");
    Ok(EicPick {
        value,
        best: pts[best_at].readers,
        points: estimates,
    })
}

/// The call that measures a depth sweep with repetitions.
pub fn sweep_call(ts: &str) -> String {
    format!(
        "SELECT * FROM storlab.profile({}, iodepths => '{{1,2,4,8,16,32,64}}', repetitions => {MIN_REPEATS})",
        literal(ts)
    )
}

/// The call that stores MIN_REPEATS more probes of each costs figure of
/// `tablespaces`: 8 kB random reads and 128 kB sequential reads, the
/// standard suite's (each repetition's call names its repetition, so that
/// the planner cannot evaluate it once for all of them).
pub fn costs_call(tablespaces: &[&str]) -> String {
    let names: Vec<String> = tablespaces.iter().map(|t| literal(t)).collect();
    format!(
        "SELECT p.* FROM pg_catalog.unnest(ARRAY[{}]::name[]) AS t, (VALUES ('randread', 8192), ('seqread', 131072)) AS w(workload, block_size), pg_catalog.generate_series(1, {MIN_REPEATS}) AS r, LATERAL storlab.probe(t, w.workload, block_size => w.block_size, duration => '1 second', label => pg_catalog.concat('repetition ', r)) AS p",
        names.join(", ")
    )
}

/// A figure of a tablespace from its repeated probes: the estimate and the
/// probes' ids; None with fewer than MIN_REPEATS usable probes.
struct Repeated {
    est: Estimate,
    ids: Vec<i64>,
}

fn repeated(f: &Figures, workload: &str, value: fn(&Probe) -> f64) -> Result<Repeated, usize> {
    let probes: Vec<&Probe> = f
        .repeats
        .get(workload)
        .map(|v| {
            v.iter()
                .filter(|p| value(p) > 0.0 && value(p).is_finite())
                .collect()
        })
        .unwrap_or_default();
    let values: Vec<f64> = probes.iter().map(|p| value(p)).collect();
    match estimate(&values) {
        Some(est) if est.n >= MIN_REPEATS => Ok(Repeated {
            est,
            ids: probes.iter().map(|p| p.id).collect(),
        }),
        _ => Err(probes.len()),
    }
}

/// "±2.1 %, 3 probes"
fn precision_said(e: &Estimate) -> String {
    match e.ci95_pct {
        Some(p) => format!("±{p:.1} %, {} probes", e.n),
        None => format!("{} probes", e.n),
    }
}

fn figure_json(r: &Repeated, unit: &str) -> serde_json::Value {
    json!({ "mean": r.est.mean, "unit": unit, "ci95_pct": r.est.ci95_pct, "n": r.est.n, "probes": r.ids })
}

/// The evidence of a costs row's figures: each with its probes and
/// interval, and every probe id together.
fn figures_evidence(rand: &Repeated, seq: &Repeated, unit: &Repeated) -> serde_json::Value {
    json!({
        "probes": rand.ids.iter().chain(&seq.ids).collect::<Vec<_>>(),
        "randread_mean_us": figure_json(rand, "us"),
        "seqread_mib_s": figure_json(seq, "MiB/s"),
        "unit_seqread_mib_s": figure_json(unit, "MiB/s"),
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The costs rows: one per tablespace with random and sequential reads
/// measured (pg_wal aside), priced in pg_default's sequential page; or
/// what to measure first.
/// `io_method`: the server's (PostgreSQL 18), whose read-path probes decide
/// effective_io_concurrency where they were run.
pub fn advise(
    figures: &ByTablespace,
    blks_read: i64,
    blks_hit: i64,
    io_method: Option<&str>,
) -> Vec<Advice> {
    let seqread = |f: &Figures| repeated(f, "seqread", |p| p.mib_s);
    let randread = |f: &Figures| repeated(f, "randread", |p| p.mean_us);
    let unit_reads = match figures.get("pg_default").map(seqread) {
        Some(Ok(r)) => r,
        Some(Err(n)) if n > 0 => {
            return vec![Advice::new(
                "costs",
                None,
                format!(
                    "nothing to price yet: every cost is relative to pg_default's sequential page, and its sequential reads have {n} probe{} where {MIN_REPEATS} are needed; measure them (the statement), then ask again",
                    plural(n)
                ),
                Some(costs_call(&["pg_default"])),
                None,
                json!({ "seqread_probes": n }),
            )];
        }
        _ => {
            return vec![Advice::measure_first(
                "costs",
                &format!("pg_default's sequential reads ({MIN_REPEATS} probes), the unit every cost is relative to"),
                &costs_call(&["pg_default"]),
            )]
        }
    };
    let unit = seq_page_us(unit_reads.est.mean).expect("a positive mean");
    let (miss, measured) = miss_ratio(blks_read, blks_hit);
    let miss_said = if measured {
        format!(
            "{:.1} % of this database's block reads missing shared buffers (pg_stat_database)",
            miss * 100.0
        )
    } else {
        format!("PostgreSQL's own assumption that {:.0} % of random reads miss every cache (this database has read too little to tell)", miss * 100.0)
    };
    let mut rows = Vec::new();
    let mut short: Vec<(&str, usize, usize)> = Vec::new();
    for (ts, f) in figures.iter().filter(|(ts, _)| *ts != "pg_wal") {
        let (rand, seq) = match (randread(f), seqread(f)) {
            (Ok(r), Ok(s)) => (r, s),
            (r, s) => {
                let count = |x: &Result<Repeated, usize>| match x {
                    Ok(r) => r.est.n,
                    Err(n) => *n,
                };
                if count(&r) + count(&s) > 0 {
                    short.push((ts.as_str(), count(&r), count(&s)));
                }
                continue;
            }
        };
        let mut figures_used = vec![
            ("random reads", &rand, ts.as_str()),
            ("sequential reads", &seq, ts.as_str()),
        ];
        // pg_default's sequential reads are the unit (said once on its own row)
        if ts != "pg_default" {
            figures_used.push(("sequential reads", &unit_reads, "pg_default"));
        }
        let wide: Vec<String> = figures_used
            .iter()
            .filter(|(_, r, _)| r.est.ci95_pct.is_none_or(|p| p > MAX_COST_CI_PCT))
            .map(|(what, r, on)| format!("{what} of {on} {}", precision_said(&r.est)))
            .collect();
        if !wide.is_empty() {
            let mut again = vec![ts.as_str()];
            if ts != "pg_default" && unit_reads.est.ci95_pct.is_none_or(|p| p > MAX_COST_CI_PCT) {
                again.push("pg_default");
            }
            // what its sweep says is said all the same (the setting does
            // not depend on the costs' figures)
            let eic = f
                .sweep
                .as_ref()
                .and_then(|s| eic_from_sweep(&s.points).ok().map(|p| (s, p)))
                .map(|(s, p)| format!("; {}", pick_said(s, &p)))
                .unwrap_or_default();
            rows.push(Advice::new(
                "costs",
                Some(ts),
                format!(
                    "cannot price {ts} yet: a cost needs its figures within ±{MAX_COST_CI_PCT:.0} %, and {} (a load beside the probes spreads them); measure again when the server is quieter (the statement), then ask again{eic}",
                    wide.join(", ")
                ),
                Some(costs_call(&again)),
                None,
                {
                    let mut e = figures_evidence(&rand, &seq, &unit_reads);
                    e["max_ci95_pct"] = json!(MAX_COST_CI_PCT);
                    e
                },
            ));
            continue;
        }
        let seq_us = seq_page_us(seq.est.mean).expect("a positive mean");
        let Some(Costs {
            seq_page_cost,
            random_page_cost,
        }) = costs(rand.est.mean, seq_us, unit, miss)
        else {
            continue;
        };
        let mut set =
            format!("random_page_cost = {random_page_cost}, seq_page_cost = {seq_page_cost}");
        let mut said = format!(
            "plans priced by this storage's measured costs: 8 kB random reads take {:.1} us on average ({}), a sequential page {:.2} us ({:.0} MiB/s, {}; pg_default's: {:.2} us, {}); with {miss_said}, a random page costs {random_page_cost} and a sequential one {seq_page_cost} of pg_default's sequential page",
            rand.est.mean,
            precision_said(&rand.est),
            seq_us,
            seq.est.mean,
            precision_said(&seq.est),
            unit,
            precision_said(&unit_reads.est),
        );
        let read_path = io_method.and_then(|m| choose_eic(&f.read_path, m).map(|c| (c, m)));
        let sweep = f.sweep.as_ref().map(|s| (s, eic_from_sweep(&s.points)));
        match (&read_path, &sweep) {
            (Some((c, m)), _) => {
                set.push_str(&format!(", effective_io_concurrency = {}", c.eic));
                said.push_str("; ");
                let raw = sweep
                    .as_ref()
                    .and_then(|(_, r)| r.as_ref().ok())
                    .map(|p| p.value);
                said.push_str(&eic_said(c, m, raw));
            }
            (None, Some((s, Ok(pick)))) => {
                set.push_str(&format!(", effective_io_concurrency = {}", pick.value));
                said.push_str(&format!("; {}", pick_said(s, pick)));
            }
            (None, Some((s, Err(EicShort::TooFewRepetitions(n))))) => said.push_str(&format!(
                "; effective_io_concurrency is left as it is: the newest sweep (profile() of {}) has {n} probe{} at a {} where telling them apart takes {MIN_REPEATS}; {} measures one",
                s.measured_at,
                plural(*n),
                s.basis.noun(),
                sweep_call(ts)
            )),
            (None, _) => said.push_str(&format!(
                "; for effective_io_concurrency, measure reads at several queue depths first: {}",
                sweep_call(ts)
            )),
        }
        let pick = sweep.as_ref().and_then(|(_, r)| r.as_ref().ok());
        rows.push(Advice::new(
            "costs",
            Some(ts),
            said,
            Some(format!("ALTER TABLESPACE {} SET ({set})", ident(ts))),
            // the gain is in the plans chosen: no figure to promise
            None,
            {
                let mut e = figures_evidence(&rand, &seq, &unit_reads);
                let more = json!({
                "seq_page_us": seq_us, "unit_seq_page_us": unit,
                "miss_ratio": miss, "miss_ratio_measured": measured,
                "sweep": sweep.as_ref().map(|(s, _)| json!({
                    "call": s.call, "measured_at": s.measured_at, "by": s.basis.key(),
                    "effective_io_concurrency": pick.map(|p| p.value),
                    "points": s.points.iter().map(|p| {
                        let e = estimate(&p.iops);
                        json!({ s.basis.key(): p.readers, "iops": e.map(|e| e.mean),
                                "ci95_pct": e.and_then(|e| e.ci95_pct), "probes": p.ids })
                    }).collect::<Vec<_>>(),
                })),
                "read_path": read_path.as_ref().map(|(c, m)| json!({
                    "io_method": m, "effective_io_concurrency": c.eic, "mib_s_by_value": c.curve,
                    "probes": c.ids,
                })),
                });
                for (k, v) in more.as_object().expect("an object") {
                    e[k] = v.clone();
                }
                e
            },
        ));
    }
    // tablespaces with some figures but too few to price: the call that measures them
    if !short.is_empty() {
        let names: Vec<&str> = short.iter().map(|s| s.0).collect();
        let counts: Vec<String> = short
            .iter()
            .map(|(ts, r, s)| format!("{ts} ({r} random, {s} sequential)"))
            .collect();
        rows.push(Advice::new(
            "costs",
            None,
            format!(
                "cannot price {} yet: a cost needs {MIN_REPEATS} probes of random reads and of sequential reads, and there are fewer: {}; measure them (the statement), then ask again",
                names.join(", "),
                counts.join(", ")
            ),
            Some(costs_call(&names)),
            None,
            json!({ "tablespaces": names }),
        ));
    }
    if rows.is_empty() {
        rows.push(Advice::new(
            "costs",
            None,
            format!("nothing measured yet: random and sequential reads of any tablespace ({MIN_REPEATS} probes of each); measure first"),
            Some(costs_call(&["pg_default"])),
            None,
            json!({}),
        ));
    }
    rows
}

/// How a sweep's pick reads: the value, the best point, each point's IOPS.
fn pick_said(s: &Sweep, pick: &EicPick) -> String {
    let points: Vec<String> = pick
        .points
        .iter()
        .map(|(r, e)| match e.ci95_pct {
            Some(p) => format!("{r}: {:.0} ±{p:.1} %", e.mean),
            None => format!("{r}: {:.0}", e.mean),
        })
        .collect();
    let fewest = pick.points.iter().map(|p| p.1.n).min().unwrap_or(0);
    let lead = if pick.value == pick.best {
        format!(
            "effective_io_concurrency = {}: no smaller {} comes within four fifths of its read IOPS",
            pick.value,
            s.basis.noun()
        )
    } else {
        format!(
            "effective_io_concurrency = {}: the smallest {} whose read IOPS is not significantly below four fifths of the best ({})",
            pick.value,
            s.basis.noun(),
            pick.best
        )
    };
    format!(
        "{lead}, in one sweep (profile() of {}, {} probes or more at each; IOPS by {}: {})",
        s.measured_at,
        fewest,
        s.basis.noun(),
        points.join(", ")
    )
}

#[cfg(test)]
mod tests;
