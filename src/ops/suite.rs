//! The probe suites: pg_test_fsync's tests on one target, the standard suite
//! on some targets at several worker counts, and the side-by-side comparison
//! of every target from the newest standard-suite figures.

use std::time::Duration;

use pgrx::datum::{DatumWithOid, Interval, TimestampWithTimeZone};
use pgrx::prelude::*;

use super::error::{spi, Error, OrRaise, Raise, SqlState};
use super::identity::as_owner;
use super::probe::{measure, scratch_dir};
use super::read;
use super::server::this_server;
use super::settings::suite_file_cap;
use super::standby;
use super::targets::{all_targets, check_may_write_each, Target};
use crate::sqltypes::Name;
use storlab_core::env;
use storlab_core::newest::NewestPerGroup;
use storlab_core::probe::{IoEngine, ProbeSpec, Workload};
use storlab_core::report::compare::{rank, Ranking, Scores};
use storlab_core::request::probe::{
    fsync_tests, suite_file_size, FsyncTest, SuiteItem, MAX_WORKERS, SUITE,
};

/// The newest standard-suite probe at queue depth 1 of every (tablespace,
/// workload, workers) that completed something: what charts and advice read (as the caller;
/// filter on `workers = 1` for the figures compare_tablespaces compares).
/// Read through the index probes_newest_suite, whose predicate is the filter:
/// a few index descents per group, however many probes are stored.
pub fn newest_suite_probes() -> String {
    NewestPerGroup {
        table: "storlab.probes",
        groups: &["tablespace", "workload", "workers"],
        filter: "suite = 'standard' AND ops > 0 AND iodepth = 1",
        newest_first: "started_at DESC, id DESC",
        per_group: "1",
    }
    .sql()
}

/// The newest standard-suite probe of one worker reading or writing 8 kB
/// at every (tablespace, workload, iodepth): one reader's queue-depth curve
/// (the suite's depths 1 and 32, a profile's iodepths; psync at depth 1 and
/// io_uring deeper, as profile runs them). What the depths chart draws and
/// effective_io_concurrency is read from. Through the index probes_newest_depth.
pub fn newest_depth_probes() -> String {
    NewestPerGroup {
        table: "storlab.probes",
        groups: &["tablespace", "workload", "iodepth"],
        filter: "suite = 'standard' AND ops > 0 AND workers = 1 AND block_size = 8192
                 AND engine = CASE WHEN iodepth = 1 THEN 'psync' ELSE 'io_uring' END",
        newest_first: "started_at DESC, id DESC",
        per_group: "1",
    }
    .sql()
}

/// The stored standard-suite probes of one suite item on one tablespace
/// that completed something, as a WHERE condition on storlab.probes with
/// the parameters of `item_args` ($1 to $5): its workload, block size and
/// sync method, and as many requests in flight, from one worker at the
/// item's depth or from as many psync workers (the fallback where io_uring
/// is off). Callers number their own parameters from $6.
/// (The two ways of putting $5 requests in flight are spelled out so that
/// each is a range of the index probes_lookup, time included.)
pub(crate) const ITEM_PROBES: &str =
    "tablespace = $1 AND workload = $2 AND block_size = $3 AND sync_method = $4
     AND ((workers = 1 AND iodepth = $5) OR (workers = $5 AND iodepth = 1))
     AND suite = 'standard' AND ops > 0";

/// The parameters of ITEM_PROBES.
pub(crate) fn item_args(tablespace: &str, item: &SuiteItem) -> Vec<DatumWithOid<'static>> {
    vec![
        Name(tablespace.to_string()).into(),
        item.workload.as_str().into(),
        (item.block_size as i32).into(),
        item.sync.as_str().into(),
        (item.iodepth as i32).into(),
    ]
}

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
pub(crate) fn suite_file_once(target: &Target, max_workers: usize) -> u64 {
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
    precision_pct: Option<f64>,
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
        iodepth: item.iodepth,
        engine: item.engine(),
        precision_pct,
    }
}

/// How a suite runs its probes: for how long, how precise, under which label.
#[derive(Clone, Copy)]
pub struct SuiteRun<'a> {
    pub duration: Duration,
    pub precision_pct: Option<f64>,
    pub label: &'a str,
}

/// Measures one suite item. A queued item where io_uring is switched off
/// runs instead as iodepth x workers psync workers (as many requests in
/// flight, as fio's numjobs would keep), with a NOTICE saying so.
pub(crate) fn measure_item(
    target: &Target,
    item: &SuiteItem,
    workers: usize,
    file_size: u64,
    run: SuiteRun,
) -> Result<i64, Error> {
    let spec = suite_spec(
        target,
        item,
        run.duration,
        workers,
        file_size,
        run.precision_pct,
    );
    match measure(target, spec, Some(run.label), Some("standard")) {
        Err(e)
            if e.state == SqlState::FeatureNotSupported && item.engine() == IoEngine::IoUring =>
        {
            let threads = (workers * item.iodepth as usize).min(MAX_WORKERS as usize);
            notice!(
                "storlab: {} on {}: {}; it runs as {threads} psync workers instead",
                item.workload.as_str(),
                target.name,
                e.detail.as_deref().unwrap_or(&e.message)
            );
            let psync = SuiteItem {
                iodepth: 1,
                ..*item
            };
            let spec = suite_spec(
                target,
                &psync,
                run.duration,
                threads,
                file_size,
                run.precision_pct,
            );
            measure(target, spec, Some(run.label), Some("standard"))
        }
        other => other,
    }
}

/// The items profile() runs at one worker count: the suite at each asked
/// depth (a commit only at depth 1), then the suite's own queued items
/// unless a depth asked for already covers them.
pub fn profile_items(iodepths: &[u32]) -> Vec<SuiteItem> {
    let mut items = Vec::new();
    for &d in iodepths {
        for item in SUITE.iter().filter(|i| i.iodepth == 1) {
            if d == 1 {
                items.push(*item);
            } else if item.queueable() {
                items.push(item.at_depth(d));
            }
        }
    }
    for item in SUITE.iter().filter(|i| i.iodepth > 1) {
        if !items.contains(item) {
            items.push(*item);
        }
    }
    items
}

/// A failure that would hit every probe of the call alike: the caller may
/// not write there (42501), nothing fits (53100), the folder is gone, the
/// transaction is read-only (25006), another session's probe holds the
/// device past lock_timeout (55P03). Such a
/// failure ends the call; others (a test the device cannot do) skip one
/// probe with a WARNING.
fn ends_the_call(target: &Target, f: &Error) -> bool {
    matches!(
        f.state,
        SqlState::InsufficientPrivilege
            | SqlState::DiskFull
            | SqlState::QueryCanceled
            | SqlState::ReadOnlySqlTransaction
            | SqlState::LockNotAvailable
    ) || target.check_folder().is_err()
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

/// pg_test_fsync's tests on one target, each stored as a probe. A test the
/// device cannot do is skipped with a WARNING; a target where no test can
/// run at all (no room, no folder, no right to write) is an error, never an
/// empty answer.
pub fn fsync_cost(target: &Target, duration: Duration) -> Result<Vec<FsyncRow>, Error> {
    let target = target.clone();
    target.check_may_write()?;
    target.check_folder()?;
    let mut rows = Vec::new();
    let mut first_failure = None;
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
            ..ProbeSpec::new(scratch_dir(&target), Workload::Wal)
        };
        let label = format!("fsync_cost: {}", t.test);
        // A test the device cannot do (1 kB O_DIRECT writes on a 4 kB-sector
        // disk) is skipped with a WARNING; the others still report.
        let id = match measure(&target, spec, Some(&label), Some("fsync_cost")) {
            Ok(id) => id,
            Err(f) if ends_the_call(&target, &f) => return Err(f),
            Err(f) => {
                warn_skip(&target, &label, &f);
                first_failure.get_or_insert(f);
                continue;
            }
        };
        let (ops_per_s, mean, p99) = as_owner(|| {
            read::three::<f64, f64, f64>(
                &format!(
                    "SELECT iops, lat_mean_us, lat_p99_us FROM {} WHERE id = $1",
                    standby::probes_from(2)
                ),
                &[id.into(), standby::probes_arg()],
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
    match first_failure {
        Some(f) if rows.is_empty() => Err(f),
        _ => Ok(rows),
    }
}

/// The standard suite on each target at each worker count and queue
/// depth; the stored ids. Every target must be writable by the caller
/// (42501 before anything runs). With `skip_failed` (every tablespace), a
/// target that cannot be measured is skipped with a WARNING; a named one
/// that cannot be measured at all is an error.
pub fn profile(
    targets: &[Target],
    workers: &[usize],
    iodepths: &[u32],
    run: SuiteRun,
    skip_failed: bool,
) -> Result<Vec<i64>, Error> {
    check_may_write_each(targets)?;
    if !skip_failed {
        for t in targets {
            t.check_folder()?;
        }
    }
    let mut ids = Vec::new();
    let max_workers = workers.iter().copied().max().unwrap_or(1);
    let items = profile_items(iodepths);
    for target in targets {
        let file_size = suite_file_once(target, max_workers);
        let mut measured = 0;
        'target: for &w in workers {
            for item in &items {
                match measure_item(target, item, w, file_size, run) {
                    Ok(id) => {
                        ids.push(id);
                        measured += 1;
                    }
                    Err(f) if f.state == SqlState::QueryCanceled => return Err(f),
                    Err(f) if !skip_failed && measured == 0 => return Err(f),
                    Err(f) => {
                        warn_skip(target, "profile", &f);
                        break 'target;
                    }
                }
            }
        }
    }
    Ok(ids)
}

/// The newest stored result of one suite item on one target, younger than max_age
/// (one with no operation, as releases before 0.3.0 could store, is never used;
/// a queued item's figure comes from io_uring at its depth, or else from as
/// many psync workers, the fallback where io_uring is off):
/// (lat_p50_us, lat_p99_us, iops, mib_s, started_at).
/// The newest probe of an item: p50 and p99 (µs), IOPS, MiB/s, and when.
pub(crate) type Newest = (Option<f64>, Option<f64>, f64, f64, TimestampWithTimeZone);

fn newest(target: &Target, item: &SuiteItem, max_age: Interval) -> Option<Newest> {
    let mut args = item_args(&target.name, item);
    args.push(this_server().into());
    args.push(max_age.into());
    args.push(standby::probes_arg());
    // on a standby, only this session's own measurements: the replicated
    // rows are the primary's storage
    let probes = standby::probes_from(8);
    as_owner(|| {
        Spi::connect(|c| {
            let mut rows = c.select(
                &format!(
                    // one worker at the item's depth first, else as many
                    // psync workers: each the newest through probes_lookup
                    "SELECT lat_p50_us, lat_p99_us, iops, mib_s, started_at FROM (
                       (SELECT 0 AS preference, * FROM {probes}
                         WHERE {ITEM_PROBES} AND workers = 1 AND iodepth = $5
                           AND system_identifier = ANY($6) AND started_at > pg_catalog.now() - $7
                         ORDER BY started_at DESC LIMIT 1)
                       UNION ALL
                       (SELECT 1, * FROM {probes}
                         WHERE {ITEM_PROBES} AND workers = $5 AND iodepth = 1
                           AND system_identifier = ANY($6) AND started_at > pg_catalog.now() - $7
                         ORDER BY started_at DESC LIMIT 1)) newest
                     ORDER BY preference LIMIT 1"
                ),
                None,
                &args,
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
    pub randread_iops_qd32: Option<f64>,
    pub randwrite_p99_us: Option<f64>,
    pub wal_commit_p50_us: Option<f64>,
    pub scores: Scores,
    pub probed_at: Option<TimestampWithTimeZone>,
}

fn figures(target: &Target, max_age: Interval) -> (Figures, Vec<SuiteItem>) {
    figures_of(|item| newest(target, item, max_age))
}

/// A tablespace's figures from the newest probe of each suite item that
/// `newest_of` finds (this server's, or a fleet server's copies), and the
/// items it found none of.
pub(crate) fn figures_of(
    newest_of: impl Fn(&SuiteItem) -> Option<Newest>,
) -> (Figures, Vec<SuiteItem>) {
    let mut f = Figures::default();
    let mut missing = Vec::new();
    for item in SUITE {
        let Some((p50, p99, iops, mib_s, at)) = newest_of(&item) else {
            missing.push(item);
            continue;
        };
        // the comparison is as old as its oldest figure
        f.probed_at = Some(match f.probed_at {
            Some(old) if old < at => old,
            _ => at,
        });
        match item.workload {
            Workload::Randread if item.iodepth > 1 => f.randread_iops_qd32 = Some(iops),
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
pub fn compare(max_age: Interval, run: SuiteRun) -> Vec<(Target, Figures, Ranking)> {
    let targets = all_targets();
    let found: Vec<(Figures, Vec<SuiteItem>)> =
        targets.iter().map(|t| figures(t, max_age)).collect();
    // probing writes where figures are missing: the caller's right to, as
    // for probe(), checked for every such tablespace before the first probe
    // (not after minutes of probing the others, whose figures would be lost)
    if found.iter().any(|(_, missing)| !missing.is_empty()) {
        // 25006 in a read-only transaction, before anything is probed
        standby::check_probes_can_be_kept().or_raise();
    }
    check_may_write_each(
        targets
            .iter()
            .zip(&found)
            .filter(|(_, (_, missing))| !missing.is_empty())
            .map(|(t, _)| t),
    )
    .or_raise();
    let mut all = Vec::with_capacity(targets.len());
    for (target, (mut f, missing)) in targets.iter().zip(found) {
        if !missing.is_empty() {
            let names: Vec<String> = missing
                .iter()
                .map(|i| match i.iodepth {
                    1 => i.workload.as_str().to_string(),
                    d => format!("{} at iodepth {d}", i.workload.as_str()),
                })
                .collect();
            notice!(
                "storlab: probing {} ({}): no figures younger than max_age",
                target.name,
                names.join(", ")
            );
            let file_size = suite_file_once(target, 1);
            for item in &missing {
                if let Err(e) = measure_item(target, item, 1, file_size, run) {
                    if e.state == SqlState::QueryCanceled {
                        e.raise();
                    }
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
        f.scores.wal_only = t.kind == "wal";
    }
    let ranks = rank(&all.iter().map(|f| f.scores).collect::<Vec<_>>());
    targets
        .into_iter()
        .zip(all)
        .zip(ranks)
        .map(|((t, f), r)| (t, f, r))
        .collect()
}
