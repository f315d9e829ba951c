//! The arguments of check(), baseline() and regressions(), checked once
//! (22023 with the allowed range). Pure.

use crate::error::{invalid, Result};
use crate::report::checks::{Metric, Op};
use crate::request::probe::{SuiteItem, SUITE};

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
