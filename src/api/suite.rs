//! The probe suites in SQL: `fsync_cost` (pg_test_fsync's tests on one
//! tablespace), `profile` (the standard suite on one or every tablespace, at
//! several worker counts) and `compare_tablespaces` (the standard suite side
//! by side). The work is in `ops::suite`.

use std::time::Duration;

use pgrx::datum::{Interval, TimestampWithTimeZone};
use pgrx::prelude::*;

use super::interval_micros;
use crate::ops::compare::{self, CompareArgs};
use crate::ops::error::{invalid, raise, required, OrRaise};
use crate::ops::probe::fetch_rows;
use crate::ops::settings::max_probe_duration;
use crate::ops::suite::{self, SuiteRun};
use crate::ops::targets::{all_targets, resolve};
use crate::sqltypes::Name;
use storlab_core::env;
use storlab_core::report::compare::Estimate;
use storlab_core::request::probe::{
    compare_repetitions, iodepths, precision, profile_repetitions, suite_duration, worker_counts,
};

/// A suite's `duration` argument: required, at least 10 ms and at most
/// storlab.max_probe_duration (22004 / 22023 otherwise).
pub(super) fn duration_of(d: Option<Interval>) -> Duration {
    suite_duration(
        interval_micros(&required(d, "duration")),
        max_probe_duration(),
    )
    .or_raise()
}

/// pg_test_fsync's comparison of sync methods, on one tablespace, with
/// percentiles. Each test is also stored as a probe labelled 'fsync_cost'.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn fsync_cost(
    tablespace: Option<Name>,
    duration: default!(Option<Interval>, "'2 seconds'"),
) -> TableIterator<
    'static,
    (
        name!(test, String),
        name!(method, String),
        name!(write_size, i32),
        name!(writes_per_sync, i32),
        name!(ops_per_s, f64),
        name!(lat_mean_us, Option<f64>),
        name!(lat_p99_us, Option<f64>),
    ),
> {
    let _called = crate::ops::error::called("storlab.fsync_cost");
    crate::ops::standby::measuring();
    let target = resolve(required(tablespace, "tablespace").as_str()).or_raise();
    let duration = duration_of(duration);
    let rows = suite::fsync_cost(&target, duration).or_raise();
    TableIterator::new(rows.into_iter().map(|r| {
        (
            r.test.test.to_string(),
            r.test.method.as_str().to_string(),
            r.test.write_size as i32,
            r.test.writes as i32,
            r.ops_per_s,
            r.lat_mean_us,
            r.lat_p99_us,
        )
    }))
}

/// The standard suite (randread 8 kB, randwrite 8 kB, wal 8 kB + fdatasync,
/// seqwrite 128 kB, seqread 128 kB, randread 8 kB at queue depth 32) on one
/// tablespace, or on every tablespace and pg_wal when NULL, at each worker
/// count and queue depth, `repetitions` times (the repetitions a knee is
/// told from: recommend()'s effective_io_concurrency). Each probe stops
/// once precise to ±precision % (duration is the upper bound; NULL: the
/// whole duration). A NOTICE says how long it may take at most; 54000 when
/// statement_timeout is shorter. A tablespace that cannot be probed gets a
/// WARNING and is skipped.
#[pg_extern(volatile, parallel_unsafe, name = "profile")]
#[search_path(pg_catalog, pg_temp)]
fn profile_repeated(
    tablespace: default!(Option<Name>, "NULL"),
    duration: default!(Option<Interval>, "'3 seconds'"),
    workers: default!(Option<Vec<Option<i32>>>, "'{1}'"),
    iodepths: default!(Option<Vec<Option<i32>>>, "'{1}'"),
    precision_pct: default!(Option<f32>, 5),
    repetitions: default!(Option<i32>, 1),
) -> SetOfIterator<'static, pgrx::composite_type!('static, "probes")> {
    let _called = crate::ops::error::called("storlab.profile");
    let repetitions = profile_repetitions(required(repetitions, "repetitions")).or_raise();
    run_profile(
        tablespace,
        duration,
        workers,
        iodepths,
        precision_pct,
        repetitions,
    )
}

/// profile() as the SQL of 0.10.0 and before declares it (five arguments), for an install
/// whose library is newer than its ALTER EXTENSION UPDATE: the sweep once.
#[pg_extern(sql = false)]
fn profile(
    tablespace: Option<Name>,
    duration: Option<Interval>,
    workers: Option<Vec<Option<i32>>>,
    iodepths: Option<Vec<Option<i32>>>,
    precision_pct: Option<f32>,
) -> SetOfIterator<'static, pgrx::composite_type!('static, "probes")> {
    let _called = crate::ops::error::called("storlab.profile");
    run_profile(tablespace, duration, workers, iodepths, precision_pct, 1)
}

fn run_profile(
    tablespace: Option<Name>,
    duration: Option<Interval>,
    workers: Option<Vec<Option<i32>>>,
    iodepths: Option<Vec<Option<i32>>>,
    precision_pct: Option<f32>,
    repetitions: usize,
) -> SetOfIterator<'static, pgrx::composite_type!('static, "probes")> {
    crate::ops::standby::measuring();
    let call = crate::ops::compare::new_call();
    let run = SuiteRun {
        duration: duration_of(duration),
        precision_pct: precision_of(precision_pct),
        label: "profile",
        call: Some(&call),
    };
    let workers = worker_counts(&required(workers, "workers")).or_raise();
    let depths = self::iodepths(&required(iodepths, "iodepths")).or_raise();
    let (targets, every) = match tablespace {
        Some(name) => (vec![resolve(name.as_str()).or_raise()], false),
        None => (all_targets(), true),
    };
    let ids = suite::profile(&targets, &workers, &depths, repetitions, run, every).or_raise();
    SetOfIterator::new(fetch_rows(&ids))
}

/// compare_tablespaces()'s and measure_volume()'s max_age (positive) and
/// repetitions (2..20, max at least min): 22004 / 22023 otherwise.
fn age_and_repetitions(
    max_age: Option<Interval>,
    min_repetitions: Option<i32>,
    max_repetitions: Option<i32>,
) -> (Interval, usize, usize) {
    let max_age = required(max_age, "max_age");
    if interval_micros(&max_age) <= 0 {
        raise(invalid("max_age must be positive, e.g. '1 day'"));
    }
    let (min_reps, max_reps) = compare_repetitions(
        required(min_repetitions, "min_repetitions"),
        required(max_repetitions, "max_repetitions"),
    )
    .or_raise();
    (max_age, min_reps, max_reps)
}

fn precision_of(p: Option<f32>) -> Option<f64> {
    precision(p.map(f64::from)).or_raise()
}

/// Every tablespace and pg_wal side by side, one answer per volume
/// (tablespaces on one filesystem are measured once and show the same
/// figures, `same_volume_as` naming the first), each figure the mean of one
/// suite call's repetitions with its 95 % interval; a role only where the
/// figure is significantly better than every other candidate's (Welch,
/// two-sided at 0.05), else `tied_for` names it. Volumes without a
/// complete call younger than max_age are measured first (a NOTICE says
/// which and how long it may take at most; 54000 if statement_timeout is
/// shorter); `measure => false` ranks stored figures only.
#[pg_extern(volatile, parallel_unsafe, name = "compare_tablespaces")]
#[search_path(pg_catalog, pg_temp)]
#[allow(clippy::too_many_arguments)]
fn compare_volumes(
    max_age: default!(Option<Interval>, "'1 day'"),
    duration: default!(Option<Interval>, "'2 seconds'"),
    precision_pct: default!(Option<f32>, 5),
    min_repetitions: default!(Option<i32>, 2),
    max_repetitions: default!(Option<i32>, 4),
    measure: default!(Option<bool>, true),
) -> TableIterator<
    'static,
    (
        name!(tablespace, Name),
        name!(fs_type, Option<String>),
        name!(device, Option<String>),
        name!(randread_p50_us, Option<f64>),
        name!(randread_p99_us, Option<f64>),
        name!(randread_iops, Option<f64>),
        name!(randread_iops_qd32, Option<f64>),
        name!(randwrite_p99_us, Option<f64>),
        name!(wal_commit_p50_us, Option<f64>),
        name!(wal_commit_p99_us, Option<f64>),
        name!(seqwrite_mib_s, Option<f64>),
        name!(seqread_mib_s, Option<f64>),
        name!(volatile, bool),
        name!(randread_vs_best, Option<f64>),
        name!(wal_commit_vs_best, Option<f64>),
        name!(best_for, Vec<String>),
        name!(probed_at, Option<TimestampWithTimeZone>),
        name!(same_volume_as, Option<Name>),
        name!(repetitions, i32),
        name!(randread_p99_ci95_pct, Option<f64>),
        name!(wal_commit_p99_ci95_pct, Option<f64>),
        name!(seqwrite_ci95_pct, Option<f64>),
        name!(seqread_ci95_pct, Option<f64>),
        name!(tied_for, Vec<String>),
        name!(caveats, Vec<String>),
        name!(suite_call, Option<pgrx::datum::Uuid>),
    ),
> {
    let _called = crate::ops::error::called("storlab.compare_tablespaces");
    let measure = required(measure, "measure");
    let (max_age, min_reps, max_reps) =
        age_and_repetitions(max_age, min_repetitions, max_repetitions);
    // on a standby: its own storage, unstored (it probes only what it has
    // no young figures of, so a read-only transaction is refused only then)
    if measure {
        crate::ops::standby::notice_unstored();
    }
    let call = crate::ops::compare::new_call();
    let args = CompareArgs {
        max_age,
        run: SuiteRun {
            duration: duration_of(duration),
            precision_pct: precision_of(precision_pct),
            label: "compare_tablespaces",
            call: Some(&call),
        },
        min_reps,
        max_reps,
        measure,
        replicated: false,
        within_timeout: true,
    };
    let rows: Vec<_> = compare::compare(args)
        .into_iter()
        .map(|c| {
            let facts = env::facts(&c.target.folder).ok();
            let (f, r) = (c.figures, c.ranking);
            let mean = |e: Option<Estimate>| e.map(|e| e.mean);
            let ci = |e: Option<Estimate>| e.and_then(|e| e.ci95_pct);
            (
                Name(c.target.name),
                facts.as_ref().map(|x| x.fs_type.clone()),
                facts.map(|x| x.device),
                f.randread_p50_us,
                mean(f.randread_p99_us),
                f.randread_iops,
                f.randread_iops_qd32,
                f.randwrite_p99_us,
                f.wal_commit_p50_us,
                mean(f.wal_commit_p99_us),
                mean(f.seqwrite_mib_s),
                mean(f.seqread_mib_s),
                c.volatile,
                r.randread_vs_best,
                r.wal_commit_vs_best,
                r.best_for.into_iter().map(String::from).collect(),
                f.first_at,
                c.same_volume_as.map(Name),
                f.repetitions as i32,
                ci(f.randread_p99_us),
                ci(f.wal_commit_p99_us),
                ci(f.seqwrite_mib_s),
                ci(f.seqread_mib_s),
                r.tied_for.into_iter().map(String::from).collect(),
                r.caveats,
                c.call.and_then(|u| crate::ops::compare::uuid(&u)),
            )
        })
        .collect();
    TableIterator::new(rows)
}

/// compare_tablespaces() as storlab 0.9.0 and older declared it (three
/// arguments, this C symbol): reached only between installing a newer
/// package and ALTER EXTENSION UPDATE, where the new function would read
/// arguments it is not given. It says so (55000). No SQL is generated for
/// it: 0.10.0's compare_tablespaces() is `compare_volumes`.
#[pg_extern(sql = false)]
fn compare_tablespaces(
    _max_age: Option<Interval>,
    _duration: Option<Interval>,
    _precision_pct: Option<f32>,
) -> TableIterator<'static, (name!(tablespace, Name),)> {
    crate::ops::identity::raise_update_needed(
        "compare_tablespaces() of this database's storlab takes three arguments, and this library's six (min_repetitions, max_repetitions, measure)",
    )
}

/// One step of `CALL storlab.measure_tablespaces()` (sql/catalog/procedures.sql):
/// the volume `tablespace` is on, measured as part of suite call
/// `suite_call` unless it has a complete call younger than max_age; the
/// probes it made.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
#[allow(clippy::too_many_arguments)]
fn measure_volume(
    tablespace: Option<Name>,
    suite_call: Option<pgrx::datum::Uuid>,
    max_age: Option<Interval>,
    duration: Option<Interval>,
    precision_pct: Option<f32>,
    min_repetitions: Option<i32>,
    max_repetitions: Option<i32>,
) -> i64 {
    let _called = crate::ops::error::called("storlab.measure_tablespaces");
    // its point is to commit what it measured, volume by volume: a standby
    // keeps nothing (compare_tablespaces() measures it in one call)
    crate::ops::standby::refuse_writes(
        "keep volumes measured one by one (storlab.measure_tablespaces)",
    )
    .or_raise();
    // SAFETY: a plain read of the transaction state.
    if unsafe { pg_sys::IsTransactionBlock() } {
        raise(
            crate::ops::error::Error::new(
                crate::ops::error::SqlState::ActiveSqlTransaction,
                "storlab.measure_tablespaces cannot run inside a transaction block",
            )
            .with_detail("It commits after each volume, so that a cancel keeps every volume it finished. Nothing was measured.")
            .with_hint("CALL it on its own, outside BEGIN ... COMMIT; compare_tablespaces() measures within a transaction."),
        );
    }
    let tablespace = required(tablespace, "tablespace");
    let call = required(suite_call, "suite_call").to_string();
    let (max_age, min_reps, max_reps) =
        age_and_repetitions(max_age, min_repetitions, max_repetitions);
    let args = CompareArgs {
        max_age,
        run: SuiteRun {
            duration: duration_of(duration),
            precision_pct: precision_of(precision_pct),
            label: "measure_tablespaces",
            call: Some(&call),
        },
        min_reps,
        max_reps,
        measure: true,
        replicated: false,
        within_timeout: false,
    };
    compare::measure_volume_of(tablespace.as_str(), &args)
}
