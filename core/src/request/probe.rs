//! A probe request, checked once, with the allowed range in every message
//! (22023 invalid_parameter_value); the suites' fixed workloads; the
//! checks of the suites' own arguments. Pure: plain #[test]s cover every limit.

use std::time::Duration;

use crate::error::{invalid, Result};
use crate::probe::{
    IoEngine, SyncMethod, Workload, MAX_IODEPTH, MAX_PRECISION_PCT, MIN_PRECISION_PCT,
};

pub const MAX_BLOCK_SIZE: i64 = 1024 * 1024;
pub const MAX_WORKERS: i64 = 64;
/// The buffers of every request in flight (block_size x workers x iodepth)
/// live in the backend's memory: 1 GiB is far beyond any useful probe.
pub const MAX_IN_FLIGHT_BYTES: i64 = 1 << 30;

/// The precision (in percent) the standard suite asks of each probe.
pub const SUITE_PRECISION_PCT: f64 = 5.0;

/// Arguments as SQL passes them, before any check.
#[derive(Debug, Clone)]
pub struct RawProbeArgs<'a> {
    pub workload: &'a str,
    pub block_size: i64,
    pub duration_us: i64,
    pub workers: i64,
    pub file_size: i64,
    pub sync_method: Option<&'a str>,
    pub iodepth: i64,
    pub engine: Option<&'a str>,
    pub precision_pct: Option<f64>,
    pub sync_every: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProbeArgs {
    pub workload: Workload,
    pub block_size: usize,
    pub duration: Duration,
    pub workers: usize,
    pub file_size: u64,
    pub sync: SyncMethod,
    pub iodepth: u32,
    pub engine: IoEngine,
    pub precision_pct: Option<f64>,
    /// None: every op a commit as `sync` says (each write, for a write
    /// workload with a sync). Some(n): every op one write, and `sync`
    /// after every n-th write of each worker and after its last (0: only
    /// after its last, as iozone -e flushes once at the end).
    pub sync_every: Option<u32>,
}

pub fn check(raw: &RawProbeArgs, max_duration: Duration) -> Result<ProbeArgs> {
    let workload: Workload = raw.workload.parse().map_err(invalid)?;
    if raw.block_size <= 0 || raw.block_size % 512 != 0 || raw.block_size > MAX_BLOCK_SIZE {
        return Err(invalid(format!(
            "block_size must be a multiple of 512 between 512 and {MAX_BLOCK_SIZE} bytes, not {}",
            raw.block_size
        )));
    }
    let duration = suite_duration(raw.duration_us, max_duration)?;
    if !(1..=MAX_WORKERS).contains(&raw.workers) {
        return Err(invalid(format!(
            "workers must be between 1 and {MAX_WORKERS}, not {}",
            raw.workers
        )));
    }
    if raw.file_size < raw.block_size * raw.workers {
        return Err(invalid(format!(
            "file_size must be at least block_size * workers ({} bytes), not {}",
            raw.block_size * raw.workers,
            raw.file_size
        )));
    }
    let sync = match raw.sync_method {
        None => workload.default_sync(),
        Some(s) => {
            let m: SyncMethod = s.parse().map_err(invalid)?;
            if !workload.is_write() && m != SyncMethod::None {
                return Err(invalid(format!(
                    "sync_method {s} applies to write workloads only; {} reads",
                    workload.as_str()
                )));
            }
            m
        }
    };
    let (sync_every, sync) = sync_every(raw, workload, sync)?;
    let (iodepth, engine) = queue(raw, workload, sync, sync_every)?;
    let precision_pct = precision(raw.precision_pct)?;
    if sync_every == Some(0) && precision_pct.is_some() {
        return Err(invalid(
            "precision_pct stops a probe on its 100 ms throughput samples, and with sync_every 0 \
             the one sync of each worker comes after the last sample: give precision_pct NULL \
             (the whole duration) or sync_every 1 or more",
        ));
    }
    Ok(ProbeArgs {
        workload,
        block_size: raw.block_size as usize,
        duration,
        workers: raw.workers as usize,
        file_size: raw.file_size as u64,
        sync,
        iodepth,
        engine,
        precision_pct,
        sync_every,
    })
}

/// probe()'s `sync_every` and the sync it calls: NULL keeps `sync` as
/// sync_method gave it (every op a commit: today's probes, and every probe
/// before 0.12.0). A number of writes syncs each worker's writes with
/// fsync (as iozone -e does; sync_method NULL) or the fsync or fdatasync
/// sync_method names, after every n-th write and after its last one (0:
/// only after its last). Only for randwrite and seqwrite: wal is one
/// commit per write by definition, and reads write nothing to sync.
fn sync_every(
    raw: &RawProbeArgs,
    workload: Workload,
    sync: SyncMethod,
) -> Result<(Option<u32>, SyncMethod)> {
    let Some(n) = raw.sync_every else {
        return Ok((None, sync));
    };
    if !(0..=i64::from(u32::MAX)).contains(&n) {
        return Err(invalid(format!(
            "sync_every must be NULL (each write synced as sync_method says), 0 (one sync after \
             each worker's last write, as iozone -e) or a number of writes per sync of 1 or \
             more, not {n}"
        )));
    }
    match workload {
        Workload::Randwrite | Workload::Seqwrite => {}
        Workload::Wal => {
            return Err(invalid(
                "sync_every applies to randwrite and seqwrite only; wal syncs every commit \
                 (sync_method), which a sync every N writes would contradict: use seqwrite \
                 with sync_every",
            ))
        }
        w => {
            return Err(invalid(format!(
                "sync_every applies to randwrite and seqwrite only; {} reads",
                w.as_str()
            )))
        }
    }
    let sync = match (raw.sync_method, sync) {
        (None, _) => SyncMethod::Fsync,
        (Some(_), m @ (SyncMethod::Fsync | SyncMethod::Fdatasync)) => m,
        (Some(_), m) => {
            let why = match m {
                SyncMethod::None => "none makes no sync",
                _ => "it syncs every write as the write is made",
            };
            return Err(invalid(format!(
                "sync_every takes sync_method NULL (fsync, as iozone -e), fsync or fdatasync, \
                 not {}: {why}",
                m.as_str()
            )));
        }
    };
    Ok((Some(n as u32), sync))
}

/// The queue depth and the engine that serves it (NULL: psync at depth 1,
/// io_uring above); a commit (a sync after the writes), and writes synced
/// every N (sync_every), only run on psync.
fn queue(
    raw: &RawProbeArgs,
    workload: Workload,
    sync: SyncMethod,
    sync_every: Option<u32>,
) -> Result<(u32, IoEngine)> {
    if !(1..=MAX_IODEPTH as i64).contains(&raw.iodepth) {
        return Err(invalid(format!(
            "iodepth must be between 1 and {MAX_IODEPTH}, not {}",
            raw.iodepth
        )));
    }
    let iodepth = raw.iodepth as u32;
    let engine = match raw.engine {
        None => IoEngine::for_depth(iodepth),
        Some(e) => e.parse().map_err(invalid)?,
    };
    if engine == IoEngine::Psync && iodepth > 1 {
        return Err(invalid(format!(
            "engine psync has one I/O in flight per worker; iodepth {iodepth} needs engine io_uring"
        )));
    }
    if engine == IoEngine::IoUring && sync_every.is_some() {
        return Err(invalid(format!(
            "sync_every runs on engine psync at iodepth 1, not {} at iodepth {iodepth}: each \
             sync waits for the writes before it, which a queue would still have in flight",
            engine.as_str()
        )));
    }
    if engine == IoEngine::IoUring && sync != SyncMethod::None {
        return Err(invalid(format!(
            "engine io_uring queues plain reads and writes; {} with sync_method {} is a commit, \
             which waits for its sync, and runs on psync at iodepth 1",
            workload.as_str(),
            sync.as_str()
        )));
    }
    let in_flight = raw.block_size * raw.workers * raw.iodepth;
    if in_flight > MAX_IN_FLIGHT_BYTES {
        return Err(invalid(format!(
            "block_size * workers * iodepth ({in_flight} bytes of buffers in flight) must be at most {MAX_IN_FLIGHT_BYTES}"
        )));
    }
    Ok((iodepth, engine))
}

/// A probe's precision: NULL (a fixed duration) or a percentage in range.
pub fn precision(pct: Option<f64>) -> Result<Option<f64>> {
    match pct {
        Some(p) if !(MIN_PRECISION_PCT..=MAX_PRECISION_PCT).contains(&p) => Err(invalid(format!(
            "precision_pct must be NULL (run for the whole duration) or between {MIN_PRECISION_PCT} and {MAX_PRECISION_PCT} percent, not {p}"
        ))),
        other => Ok(other),
    }
}

/// profile()'s queue depths: at least one, each within 1..=MAX_IODEPTH.
pub fn iodepths(depths: &[Option<i32>]) -> Result<Vec<u32>> {
    if depths.is_empty() {
        return Err(invalid(
            "iodepths must list at least one depth, e.g. '{1,8,32}'",
        ));
    }
    depths
        .iter()
        .map(|d| match d {
            Some(d) if (1..=MAX_IODEPTH as i32).contains(d) => Ok(*d as u32),
            other => Err(invalid(format!(
                "every element of iodepths must be between 1 and {MAX_IODEPTH}, not {}",
                other.map_or("NULL".to_string(), |d| d.to_string())
            ))),
        })
        .collect()
}

/// The shortest probe: below it a probe may complete no operation at all
/// (a first write that allocates, an fsync), and a figure of nothing would
/// be stored and compared.
pub const MIN_DURATION: Duration = Duration::from_millis(10);

/// A probe's (or a suite's per workload) duration: at least MIN_DURATION
/// and at most storlab.max_probe_duration.
pub fn suite_duration(duration_us: i64, max_duration: Duration) -> Result<Duration> {
    let min_us = MIN_DURATION.as_micros() as i64;
    if duration_us < min_us || duration_us as u128 > max_duration.as_micros() {
        return Err(invalid(format!(
            "duration must be at least {} ms and at most storlab.max_probe_duration ({} s), not {} s",
            MIN_DURATION.as_millis(),
            max_duration.as_secs(),
            duration_us as f64 / 1e6
        )));
    }
    Ok(Duration::from_micros(duration_us as u64))
}

/// profile()'s worker counts: at least one, each within 1..=MAX_WORKERS.
pub fn worker_counts(workers: &[Option<i32>]) -> Result<Vec<usize>> {
    if workers.is_empty() {
        return Err(invalid(
            "workers must list at least one worker count, e.g. '{1,4,8}'",
        ));
    }
    workers
        .iter()
        .map(|w| match w {
            Some(w) if (1..=MAX_WORKERS).contains(&(*w as i64)) => Ok(*w as usize),
            other => Err(invalid(format!(
                "every element of workers must be between 1 and {MAX_WORKERS}, not {}",
                other.map_or("NULL".to_string(), |w| w.to_string())
            ))),
        })
        .collect()
}

/// The most repetitions compare_tablespaces() takes of a figure.
pub const MAX_COMPARE_REPETITIONS: i32 = 20;

/// compare_tablespaces()'s repetitions: at least two of each figure (the
/// fewest Welch's test can tell volumes apart with), at most
/// MAX_COMPARE_REPETITIONS, the maximum not below the minimum.
pub fn compare_repetitions(min: i32, max: i32) -> Result<(usize, usize)> {
    if !(2..=MAX_COMPARE_REPETITIONS).contains(&min) {
        return Err(invalid(format!(
            "min_repetitions must be between 2 and {MAX_COMPARE_REPETITIONS}, not {min}: Welch's test, which decides a role, needs two repetitions of each figure"
        )));
    }
    if !(min..=MAX_COMPARE_REPETITIONS).contains(&max) {
        return Err(invalid(format!(
            "max_repetitions must be between min_repetitions ({min}) and {MAX_COMPARE_REPETITIONS}, not {max}"
        )));
    }
    Ok((min as usize, max as usize))
}

/// profile()'s `repetitions`: 1 (the sweep once) to MAX_COMPARE_REPETITIONS.
pub fn profile_repetitions(n: i32) -> Result<usize> {
    if !(1..=MAX_COMPARE_REPETITIONS).contains(&n) {
        return Err(invalid(format!(
            "repetitions must be between 1 and {MAX_COMPARE_REPETITIONS}, not {n}"
        )));
    }
    Ok(n as usize)
}

/// Scratch file size for the suites (profile, compare_tablespaces): at most
/// `cap` (storlab.suite_file_size, 256 MiB by default) and at most a quarter
/// of the free space, a whole number of 1 MiB (so of every suite block size),
/// never below what the workers need.
pub fn suite_file_size(cap: u64, free_bytes: u64, min_bytes: u64) -> u64 {
    const MIB: u64 = 1024 * 1024;
    let size = cap.min(free_bytes / 4) / MIB * MIB;
    size.max(min_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw() -> RawProbeArgs<'static> {
        RawProbeArgs {
            workload: "randread",
            block_size: 8192,
            duration_us: 5_000_000,
            workers: 1,
            file_size: 256 << 20,
            sync_method: None,
            iodepth: 1,
            engine: None,
            precision_pct: None,
            sync_every: None,
        }
    }
    const MAX: Duration = Duration::from_secs(300);

    #[test]
    fn compare_repetitions_are_checked() {
        assert_eq!(compare_repetitions(2, 4).unwrap(), (2, 4));
        assert_eq!(compare_repetitions(3, 3).unwrap(), (3, 3));
        let e = compare_repetitions(1, 4).unwrap_err();
        assert!(
            e.message
                .starts_with("min_repetitions must be between 2 and 20, not 1"),
            "{}",
            e.message
        );
        let e = compare_repetitions(3, 2).unwrap_err();
        assert_eq!(
            e.message,
            "max_repetitions must be between min_repetitions (3) and 20, not 2"
        );
        assert!(compare_repetitions(2, 21).is_err());
    }

    #[test]
    fn defaults_pass_and_take_the_workload_sync() {
        let a = check(&raw(), MAX).unwrap();
        assert_eq!(a.sync, SyncMethod::None);
        let w = check(
            &RawProbeArgs {
                workload: "wal",
                ..raw()
            },
            MAX,
        )
        .unwrap();
        assert_eq!(
            w.sync,
            SyncMethod::Fdatasync,
            "WAL flushes with fdatasync on Linux by default"
        );
    }

    #[test]
    fn each_limit_names_its_range() {
        let e = |r: RawProbeArgs| check(&r, MAX).unwrap_err().message;
        assert!(e(RawProbeArgs {
            block_size: 1000,
            ..raw()
        })
        .contains("multiple of 512"));
        assert!(e(RawProbeArgs {
            block_size: 2 << 20,
            ..raw()
        })
        .contains("1048576"));
        assert!(e(RawProbeArgs {
            block_size: 0,
            ..raw()
        })
        .contains("block_size"));
        assert!(e(RawProbeArgs {
            duration_us: 0,
            ..raw()
        })
        .contains("at least 10 ms"));
        assert!(e(RawProbeArgs {
            duration_us: 301_000_000,
            ..raw()
        })
        .contains("300 s"));
        assert!(e(RawProbeArgs {
            workers: 0,
            ..raw()
        })
        .contains("between 1 and 64"));
        assert!(e(RawProbeArgs {
            workers: 65,
            ..raw()
        })
        .contains("between 1 and 64"));
        assert!(e(RawProbeArgs {
            file_size: 4096,
            ..raw()
        })
        .contains("at least block_size * workers"));
        assert!(e(RawProbeArgs {
            workload: "scan",
            ..raw()
        })
        .contains("randread"));
        assert!(e(RawProbeArgs {
            sync_method: Some("sometimes"),
            workload: "wal",
            ..raw()
        })
        .contains("fdatasync"));
        assert!(e(RawProbeArgs {
            sync_method: Some("fsync"),
            ..raw()
        })
        .contains("write workloads only"));
    }

    #[test]
    fn depth_picks_the_engine_and_commits_stay_on_psync() {
        let with = |iodepth, engine, workload| {
            check(
                &RawProbeArgs {
                    iodepth,
                    engine,
                    workload,
                    ..raw()
                },
                MAX,
            )
        };
        let a = with(1, None, "randread").unwrap();
        assert_eq!((a.iodepth, a.engine), (1, IoEngine::Psync));
        let a = with(32, None, "randwrite").unwrap();
        assert_eq!((a.iodepth, a.engine), (32, IoEngine::IoUring));
        let a = with(1, Some("io_uring"), "seqread").unwrap();
        assert_eq!((a.iodepth, a.engine), (1, IoEngine::IoUring));
        let e = |r: Result<ProbeArgs>| r.unwrap_err().message;
        assert!(e(with(0, None, "randread")).contains("between 1 and 256"));
        assert!(e(with(257, None, "randread")).contains("between 1 and 256"));
        assert!(e(with(8, Some("psync"), "randread")).contains("needs engine io_uring"));
        assert!(e(with(1, Some("aio"), "randread")).contains("psync, io_uring"));
        assert!(e(with(1, Some("io_uring"), "wal")).contains("runs on psync"));
        assert!(e(with(4, None, "wal")).contains("runs on psync"));
        let big = check(
            &RawProbeArgs {
                block_size: 1 << 20,
                workers: 8,
                iodepth: 256,
                ..raw()
            },
            MAX,
        );
        assert!(e(big).contains("buffers in flight"));
    }

    #[test]
    fn precision_is_null_or_in_range() {
        assert_eq!(precision(None).unwrap(), None);
        assert_eq!(precision(Some(2.5)).unwrap(), Some(2.5));
        for bad in [0.0, -1.0, 0.05, 50.5, f64::NAN, f64::INFINITY] {
            assert!(
                precision(Some(bad))
                    .unwrap_err()
                    .message
                    .contains("between 0.1 and 50"),
                "{bad}"
            );
        }
        assert_eq!(iodepths(&[Some(1), Some(32)]).unwrap(), vec![1, 32]);
        assert!(iodepths(&[]).unwrap_err().message.contains("at least one"));
        assert!(iodepths(&[Some(300)])
            .unwrap_err()
            .message
            .contains("between 1 and 256"));
        assert!(iodepths(&[None]).unwrap_err().message.contains("NULL"));
    }

    #[test]
    fn explicit_sync_for_writes_is_kept() {
        let a = check(
            &RawProbeArgs {
                workload: "randwrite",
                sync_method: Some("open_datasync"),
                ..raw()
            },
            MAX,
        );
        assert_eq!(a.unwrap().sync, SyncMethod::OpenDatasync);
    }

    #[test]
    fn sync_every_null_is_every_probe_before_it() {
        for (workload, sync_method) in [
            ("randwrite", None),
            ("randwrite", Some("fsync")),
            ("seqwrite", Some("open_datasync")),
            ("wal", None),
            ("randread", None),
        ] {
            let a = check(
                &RawProbeArgs {
                    workload,
                    sync_method,
                    ..raw()
                },
                MAX,
            )
            .unwrap();
            assert_eq!(a.sync_every, None, "{workload} {sync_method:?}");
        }
        let a = check(
            &RawProbeArgs {
                workload: "randwrite",
                ..raw()
            },
            MAX,
        )
        .unwrap();
        assert_eq!(a.sync, SyncMethod::None, "no sync unless asked, as before");
    }

    #[test]
    fn sync_every_syncs_with_fsync_unless_sync_method_says_fdatasync() {
        let with = |workload, sync_method, sync_every| {
            check(
                &RawProbeArgs {
                    workload,
                    sync_method,
                    sync_every,
                    ..raw()
                },
                MAX,
            )
            .map(|a| (a.sync_every, a.sync))
        };
        assert_eq!(
            with("randwrite", None, Some(0)).unwrap(),
            (Some(0), SyncMethod::Fsync),
            "iozone -e calls fsync"
        );
        assert_eq!(
            with("seqwrite", Some("fdatasync"), Some(8)).unwrap(),
            (Some(8), SyncMethod::Fdatasync)
        );
        assert_eq!(
            with("randwrite", Some("fsync"), Some(1)).unwrap(),
            (Some(1), SyncMethod::Fsync)
        );
        let e = |r: Result<(Option<u32>, SyncMethod)>| r.unwrap_err().message;
        let negative = e(with("randwrite", None, Some(-1)));
        assert!(
            negative.starts_with("sync_every must be NULL"),
            "{negative}"
        );
        assert!(negative.ends_with("1 or more, not -1"), "{negative}");
        assert!(e(with("wal", None, Some(0))).contains("wal syncs every commit"));
        assert!(e(with("randread", None, Some(0))).contains("randread reads"));
        assert!(e(with("seqread", None, Some(4))).contains("seqread reads"));
        assert!(
            e(with("randwrite", Some("none"), Some(0))).contains("not none: none makes no sync")
        );
        assert!(e(with("randwrite", Some("open_sync"), Some(0))).contains("not open_sync"));
        // every refusal is the request's: nothing is measured
        for bad in [
            with("randwrite", None, Some(-5)),
            with("wal", Some("fdatasync"), Some(2)),
        ] {
            assert_eq!(
                bad.unwrap_err().state,
                crate::error::SqlState::InvalidParameterValue
            );
        }
    }

    #[test]
    fn sync_every_runs_on_psync_and_for_its_whole_duration_at_0() {
        let with = |iodepth, engine, precision_pct, sync_every| {
            check(
                &RawProbeArgs {
                    workload: "randwrite",
                    iodepth,
                    engine,
                    precision_pct,
                    sync_every: Some(sync_every),
                    ..raw()
                },
                MAX,
            )
        };
        let e = |r: Result<ProbeArgs>| r.unwrap_err().message;
        assert!(e(with(8, None, None, 0)).contains("runs on engine psync at iodepth 1"));
        assert!(e(with(1, Some("io_uring"), None, 0)).contains("runs on engine psync"));
        assert!(e(with(1, None, Some(5.0), 0)).starts_with("precision_pct stops a probe"));
        let a = with(1, Some("psync"), Some(5.0), 16).unwrap();
        assert_eq!((a.sync_every, a.precision_pct), (Some(16), Some(5.0)));
    }

    #[test]
    fn suite_arguments_are_checked() {
        assert_eq!(
            suite_duration(2_000_000, MAX).unwrap(),
            Duration::from_secs(2)
        );
        assert!(suite_duration(0, MAX)
            .unwrap_err()
            .message
            .contains("at least 10 ms"));
        assert!(suite_duration(301_000_000, MAX)
            .unwrap_err()
            .message
            .contains("300 s"));
        // a microsecond measures nothing: refused, as is anything under 10 ms
        assert!(suite_duration(1, MAX).is_err());
        assert!(suite_duration(9_999, MAX).is_err());
        assert_eq!(suite_duration(10_000, MAX).unwrap(), MIN_DURATION);
        assert_eq!(worker_counts(&[Some(1), Some(4)]).unwrap(), vec![1, 4]);
        assert!(worker_counts(&[])
            .unwrap_err()
            .message
            .contains("at least one"));
        assert!(worker_counts(&[Some(1), None])
            .unwrap_err()
            .message
            .contains("NULL"));
        assert!(worker_counts(&[Some(65)])
            .unwrap_err()
            .message
            .contains("between 1 and 64"));
    }

    #[test]
    fn suite_files_fit_a_quarter_of_free_space() {
        const CAP: u64 = 256 << 20;
        assert_eq!(suite_file_size(CAP, 100 << 30, 0), 256 << 20);
        assert_eq!(suite_file_size(CAP, 400 << 20, 0), 100 << 20);
        assert_eq!(
            suite_file_size(CAP, 1 << 20, 8192),
            8192,
            "never below what the workers need"
        );
        assert_eq!(
            suite_file_size(16 << 20, 100 << 30, 0),
            16 << 20,
            "the cap is a setting"
        );
        assert_eq!(
            suite_file_size((16 << 20) + 5, 100 << 30, 0),
            16 << 20,
            "whole MiB"
        );
    }
}

/// One workload of the standard suite that `profile` runs and
/// `compare_tablespaces` compares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SuiteItem {
    pub workload: Workload,
    pub block_size: usize,
    pub sync: SyncMethod,
    /// O_DIRECT, so that reads measure the device and not the page cache.
    /// The WAL item writes through the page cache and flushes with fdatasync,
    /// as PostgreSQL's WAL does by default on Linux.
    pub direct: bool,
    /// Requests in flight per worker: 1 (psync) for all but the queued
    /// randread, which shows what the volume serves with a queue.
    pub iodepth: u32,
}

impl SuiteItem {
    pub fn engine(&self) -> IoEngine {
        IoEngine::for_depth(self.iodepth)
    }

    /// Whether the item can run at another queue depth: plain reads and
    /// writes can, a commit (a sync after the write) cannot.
    pub fn queueable(&self) -> bool {
        self.sync == SyncMethod::None
    }

    /// Its name in checks and regressions: the workload, with the depth
    /// when queued ("randread_qd32").
    pub fn name(&self) -> String {
        match self.iodepth {
            1 => self.workload.as_str().to_string(),
            d => format!("{}_qd{d}", self.workload.as_str()),
        }
    }

    /// The suite item of that name.
    pub fn named(name: &str) -> Option<SuiteItem> {
        SUITE
            .iter()
            .copied()
            .find(|i| i.name().eq_ignore_ascii_case(name.trim()))
    }

    /// The item at `iodepth`.
    pub fn at_depth(self, iodepth: u32) -> SuiteItem {
        SuiteItem { iodepth, ..self }
    }
}

/// The depth of the standard suite's queued randread: fio's usual figure
/// for a device's random-read ceiling.
pub const SUITE_QUEUED_DEPTH: u32 = 32;

pub const SUITE: [SuiteItem; 6] = [
    SuiteItem {
        workload: Workload::Randread,
        block_size: 8192,
        sync: SyncMethod::None,
        direct: true,
        iodepth: 1,
    },
    SuiteItem {
        workload: Workload::Randwrite,
        block_size: 8192,
        sync: SyncMethod::None,
        direct: true,
        iodepth: 1,
    },
    SuiteItem {
        workload: Workload::Wal,
        block_size: 8192,
        sync: SyncMethod::Fdatasync,
        direct: false,
        iodepth: 1,
    },
    SuiteItem {
        workload: Workload::Seqwrite,
        block_size: 131072,
        sync: SyncMethod::None,
        direct: true,
        iodepth: 1,
    },
    SuiteItem {
        workload: Workload::Seqread,
        block_size: 131072,
        sync: SyncMethod::None,
        direct: true,
        iodepth: 1,
    },
    SuiteItem {
        workload: Workload::Randread,
        block_size: 8192,
        sync: SyncMethod::None,
        direct: true,
        iodepth: SUITE_QUEUED_DEPTH,
    },
];

/// One test of the pg_test_fsync suite: `writes` writes of `write_size`
/// bytes, then the sync method, always rewriting from the start of the file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FsyncTest {
    pub test: &'static str,
    pub method: SyncMethod,
    pub write_size: usize,
    pub writes: u32,
}

impl FsyncTest {
    /// pg_test_fsync opens the file with O_DIRECT for the open_* methods and
    /// writes through the page cache for the others; so do we, so that the
    /// figures can be compared with it.
    pub fn direct(&self) -> bool {
        matches!(self.method, SyncMethod::OpenDatasync | SyncMethod::OpenSync)
    }
}

/// pg_test_fsync's tests, in its order.
pub fn fsync_tests() -> Vec<FsyncTest> {
    use SyncMethod::*;
    let methods = [OpenDatasync, Fdatasync, Fsync, OpenSync];
    let mut tests = Vec::new();
    for method in methods {
        tests.push(FsyncTest {
            test: "one 8kB write per sync",
            method,
            write_size: 8192,
            writes: 1,
        });
    }
    for method in methods {
        tests.push(FsyncTest {
            test: "two 8kB writes per sync",
            method,
            write_size: 8192,
            writes: 2,
        });
    }
    for (write_size, writes) in [(16384, 1), (8192, 2), (4096, 4), (2048, 8), (1024, 16)] {
        tests.push(FsyncTest {
            test: "open_sync, 16kB in different write sizes",
            method: OpenSync,
            write_size,
            writes,
        });
    }
    tests.push(FsyncTest {
        test: "8kB write, no sync",
        method: None,
        write_size: 8192,
        writes: 1,
    });
    tests
}

#[cfg(test)]
mod suite_tests {
    use super::*;

    #[test]
    fn fsync_suite_is_pg_test_fsyncs() {
        let t = fsync_tests();
        assert_eq!(t.len(), 14);
        assert!(t
            .iter()
            .filter(|t| t.test.starts_with("open_sync, 16kB"))
            .all(|t| t.write_size * t.writes as usize == 16384));
        assert!(t
            .iter()
            .all(|t| t.direct()
                == matches!(t.method, SyncMethod::OpenDatasync | SyncMethod::OpenSync)));
        assert_eq!(t.last().unwrap().method, SyncMethod::None);
    }

    #[test]
    fn suite_covers_every_workload_once_and_randread_queued() {
        let queued: Vec<_> = SUITE.iter().filter(|s| s.iodepth > 1).collect();
        assert_eq!(queued.len(), 1);
        assert_eq!(queued[0].workload, Workload::Randread);
        assert_eq!(queued[0].engine(), IoEngine::IoUring);
        assert!(SUITE.iter().all(|s| s.iodepth == 1 || s.queueable()));
        let mut names: Vec<_> = SUITE
            .iter()
            .filter(|s| s.iodepth == 1)
            .map(|s| s.workload.as_str())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["randread", "randwrite", "seqread", "seqwrite", "wal"]
        );
        assert!(SUITE.iter().all(|s| s.block_size % 512 == 0));
    }
}
