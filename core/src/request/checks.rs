//! The arguments of check(), baseline() and regressions(), checked once
//! (22023 with the allowed range), and their vocabulary: which figure of a
//! probe a check reads (`Metric`, and which way is worse) and how it
//! compares it with its threshold (`Op`). `report::checks` judges in these
//! terms. Pure.

use std::fmt;
use std::str::FromStr;

use crate::error::{invalid, Result};
use crate::probe::Workload;
use crate::request::probe::{SuiteItem, SUITE};

/// A figure of a stored probe that a check or a regression compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    Iops,
    MibS,
    LatMeanUs,
    LatP50Us,
    LatP90Us,
    LatP99Us,
    LatP999Us,
    LatMaxUs,
}

impl Metric {
    pub const ALL: [Metric; 8] = [
        Metric::Iops,
        Metric::MibS,
        Metric::LatMeanUs,
        Metric::LatP50Us,
        Metric::LatP90Us,
        Metric::LatP99Us,
        Metric::LatP999Us,
        Metric::LatMaxUs,
    ];

    /// The column of storlab.probes it is read from.
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Iops => "iops",
            Metric::MibS => "mib_s",
            Metric::LatMeanUs => "lat_mean_us",
            Metric::LatP50Us => "lat_p50_us",
            Metric::LatP90Us => "lat_p90_us",
            Metric::LatP99Us => "lat_p99_us",
            Metric::LatP999Us => "lat_p999_us",
            Metric::LatMaxUs => "lat_max_us",
        }
    }

    /// Throughput: more is better. Latency: less is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Iops | Metric::MibS)
    }

    /// What regressions() compares for a workload: the throughput that
    /// matters for it, and for 8 kB operations the typical and the tail
    /// latency (max and p99.9 are too few samples to compare runs by).
    pub fn compared_for(workload: Workload, block_size: usize) -> &'static [Metric] {
        if block_size > 8192 && !matches!(workload, Workload::Wal) {
            &[Metric::MibS]
        } else {
            &[Metric::Iops, Metric::LatP50Us, Metric::LatP99Us]
        }
    }
}

impl FromStr for Metric {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        crate::probe::parse_name("metric", s, &Metric::ALL, Metric::as_str)
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a check compares its figure with its threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    pub const ALL: [Op; 4] = [Op::Lt, Op::Le, Op::Gt, Op::Ge];

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }

    pub fn holds(self, measured: f64, threshold: f64) -> bool {
        match self {
            Op::Lt => measured < threshold,
            Op::Le => measured <= threshold,
            Op::Gt => measured > threshold,
            Op::Ge => measured >= threshold,
        }
    }
}

impl FromStr for Op {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        crate::probe::parse_name("op", s, &Op::ALL, Op::as_str)
    }
}

/// More repetitions than this is a benchmark, not a CI check.
pub const MAX_REPETITIONS: i32 = 100;

pub fn repetitions(n: i32) -> Result<usize> {
    if !(1..=MAX_REPETITIONS).contains(&n) {
        return Err(invalid(format!(
            "repetitions must be between 1 and {MAX_REPETITIONS}, not {n}"
        )));
    }
    Ok(n as usize)
}

/// The repetitions of a baseline or of regressions(): a regression is
/// decided by a t-test, which needs at least two figures a side; with one,
/// a 98 % slowdown could never be flagged.
pub fn test_repetitions(n: i32) -> Result<usize> {
    if n == 1 {
        return Err(invalid(
            "repetitions must be at least 2: a regression is decided by a t-test of the repetitions' figures, and one figure has no spread to test",
        ));
    }
    repetitions(n)
}

/// A suite workload by its name ("randread", ..., "randread_qd32").
pub fn workload(name: &str) -> Result<SuiteItem> {
    SuiteItem::named(name).ok_or_else(|| {
        let names: Vec<String> = SUITE.iter().map(|i| i.name()).collect();
        invalid(format!(
            "unknown workload \"{name}\"; allowed: {}",
            names.join(", ")
        ))
    })
}

pub fn metric(name: &str) -> Result<Metric> {
    name.parse().map_err(invalid)
}

pub fn op(name: &str) -> Result<Op> {
    name.parse().map_err(invalid)
}

pub fn threshold(t: f64) -> Result<f64> {
    if !t.is_finite() {
        return Err(invalid(format!(
            "threshold must be a finite number, not {t}"
        )));
    }
    Ok(t)
}

pub fn max_change_pct(p: f64) -> Result<f64> {
    if !(p.is_finite() && p >= 0.0) {
        return Err(invalid(format!(
            "max_change_pct must be a percentage of 0 or more, not {p}"
        )));
    }
    Ok(p)
}

pub fn label(l: &str) -> Result<&str> {
    if l.trim().is_empty() {
        return Err(invalid("label must not be empty"));
    }
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_unknown_ones_list_the_choices() {
        for m in Metric::ALL {
            assert_eq!(m.as_str().parse::<Metric>(), Ok(m));
        }
        assert!("latency"
            .parse::<Metric>()
            .unwrap_err()
            .contains("iops, mib_s, lat_mean_us"));
        for o in Op::ALL {
            assert_eq!(o.as_str().parse::<Op>(), Ok(o));
        }
        assert!("=".parse::<Op>().unwrap_err().ends_with("<, <=, >, >="));
    }

    #[test]
    fn ops_compare_as_written() {
        assert!(Op::Lt.holds(1.0, 2.0) && !Op::Lt.holds(2.0, 2.0));
        assert!(Op::Le.holds(2.0, 2.0) && !Op::Le.holds(2.1, 2.0));
        assert!(Op::Gt.holds(3.0, 2.0) && !Op::Gt.holds(2.0, 2.0));
        assert!(Op::Ge.holds(2.0, 2.0) && !Op::Ge.holds(1.9, 2.0));
    }

    #[test]
    fn each_argument_names_what_is_allowed() {
        assert_eq!(repetitions(3).unwrap(), 3);
        for bad in [0, -1, 101] {
            assert!(repetitions(bad)
                .unwrap_err()
                .message
                .contains("between 1 and 100"));
        }
        assert_eq!(test_repetitions(2).unwrap(), 2);
        assert!(test_repetitions(1)
            .unwrap_err()
            .message
            .contains("at least 2"));
        assert!(test_repetitions(0)
            .unwrap_err()
            .message
            .contains("between 1 and 100"));
        assert_eq!(workload("randread_qd32").unwrap().iodepth, 32);
        assert_eq!(workload(" WAL ").unwrap().name(), "wal");
        let e = workload("scan").unwrap_err().message;
        assert!(
            e.ends_with("randread, randwrite, wal, seqwrite, seqread, randread_qd32"),
            "{e}"
        );
        assert!(metric("tps").is_err() && op("==").is_err());
        assert!(threshold(f64::NAN).is_err() && threshold(f64::INFINITY).is_err());
        assert!(max_change_pct(-1.0).is_err() && max_change_pct(0.0).is_ok());
        assert!(label("  ").is_err() && label("nightly").is_ok());
    }
}
