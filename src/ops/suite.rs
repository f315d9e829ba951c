//! The probe suites: pg_test_fsync's tests on one target, the standard suite
//! on some targets at several worker counts, and the side-by-side comparison
//! of every target from the newest standard-suite figures.

use std::time::Duration;

use pgrx::datum::{Interval, TimestampWithTimeZone};
use pgrx::prelude::*;

use super::error::{spi, Error, OrRaise};
use super::identity::as_owner;
use super::probe::{measure, scratch_dir};
use super::server::system_identifier;
use super::settings::suite_file_cap;
use super::targets::{all_targets, Target};
use crate::env;
use crate::probe::{ProbeSpec, Workload};
use crate::report::compare::{rank, Ranking, Scores};
use crate::request::probe::{fsync_tests, suite_file_size, FsyncTest, SuiteItem, SUITE};
use crate::sqltypes::Name;

/// The newest standard-suite probe of every (tablespace, workload, workers)
/// that completed something: what charts and advice read (as the caller;
/// filter on `workers = 1` for the figures compare_tablespaces compares).
pub const NEWEST_SUITE_PROBES: &str = "SELECT DISTINCT ON (tablespace, workload, workers) *
       FROM storlab.probes
      WHERE suite = 'standard' AND ops > 0
      ORDER BY tablespace, workload, workers, started_at DESC";

/// The scratch file size a suite uses on this target (see suite_file_size).
fn suite_file_for(target: &Target, min_bytes: u64) -> u64 {
    let free = env::space::fs_space(&target.folder)
        .map(|s| s.avail_bytes)
        .unwrap_or(0);
    suite_file_size(suite_file_cap(), free, min_bytes)
}

/// One suite's scratch file size on a target, decided once: every workload
/// of the suite is measured on a file of the same size, whatever the free
/// space does meanwhile (each probe still checks that its file fits).
fn suite_file_once(target: &Target, max_workers: usize) -> u64 {
    let need = SUITE
        .iter()
        .map(|i| (i.block_size * max_workers) as u64)
        .max()
        .unwrap_or(0);
    suite_file_for(target, need)
}

fn suite_spec(
    target: &Target,
    item: &SuiteItem,
    duration: Duration,
    workers: usize,
    file_size: u64,
) -> ProbeSpec {
    ProbeSpec {
        dir: scratch_dir(target),
        workload: item.workload,
        block_size: item.block_size,
        duration,
        workers,
        file_size,
        direct: item.direct,
        sync: item.sync,
        writes_per_sync: 1,
        rewind: false,
    }
}

fn warn_skip(target: &Target, what: &str, f: &Error) {
    match &f.detail {
        Some(d) => warning!(
            "storlab: {what} on {} skipped: {} ({d})",
            target.name,
            f.message
        ),
        None => warning!("storlab: {what} on {} skipped: {}", target.name, f.message),
    }
}

/// One of fsync_cost's results.
pub struct FsyncRow {
    pub test: FsyncTest,
    pub ops_per_s: f64,
    pub lat_mean_us: Option<f64>,
    pub lat_p99_us: Option<f64>,
}

/// pg_test_fsync's tests on one target, each stored as a probe.
pub fn fsync_cost(target: &Target, duration: Duration) -> Vec<FsyncRow> {
    let target = target.clone();
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
            .map_err(spi("reading a stored probe"))
            .or_raise()
        });
        rows.push(FsyncRow {
            test: t,
            ops_per_s: ops_per_s.unwrap_or(0.0),
            lat_mean_us: mean,
            lat_p99_us: p99,
        });
    }
    rows
}

/// The standard suite on each target at each worker count; the stored ids.
pub fn profile(targets: &[Target], duration: Duration, workers: &[usize]) -> Vec<i64> {
    let mut ids = Vec::new();
    let max_workers = workers.iter().copied().max().unwrap_or(1);
    for target in targets {
        let file_size = suite_file_once(target, max_workers);
        'target: for &w in workers {
            for item in &SUITE {
                match measure(
                    target,
                    suite_spec(target, item, duration, w, file_size),
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
    ids
}

/// The newest stored result of one suite item on one target, younger than max_age
/// (one with no operation, as releases before 0.3.0 could store, is never used):
/// (lat_p50_us, lat_p99_us, iops, mib_s, started_at).
type Newest = (Option<f64>, Option<f64>, f64, f64, TimestampWithTimeZone);

fn newest(target: &Target, item: &SuiteItem, max_age: Interval) -> Option<Newest> {
    as_owner(|| {
        Spi::connect(|c| {
            let mut rows = c.select(
                "SELECT lat_p50_us, lat_p99_us, iops, mib_s, started_at
               FROM storlab.probes
              WHERE tablespace = $1 AND workload = $2 AND block_size = $3 AND sync_method = $4
                AND workers = 1 AND suite = 'standard' AND ops > 0
                AND system_identifier = $5 AND started_at > pg_catalog.now() - $6
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
        .map_err(spi("reading stored probes"))
        .or_raise()
    })
}

/// One output row of compare_tablespaces before ranking.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    pub randread_p50_us: Option<f64>,
    pub randread_iops: Option<f64>,
    pub randwrite_p99_us: Option<f64>,
    pub wal_commit_p50_us: Option<f64>,
    pub scores: Scores,
    pub probed_at: Option<TimestampWithTimeZone>,
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

/// Every target with its newest figures (probing what is missing or older
/// than `max_age` first) and its ranking against the others.
pub fn compare(max_age: Interval, duration: Duration) -> Vec<(Target, Figures, Ranking)> {
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
            let file_size = suite_file_once(target, 1);
            for item in &missing {
                if let Err(e) = measure(
                    target,
                    suite_spec(target, item, duration, 1, file_size),
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
    for (t, f) in targets.iter().zip(all.iter_mut()) {
        f.scores.volatile = env::facts(&t.folder)
            .map(|x| env::is_volatile(&x.fs_type, &x.device))
            .unwrap_or(false);
    }
    let ranks = rank(&all.iter().map(|f| f.scores).collect::<Vec<_>>());
    targets
        .into_iter()
        .zip(all)
        .zip(ranks)
        .map(|((t, f), r)| (t, f, r))
        .collect()
}
