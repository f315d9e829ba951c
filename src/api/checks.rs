//! Storage checks for CI in SQL: `check` (one figure against a threshold),
//! `baseline` (a labelled standard suite) and `regressions` (today against
//! a baseline). Outputs are pass or fail with stable sentences, so that they
//! sit in a pg_regress expected file or a pgTAP plan; figures go in their
//! own columns, for the log. The work is in `ops::checks`.

use pgrx::datum::Interval;
use pgrx::prelude::*;

use super::suite::duration_of;
use crate::ops::checks;
use crate::ops::error::{required, OrRaise};
use crate::ops::targets::resolve;
use crate::sqltypes::Name;
use storlab_core::report::checks::{
    check_description, median, regression_description, untestable_description,
};
use storlab_core::request::checks as args;

/// Probes one workload of the standard suite on one tablespace
/// `repetitions` times (reusing standard-suite probes younger than a
/// minute) and compares the median of `metric` with `threshold`.
#[allow(clippy::too_many_arguments)]
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn check(
    tablespace: Option<Name>,
    workload: Option<String>,
    metric: Option<String>,
    op: Option<String>,
    threshold: Option<f64>,
    duration: default!(Option<Interval>, "'2 seconds'"),
    repetitions: default!(Option<i32>, 3),
) -> TableIterator<
    'static,
    (
        name!(ok, bool),
        name!(description, String),
        name!(measured, Option<f64>),
        name!(probe_ids, Vec<i64>),
    ),
> {
    let _called = crate::ops::error::called("storlab.check");
    // on a standby: its own storage, unstored (it probes only what it has
    // no young figures of, so a read-only transaction is refused only then)
    crate::ops::standby::notice_unstored();
    let tablespace = required(tablespace, "tablespace");
    let item = args::workload(&required(workload, "workload")).or_raise();
    let metric = args::metric(&required(metric, "metric")).or_raise();
    let op = args::op(&required(op, "op")).or_raise();
    let threshold = args::threshold(required(threshold, "threshold")).or_raise();
    let duration = duration_of(duration);
    let repetitions = args::repetitions(required(repetitions, "repetitions")).or_raise();
    let target = resolve(tablespace.as_str()).or_raise();
    let ids = checks::check_probes(&target, &item, duration, repetitions);
    let measured = median(&checks::metric_values(&ids, metric));
    let ok = measured.is_some_and(|m| op.holds(m, threshold));
    let description = check_description(&target.name, &item.name(), metric, op, threshold);
    TableIterator::once((ok, description, measured, ids))
}

/// Runs the standard suite `repetitions` times on the given tablespaces
/// (every tablespace and pg_wal when NULL) and stores it as baseline
/// `label`; returns its id.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn baseline(
    label: Option<String>,
    tablespaces: default!(Option<Vec<Option<Name>>>, "NULL"),
    duration: default!(Option<Interval>, "'2 seconds'"),
    repetitions: default!(Option<i32>, 5),
) -> i64 {
    let _called = crate::ops::error::called("storlab.baseline");
    crate::ops::standby::refuse_writes("take a baseline").or_raise();
    let label = required(label, "label");
    let label = args::label(&label).or_raise();
    let duration = duration_of(duration);
    let repetitions = args::test_repetitions(required(repetitions, "repetitions")).or_raise();
    let targets = checks::targets_of(tablespaces);
    checks::take_baseline(label, &targets, duration, repetitions)
}

/// Drops baseline `label`, taken by the caller (or by a role whose
/// privileges it has; a role that may DELETE from storlab.baselines may
/// drop any): the HINT of baseline()'s 42710 names it. Its probes stay.
/// Returns the dropped baseline's id.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn drop_baseline(label: Option<String>) -> i64 {
    let _called = crate::ops::error::called("storlab.drop_baseline");
    crate::ops::standby::refuse_writes("drop a baseline").or_raise();
    checks::drop_baseline(&required(label, "label"))
}

/// Measures the baseline's tablespaces again (all of them, or the named
/// ones) and reports per tablespace, workload and metric, the change and whether
/// it is a regression: worse by more than max_change_pct and significant
/// (Welch's t-test, one-sided, p < 0.05), in a first round and again in a
/// second one that any flagged figure triggers.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn regressions(
    baseline: Option<String>,
    tablespaces: default!(Option<Vec<Option<Name>>>, "NULL"),
    max_change_pct: default!(Option<f64>, 10),
    duration: default!(Option<Interval>, "'2 seconds'"),
    repetitions: default!(Option<i32>, 5),
    server: default!(Option<String>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(tablespace, Name),
        name!(workload, String),
        name!(metric, String),
        name!(baseline, f64),
        name!(now, f64),
        name!(change_pct, Option<f64>),
        name!(p_value, Option<f64>),
        name!(regressed, Option<bool>),
        name!(description, String),
    ),
> {
    let _called = crate::ops::error::called("storlab.regressions");
    crate::ops::standby::measuring();
    let label = required(baseline, "baseline");
    let max_change_pct =
        args::max_change_pct(required(max_change_pct, "max_change_pct")).or_raise();
    let duration = duration_of(duration);
    let repetitions = args::test_repetitions(required(repetitions, "repetitions")).or_raise();
    let rows: Vec<_> = checks::regressions(
        &label,
        tablespaces,
        max_change_pct,
        duration,
        repetitions,
        server.as_deref(),
    )
    .into_iter()
    .map(|r| {
        let workload = r.item.name();
        let description = match r.verdict.regressed {
            None => untestable_description(&r.tablespace, &workload, r.metric, &label),
            Some(_) => {
                regression_description(&r.tablespace, &workload, r.metric, max_change_pct, &label)
            }
        };
        (
            Name(r.tablespace),
            workload,
            r.metric.as_str().to_string(),
            r.verdict.baseline,
            r.verdict.now,
            r.verdict.change_pct,
            r.verdict.p_value,
            r.verdict.regressed,
            description,
        )
    })
    .collect();
    TableIterator::new(rows)
}
