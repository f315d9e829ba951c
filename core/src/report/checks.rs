//! Storage checks for CI, the pure part: the sentences a check and a
//! regression print (stable: no figure in them, so that they sit in an
//! expected file), and the verdict of "is this a regression". Its
//! vocabulary (`Metric`, `Op`) is the request's (`request::checks`).
//!
//! A regression is a change for the worse by more than `max_change_pct`
//! that is also significant: Welch's t-test on the repetitions' figures,
//! one-sided in the worse direction, p < `stats::ALPHA`. Either test alone
//! fails builds for nothing: a large change on noisy storage may be noise
//! (five repetitions of a cloud volume easily spread 15 %), and a tiny
//! change is significant with enough repetitions yet harmless.

use crate::request::checks::{Metric, Op};
use crate::stats::{improvement_pct, summarize, welch, Sides, ALPHA};

/// The middle value (the mean of the two middle ones for an even count);
/// None for none. NaN-free input is the caller's business.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// "pg_wal wal lat_p99_us < 2000": what was asserted, never what was measured.
pub fn check_description(
    tablespace: &str,
    workload: &str,
    metric: Metric,
    op: Op,
    threshold: f64,
) -> String {
    format!(
        "{tablespace} {workload} {metric} {} {threshold}",
        op.as_str()
    )
}

/// "lab_disk randread lat_p99_us no more than 10 % worse than baseline 'nightly'".
pub fn regression_description(
    tablespace: &str,
    workload: &str,
    metric: Metric,
    max_change_pct: f64,
    baseline: &str,
) -> String {
    format!("{tablespace} {workload} {metric} no more than {max_change_pct} % worse than baseline '{baseline}'")
}

/// What regressions() says of a figure it cannot test: a change beyond
/// max_change_pct with fewer than two figures on a side has no p-value.
pub fn untestable_description(
    tablespace: &str,
    workload: &str,
    metric: Metric,
    baseline: &str,
) -> String {
    format!(
        "{tablespace} {workload} {metric} cannot be tested against baseline '{baseline}': a test of the change needs at least two figures on each side"
    )
}

/// One figure of regressions(): baseline and current means, the change,
/// how likely a change this much for the worse is under no real change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    pub baseline: f64,
    pub now: f64,
    /// (now / baseline − 1) · 100, whichever way is better.
    pub change_pct: Option<f64>,
    /// One-sided Welch p for "now is worse than the baseline"; None below
    /// two figures on either side.
    pub p_value: Option<f64>,
    /// Worse by more than max_change_pct and significant. None: a change
    /// beyond max_change_pct that cannot be tested (fewer than two figures on
    /// a side, so no p-value): never reported as "no regression".
    pub regressed: Option<bool>,
}

impl Verdict {
    /// Flagged as a regression (a figure that cannot be tested is not).
    pub fn is_regression(&self) -> bool {
        self.regressed == Some(true)
    }
}

/// The mean of figures the caller guarantees are there.
fn mean(xs: &[f64]) -> f64 {
    summarize(xs).map_or(f64::NAN, |s| s.mean)
}

/// The verdict on one metric from the baseline's and today's repetitions
/// (each at least one figure).
pub fn judge(metric: Metric, baseline: &[f64], now: &[f64], max_change_pct: f64) -> Verdict {
    let (b, n) = (mean(baseline), mean(now));
    // +1 where a higher figure is worse (latency), -1 where it is better
    let worse = if metric.higher_is_better() { -1.0 } else { 1.0 };
    let change_pct = improvement_pct(b, n);
    // One-sided p of "now is worse": now higher than the baseline for a
    // latency, lower for a rate.
    let worse_side = if worse > 0.0 {
        Sides::Greater
    } else {
        Sides::Less
    };
    let test = welch(now, baseline);
    let p_value = test.map(|w| w.p(worse_side));
    // within max_change_pct it is no regression whatever the spread; beyond
    // it, only a test can tell, and without one there is no verdict
    let regressed = if change_pct.is_some_and(|c| c * worse > max_change_pct) {
        test.map(|w| w.significant(ALPHA, worse_side))
    } else {
        Some(false)
    };
    Verdict {
        baseline: b,
        now: n,
        change_pct,
        p_value,
        regressed,
    }
}

/// The verdict on a figure flagged in a first round of repetitions and
/// measured again in a second: a regression only when both rounds show it.
///
/// Welch's test takes the repetitions of a round for independent draws, and
/// on shared storage they are not quite: taken within the same minute, they
/// share that minute's conditions (a neighbour's burst on a cloud volume, a
/// VM host flushing its cache), and a dip of a minute then reads as a
/// significant change. A real regression (a mount option, a rebuild, a
/// slower volume) is still there a minute later. The figures reported are
/// those of both rounds together; the p-value is the larger of the two.
pub fn confirm(
    metric: Metric,
    baseline: &[f64],
    first: &[f64],
    second: &[f64],
    max_change_pct: f64,
) -> Verdict {
    let v1 = judge(metric, baseline, first, max_change_pct);
    let v2 = judge(metric, baseline, second, max_change_pct);
    let both: Vec<f64> = first.iter().chain(second).copied().collect();
    let mut v = judge(metric, baseline, &both, max_change_pct);
    v.p_value = match (v1.p_value, v2.p_value) {
        (Some(a), Some(b)) => Some(a.max(b)),
        _ => None,
    };
    v.regressed = match (v1.regressed, v2.regressed) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    };
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn descriptions_hold_no_figure() {
        assert_eq!(
            check_description("pg_wal", "wal", Metric::LatP99Us, Op::Lt, 2000.0),
            "pg_wal wal lat_p99_us < 2000"
        );
        assert_eq!(
            check_description("lab_ram", "randread", Metric::Iops, Op::Ge, 0.5),
            "lab_ram randread iops >= 0.5"
        );
        assert_eq!(
            regression_description("lab_disk", "randread", Metric::Iops, 10.0, "nightly"),
            "lab_disk randread iops no more than 10 % worse than baseline 'nightly'"
        );
    }

    #[test]
    fn a_slowdown_with_one_figure_a_side_is_untestable_never_no_regression() {
        // a 98 % slowdown, one repetition each: no p-value, so no verdict
        let v = judge(Metric::Iops, &[1000.0], &[20.0], 10.0);
        assert_eq!((v.p_value, v.regressed), (None, None), "{v:?}");
        // within max_change_pct it is no regression, test or not
        let v = judge(Metric::Iops, &[1000.0], &[990.0], 10.0);
        assert_eq!(v.regressed, Some(false), "{v:?}");
        // a second round that cannot be tested confirms nothing
        let base = [1000.0, 1010.0, 990.0];
        let v = confirm(Metric::Iops, &base, &[500.0, 510.0, 490.0], &[500.0], 10.0);
        assert_eq!(v.regressed, None, "{v:?}");
        assert_eq!(
            untestable_description("lab_disk", "randread", Metric::Iops, "nightly"),
            "lab_disk randread iops cannot be tested against baseline 'nightly': a test of the change needs at least two figures on each side"
        );
    }

    #[test]
    fn noise_is_no_regression_and_a_real_slowdown_is() {
        let base = [1000.0, 1030.0, 980.0, 1010.0, 995.0];
        // the same storage measured again
        let same = [1005.0, 990.0, 1020.0, 985.0, 1012.0];
        let v = judge(Metric::Iops, &base, &same, 10.0);
        assert!(!v.is_regression(), "{v:?}");
        assert!(v.p_value.unwrap() > 0.3, "{v:?}");
        // 30 % fewer IOPS, consistently
        let slow = [700.0, 710.0, 690.0, 705.0, 695.0];
        let v = judge(Metric::Iops, &base, &slow, 10.0);
        assert!(v.is_regression(), "{v:?}");
        assert!((v.change_pct.unwrap() + 30.0).abs() < 1.0);
        // latency: higher is worse
        let v = judge(
            Metric::LatP99Us,
            &[100.0, 102.0, 98.0],
            &[150.0, 151.0, 149.0],
            10.0,
        );
        assert!(v.is_regression() && v.p_value.unwrap() < 0.01, "{v:?}");
        // better by a lot is never a regression
        let v = judge(
            Metric::LatP99Us,
            &[100.0, 102.0, 98.0],
            &[50.0, 51.0, 49.0],
            10.0,
        );
        assert!(!v.is_regression() && v.p_value.unwrap() > 0.99, "{v:?}");
    }

    #[test]
    fn a_large_change_on_noisy_figures_is_not_significant() {
        // means 20 % apart, but the runs overlap widely
        let base = [1000.0, 1400.0, 700.0, 1300.0, 600.0];
        let now = [800.0, 1200.0, 500.0, 1000.0, 500.0];
        let v = judge(Metric::Iops, &base, &now, 10.0);
        assert!(v.change_pct.unwrap() < -10.0);
        assert!(!v.is_regression(), "{v:?}");
    }

    #[test]
    fn a_small_significant_change_is_no_regression() {
        let base = [1000.0, 1001.0, 999.0, 1000.5, 999.5];
        let now = [950.0, 951.0, 949.0, 950.5, 949.5];
        let v = judge(Metric::Iops, &base, &now, 10.0);
        assert!(v.p_value.unwrap() < 0.001);
        assert!(!v.is_regression(), "5 % is within max_change_pct 10");
    }

    #[test]
    fn a_dip_in_one_round_is_no_regression_and_a_lasting_change_is() {
        let base = [1000.0, 1030.0, 980.0, 1010.0, 995.0];
        let dip = [800.0, 810.0, 790.0, 805.0, 795.0];
        let back = [1005.0, 990.0, 1020.0, 985.0, 1012.0];
        assert!(judge(Metric::Iops, &base, &dip, 10.0).is_regression());
        let v = confirm(Metric::Iops, &base, &dip, &back, 10.0);
        assert!(!v.is_regression(), "{v:?}");
        assert!(
            v.p_value.unwrap() > 0.3,
            "the larger p of the two rounds: {v:?}"
        );
        let still = [790.0, 800.0, 805.0, 795.0, 798.0];
        let v = confirm(Metric::Iops, &base, &dip, &still, 10.0);
        assert!(v.is_regression(), "{v:?}");
        assert!((v.now - 798.8).abs() < 0.1, "both rounds' figures: {v:?}");
    }

    #[test]
    fn single_figures_have_no_p_value_and_never_regress() {
        let v = judge(Metric::Iops, &[1000.0], &[10.0], 10.0);
        assert_eq!(v.p_value, None);
        assert!(!v.is_regression());
    }
}
