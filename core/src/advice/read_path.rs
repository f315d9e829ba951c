//! PostgreSQL 18's asynchronous I/O: effective_io_concurrency per
//! tablespace from PostgreSQL's own read path (`storlab.probe_read_path()`),
//! and whether the io_method in use leaves throughput on the table.
//!
//! effective_io_concurrency: the smallest value whose bitmap heap scans are
//! within a tenth of the fastest value's, or not significantly slower
//! (Welch, one-sided, p < 0.05, where there are repetitions to test): a
//! higher value costs I/O slots and memory for nothing when it buys no
//! throughput. Bitmap heap scans, since their scattered blocks are where the
//! prefetch distance the setting bounds matters; sequential scans are
//! stored alongside and reported, not decided from.
//!
//! io_method cannot change without a restart, so one server measures one
//! method at a time: the advice compares the probes stored under each
//! method (before and after a restart) and proposes another method only
//! where its best throughput is significantly higher, by more than a tenth.

use std::collections::BTreeMap;

use serde_json::json;

use super::{Advice, ByTablespace};
use crate::report::checks::median;
use crate::sql_text::{ident, literal};
use crate::stats::{welch, Sides};

/// The significance every read-path decision is made at.
pub const ALPHA: f64 = 0.05;
/// A difference smaller than this share of the best is not worth a setting.
pub const WORTH: f64 = 0.10;

/// A value is decided on at least this many scans of it: one scan on this
/// kind of machine can be three times another.
pub const MIN_SCANS: usize = 2;

/// The repetitions of one (scan, io_method, effective_io_concurrency, table
/// size) on one tablespace: MiB/s of each, with the probes' ids.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadPathPoint {
    pub scan: String,
    pub io_method: String,
    pub eic: i32,
    /// the scratch table's size: scans of different sizes are not pooled
    pub table_bytes: i64,
    pub mib_s: Vec<f64>,
    pub ids: Vec<i64>,
}

impl ReadPathPoint {
    pub fn median(&self) -> f64 {
        median(&self.mib_s).unwrap_or(0.0)
    }
}

/// The server's asynchronous I/O settings (PostgreSQL 18 and later).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AioSettings {
    pub io_method: String,
    pub io_workers: Option<i32>,
    pub io_combine_limit: Option<String>,
}

/// The value chosen from one tablespace's curve of one scan and method.
#[derive(Debug, Clone, PartialEq)]
pub struct EicChoice {
    pub eic: i32,
    pub mib_s: f64,
    pub best_eic: i32,
    pub best_mib_s: f64,
    /// (eic, median MiB/s), by eic
    pub curve: Vec<(i32, f64)>,
    pub ids: Vec<i64>,
    /// the fewest scans of any value, and the table's size
    pub scans: usize,
    pub table_bytes: i64,
}

/// The points of one scan under one method with MIN_SCANS scans at least,
/// by eic, of one table size: the newest one measured (scans of a 1 MB
/// table and of a 256 MB one are different measurements).
fn curve<'a>(points: &'a [ReadPathPoint], scan: &str, method: &str) -> Vec<&'a ReadPathPoint> {
    let of_method = || {
        points
            .iter()
            .filter(move |p| p.scan == scan && p.io_method == method && p.mib_s.len() >= MIN_SCANS)
    };
    let Some(size) = of_method()
        .max_by_key(|p| p.ids.iter().max().copied().unwrap_or(0))
        .map(|p| p.table_bytes)
    else {
        return Vec::new();
    };
    let mut c: Vec<&ReadPathPoint> = of_method().filter(|p| p.table_bytes == size).collect();
    c.sort_by_key(|p| p.eic);
    c
}

/// Whether `a` is significantly slower than `b` (one-sided Welch); None
/// without two repetitions a side.
fn slower(a: &[f64], b: &[f64]) -> Option<bool> {
    welch(a, b).map(|w| w.significant(ALPHA, Sides::Less))
}

/// effective_io_concurrency from one method's bitmap heap scans: None
/// without two values measured (MIN_SCANS scans each, one table size).
/// 0 (no prefetching) is measured for comparison, never proposed.
pub fn choose_eic(points: &[ReadPathPoint], method: &str) -> Option<EicChoice> {
    let c = curve(points, "bitmapscan", method);
    if c.iter().filter(|p| p.eic > 0).count() < 2 {
        return None;
    }
    let best = c
        .iter()
        .max_by(|a, b| a.median().total_cmp(&b.median()))
        .expect("two points");
    let chosen = c
        .iter()
        .filter(|p| p.eic > 0)
        .find(|p| {
            p.median() >= (1.0 - WORTH) * best.median()
                || slower(&p.mib_s, &best.mib_s) == Some(false)
        })
        .expect("the best is within a tenth of itself");
    Some(EicChoice {
        eic: chosen.eic,
        mib_s: chosen.median(),
        best_eic: best.eic,
        best_mib_s: best.median(),
        curve: c.iter().map(|p| (p.eic, p.median())).collect(),
        ids: c.iter().flat_map(|p| p.ids.iter().copied()).collect(),
        scans: c.iter().map(|p| p.mib_s.len()).min().unwrap_or(0),
        table_bytes: best.table_bytes,
    })
}

/// The sentence and evidence costs::advise adds where the read path was
/// measured under the io_method in use: what it chose, and, where the raw
/// queue-depth curve says otherwise, that the read path's value is the one
/// used and why.
pub fn eic_said(choice: &EicChoice, method: &str, raw: Option<i32>) -> String {
    let points: Vec<String> = choice
        .curve
        .iter()
        .map(|(e, m)| format!("{m:.0} MiB/s at {e}"))
        .collect();
    let mut s = format!(
        "effective_io_concurrency = {} from PostgreSQL's own read path: cold bitmap heap scans of a {} MB table under io_method = {method} read {} (medians of {} scans or more each)",
        choice.eic,
        choice.table_bytes >> 20,
        points.join(", "),
        choice.scans
    );
    if choice.eic != choice.best_eic {
        s.push_str(&format!(
            "; {} is within a tenth of the fastest ({}) or not significantly slower",
            choice.eic, choice.best_eic
        ));
    }
    match raw {
        Some(r) if r != choice.eic => s.push_str(&format!(
            "; the storage's own sweep (profile()) says {r}: the read path's value is used, since it includes what PostgreSQL adds to each read (read streams, combined reads, {})",
            if method == "worker" { "I/O workers" } else { "the kernel's queue" }
        )),
        _ => {}
    }
    s
}

/// The io_method row: a switch only where another method's best stored
/// throughput is significantly higher, by more than a tenth, on some
/// tablespace and significantly lower on none; else what is known and
/// what to measure.
pub fn advise_io_method(figures: &ByTablespace, aio: &AioSettings) -> Advice {
    let current = aio.io_method.as_str();
    // per tablespace and method: the repetitions at the method's best value
    // per tablespace and table size (methods are compared on the same
    // table), the repetitions of each method's best value
    let mut best: BTreeMap<(&str, i64), BTreeMap<&str, &ReadPathPoint>> = BTreeMap::new();
    for (ts, f) in figures {
        for p in &f.read_path {
            if p.scan != "bitmapscan" || p.mib_s.len() < MIN_SCANS {
                continue;
            }
            let slot = best.entry((ts.as_str(), p.table_bytes)).or_default();
            let e = slot.entry(p.io_method.as_str()).or_insert(p);
            if p.median() > e.median() {
                *e = p;
            }
        }
    }
    if best.is_empty() {
        let evidence = json!({ "io_method": current, "io_workers": aio.io_workers, "io_combine_limit": aio.io_combine_limit });
        // scanned, but no value twice: say so, and ask for repetitions
        let probed: Vec<&str> = figures
            .iter()
            .filter(|(_, f)| {
                f.read_path
                    .iter()
                    .any(|p| p.scan == "bitmapscan" && !p.mib_s.is_empty())
            })
            .map(|(ts, _)| ts.as_str())
            .collect();
        if let Some(ts) = probed.first() {
            return Advice::new(
                "io_method",
                None,
                format!(
                    "cannot tell yet: PostgreSQL's read path was scanned fewer than {MIN_SCANS} times at each value ({}); one scan on this kind of storage can be three times another, so measure with repetitions",
                    probed.join(", ")
                ),
                Some(format!("SELECT * FROM storlab.probe_read_path({}, repetitions => 3)", literal(ts))),
                None,
                evidence,
            );
        }
        return Advice::new(
            "io_method",
            None,
            format!("nothing measured yet: PostgreSQL's own read path under io_method = {current}; measure first"),
            Some("SELECT * FROM storlab.probe_read_path('pg_default')".to_string()),
            None,
            evidence,
        );
    }
    let mut gains: BTreeMap<&str, Vec<(String, f64, f64)>> = BTreeMap::new();
    let mut losses: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut compared = Vec::new();
    let mut methods_seen: Vec<&str> = Vec::new();
    for ((ts, _), by_method) in &best {
        for m in by_method.keys() {
            if !methods_seen.contains(m) {
                methods_seen.push(m);
            }
        }
        let Some(cur) = by_method.get(current) else {
            continue;
        };
        for (m, other) in by_method.iter().filter(|(m, _)| **m != current) {
            let w = welch(&other.mib_s, &cur.mib_s);
            let p = w.map(|w| w.p(Sides::Greater));
            let change = (other.median() / cur.median() - 1.0) * 100.0;
            compared.push(json!({
                "tablespace": ts, "io_method": m, "eic": other.eic, "mib_s": other.median(),
                "current_eic": cur.eic, "current_mib_s": cur.median(),
                "change_pct": change, "p_value": p,
                "probes": other.ids.iter().chain(cur.ids.iter()).collect::<Vec<_>>(),
            }));
            if change > WORTH * 100.0 && p.is_some_and(|p| p < ALPHA) {
                gains
                    .entry(m)
                    .or_default()
                    .push((ts.to_string(), change, p.unwrap_or(1.0)));
            } else if welch(&other.mib_s, &cur.mib_s)
                .is_some_and(|w| w.significant(ALPHA, Sides::Less))
            {
                losses.entry(m).or_default().push(ts.to_string());
            }
        }
    }
    // what each method's best value read, with the probes, compared or not
    let measured: Vec<serde_json::Value> = best
        .iter()
        .flat_map(|((ts, size), by_method)| {
            by_method.iter().map(move |(m, p)| {
                json!({ "tablespace": ts, "table_bytes": size, "io_method": m, "eic": p.eic,
                        "mib_s": p.median(), "scans": p.mib_s.len(), "probes": p.ids })
            })
        })
        .collect();
    let evidence = json!({
        "io_method": current, "io_workers": aio.io_workers, "io_combine_limit": aio.io_combine_limit,
        "measured": measured, "compared": compared,
    });
    let winner = gains
        .iter()
        .filter(|(m, _)| !losses.contains_key(*m))
        .max_by(|a, b| {
            let top = |v: &Vec<(String, f64, f64)>| v.iter().map(|g| g.1).fold(0.0, f64::max);
            top(a.1).total_cmp(&top(b.1))
        });
    if let Some((m, g)) = winner {
        let said: Vec<String> = g
            .iter()
            .map(|(ts, c, p)| format!("{ts} {c:+.0} % (p {p:.4})"))
            .collect();
        return Advice::new(
            "io_method",
            None,
            format!(
                "io_method = {current} leaves read throughput on the table: at its best effective_io_concurrency, io_method = {m} read faster in cold bitmap heap scans on {}; io_method takes effect at a restart, so this is proposed, never applied (ALTER SYSTEM runs outside a transaction block; then restart)",
                said.join(", ")
            ),
            Some(format!("ALTER SYSTEM SET io_method = {}", literal(m))),
            Some(format!("{:+.0} %", g.iter().map(|x| x.1).fold(0.0, f64::max))),
            evidence,
        );
    }
    // a method faster on some tablespaces and slower on others: no switch
    if let Some((m, g)) = gains.iter().next() {
        let said: Vec<String> = g
            .iter()
            .map(|(ts, c, p)| format!("{ts} ({c:+.0} %, p {p:.4})"))
            .collect();
        return Advice::new(
            "io_method",
            None,
            format!(
                "no io_method reads faster everywhere: io_method = {m} read cold bitmap heap scans significantly faster than {current} on {} but significantly slower on {}; which to run depends on the tablespaces whose reads matter most, so no change is proposed",
                said.join(", "),
                losses.get(m).map(|l| l.join(", ")).unwrap_or_default()
            ),
            None,
            None,
            evidence,
        );
    }
    let others: Vec<&str> = ["sync", "worker", "io_uring"]
        .into_iter()
        .filter(|m| !methods_seen.contains(m))
        .collect();
    let advice = if methods_seen.len() > 1 && methods_seen.contains(&current) {
        format!(
            "io_method = {current} leaves no measurable read throughput on the table: no other method measured ({}) read significantly faster by more than a tenth",
            methods_seen.iter().filter(|m| **m != current).copied().collect::<Vec<_>>().join(", ")
        )
    } else {
        format!(
            "cannot tell yet: PostgreSQL's read path was measured only under io_method = {}; restart with io_method = {} and run storlab.probe_read_path() again on the same tablespaces: recommend() compares the stored figures",
            methods_seen.join(", "),
            others.join(" or ")
        )
    };
    Advice::new("io_method", None, advice, None, None, evidence)
}

/// ALTER TABLESPACE for one tablespace's effective_io_concurrency.
pub fn eic_statement(ts: &str, eic: i32) -> String {
    format!(
        "ALTER TABLESPACE {} SET (effective_io_concurrency = {eic})",
        ident(ts)
    )
}

#[cfg(test)]
mod tests {
    use super::super::Figures;
    use super::*;

    fn pt(scan: &str, m: &str, eic: i32, mib: &[f64]) -> ReadPathPoint {
        ReadPathPoint {
            scan: scan.into(),
            io_method: m.into(),
            eic,
            table_bytes: 64 << 20,
            mib_s: mib.to_vec(),
            ids: vec![eic as i64],
        }
    }

    #[test]
    fn smallest_value_within_a_tenth_of_the_best() {
        let pts = [
            pt("bitmapscan", "worker", 1, &[20.0, 21.0, 19.0]),
            pt("bitmapscan", "worker", 16, &[95.0, 96.0, 94.0]),
            pt("bitmapscan", "worker", 64, &[100.0, 101.0, 99.0]),
            pt("seqscan", "worker", 1, &[500.0]),
        ];
        let c = choose_eic(&pts, "worker").unwrap();
        assert_eq!((c.eic, c.best_eic), (16, 64));
        assert_eq!(c.curve.len(), 3);
        assert!(choose_eic(&pts, "io_uring").is_none());
    }

    #[test]
    fn a_noisy_difference_buys_nothing() {
        // 64 looks 30 % faster, but its repetitions spread over everything
        let pts = [
            pt("bitmapscan", "worker", 1, &[70.0, 72.0, 71.0]),
            pt("bitmapscan", "worker", 64, &[40.0, 180.0, 60.0]),
        ];
        assert_eq!(choose_eic(&pts, "worker").unwrap().eic, 1);
        // the same gap with tight repetitions is real
        let pts = [
            pt("bitmapscan", "worker", 1, &[70.0, 72.0, 71.0]),
            pt("bitmapscan", "worker", 64, &[92.0, 93.0, 94.0]),
        ];
        assert_eq!(choose_eic(&pts, "worker").unwrap().eic, 64);
    }

    #[test]
    fn one_scan_another_table_size_and_zero_decide_nothing() {
        let mut pts = vec![
            pt("bitmapscan", "worker", 1, &[140.0, 138.0, 139.0]),
            pt("bitmapscan", "worker", 16, &[1500.0, 1520.0, 1510.0]),
            pt("bitmapscan", "worker", 64, &[1870.0, 1880.0, 1860.0]),
        ];
        // a single scan at 0, newer, of a 1 MB table: not a measurement to decide on
        let mut zero = pt("bitmapscan", "worker", 0, &[1704.0]);
        zero.table_bytes = 1 << 20;
        zero.ids = vec![99];
        pts.push(zero);
        assert_eq!(choose_eic(&pts, "worker").unwrap().eic, 64);
        // repeated at 0, on the same table size: measured, still never proposed
        pts.push(pt("bitmapscan", "worker", 0, &[1860.0, 1870.0, 1865.0]));
        assert_eq!(choose_eic(&pts, "worker").unwrap().eic, 64);
        // the newest table size decides which scans are pooled
        let mut small: Vec<ReadPathPoint> = [(1, 10.0), (16, 11.0)]
            .iter()
            .map(|(e, m)| {
                let mut p = pt("bitmapscan", "worker", *e, &[*m, *m]);
                p.table_bytes = 8 << 20;
                p.ids = vec![200 + *e as i64];
                p
            })
            .collect();
        pts.append(&mut small);
        let c = choose_eic(&pts, "worker").unwrap();
        assert_eq!((c.eic, c.table_bytes), (1, 8 << 20));
        // single scans only: nothing to decide
        let once = [
            pt("bitmapscan", "worker", 1, &[10.0]),
            pt("bitmapscan", "worker", 16, &[50.0]),
        ];
        assert!(choose_eic(&once, "worker").is_none());
    }

    #[test]
    fn the_raw_curve_is_named_where_it_differs() {
        let c = EicChoice {
            eic: 16,
            mib_s: 95.0,
            best_eic: 64,
            best_mib_s: 100.0,
            curve: vec![(1, 20.0), (16, 95.0), (64, 100.0)],
            ids: vec![],
            scans: 3,
            table_bytes: 64 << 20,
        };
        let s = eic_said(&c, "worker", Some(32));
        assert!(s.contains("own sweep (profile()) says 32"), "{s}");
        assert!(s.contains("I/O workers"), "{s}");
        assert!(!eic_said(&c, "worker", Some(16)).contains("raw"));
    }

    fn figures(points: Vec<ReadPathPoint>) -> ByTablespace {
        let mut f = ByTablespace::new();
        f.insert(
            "lab_disk".into(),
            Figures {
                read_path: points,
                ..Default::default()
            },
        );
        f
    }

    fn aio(m: &str) -> AioSettings {
        AioSettings {
            io_method: m.into(),
            io_workers: Some(3),
            io_combine_limit: Some("128kB".into()),
        }
    }

    #[test]
    fn another_method_only_when_significantly_faster() {
        let f = figures(vec![
            pt("bitmapscan", "worker", 16, &[60.0, 61.0, 59.0]),
            pt("bitmapscan", "io_uring", 16, &[90.0, 91.0, 89.0]),
        ]);
        let a = advise_io_method(&f, &aio("worker"));
        assert_eq!(
            a.statement.as_deref(),
            Some("ALTER SYSTEM SET io_method = 'io_uring'")
        );
        assert!(a.advice.contains("restart"), "{}", a.advice);
        // the other way round, nothing to gain
        let a = advise_io_method(&f, &aio("io_uring"));
        assert_eq!(a.statement, None);
        assert!(a.advice.contains("no measurable"), "{}", a.advice);
    }

    #[test]
    fn faster_on_one_tablespace_and_slower_on_another_is_no_switch() {
        let mut f = figures(vec![
            pt("bitmapscan", "worker", 64, &[240.0, 250.0, 270.0]),
            pt("bitmapscan", "io_uring", 64, &[460.0, 520.0, 420.0]),
        ]);
        f.insert(
            "lab_ram".into(),
            Figures {
                read_path: vec![
                    pt("bitmapscan", "worker", 64, &[3000.0, 2750.0, 2900.0]),
                    pt("bitmapscan", "io_uring", 64, &[1700.0, 1650.0, 1750.0]),
                ],
                ..Default::default()
            },
        );
        let a = advise_io_method(&f, &aio("worker"));
        assert_eq!(a.statement, None);
        assert!(
            a.advice
                .starts_with("no io_method reads faster everywhere: io_method = io_uring"),
            "{}",
            a.advice
        );
        assert!(
            a.advice.contains("lab_disk (+") && a.advice.contains("slower on lab_ram"),
            "{}",
            a.advice
        );
    }

    #[test]
    fn one_method_measured_says_what_to_measure() {
        let f = figures(vec![pt("bitmapscan", "worker", 16, &[60.0, 61.0])]);
        let a = advise_io_method(&f, &aio("worker"));
        assert!(a.advice.starts_with("cannot tell yet"), "{}", a.advice);
        assert!(a.advice.contains("sync or io_uring"), "{}", a.advice);
        let a = advise_io_method(&ByTablespace::new(), &aio("worker"));
        assert!(a.advice.starts_with("nothing measured yet"), "{}", a.advice);
        assert!(a
            .statement
            .unwrap()
            .contains("probe_read_path('pg_default')"));
    }
}
