//! The probe suites: `fsync_cost` (pg_test_fsync's tests on one tablespace),
//! `profile` (the standard suite on one or every tablespace, at several worker
//! counts) and `compare_tablespaces` (the standard suite side by side).

use std::time::Duration;

use pgrx::datum::{Interval, TimestampWithTimeZone};
use pgrx::prelude::*;

use crate::ops::identity::as_owner;
use super::name::Name;
use super::probe::{
    fetch_rows, interval_micros, invalid, max_probe_duration, measure, required, resolve,
    scratch_dir, suite_file_cap, system_identifier, Failure,
};
use super::probe_args::{fsync_tests, suite_file_size, SuiteItem, MAX_WORKERS, SUITE};
use super::tablespaces::{all_targets, Target};
use crate::env;
use crate::probe::{ProbeSpec, Workload};
use crate::report::compare::{rank, Scores};

/// A suite duration: positive and within storlab.max_probe_duration.
fn suite_duration(d: &Interval) -> Duration {
    let us = interval_micros(d);
    let max = max_probe_duration();
    if us <= 0 || us as u128 > max.as_micros() {
        invalid(format!(
            "duration must be positive and at most storlab.max_probe_duration ({} s), not {} s",
            max.as_secs(),
            us as f64 / 1e6
        ))
        .raise();
    }
    Duration::from_micros(us as u64)
}

/// The scratch file size a suite uses on this target (see suite_file_size).
fn suite_file_for(target: &Target, min_bytes: u64) -> u64 {
    let free = env::space::fs_space(&target.folder)
        .map(|s| s.avail_bytes)
        .unwrap_or(0);
    suite_file_size(suite_file_cap(), free, min_bytes)
}

fn suite_spec(target: &Target, item: &SuiteItem, duration: Duration, workers: usize) -> ProbeSpec {
    ProbeSpec {
        dir: scratch_dir(target),
        workload: item.workload,
        block_size: item.block_size,
        duration,
        workers,
        file_size: suite_file_for(target, (item.block_size * workers) as u64),
        direct: item.direct,
        sync: item.sync,
        writes_per_sync: 1,
        rewind: false,
    }
}

fn warn_skip(target: &Target, what: &str, f: &Failure) {
    match &f.detail {
        Some(d) => warning!(
            "storlab: {what} on {} skipped: {} ({d})",
            target.name,
            f.message
        ),
        None => warning!("storlab: {what} on {} skipped: {}", target.name, f.message),
    }
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
    let target = resolve(required(tablespace, "tablespace").as_str()).unwrap_or_else(|f| f.raise());
    let duration = suite_duration(&required(duration, "duration"));
    let mut rows = Vec::new();
    for t in fsync_tests() {
        let spec = ProbeSpec {
            dir: scratch_dir(&target),
            workload: Workload::Wal,
            block_size: t.write_size,
            duration,
            workers: 1,
            // pg_test_fsync writes into one pre-filled 16 MB WAL segment
            file_size: 16 * 1024 * 1024,
            direct: t.direct(),
            sync: t.method,
            writes_per_sync: t.writes,
            rewind: true,
        };
        let label = format!("fsync_cost: {}", t.test);
        // A test the device cannot do (1 kB O_DIRECT writes on a 4 kB-sector
        // disk) is skipped with a WARNING; the others still report.
        let id = match measure(&target, spec, Some(&label), Some("fsync_cost")) {
            Ok(id) => id,
            Err(f) => {
                warn_skip(&target, &label, &f);
                continue;
            }
        };
        let (ops_per_s, mean, p99) = as_owner(|| {
            Spi::get_three_with_args::<f64, f64, f64>(
                "SELECT iops, lat_mean_us, lat_p99_us FROM storlab.probes WHERE id = $1",
                &[id.into()],
            )
            .unwrap_or_else(|e| error!("could not read probe {id}: {e}"))
        });
        rows.push((
            t.test.to_string(),
            t.method.as_str().to_string(),
            t.write_size as i32,
            t.writes as i32,
            ops_per_s.unwrap_or(0.0),
            mean,
            p99,
        ));
    }
    TableIterator::new(rows)
}

/// The standard suite (randread 8 kB, randwrite 8 kB, wal 8 kB + fdatasync,
/// seqwrite 128 kB, seqread 128 kB) on one tablespace, or on every tablespace
/// and pg_wal when NULL, at each worker count. A tablespace that cannot be
/// probed gets a WARNING and is skipped.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn profile(
    tablespace: default!(Option<Name>, "NULL"),
    duration: default!(Option<Interval>, "'3 seconds'"),
    workers: default!(Option<Vec<Option<i32>>>, "'{1}'"),
) -> SetOfIterator<'static, pgrx::composite_type!('static, "probes")> {
    let duration = suite_duration(&required(duration, "duration"));
    let workers: Vec<usize> = required(workers, "workers")
        .into_iter()
        .map(|w| match w {
            Some(w) if (1..=MAX_WORKERS).contains(&(w as i64)) => w as usize,
            other => invalid(format!(
                "every element of workers must be between 1 and {MAX_WORKERS}, not {}",
                other.map_or("NULL".to_string(), |w| w.to_string())
            ))
            .raise(),
        })
        .collect();
    if workers.is_empty() {
        invalid("workers must list at least one worker count, e.g. '{1,4,8}'").raise();
    }
    let targets = match tablespace {
        Some(name) => vec![resolve(name.as_str()).unwrap_or_else(|f| f.raise())],
        None => all_targets(),
    };
    let mut ids = Vec::new();
    for target in &targets {
        'target: for &w in &workers {
            for item in &SUITE {
                match measure(
                    target,
                    suite_spec(target, item, duration, w),
                    Some("profile"),
                    Some("standard"),
                ) {
                    Ok(id) => ids.push(id),
                    Err(f) => {
                        warn_skip(target, "profile", &f);
                        break 'target;
                    }
                }
            }
        }
    }
    SetOfIterator::new(fetch_rows(&ids))
}

/// The newest stored result of one suite item on one target, younger than max_age:
/// (lat_p50_us, lat_p99_us, iops, mib_s, started_at).
type Newest = (Option<f64>, Option<f64>, f64, f64, TimestampWithTimeZone);

fn newest(target: &Target, item: &SuiteItem, max_age: Interval) -> Option<Newest> {
    as_owner(|| {
        Spi::connect(|c| {
            let mut rows = c.select(
                "SELECT lat_p50_us, lat_p99_us, iops, mib_s, started_at
               FROM storlab.probes
              WHERE tablespace = $1 AND workload = $2 AND block_size = $3 AND sync_method = $4
                AND workers = 1 AND suite = 'standard'
                AND system_identifier = $5 AND started_at > now() - $6
              ORDER BY started_at DESC LIMIT 1",
                None,
                &[
                    Name(target.name.clone()).into(),
                    item.workload.as_str().into(),
                    (item.block_size as i32).into(),
                    item.sync.as_str().into(),
                    system_identifier().into(),
                    max_age.into(),
                ],
            )?;
            Ok::<_, pgrx::spi::Error>(match rows.next() {
                Some(r) => Some((
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?.unwrap_or(0.0),
                    r.get(4)?.unwrap_or(0.0),
                    r.get(5)?.expect("started_at"),
                )),
                None => None,
            })
        })
        .unwrap_or_else(|e| error!("could not read stored probes: {e}"))
    })
}

/// One output row of compare_tablespaces before ranking.
#[derive(Debug, Default, Clone)]
struct Figures {
    randread_p50_us: Option<f64>,
    randread_iops: Option<f64>,
    randwrite_p99_us: Option<f64>,
    wal_commit_p50_us: Option<f64>,
    scores: Scores,
    probed_at: Option<TimestampWithTimeZone>,
}

fn figures(target: &Target, max_age: Interval) -> (Figures, Vec<SuiteItem>) {
    let mut f = Figures::default();
    let mut missing = Vec::new();
    for item in SUITE {
        let Some((p50, p99, iops, mib_s, at)) = newest(target, &item, max_age) else {
            missing.push(item);
            continue;
        };
        // the comparison is as old as its oldest figure
        f.probed_at = Some(match f.probed_at {
            Some(old) if old < at => old,
            _ => at,
        });
        match item.workload {
            Workload::Randread => {
                (f.randread_p50_us, f.scores.randread_p99_us, f.randread_iops) =
                    (p50, p99, Some(iops));
            }
            Workload::Randwrite => f.randwrite_p99_us = p99,
            Workload::Wal => (f.wal_commit_p50_us, f.scores.wal_commit_p99_us) = (p50, p99),
            Workload::Seqwrite => f.scores.seqwrite_mib_s = Some(mib_s),
            Workload::Seqread => f.scores.seqread_mib_s = Some(mib_s),
        }
    }
    (f, missing)
}

/// Every tablespace and pg_wal side by side, from the newest standard-suite
/// probes younger than max_age; missing or older ones are probed first (with a
/// NOTICE naming them). A tablespace that cannot be probed gets a row with
/// NULL figures and a WARNING.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn compare_tablespaces(
    max_age: default!(Option<Interval>, "'1 day'"),
    duration: default!(Option<Interval>, "'2 seconds'"),
) -> TableIterator<
    'static,
    (
        name!(tablespace, Name),
        name!(fs_type, Option<String>),
        name!(device, Option<String>),
        name!(randread_p50_us, Option<f64>),
        name!(randread_p99_us, Option<f64>),
        name!(randread_iops, Option<f64>),
        name!(randwrite_p99_us, Option<f64>),
        name!(wal_commit_p50_us, Option<f64>),
        name!(wal_commit_p99_us, Option<f64>),
        name!(seqwrite_mib_s, Option<f64>),
        name!(seqread_mib_s, Option<f64>),
        name!(randread_vs_best, Option<f64>),
        name!(wal_commit_vs_best, Option<f64>),
        name!(best_for, Vec<String>),
        name!(probed_at, Option<TimestampWithTimeZone>),
    ),
> {
    let max_age = required(max_age, "max_age");
    if interval_micros(&max_age) <= 0 {
        invalid("max_age must be positive, e.g. '1 day'").raise();
    }
    let duration = suite_duration(&required(duration, "duration"));
    let targets = all_targets();
    let mut all = Vec::with_capacity(targets.len());
    for target in &targets {
        let (mut f, missing) = figures(target, max_age);
        if !missing.is_empty() {
            let names: Vec<&str> = missing.iter().map(|i| i.workload.as_str()).collect();
            notice!(
                "storlab: probing {} ({}): no figures younger than max_age",
                target.name,
                names.join(", ")
            );
            for item in &missing {
                if let Err(e) = measure(
                    target,
                    suite_spec(target, item, duration, 1),
                    Some("compare_tablespaces"),
                    Some("standard"),
                ) {
                    warn_skip(target, "compare_tablespaces", &e);
                    break;
                }
            }
            f = figures(target, max_age).0;
        }
        all.push(f);
    }
    let ranks = rank(&all.iter().map(|f| f.scores).collect::<Vec<_>>());
    let rows: Vec<_> = targets
        .into_iter()
        .zip(all)
        .zip(ranks)
        .map(|((t, f), r)| {
            let facts = env::facts(&t.folder).ok();
            (
                Name(t.name),
                facts.as_ref().map(|x| x.fs_type.clone()),
                facts.map(|x| x.device),
                f.randread_p50_us,
                f.scores.randread_p99_us,
                f.randread_iops,
                f.randwrite_p99_us,
                f.wal_commit_p50_us,
                f.scores.wal_commit_p99_us,
                f.scores.seqwrite_mib_s,
                f.scores.seqread_mib_s,
                r.randread_vs_best,
                r.wal_commit_vs_best,
                r.best_for.into_iter().map(String::from).collect(),
                f.probed_at,
            )
        })
        .collect();
    TableIterator::new(rows)
}
