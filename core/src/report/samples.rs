//! Two sets of repeated measurements compared as an experiment's cells are:
//! each side's mean with its Student t 95 % interval, the change of b
//! against a in percent, and Welch's two-sided test at the same ALPHA. For
//! figures that are not pgbench runs (probes repeated by a study, figures
//! gathered by hand), so that they get the same statistics.

use crate::stats::{improvement_pct, summarize, welch, Sides, Summary, ALPHA};

#[derive(Debug, Clone, PartialEq)]
pub struct SampleComparison {
    pub a: Summary,
    pub b: Summary,
    /// (mean_b / mean_a − 1) · 100; None when mean_a is 0.
    pub change_pct: Option<f64>,
    /// None below two values on either side.
    pub p_value: Option<f64>,
    pub significant: Option<bool>,
}

/// None when either side is empty (nothing to summarise).
pub fn compare(a: &[f64], b: &[f64]) -> Option<SampleComparison> {
    let (sa, sb) = (summarize(a)?, summarize(b)?);
    let test = welch(b, a);
    Some(SampleComparison {
        a: sa,
        b: sb,
        change_pct: improvement_pct(sa.mean, sb.mean),
        p_value: test.map(|w| w.p(Sides::Two)),
        significant: test.map(|w| w.significant(ALPHA, Sides::Two)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clear_difference_is_significant_with_its_sign() {
        let c = compare(&[100.0, 102.0, 98.0], &[50.0, 51.0, 49.0]).unwrap();
        assert_eq!(c.a.mean, 100.0);
        assert_eq!(c.b.mean, 50.0);
        assert!((c.change_pct.unwrap() + 50.0).abs() < 1e-9);
        assert!(c.p_value.unwrap() < 0.001);
        assert_eq!(c.significant, Some(true));
    }

    #[test]
    fn overlapping_samples_are_not() {
        let c = compare(&[100.0, 110.0, 90.0], &[101.0, 95.0, 108.0]).unwrap();
        assert!(c.p_value.unwrap() > 0.5);
        assert_eq!(c.significant, Some(false));
        // the interval of a holds its mean
        assert!(c.a.ci95_low.unwrap() < 100.0 && c.a.ci95_high.unwrap() > 100.0);
    }

    #[test]
    fn one_value_gives_a_mean_but_no_test() {
        let c = compare(&[100.0], &[50.0, 52.0]).unwrap();
        assert_eq!(c.p_value, None);
        assert_eq!(c.significant, None);
        assert_eq!(c.a.ci95_low, None);
        assert!(compare(&[], &[1.0]).is_none());
    }

    #[test]
    fn a_zero_mean_has_no_change() {
        let c = compare(&[0.0, 0.0], &[1.0, 2.0]).unwrap();
        assert_eq!(c.change_pct, None);
    }
}
