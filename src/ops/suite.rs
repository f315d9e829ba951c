//! The probe suites: pg_test_fsync's tests on one target and the standard
//! suite on some targets at several worker counts (the side-by-side
//! comparison, which runs the suite too, is `ops::compare`).

use std::time::Duration;

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;

use super::error::{spi, Error, OrRaise, SqlState};
use super::identity::as_owner;
use super::probe::{measure, scratch_dir};
use super::read;
use super::settings::suite_file_cap;
use super::standby;
use super::targets::{check_may_write_each, Target};
use super::time_bound::{check_time, fill_rate, seconds};
use crate::sqltypes::Name;
use storlab_core::env;
use storlab_core::newest::NewestPerGroup;
use storlab_core::probe::{IoEngine, ProbeSpec, Workload};
use storlab_core::report::volumes::probes_time;
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

/// What a profile() sweep varies.
#[derive(Clone, Copy)]
pub enum SweepAxis {
    /// workers reading at depth 1
    Workers,
    /// one reader's queue depth (psync at 1, io_uring deeper)
    QueueDepth,
}

/// Of each tablespace (and pg_wal), the newest profile() call that swept
/// `axis` (more than one worker count; a depth besides the suite's own
/// queued read at 32), and every probe of that one call along it:
/// (tablespace, workload, x, iops, id, suite_call, started_at as
/// 'YYYY-MM-DD HH24:MI:SS+TZ'), so that points of calls minutes and loads
/// apart never make one curve. One index descent per tablespace
/// (probes_suite_call), then the call's rows (probes_call_rows).
/// Before ALTER EXTENSION UPDATE to 0.10.0 the probes carry no suite_call,
/// and no sweep can be told apart: 55000 naming the update (rather than
/// 42703 from the query).
pub fn require_suite_calls(what: &str) {
    let columns = super::record::table_columns("storlab.probes")
        .map_err(spi("reading storlab.probes' columns"))
        .or_raise();
    if !columns.iter().any(|c| c == "suite_call") {
        super::identity::raise_update_needed(what);
    }
}

pub fn newest_sweep(axis: SweepAxis) -> String {
    require_suite_calls("a profile() sweep is one call's probes, and this database's storlab.probes does not record the call yet");
    let (x, call_filter, row_filter) = match axis {
        SweepAxis::Workers => (
            "workers",
            "q.workers > 1 AND q.iodepth = 1",
            "p.iodepth = 1",
        ),
        SweepAxis::QueueDepth => (
            "iodepth",
            "q.workers = 1 AND q.iodepth > 1 AND q.iodepth <> 32",
            "p.workers = 1 AND p.block_size = 8192
             AND p.engine = CASE WHEN p.iodepth = 1 THEN 'psync' ELSE 'io_uring' END",
        ),
    };
    format!(
        "SELECT t.tablespace::text, p.workload, p.{x}::float8, p.iops, p.id, c.suite_call::text,
                pg_catalog.to_char(c.started_at, 'YYYY-MM-DD HH24:MI:SSOF')
           FROM (SELECT spcname AS tablespace FROM pg_catalog.pg_tablespace
                 UNION ALL SELECT 'pg_wal'::name) t
          CROSS JOIN LATERAL (
                SELECT q.suite_call, q.started_at FROM storlab.probes q
                 WHERE q.tablespace = t.tablespace AND q.suite = 'standard' AND q.ops > 0
                   AND q.suite_call IS NOT NULL AND q.label = 'profile' AND {call_filter}
                 ORDER BY q.started_at DESC LIMIT 1) c
           JOIN storlab.probes p ON p.suite_call = c.suite_call AND p.suite_call IS NOT NULL
                                AND p.tablespace = t.tablespace
          WHERE p.suite = 'standard' AND p.ops > 0 AND {row_filter}
          ORDER BY 1, 2, 3, 5"
    )
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
        sync_every: None,
        iodepth: item.iodepth,
        engine: item.engine(),
        precision_pct,
    }
}

/// How a suite runs its probes: for how long, how precise, under which
/// label, as which call (a uuid its probes share; None for a check's).
#[derive(Clone, Copy)]
pub struct SuiteRun<'a> {
    pub duration: Duration,
    pub precision_pct: Option<f64>,
    pub label: &'a str,
    pub call: Option<&'a str>,
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
    match measure(target, spec, Some(run.label), Some("standard"), run.call) {
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
            measure(target, spec, Some(run.label), Some("standard"), run.call)
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

pub(crate) fn warn_skip(target: &Target, what: &str, f: &Error) {
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
        let id = match measure(&target, spec, Some(&label), Some("fsync_cost"), None) {
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
/// depth, `repetitions` times over (each round the whole sweep, so that a
/// drift falls on every point alike); the stored ids. Every target must be
/// writable by the caller (42501 before anything runs), and the most the
/// call may take is said in a NOTICE first (54000 when statement_timeout is
/// shorter). With `skip_failed` (every tablespace), a target that cannot
/// be measured is skipped with a WARNING; a named one that cannot be
/// measured at all is an error.
pub fn profile(
    targets: &[Target],
    workers: &[usize],
    iodepths: &[u32],
    repetitions: usize,
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
    let per_target = workers.len() * items.len() * repetitions;
    let sizes: Vec<u64> = targets
        .iter()
        .map(|t| suite_file_once(t, max_workers))
        .collect();
    let most: Duration = targets
        .iter()
        .zip(&sizes)
        .map(|(t, &size)| probes_time(per_target, run.duration, size, fill_rate(&[t.name.clone()])))
        .sum();
    check_time("profile()", most, |s| {
        format!(
        "SET LOCAL statement_timeout = '{s}s' in a transaction for this call, or ask for less (duration, repetitions, fewer workers or iodepths, one tablespace)."
    )
    })?;
    notice!(
        "storlab: profiling {}: {per_target} probes{} ({} suite item{} at {} worker count{}, {repetitions} time{}), at most {} in all (waits for another session's probes of the same devices come on top)",
        targets.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", "),
        if targets.len() == 1 { "" } else { " each" },
        items.len(),
        if items.len() == 1 { "" } else { "s" },
        workers.len(),
        if workers.len() == 1 { "" } else { "s" },
        if repetitions == 1 { "" } else { "s" },
        seconds(most)
    );
    for (target, &file_size) in targets.iter().zip(&sizes) {
        let mut measured = 0;
        'target: for _ in 0..repetitions {
            for &w in workers {
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
    }
    Ok(ids)
}
