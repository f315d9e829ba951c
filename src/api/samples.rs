//! `storlab.compare_samples(a, b)`: two sets of repeated figures compared
//! with the statistics of `experiment_report` (mean and 95 % interval of
//! each, change of b against a with its interval, Welch's p). The studies
//! use it for probes they repeat; a DBA can use it for any figures measured
//! several times.

use pgrx::prelude::*;

use crate::ops::error::{invalid, required_elements, Error, OrRaise, Raise, SqlState};
use storlab_core::report::samples::{compare, SampleComparison};

fn values(v: Option<Vec<Option<f64>>>, what: &str) -> Vec<f64> {
    let v = required_elements(v, what);
    if v.is_empty() {
        invalid(format!("{what} must hold at least one value")).raise();
    }
    if let Some(x) = v.iter().find(|x| !x.is_finite()) {
        // as PostgreSQL spells them
        let x = if x.is_nan() {
            "NaN"
        } else if *x > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        };
        invalid(format!("{what} must hold finite values, not {x}")).raise();
    }
    v
}

/// The comparison, checked: 22003 where finite values still give no
/// figure (their sums or squares overflow, or the change in percent of a
/// mean of a very near 0 does).
fn compared(a: Option<Vec<Option<f64>>>, b: Option<Vec<Option<f64>>>) -> SampleComparison {
    let (a, b) = (values(a, "a"), values(b, "b"));
    let c = compare(&a, &b)
        .ok_or_else(|| invalid("a and b must each hold at least one value"))
        .or_raise();
    let figures = [
        Some(c.a.mean),
        Some(c.b.mean),
        c.a.ci95_low,
        c.a.ci95_high,
        c.b.ci95_low,
        c.b.ci95_high,
        c.p_value,
    ];
    if figures.iter().flatten().any(|x| !x.is_finite()) {
        Error::new(
            SqlState::NumericValueOutOfRange,
            "values too large to compare: their sums or squares overflow double precision",
        )
        .raise();
    }
    let change = [c.change_pct, c.change_ci95_low_pct, c.change_ci95_high_pct];
    if change.iter().flatten().any(|x| !x.is_finite()) {
        Error::new(
            SqlState::NumericValueOutOfRange,
            "values too large to compare: the change in percent of a's mean overflows double precision",
        )
        .raise();
    }
    c
}

/// b compared with a: `change_pct` is b's mean against a's, in percent,
/// with its Welch 95 % interval (`change_ci95_low_pct`,
/// `change_ci95_high_pct`: mean_b − mean_a's, in percent of mean_a; NULL
/// below two values on a side or for a mean of a of 0); `p_value` is
/// Welch's two-sided test (NULL below two values on a side), `significant`
/// is p < 0.05, the rule of `experiment_report`.
#[pg_extern(immutable, parallel_safe, name = "compare_samples")]
#[search_path(pg_catalog, pg_temp)]
fn compare_samples_change_ci(
    a: Option<Vec<Option<f64>>>,
    b: Option<Vec<Option<f64>>>,
) -> TableIterator<
    'static,
    (
        name!(n_a, i32),
        name!(mean_a, f64),
        name!(ci95_low_a, Option<f64>),
        name!(ci95_high_a, Option<f64>),
        name!(n_b, i32),
        name!(mean_b, f64),
        name!(ci95_low_b, Option<f64>),
        name!(ci95_high_b, Option<f64>),
        name!(change_pct, Option<f64>),
        name!(p_value, Option<f64>),
        name!(significant, Option<bool>),
        name!(change_ci95_low_pct, Option<f64>),
        name!(change_ci95_high_pct, Option<f64>),
    ),
> {
    let _called = crate::ops::error::called("storlab.compare_samples");
    let c = compared(a, b);
    TableIterator::once((
        c.a.n as i32,
        c.a.mean,
        c.a.ci95_low,
        c.a.ci95_high,
        c.b.n as i32,
        c.b.mean,
        c.b.ci95_low,
        c.b.ci95_high,
        c.change_pct,
        c.p_value,
        c.significant,
        c.change_ci95_low_pct,
        c.change_ci95_high_pct,
    ))
}

/// compare_samples() as the SQL of 0.11.0 and before declares it (eleven
/// columns, this C symbol), for an install whose library is newer than its
/// ALTER EXTENSION UPDATE: the same row without the change's interval.
#[pg_extern(sql = false)]
fn compare_samples(
    a: Option<Vec<Option<f64>>>,
    b: Option<Vec<Option<f64>>>,
) -> TableIterator<
    'static,
    (
        name!(n_a, i32),
        name!(mean_a, f64),
        name!(ci95_low_a, Option<f64>),
        name!(ci95_high_a, Option<f64>),
        name!(n_b, i32),
        name!(mean_b, f64),
        name!(ci95_low_b, Option<f64>),
        name!(ci95_high_b, Option<f64>),
        name!(change_pct, Option<f64>),
        name!(p_value, Option<f64>),
        name!(significant, Option<bool>),
    ),
> {
    let _called = crate::ops::error::called("storlab.compare_samples");
    let c = compared(a, b);
    TableIterator::once((
        c.a.n as i32,
        c.a.mean,
        c.a.ci95_low,
        c.a.ci95_high,
        c.b.n as i32,
        c.b.mean,
        c.b.ci95_low,
        c.b.ci95_high,
        c.change_pct,
        c.p_value,
        c.significant,
    ))
}
