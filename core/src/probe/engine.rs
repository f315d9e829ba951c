//! `run_probe`: fill a scratch file, run the workload from N threads for a
//! fixed time, and merge their latency histograms.
//!
//! Threading contract with the caller (see `caller`): its methods run on
//! the calling thread only (PostgreSQL's interrupt checks are not
//! thread-safe), and it is asked to stop at least at every sample and at
//! the end of the run. Workers never call back into the caller.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::caller::Caller;
use super::error::ProbeError;
use super::precision::Sampler;
use super::progress::Progress;
use super::scratch::ScratchFile;
use super::spec::ProbeSpec;
use super::start_gate::StartGate;
use super::worker::Worker;
use super::Histogram;

/// What a probe measured.
#[derive(Debug, Clone)]
pub struct ProbeResult {
    /// Operations completed: reads, or commits (writes_per_sync writes plus
    /// the sync) for write workloads.
    pub ops: u64,
    pub bytes: u64,
    /// Wall time of the timed phase.
    pub elapsed: Duration,
    /// Latency of every op, all workers merged.
    pub histogram: Histogram,
    /// Whether O_DIRECT was really used.
    pub direct: bool,
    /// Things the user should know to read the numbers right.
    pub notices: Vec<String>,
    /// Half-width of the 95 % confidence interval of the mean IOPS over
    /// the run's 100 ms samples, in percent; None below two samples, and
    /// for sync_every 0, whose one sync per worker comes after the samples.
    pub iops_ci95_pct: Option<f64>,
    /// sync_every: the syncs made apart from the ops, all workers', and
    /// the time they took, summed over the workers (inside `elapsed`:
    /// a worker's syncs are part of its run). Zero otherwise.
    pub syncs: u64,
    pub sync_time: Duration,
}

impl ProbeResult {
    pub fn iops(&self) -> f64 {
        per_second(self.ops as f64, self.elapsed)
    }

    pub fn mib_per_sec(&self) -> f64 {
        per_second(self.bytes as f64 / (1024.0 * 1024.0), self.elapsed)
    }
}

fn per_second(amount: f64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 {
        amount / secs
    } else {
        0.0
    }
}

/// Blocks every signal in the calling thread until dropped.
///
/// Threads inherit the signal mask of the thread that spawns them, so workers
/// spawned under this guard never run a signal handler. That matters inside
/// a PostgreSQL backend: its handlers (SIGINT for cancel, SIGALRM for
/// statement_timeout, SIGUSR1, SIGTERM) set the backend's flags and latch and
/// must run on the backend's own thread, which polls for them.
struct BlockSignals(libc::sigset_t);

impl BlockSignals {
    fn new() -> BlockSignals {
        // SAFETY: sigset_t is plain data; pthread_sigmask only reads `all`
        // and writes the previous mask into `old`.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
            BlockSignals(old)
        }
    }
}

impl Drop for BlockSignals {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in new().
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut());
        }
    }
}

/// Runs one probe. See the module docs for the caller's contract: when it
/// asks to stop, the workers finish their current op, the scratch file is
/// removed and `Err(Cancelled)` comes back. The scratch file is removed on
/// every path, including an unwind out of the caller.
pub fn run_probe(spec: &ProbeSpec, caller: &mut dyn Caller) -> Result<ProbeResult, ProbeError> {
    spec.validate()?;
    let scratch = ScratchFile::create(
        &spec.dir,
        spec.file_size,
        spec.block_size,
        spec.direct,
        &mut || caller.stop_requested(),
    )?;
    let mut notices = Vec::new();
    if spec.direct && !scratch.direct() {
        notices.push(format!(
            "O_DIRECT refused by the filesystem at {}; ran buffered with the file's pages \
             dropped (blocks read again may be served from the page cache)",
            spec.dir.display()
        ));
    }
    let timed = run_timed_phase(spec, &scratch, caller)?;
    // samples count writes while they are made: with sync_every 0 the
    // figure is those writes and the syncs after them, which no sample saw
    let iops_ci95_pct = match spec.sync_every {
        Some(0) => None,
        _ => timed.iops_ci95_pct,
    };
    Ok(ProbeResult {
        ops: timed.ops,
        bytes: timed.bytes,
        elapsed: timed.elapsed,
        histogram: timed.histogram,
        direct: scratch.direct(),
        notices,
        iops_ci95_pct,
        syncs: timed.syncs,
        sync_time: timed.sync_time,
    })
    // `scratch` is dropped here, and on every `?` above: the file is gone.
}

struct TimedPhase {
    ops: u64,
    bytes: u64,
    elapsed: Duration,
    histogram: Histogram,
    iops_ci95_pct: Option<f64>,
    syncs: u64,
    sync_time: Duration,
}

/// State the calling thread shares with the workers.
struct Shared {
    /// Set by the caller at the end (or cancel), or by a worker that failed.
    stop: AtomicBool,
    /// Set before `stop` when the figures will not be used (cancel, unwind,
    /// a failed worker): a sync_every worker skips its last sync.
    abandon: AtomicBool,
    gate: StartGate,
    /// Each worker's published progress, by index.
    progress: Vec<Progress>,
    /// Raised by the calling thread at every sample of a probe asked for a
    /// precision: workers then publish their recent latencies.
    epoch: AtomicU64,
}

impl Shared {
    fn new(workers: usize) -> Shared {
        Shared {
            stop: AtomicBool::new(false),
            abandon: AtomicBool::new(false),
            gate: StartGate::new(),
            progress: (0..workers).map(|_| Progress::default()).collect(),
            epoch: AtomicU64::new(0),
        }
    }

    fn ops(&self) -> u64 {
        self.progress.iter().map(Progress::ops).sum()
    }

    fn p99_us(&self) -> Option<f64> {
        let mut all = Histogram::new();
        for p in &self.progress {
            p.merge_into(&mut all);
        }
        (all.count() > 0).then(|| all.percentile_us(99.0))
    }
}

/// Stops and releases the workers when the calling thread leaves the
/// scope by any path, in particular an unwind out of the caller: the scope
/// then joins threads that are about to exit instead of hanging.
struct StopOnDrop<'a>(&'a Shared);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.abandon.store(true, Ordering::SeqCst);
        self.0.stop.store(true, Ordering::SeqCst);
        self.0.gate.open();
    }
}

fn run_timed_phase(
    spec: &ProbeSpec,
    scratch: &ScratchFile,
    caller: &mut dyn Caller,
) -> Result<TimedPhase, ProbeError> {
    // Preparing every worker before spawning any means a setup error
    // needs no thread cleanup at all.
    let seed = fastrand::u64(..);
    let workers = (0..spec.workers)
        .map(|index| Worker::prepare(spec, scratch, index, seed))
        .collect::<Result<Vec<_>, _>>()?;
    let shared = Shared::new(workers.len());

    thread::scope(|scope| {
        let _stop_guard = StopOnDrop(&shared);
        let mut handles = Vec::with_capacity(workers.len());
        let mut spawn_error = None;
        let signals_blocked = BlockSignals::new();
        for (index, worker) in workers.into_iter().enumerate() {
            let shared = &shared;
            match thread::Builder::new()
                .name(format!("storlab-probe-{index}"))
                .spawn_scoped(scope, move || {
                    worker.run(
                        &shared.stop,
                        &shared.abandon,
                        &shared.gate,
                        &shared.progress[index],
                        &shared.epoch,
                    )
                }) {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    spawn_error = Some(ProbeError::io("starting a probe worker thread", e));
                    shared.abandon.store(true, Ordering::SeqCst);
                    shared.stop.store(true, Ordering::SeqCst);
                    break;
                }
            }
        }
        drop(signals_blocked);

        shared.gate.wait_for_arrivals(handles.len());
        let start = Instant::now();
        shared.gate.open();
        let mut sampler = Sampler::new(spec.precision_pct);
        let cancelled = wait_until_done(start, spec.duration, &shared, &mut sampler, caller);
        if cancelled {
            shared.abandon.store(true, Ordering::SeqCst);
        }
        shared.stop.store(true, Ordering::SeqCst);

        let mut outcome = TimedPhase {
            ops: 0,
            bytes: 0,
            elapsed: Duration::ZERO,
            histogram: Histogram::new(),
            iops_ci95_pct: sampler.ci95_pct(),
            syncs: 0,
            sync_time: Duration::ZERO,
        };
        let mut first_error = spawn_error;
        for (index, handle) in handles.into_iter().enumerate() {
            match handle.join() {
                Ok(done) => {
                    outcome.ops += done.ops;
                    outcome.bytes = outcome.bytes.saturating_add(done.bytes);
                    outcome.histogram.merge(&done.histogram);
                    outcome.syncs += done.syncs;
                    outcome.sync_time += done.sync_time;
                    if first_error.is_none() {
                        first_error = done.error;
                    }
                }
                Err(panic) => {
                    first_error.get_or_insert_with(|| ProbeError::Io {
                        context: format!("probe worker {index} panicked"),
                        source: io::Error::other(panic_message(&panic)),
                    });
                }
            }
        }
        outcome.elapsed = start.elapsed();

        if cancelled {
            return Err(ProbeError::Cancelled);
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(outcome),
        }
    })
}

/// Waits until `duration` has passed since `start`, a worker raised
/// `stop`, the sampler found the answer precise, or the caller asked to
/// stop (returns true only for the last). Samples throughput on the way.
/// The caller pauses until the next sample or the end, whichever comes
/// first (the engine has nothing to do before), or until its own wakeup; a
/// worker that failed is therefore seen at the next sample at the latest.
fn wait_until_done(
    start: Instant,
    duration: Duration,
    shared: &Shared,
    sampler: &mut Sampler,
    caller: &mut dyn Caller,
) -> bool {
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return false;
        }
        let elapsed = start.elapsed();
        if elapsed >= duration {
            return false;
        }
        let wake = sampler.next_due().min(duration);
        caller.pause(wake.saturating_sub(elapsed));
        if caller.stop_requested() {
            return true;
        }
        let elapsed = start.elapsed();
        if sampler.due(elapsed) {
            let ops = shared.ops();
            let p99 = sampler.wants_p99(ops).then(|| shared.p99_us()).flatten();
            sampler.sample(elapsed, ops, p99);
            if sampler.wants_latencies() {
                shared.epoch.fetch_add(1, Ordering::Relaxed);
            }
            if sampler.precise(elapsed) {
                return false;
            }
        }
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".into())
}

#[cfg(test)]
mod tests {
    #[test]
    fn workers_never_run_signal_handlers_and_the_caller_gets_its_mask_back() {
        fn sigint_blocked() -> bool {
            // SAFETY: queries the calling thread's mask without changing it.
            unsafe {
                let mut cur: libc::sigset_t = std::mem::zeroed();
                libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut cur);
                libc::sigismember(&cur, libc::SIGINT) == 1
            }
        }
        assert!(
            !sigint_blocked(),
            "test threads start with SIGINT deliverable"
        );
        let guard = super::BlockSignals::new();
        let in_worker = std::thread::spawn(sigint_blocked).join().unwrap();
        drop(guard);
        assert!(in_worker, "a thread spawned under the guard blocks SIGINT");
        assert!(!sigint_blocked(), "the mask is restored");
    }

    use super::*;
    use crate::probe::test_dirs::TestDir;
    use crate::probe::{IoEngine, SyncMethod, Workload, MAX_BLOCK_SIZE, MAX_IODEPTH, MAX_WORKERS};
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::path::Path;
    use std::path::PathBuf;

    fn quick(dir: &Path, workload: Workload) -> ProbeSpec {
        ProbeSpec {
            duration: Duration::from_millis(150),
            file_size: 4 << 20,
            ..ProbeSpec::new(dir, workload)
        }
    }

    fn never() -> impl FnMut() -> bool {
        || false
    }

    /// A `poll` that asks to stop once `after` has passed, remembering when
    /// it first did, so that a test can time how promptly the run stopped.
    struct CancelAfter {
        began: Instant,
        after: Duration,
        asked: Option<Instant>,
    }

    impl CancelAfter {
        fn new(after: Duration) -> CancelAfter {
            CancelAfter {
                began: Instant::now(),
                after,
                asked: None,
            }
        }

        fn poll(&mut self) -> bool {
            if self.began.elapsed() > self.after {
                self.asked.get_or_insert_with(Instant::now);
                true
            } else {
                false
            }
        }
    }

    fn assert_invalid(spec: &ProbeSpec, needle: &str) {
        match run_probe(spec, &mut never()) {
            Err(ProbeError::InvalidSpec(msg)) => assert!(msg.contains(needle), "{msg}"),
            other => panic!("expected InvalidSpec containing {needle:?}, got {other:?}"),
        }
    }

    #[test]
    fn invalid_specs_are_rejected_before_touching_the_disk() {
        let dir = TestDir::new_on_disk("engine-invalid");
        let base = quick(dir.path(), Workload::Randread);
        let with = |f: &dyn Fn(&mut ProbeSpec)| {
            let mut s = base.clone();
            f(&mut s);
            s
        };
        assert_invalid(&with(&|s| s.block_size = 0), "block_size");
        assert_invalid(&with(&|s| s.block_size = 1000), "multiple of 512");
        assert_invalid(&with(&|s| s.block_size = MAX_BLOCK_SIZE + 512), "at most");
        assert_invalid(&with(&|s| s.workers = 0), "workers");
        assert_invalid(&with(&|s| s.workers = MAX_WORKERS + 1), "workers");
        assert_invalid(
            &with(&|s| {
                s.workers = 4;
                s.file_size = 3 * 8192;
            }),
            "one block per worker",
        );
        assert_invalid(&with(&|s| s.duration = Duration::ZERO), "duration");
        assert_invalid(
            &with(&|s| s.sync = SyncMethod::Fsync),
            "write workloads only",
        );
        assert_invalid(&with(&|s| s.writes_per_sync = 2), "write workloads only");
        assert_invalid(&with(&|s| s.writes_per_sync = 0), "at least 1");
        assert_invalid(&with(&|s| s.rewind = true), "rewind");
        assert_invalid(&with(&|s| s.dir = PathBuf::new()), "dir");
        let mut randwrite = quick(dir.path(), Workload::Randwrite);
        randwrite.rewind = true;
        assert_invalid(&randwrite, "rewind");
        assert!(dir.entries().is_empty());

        for w in Workload::ALL {
            quick(dir.path(), w).validate().unwrap();
        }
    }

    #[test]
    fn successful_run_leaves_no_file_and_counts_consistently() {
        let dir = TestDir::new_on_disk("engine-ok");
        let spec = ProbeSpec {
            direct: false,
            ..quick(dir.path(), Workload::Seqread)
        };
        let r = run_probe(&spec, &mut never()).unwrap();
        assert!(r.ops > 0);
        assert_eq!(r.bytes, r.ops * 8192);
        assert_eq!(r.histogram.count(), r.ops);
        assert!(r.elapsed >= spec.duration, "{:?}", r.elapsed);
        assert!(r.elapsed < spec.duration + Duration::from_millis(200));
        assert!(!r.direct);
        assert!(r.notices.is_empty(), "{:?}", r.notices);
        assert!(r.iops() > 0.0 && r.mib_per_sec() > 0.0);
        assert!(dir.entries().is_empty(), "{:?}", dir.entries());
    }

    #[test]
    fn refused_direct_is_reported_and_runs_buffered() {
        // /dev/shm where it refuses O_DIRECT (kernels before 6.6), else ramfs.
        let Some(dir) = TestDir::refusing_direct("engine-nodirect") else {
            return;
        };
        let r = run_probe(&quick(dir.path(), Workload::Randread), &mut never()).unwrap();
        assert!(!r.direct);
        assert_eq!(r.notices.len(), 1, "{:?}", r.notices);
        assert!(
            r.notices[0].contains("O_DIRECT refused"),
            "{}",
            r.notices[0]
        );
        assert!(r.ops > 0);
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn direct_is_used_on_a_disk() {
        let dir = TestDir::new_on_disk("engine-direct");
        let r = run_probe(&quick(dir.path(), Workload::Randread), &mut never()).unwrap();
        if !r.direct {
            eprintln!(
                "skipping: /var/tmp refuses O_DIRECT on this machine: {:?}",
                r.notices
            );
            return;
        }
        assert!(r.notices.is_empty(), "{:?}", r.notices);
        assert!(r.ops > 0);
        // Uncached 8 KiB reads from a device cannot be as fast as memory
        // copies; a mean under 1 us would mean O_DIRECT was not in effect.
        assert!(r.histogram.mean_us() > 1.0, "{}", r.histogram.mean_us());
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn wal_commits_count_groups_of_writes() {
        let dir = TestDir::new_on_disk("engine-wal");
        let spec = ProbeSpec {
            writes_per_sync: 2,
            rewind: true,
            ..quick(dir.path(), Workload::Wal)
        };
        assert_eq!(spec.sync, SyncMethod::Fdatasync);
        let r = run_probe(&spec, &mut never()).unwrap();
        assert!(r.ops > 0);
        assert_eq!(r.bytes, r.ops * 2 * 8192);
        assert_eq!(r.histogram.count(), r.ops);
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn every_write_workload_and_sync_method_runs() {
        let dir = TestDir::new_on_disk("engine-writes");
        for (workload, sync) in [
            (Workload::Randwrite, SyncMethod::None),
            (Workload::Seqwrite, SyncMethod::Fsync),
            (Workload::Wal, SyncMethod::OpenDatasync),
            (Workload::Wal, SyncMethod::OpenSync),
        ] {
            let spec = ProbeSpec {
                sync,
                duration: Duration::from_millis(60),
                ..quick(dir.path(), workload)
            };
            let r = run_probe(&spec, &mut never()).unwrap();
            assert!(r.ops > 0, "{workload} {sync}");
            assert_eq!(r.bytes, r.ops * 8192, "{workload} {sync}");
        }
        assert!(dir.entries().is_empty());
    }

    /// A buffered randwrite probe with sync_every, one worker.
    fn synced_every(dir: &Path, n: u32) -> ProbeSpec {
        ProbeSpec {
            sync: SyncMethod::Fsync,
            sync_every: Some(n),
            direct: false,
            ..quick(dir, Workload::Randwrite)
        }
    }

    #[test]
    fn sync_every_0_syncs_once_after_the_writes_and_counts_it_in_the_time() {
        let dir = TestDir::new_on_disk("engine-sync-end");
        let spec = synced_every(dir.path(), 0);
        let r = run_probe(&spec, &mut never()).unwrap();
        // every op is one write, timed alone
        assert!(r.ops > 0);
        assert_eq!(r.bytes, r.ops * 8192);
        assert_eq!(r.histogram.count(), r.ops);
        // one sync, after the duration's writes, inside the elapsed time
        assert_eq!(r.syncs, 1);
        assert!(r.sync_time > Duration::ZERO);
        assert!(
            r.elapsed >= spec.duration + r.sync_time,
            "{:?} < {:?} + {:?}",
            r.elapsed,
            spec.duration,
            r.sync_time
        );
        // so the rates are the writes over the writes' and the sync's time
        assert!((r.iops() - r.ops as f64 / r.elapsed.as_secs_f64()).abs() < 1e-6);
        assert_eq!(
            r.iops_ci95_pct, None,
            "samples of the writes say nothing of the sync after them"
        );
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn sync_every_n_syncs_after_every_nth_write_and_after_the_last() {
        let dir = TestDir::new_on_disk("engine-sync-n");
        for n in [1, 4] {
            let r = run_probe(&synced_every(dir.path(), n), &mut never()).unwrap();
            assert!(r.ops > 0, "{n}");
            assert_eq!(r.histogram.count(), r.ops, "{n}");
            assert_eq!(r.syncs, r.ops.div_ceil(u64::from(n)), "sync_every {n}");
        }
        // without sync_every the syncs are inside the ops, not apart
        let per_op = ProbeSpec {
            sync_every: None,
            ..synced_every(dir.path(), 0)
        };
        let r = run_probe(&per_op, &mut never()).unwrap();
        assert_eq!((r.syncs, r.sync_time), (0, Duration::ZERO));
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn sync_every_of_several_workers_syncs_once_each() {
        let dir = TestDir::new_on_disk("engine-sync-workers");
        let spec = ProbeSpec {
            workers: 3,
            ..synced_every(dir.path(), 0)
        };
        let r = run_probe(&spec, &mut never()).unwrap();
        assert_eq!(r.syncs, 3);
        assert_eq!(r.histogram.count(), r.ops);
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn sync_every_is_refused_where_it_means_nothing() {
        let dir = TestDir::new_on_disk("engine-sync-invalid");
        let base = synced_every(dir.path(), 0);
        let with = |f: &dyn Fn(&mut ProbeSpec)| {
            let mut s = base.clone();
            f(&mut s);
            s
        };
        assert_invalid(
            &with(&|s| {
                s.workload = Workload::Randread;
                s.sync = SyncMethod::None;
            }),
            "randwrite and seqwrite only",
        );
        assert_invalid(&with(&|s| s.workload = Workload::Wal), "not wal");
        assert_invalid(
            &with(&|s| s.sync = SyncMethod::None),
            "not sync method none",
        );
        assert_invalid(
            &with(&|s| s.sync = SyncMethod::OpenDatasync),
            "fsync or fdatasync",
        );
        assert_invalid(&with(&|s| s.writes_per_sync = 2), "single writes");
        assert_invalid(
            &with(&|s| {
                s.engine = IoEngine::IoUring;
            }),
            "runs on psync",
        );
        assert_invalid(&with(&|s| s.precision_pct = Some(5.0)), "no precision");
        with(&|s| {
            s.sync_every = Some(8);
            s.precision_pct = Some(5.0);
        })
        .validate()
        .unwrap();
        with(&|s| {
            s.workload = Workload::Seqwrite;
            s.sync = SyncMethod::Fdatasync;
        })
        .validate()
        .unwrap();
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn four_workers_all_contribute() {
        let Some(dir) = TestDir::new_on_shm("engine-4w") else {
            return;
        };
        for workload in [Workload::Seqread, Workload::Randwrite] {
            let spec = ProbeSpec {
                workers: 4,
                ..quick(dir.path(), workload)
            };
            let scratch = ScratchFile::create(
                &spec.dir,
                spec.file_size,
                spec.block_size,
                false,
                &mut never(),
            )
            .unwrap();
            let phase = run_timed_phase_per_worker(&spec, &scratch);
            assert_eq!(phase.len(), 4);
            for (i, ops) in phase.iter().enumerate() {
                assert!(*ops > 0, "{workload}: worker {i} did nothing: {phase:?}");
            }
            drop(scratch);
            let r = run_probe(&spec, &mut never()).unwrap();
            assert!(r.ops >= 4, "{workload}");
        }
        assert!(dir.entries().is_empty());
    }

    /// Runs the workers directly (without the merge) to see each one's count.
    fn run_timed_phase_per_worker(spec: &ProbeSpec, scratch: &ScratchFile) -> Vec<u64> {
        let shared = Shared::new(spec.workers);
        thread::scope(|s| {
            let handles: Vec<_> = (0..spec.workers)
                .map(|i| {
                    let w = Worker::prepare(spec, scratch, i, 42).unwrap();
                    let shared = &shared;
                    s.spawn(move || {
                        w.run(
                            &shared.stop,
                            &shared.abandon,
                            &shared.gate,
                            &shared.progress[i],
                            &shared.epoch,
                        )
                    })
                })
                .collect();
            shared.gate.wait_for_arrivals(spec.workers);
            shared.gate.open();
            thread::sleep(spec.duration);
            shared.stop.store(true, Ordering::SeqCst);
            handles
                .into_iter()
                .map(|h| {
                    let done = h.join().unwrap();
                    assert!(done.error.is_none());
                    done.ops
                })
                .collect()
        })
    }

    #[test]
    fn cancel_mid_run_is_prompt_and_leaves_no_file() {
        let dir = TestDir::new_on_disk("engine-cancel");
        let spec = ProbeSpec {
            duration: Duration::from_secs(30),
            workers: 2,
            ..quick(dir.path(), Workload::Randread)
        };
        let mut cancel = CancelAfter::new(Duration::from_millis(200));
        let result = run_probe(&spec, &mut || cancel.poll());
        let returned = Instant::now();
        assert!(matches!(result, Err(ProbeError::Cancelled)), "{result:?}");
        let lag = returned - cancel.asked.expect("poll was never asked to stop");
        assert!(lag < Duration::from_millis(50), "cancel took {lag:?}");
        assert!(dir.entries().is_empty(), "{:?}", dir.entries());
    }

    #[test]
    fn cancel_during_the_fill_returns_cancelled() {
        let dir = TestDir::new_on_disk("engine-cancel-fill");
        let r = run_probe(&quick(dir.path(), Workload::Randread), &mut || true);
        assert!(matches!(r, Err(ProbeError::Cancelled)), "{r:?}");
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn unwinding_out_of_poll_stops_workers_and_removes_the_file() {
        let dir = TestDir::new_on_disk("engine-unwind");
        // First in the fill, then in the timed phase with workers running.
        for panic_at_call in [2, 12] {
            let spec = ProbeSpec {
                duration: Duration::from_secs(30),
                workers: 2,
                ..quick(dir.path(), Workload::Wal)
            };
            let mut calls = 0;
            let began = Instant::now();
            let caught = catch_unwind(AssertUnwindSafe(|| {
                run_probe(&spec, &mut || {
                    calls += 1;
                    if calls == panic_at_call {
                        panic!("simulated ERROR from the interrupt check");
                    }
                    false
                })
            }));
            assert!(caught.is_err(), "the panic must propagate");
            assert!(began.elapsed() < Duration::from_secs(5));
            assert!(dir.entries().is_empty(), "{:?}", dir.entries());
        }
    }

    #[test]
    fn worker_io_errors_stop_the_run_and_are_reported() {
        // A file truncated under the workers makes reads hit EOF: a short
        // read, which must surface as an error rather than a short count.
        let dir = TestDir::new_on_disk("engine-ioerr");
        let spec = ProbeSpec {
            direct: false,
            duration: Duration::from_secs(30),
            workers: 2,
            ..quick(dir.path(), Workload::Seqread)
        };
        let scratch =
            ScratchFile::create(&spec.dir, spec.file_size, 8192, false, &mut never()).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(scratch.path())
            .unwrap()
            .set_len(0)
            .unwrap();
        let began = Instant::now();
        let err = match run_timed_phase(&spec, &scratch, &mut never()) {
            Err(e) => e,
            Ok(_) => panic!("reads past EOF must fail"),
        };
        assert!(
            began.elapsed() < Duration::from_secs(1),
            "did not stop early"
        );
        match err {
            ProbeError::Io { context, source } => {
                assert!(
                    context.starts_with("read of 8192 bytes at offset"),
                    "{context}"
                );
                assert_eq!(source.kind(), io::ErrorKind::UnexpectedEof);
            }
            other => panic!("expected Io, got {other:?}"),
        }
    }

    /// The spec at a queue depth on io_uring; None (test skipped) where
    /// this kernel or sandbox has io_uring switched off.
    fn queued(mut spec: ProbeSpec, iodepth: u32) -> Option<ProbeSpec> {
        spec.iodepth = iodepth;
        spec.engine = IoEngine::IoUring;
        if let Err(e) = io_uring::IoUring::new(2) {
            eprintln!("skipping: io_uring unavailable: {e}");
            return None;
        }
        Some(spec)
    }

    #[test]
    fn queued_reads_and_writes_run_at_depth_and_count_consistently() {
        let dir = TestDir::new_on_disk("engine-queued");
        for workload in [
            Workload::Randread,
            Workload::Randwrite,
            Workload::Seqread,
            Workload::Seqwrite,
        ] {
            let Some(spec) = queued(quick(dir.path(), workload), 16) else {
                return;
            };
            let r = run_probe(&spec, &mut never()).unwrap();
            assert!(r.ops > 16, "{workload}: {}", r.ops);
            assert_eq!(r.bytes, r.ops * 8192, "{workload}");
            assert_eq!(r.histogram.count(), r.ops, "{workload}");
        }
        assert!(dir.entries().is_empty(), "{:?}", dir.entries());
    }

    #[test]
    fn a_depth_larger_than_the_files_blocks_still_runs() {
        let dir = TestDir::new_on_disk("engine-deep");
        let base = ProbeSpec {
            file_size: 4 * 8192,
            ..quick(dir.path(), Workload::Randread)
        };
        let Some(spec) = queued(base, 64) else { return };
        let r = run_probe(&spec, &mut never()).unwrap();
        assert!(r.ops > 64);
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn queued_probes_refuse_commits_and_psync_refuses_depth() {
        let dir = TestDir::new_on_disk("engine-queued-invalid");
        let wal = ProbeSpec {
            engine: IoEngine::IoUring,
            ..quick(dir.path(), Workload::Wal)
        };
        assert_invalid(&wal, "runs on psync");
        let deep_psync = ProbeSpec {
            iodepth: 8,
            ..quick(dir.path(), Workload::Randread)
        };
        assert_invalid(&deep_psync, "needs io_uring");
        let too_deep = ProbeSpec {
            iodepth: MAX_IODEPTH + 1,
            engine: IoEngine::IoUring,
            ..quick(dir.path(), Workload::Randread)
        };
        assert_invalid(&too_deep, "iodepth");
        let vague = ProbeSpec {
            precision_pct: Some(0.0),
            ..quick(dir.path(), Workload::Randread)
        };
        assert_invalid(&vague, "precision");
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn cancel_at_depth_64_drains_the_queue_and_leaves_no_file() {
        let dir = TestDir::new_on_disk("engine-queued-cancel");
        let base = ProbeSpec {
            duration: Duration::from_secs(30),
            workers: 2,
            ..quick(dir.path(), Workload::Randwrite)
        };
        let Some(spec) = queued(base, 64) else { return };
        let mut cancel = CancelAfter::new(Duration::from_millis(300));
        let result = run_probe(&spec, &mut || cancel.poll());
        let lag = cancel.asked.expect("poll was asked to stop").elapsed();
        assert!(matches!(result, Err(ProbeError::Cancelled)), "{result:?}");
        assert!(lag < Duration::from_millis(500), "cancel took {lag:?}");
        assert!(dir.entries().is_empty(), "{:?}", dir.entries());
    }

    #[test]
    fn queued_reads_of_a_file_truncated_under_them_fail_as_short_reads() {
        let dir = TestDir::new_on_disk("engine-queued-short");
        let base = ProbeSpec {
            direct: false,
            duration: Duration::from_secs(30),
            ..quick(dir.path(), Workload::Seqread)
        };
        let Some(spec) = queued(base, 8) else { return };
        let scratch =
            ScratchFile::create(&spec.dir, spec.file_size, 8192, false, &mut never()).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(scratch.path())
            .unwrap()
            .set_len(0)
            .unwrap();
        let began = Instant::now();
        match run_timed_phase(&spec, &scratch, &mut never()) {
            Err(ProbeError::Io { context, source }) => {
                assert!(
                    context.starts_with("read of 8192 bytes at offset"),
                    "{context}"
                );
                assert_eq!(source.kind(), io::ErrorKind::UnexpectedEof);
            }
            Err(other) => panic!("expected a short read, got {other:?}"),
            Ok(_) => panic!("reads past EOF must fail"),
        }
        assert!(began.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn a_probe_asked_for_a_precision_stops_once_it_has_it() {
        // page-cache reads of a small file are as steady as I/O gets
        let Some(dir) = TestDir::new_on_shm("engine-precise") else {
            return;
        };
        // A long duration, so that a loaded machine (whose samples scatter
        // more and need longer to settle) still stops on precision, well
        // before the duration; on a quiet one this takes about a second.
        let spec = ProbeSpec {
            duration: Duration::from_secs(60),
            direct: false,
            precision_pct: Some(10.0),
            ..quick(dir.path(), Workload::Randread)
        };
        let r = run_probe(&spec, &mut never()).unwrap();
        assert!(r.elapsed >= Duration::from_millis(500), "{:?}", r.elapsed);
        assert!(
            r.elapsed < Duration::from_secs(50),
            "stopped by its duration, not its precision: {:?}",
            r.elapsed
        );
        assert!(r.iops_ci95_pct.unwrap() <= 10.0, "{:?}", r.iops_ci95_pct);
        // a fixed probe reports its precision too, without stopping early
        let fixed = ProbeSpec {
            duration: Duration::from_millis(400),
            precision_pct: None,
            ..spec
        };
        let r = run_probe(&fixed, &mut never()).unwrap();
        assert!(r.elapsed >= Duration::from_millis(400));
        assert!(r.iops_ci95_pct.is_some());
        assert!(dir.entries().is_empty());
    }
}

#[cfg(test)]
mod standalone {
    use super::*;
    use crate::probe::{IoEngine, Workload};

    /// The engine outside PostgreSQL, for comparing with fio by hand:
    /// STORLAB_QD_DIR=/some/dir cargo test --release -- --ignored standalone
    #[test]
    #[ignore]
    fn standalone_queued() {
        let dir = std::env::var("STORLAB_QD_DIR").unwrap();
        let depth: u32 = std::env::var("STORLAB_QD")
            .map(|d| d.parse().unwrap())
            .unwrap_or(32);
        let workload = match std::env::var("STORLAB_QD_WORKLOAD").as_deref() {
            Ok("randwrite") => Workload::Randwrite,
            _ => Workload::Randread,
        };
        let spec = ProbeSpec {
            duration: Duration::from_secs(3),
            file_size: 256 << 20,
            iodepth: depth,
            engine: IoEngine::IoUring,
            ..ProbeSpec::new(dir, workload)
        };
        let r = run_probe(&spec, &mut || false).unwrap();
        // in flight by Little's law: what the depth really was
        eprintln!(
            "iops {:.0} mean {:.0} us in flight {:.2} of {depth}",
            r.iops(),
            r.histogram.mean_us(),
            r.iops() * r.histogram.mean_us() / 1e6
        );
        // what the figures printed stand on: every operation timed, all of
        // the asked duration run, O_DIRECT really used
        assert!(r.ops > 0);
        assert_eq!(r.histogram.count(), r.ops);
        assert!(r.elapsed >= spec.duration, "{:?}", r.elapsed);
        assert!(r.direct, "{:?}", r.notices);
    }
}
