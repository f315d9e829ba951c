//! Two sets of repeated measurements compared as an experiment's cells are:
//! each side's mean with its Student t 95 % interval, the change of b
//! against a in percent, and Welch's two-sided test at the same ALPHA. For
//! figures that are not pgbench runs (probes repeated by a study, figures
//! gathered by hand), so that they get the same statistics.
//!
//! The change has its interval too: Welch's 95 % interval of
//! mean_b − mean_a (Welch–Satterthwaite df), in percent of mean_a, so that
//! it brackets change_pct. Dividing by mean_a treats a's mean as exact, as
//! change_pct itself does: a first-order statement. The interval of the
//! ratio mean_b / mean_a (Fieller's) would be wider, the more so the wider
//! a's own interval is against its mean.

use crate::stats::{difference, improvement_pct, summarize, welch, Sides, Summary, ALPHA};

#[derive(Debug, Clone, PartialEq)]
pub struct SampleComparison {
    pub a: Summary,
    pub b: Summary,
    /// (mean_b / mean_a − 1) · 100; None when mean_a is 0.
    pub change_pct: Option<f64>,
    /// None below two values on either side.
    pub p_value: Option<f64>,
    pub significant: Option<bool>,
    /// Welch's 95 % interval of mean_b − mean_a, in percent of mean_a:
    /// change_pct ± t_{0.975}(df) · √(s_a²/n_a + s_b²/n_b) / |mean_a| · 100.
    /// None where change_pct is None (mean_a is 0) or there is no test (one
    /// value on a side); zero width, at change_pct, when neither side has
    /// any spread. It leaves out 0 exactly when `significant` is true.
    pub change_ci95_low_pct: Option<f64>,
    pub change_ci95_high_pct: Option<f64>,
}

/// change_pct's interval: [`SampleComparison::change_ci95_low_pct`].
fn change_interval(
    a: &[f64],
    b: &[f64],
    mean_a: f64,
    change_pct: Option<f64>,
) -> (Option<f64>, Option<f64>) {
    let (Some(change), Some(d)) = (change_pct, difference(b, a)) else {
        return (None, None);
    };
    // the same level as the significance rule, so that the interval and
    // the test agree
    let half = d.half_width(1.0 - ALPHA) / mean_a.abs() * 100.0;
    (Some(change - half), Some(change + half))
}

/// None when either side is empty (nothing to summarise).
pub fn compare(a: &[f64], b: &[f64]) -> Option<SampleComparison> {
    let (sa, sb) = (summarize(a)?, summarize(b)?);
    let test = welch(b, a);
    let change_pct = improvement_pct(sa.mean, sb.mean);
    let (change_ci95_low_pct, change_ci95_high_pct) = change_interval(a, b, sa.mean, change_pct);
    Some(SampleComparison {
        a: sa,
        b: sb,
        change_pct,
        p_value: test.map(|w| w.p(Sides::Two)),
        significant: test.map(|w| w.significant(ALPHA, Sides::Two)),
        change_ci95_low_pct,
        change_ci95_high_pct,
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
        assert_eq!(
            (c.change_ci95_low_pct, c.change_ci95_high_pct),
            (None, None)
        );
    }

    fn close(got: Option<f64>, want: f64) {
        let got = got.unwrap();
        assert!(
            (got - want).abs() <= 1e-9 * want.abs(),
            "got {got:e}, want {want:e}"
        );
    }

    #[test]
    fn the_change_has_its_welch_interval_in_percent_of_a() {
        // Computed apart from this code with mpmath (50 digits): means,
        // s²/n per side, df = (va + vb)² / (va²/(n_a − 1) + vb²/(n_b − 1)),
        // t the root of 1 − ½·betainc(df/2, ½, 0, df/(df + t²),
        // regularized=True) = 0.975, then (mean_b − mean_a ± t·√(va + vb))
        // / mean_a · 100.
        // docs/samples.md's example: df = 2.4485301876463317,
        // t = 3.6289934889161071, mean_b − mean_a = −392.67 ± 101.71.
        let c = compare(&[748.0, 702.0, 794.0], &[355.0, 371.0, 340.0]).unwrap();
        close(c.change_ci95_low_pct, -66.092_519_555_111_11);
        close(c.change_ci95_high_pct, -38.898_567_788_917_42);
        // Unequal sizes: df = 4.2433872137992685, t = 2.7147545382674159.
        let c = compare(&[1510.0, 1495.0, 1523.0], &[1602.0, 1580.0, 1611.0, 1598.0]).unwrap();
        close(c.change_ci95_low_pct, 3.990_170_906_717_035_4);
        close(c.change_ci95_high_pct, 7.725_818_492_576_251);
        // By hand: s² = 1 a side, n = 3, df = 4, the difference 10 ±
        // t_{0.975}(4) · √(2/3) = 10 ± 2.2669579355275197, of a mean of 10.
        let c = compare(&[9.0, 10.0, 11.0], &[19.0, 20.0, 21.0]).unwrap();
        close(c.change_ci95_low_pct, 77.330_420_644_724_8);
        close(c.change_ci95_high_pct, 122.669_579_355_275_2);
    }

    #[test]
    fn the_interval_brackets_change_pct_and_agrees_with_the_test() {
        for (a, b) in [
            (&[748.0, 702.0, 794.0][..], &[355.0, 371.0, 340.0][..]),
            (&[100.0, 110.0, 90.0][..], &[101.0, 95.0, 108.0][..]),
            (&[100.0, 102.0, 98.0][..], &[50.0, 51.0, 49.0][..]),
            (&[5.0, 5.0, 5.0][..], &[4.0, 6.0, 5.0, 7.0][..]),
            (&[-10.0, -12.0, -11.0][..], &[-5.0, -6.0, -4.0][..]),
        ] {
            let c = compare(a, b).unwrap();
            let (low, high) = (
                c.change_ci95_low_pct.unwrap(),
                c.change_ci95_high_pct.unwrap(),
            );
            let change = c.change_pct.unwrap();
            assert!(low < change && change < high, "{a:?} {b:?}");
            assert_eq!(
                low > 0.0 || high < 0.0,
                c.significant.unwrap(),
                "{a:?} {b:?}"
            );
        }
    }

    #[test]
    fn a_negative_mean_of_a_keeps_the_interval_in_order() {
        // mpmath as above: change −54.545454545454545 %, the difference
        // 6 ± 2.2669579355275197 over a mean of −11.
        let c = compare(&[-10.0, -12.0, -11.0], &[-5.0, -6.0, -4.0]).unwrap();
        close(c.change_ci95_low_pct, -75.154_163_050_250_18);
        close(c.change_ci95_high_pct, -33.936_746_040_658_91);
    }

    #[test]
    fn one_value_on_a_side_has_no_interval_of_the_change() {
        for (a, b) in [
            (&[100.0][..], &[50.0, 52.0][..]),
            (&[100.0, 102.0][..], &[50.0][..]),
        ] {
            let c = compare(a, b).unwrap();
            assert!(c.change_pct.is_some());
            assert_eq!(
                (c.change_ci95_low_pct, c.change_ci95_high_pct),
                (None, None)
            );
        }
    }

    #[test]
    fn no_spread_on_either_side_is_a_zero_width_interval() {
        // different means: Welch's p is 0, the interval is change_pct alone
        let c = compare(&[5.0, 5.0, 5.0], &[6.0, 6.0]).unwrap();
        assert_eq!(c.significant, Some(true));
        assert_eq!(c.change_ci95_low_pct, c.change_pct);
        assert_eq!(c.change_ci95_high_pct, c.change_pct);
        close(c.change_pct, 20.0);
        // equal means: p = 1, the interval is 0..0
        let c = compare(&[5.0, 5.0], &[5.0, 5.0, 5.0]).unwrap();
        assert_eq!(c.significant, Some(false));
        assert_eq!(
            (c.change_ci95_low_pct, c.change_ci95_high_pct),
            (Some(0.0), Some(0.0))
        );
    }
}
