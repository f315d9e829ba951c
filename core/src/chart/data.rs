//! What each chart draws, shaped from stored rows as `ops::chart` reads
//! them: the series of the suites' curves, the tablespaces' side-by-side
//! figures, titles, and the percentiles a probe's plot goes through.

use std::collections::BTreeMap;

use super::{Series, TablespaceFigures};

/// Percentiles a probe's plot is drawn through: dense in the tail.
pub const PERCENTILES: [f64; 18] = [
    50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 97.0, 98.0, 99.0, 99.5, 99.7, 99.9, 99.95, 99.97, 99.99,
    99.995, 99.997, 99.999,
];

pub const PROFILE_TITLE: &str = "IOPS by workers (newest standard-suite probes)";
pub const DEPTHS_TITLE: &str = "IOPS by queue depth, 1 worker (newest standard-suite probes)";
pub const TABLESPACES_TITLE: &str = "Tablespaces compared (newest standard-suite probes, 1 worker)";
pub const FLEET_TITLE: &str =
    "The fleet's tablespaces compared (newest standard-suite probes copied from each server, 1 worker)";

/// A profile curve needs more than one worker count (compare_tablespaces
/// alone measures one); a depth curve more than the suite's own two depths.
pub const PROFILE_MORE_THAN: usize = 1;
pub const DEPTHS_MORE_THAN: usize = 2;

/// One newest standard-suite probe as a point of a curve: its IOPS at a
/// number of workers or a queue depth.
#[derive(Debug, Clone, PartialEq)]
pub struct CurvePoint {
    pub tablespace: String,
    pub workload: String,
    pub x: f64,
    pub iops: f64,
}

/// A series per tablespace and workload ("lab_disk randread"), in that
/// order, its points by x; only those with more than `more_than` points.
pub fn curves(points: &[CurvePoint], more_than: usize) -> Vec<Series> {
    let mut by: BTreeMap<(&str, &str), Vec<(f64, f64)>> = BTreeMap::new();
    for p in points {
        by.entry((&p.tablespace, &p.workload))
            .or_default()
            .push((p.x, p.iops));
    }
    by.into_iter()
        .filter(|(_, pts)| pts.len() > more_than)
        .map(|((ts, w), mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: format!("{ts} {w}"),
                points,
            }
        })
        .collect()
}

/// One newest 1-worker standard-suite probe of a tablespace.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteFigure {
    pub tablespace: String,
    pub workload: String,
    pub p99_us: Option<f64>,
    pub mib_s: Option<f64>,
}

/// Per tablespace (and pg_wal), by name: random read p99, WAL commit p99,
/// sequential read + write MiB/s (what was measured of them).
pub fn tablespace_figures(rows: &[SuiteFigure]) -> Vec<TablespaceFigures> {
    let mut by: BTreeMap<&str, TablespaceFigures> = BTreeMap::new();
    for r in rows {
        let t = by
            .entry(&r.tablespace)
            .or_insert_with(|| TablespaceFigures {
                tablespace: r.tablespace.clone(),
                randread_p99_us: None,
                wal_commit_p99_us: None,
                seq_mib_s: None,
            });
        let max = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        match r.workload.as_str() {
            "randread" => t.randread_p99_us = max(t.randread_p99_us, r.p99_us),
            "wal" => t.wal_commit_p99_us = max(t.wal_commit_p99_us, r.p99_us),
            "seqread" | "seqwrite" => {
                if let Some(m) = r.mib_s {
                    t.seq_mib_s = Some(t.seq_mib_s.unwrap_or(0.0) + m);
                }
            }
            _ => {}
        }
    }
    by.into_values().collect()
}

pub fn experiment_title(id: i64, name: &str) -> String {
    format!("Experiment {id}: {name} (TPS, 95 % confidence intervals)")
}

/// What a stored benchmark run was, for its chart's title.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunHead {
    pub id: i64,
    pub script: Option<String>,
    pub clients: Option<i32>,
    pub label: Option<String>,
    pub invalid: Option<String>,
}

pub fn run_title(r: &RunHead) -> String {
    format!(
        "Run {}: {}, {} clients{}{}",
        r.id,
        r.script.as_deref().unwrap_or(""),
        r.clients.map(|c| c.to_string()).unwrap_or_default(),
        r.label
            .as_ref()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default(),
        r.invalid
            .as_ref()
            .map(|i| format!(", invalid: {i}"))
            .unwrap_or_default()
    )
}

/// What a stored probe was, for its chart's title and its series' label.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeHead {
    pub id: i64,
    pub workload: String,
    pub block_size: i32,
    pub workers: i32,
    pub tablespace: String,
}

pub fn probe_title(p: &ProbeHead) -> String {
    format!(
        "Probe {}: {}, {} kB blocks, {} worker{} on {}",
        p.id,
        p.workload,
        p.block_size / 1024,
        p.workers,
        if p.workers > 1 { "s" } else { "" },
        p.tablespace
    )
}

/// A probe's latency series through [`PERCENTILES`] (or any list), from
/// the merged histogram's values: a percentile without a value (NaN, an
/// empty histogram) is left out.
pub fn percentile_series(label: &str, percentiles: &[f64], values: &[f64]) -> Series {
    Series {
        label: label.to_string(),
        points: percentiles
            .iter()
            .zip(values)
            .filter(|(_, v)| !v.is_nan())
            .map(|(p, v)| (*p, *v))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(ts: &str, w: &str, x: f64, iops: f64) -> CurvePoint {
        CurvePoint {
            tablespace: ts.into(),
            workload: w.into(),
            x,
            iops,
        }
    }

    #[test]
    fn curves_per_tablespace_and_workload_with_enough_points() {
        let points = [
            point("pg_default", "randread", 4.0, 40.0),
            point("lab_disk", "randread", 1.0, 10.0),
            point("pg_default", "randread", 1.0, 10.0),
            point("lab_disk", "randread", 2.0, 19.0),
            point("lab_disk", "seqread", 1.0, 5.0),
            point("pg_default", "randread", 2.0, 20.0),
        ];
        let profile = curves(&points, PROFILE_MORE_THAN);
        let labels: Vec<&str> = profile.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            ["lab_disk randread", "pg_default randread"],
            "one point is no curve"
        );
        assert_eq!(
            profile[1].points,
            [(1.0, 10.0), (2.0, 20.0), (4.0, 40.0)],
            "by x"
        );
        // depths: the suite's own two (1 and 32) are no curve either
        let depths = curves(&points, DEPTHS_MORE_THAN);
        assert_eq!(depths.len(), 1);
        assert_eq!(depths[0].label, "pg_default randread");
        assert!(curves(&[], 0).is_empty());
    }

    #[test]
    fn tablespaces_side_by_side() {
        let row = |ts: &str, w: &str, p99: Option<f64>, mib: Option<f64>| SuiteFigure {
            tablespace: ts.into(),
            workload: w.into(),
            p99_us: p99,
            mib_s: mib,
        };
        let rows = [
            row("pg_wal", "wal", Some(300.0), Some(47.0)),
            row("lab_disk", "seqwrite", None, Some(500.0)),
            row("lab_disk", "randread", Some(150.0), Some(78.0)),
            row("lab_disk", "seqread", None, Some(640.0)),
            row("lab_disk", "wal", Some(90.0), Some(3.0)),
            row("lab_ram", "randwrite", Some(2.0), Some(900.0)),
            row("lab_ram", "seqread", None, None),
        ];
        let t = tablespace_figures(&rows);
        let names: Vec<&str> = t.iter().map(|t| t.tablespace.as_str()).collect();
        assert_eq!(names, ["lab_disk", "lab_ram", "pg_wal"]);
        assert_eq!(
            t[0],
            TablespaceFigures {
                tablespace: "lab_disk".into(),
                randread_p99_us: Some(150.0),
                wal_commit_p99_us: Some(90.0),
                seq_mib_s: Some(1140.0),
            }
        );
        // measured, but none of the figures compared: a row of nothing
        assert_eq!(
            (t[1].randread_p99_us, t[1].wal_commit_p99_us, t[1].seq_mib_s),
            (None, None, None)
        );
        assert_eq!(t[2].wal_commit_p99_us, Some(300.0));
        assert_eq!(t[2].seq_mib_s, None);
    }

    #[test]
    fn titles() {
        assert_eq!(
            experiment_title(3, "indexes on RAM"),
            "Experiment 3: indexes on RAM (TPS, 95 % confidence intervals)"
        );
        let mut run = RunHead {
            id: 12,
            script: Some("tpcb-like".into()),
            clients: Some(8),
            ..RunHead::default()
        };
        assert_eq!(run_title(&run), "Run 12: tpcb-like, 8 clients");
        run.label = Some("nightly".into());
        run.invalid = Some("fillfactor changed".into());
        assert_eq!(
            run_title(&run),
            "Run 12: tpcb-like, 8 clients (nightly), invalid: fillfactor changed"
        );
        let mut probe = ProbeHead {
            id: 5,
            workload: "randread".into(),
            block_size: 8192,
            workers: 1,
            tablespace: "lab_disk".into(),
        };
        assert_eq!(
            probe_title(&probe),
            "Probe 5: randread, 8 kB blocks, 1 worker on lab_disk"
        );
        probe.workers = 4;
        probe.block_size = 512;
        assert_eq!(
            probe_title(&probe),
            "Probe 5: randread, 0 kB blocks, 4 workers on lab_disk"
        );
    }

    #[test]
    fn percentiles_without_a_value_are_left_out() {
        let s = percentile_series("wal", &[50.0, 99.0, 99.9], &[10.0, f64::NAN, 30.0]);
        assert_eq!(s.label, "wal");
        assert_eq!(s.points, [(50.0, 10.0), (99.9, 30.0)]);
        assert!(percentile_series("x", &PERCENTILES, &[]).points.is_empty());
    }
}
