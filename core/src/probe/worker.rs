//! One worker thread of a probe: its own fd, buffer, random generator and
//! histogram, and the timed loop over reads or commits.
//!
//! Everything fallible about a worker (open, allocate) happens in
//! `prepare`, on the calling thread, so that a setup failure needs no
//! thread cleanup. Workers have only the stop flag and the start gate in
//! common, so the hot loop takes no locks.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::buffer::AlignedBuf;
use super::error::ProbeError;
use super::io_engine::IoEngine;
use super::offsets::{random_offset, worker_region, SeqCursor};
use super::progress::{Progress, Tally};
use super::ring::{Op, Ring};
use super::scratch::ScratchFile;
use super::spec::ProbeSpec;
use super::start_gate::StartGate;
use super::sync_method::SyncMethod;
use super::workload::Workload;
use super::Histogram;

/// How a worker moves its blocks; each engine owns only the memory it uses.
enum Io {
    /// One block at a time (pread/pwrite), through one buffer.
    Psync(AlignedBuf),
    /// Up to iodepth blocks in flight, each in its own slot's buffer.
    Queued(Box<Ring>),
}

/// How a worker picks offsets.
enum Pattern {
    Random { file_size: u64 },
    Sequential { cursor: SeqCursor, rewind: bool },
}

pub(crate) struct Worker<'a> {
    index: usize,
    file: File,
    path: &'a Path,
    direct: bool,
    workload: Workload,
    sync: SyncMethod,
    writes_per_sync: u32,
    /// Some(n): one write per op, `sync` after every n-th (0: none but
    /// the last) and after the last write (see `ProbeSpec::sync_every`).
    sync_every: Option<u32>,
    /// Writes since the last sync (sync_every only).
    unsynced: u64,
    /// Syncs made apart from the ops (sync_every) and the time in them.
    syncs: u64,
    sync_time: Duration,
    block_size: u64,
    rng: fastrand::Rng,
    pattern: Pattern,
    /// Stamped into every written sector with `writes` so that no two
    /// written blocks are ever identical, across workers too.
    tag: u64,
    writes: u64,
    /// The engine's buffers (and ring); `run` takes it.
    io: Option<Io>,
}

/// What a worker hands back when it stops.
pub(crate) struct WorkerDone {
    pub(crate) ops: u64,
    pub(crate) bytes: u64,
    pub(crate) histogram: Histogram,
    /// Syncs made apart from the ops (sync_every), and the time they took.
    pub(crate) syncs: u64,
    pub(crate) sync_time: Duration,
    pub(crate) error: Option<ProbeError>,
}

impl<'a> Worker<'a> {
    /// Opens the worker's own fd (O_DIRECT if the scratch file uses it,
    /// plus the sync method's flags) and fills its buffers with random bytes.
    pub(crate) fn prepare(
        spec: &ProbeSpec,
        scratch: &'a ScratchFile,
        index: usize,
        seed: u64,
    ) -> Result<Worker<'a>, ProbeError> {
        let file = scratch.open(spec.sync.open_flags()).map_err(|e| {
            ProbeError::io(
                format!("opening {} for worker {index}", scratch.path().display()),
                e,
            )
        })?;
        // Distinct, well-mixed seeds so workers never walk the same random
        // offsets in lockstep.
        let worker_seed = seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut rng = fastrand::Rng::with_seed(worker_seed);
        let io = match spec.engine {
            IoEngine::Psync => {
                let mut buf = AlignedBuf::new(spec.block_size)
                    .map_err(|e| ProbeError::io("allocating a probe buffer", e))?;
                rng.fill(buf.as_mut_slice());
                Io::Psync(buf)
            }
            IoEngine::IoUring => {
                Io::Queued(Box::new(Ring::new(spec.iodepth, spec.block_size, |b| {
                    rng.fill(b)
                })?))
            }
        };
        let block_size = spec.block_size as u64;
        let pattern = if spec.workload.is_random() {
            Pattern::Random {
                file_size: spec.file_size,
            }
        } else {
            let region = worker_region(spec.file_size, block_size, spec.workers, index);
            Pattern::Sequential {
                cursor: SeqCursor::new(region, block_size),
                rewind: spec.rewind,
            }
        };
        Ok(Worker {
            index,
            file,
            path: scratch.path(),
            direct: scratch.direct(),
            workload: spec.workload,
            sync: spec.sync,
            writes_per_sync: spec.writes_per_sync,
            sync_every: spec.sync_every,
            unsynced: 0,
            syncs: 0,
            sync_time: Duration::ZERO,
            block_size,
            tag: rng.u64(..),
            rng,
            pattern,
            writes: 0,
            io: Some(io),
        })
    }

    /// Waits at the gate, then does ops until `stop` is raised or an op
    /// fails (which raises `stop` and `abandon` for everyone). Progress is
    /// published for the calling thread's samples (see `progress`).
    /// `abandon` says the figures will not be used (a cancel, a failed
    /// worker): a sync_every worker then skips its last sync.
    pub(crate) fn run(
        mut self,
        stop: &AtomicBool,
        abandon: &AtomicBool,
        gate: &StartGate,
        progress: &Progress,
        epoch: &AtomicU64,
    ) -> WorkerDone {
        let mut tally = Tally::new(progress, epoch);
        gate.arrive_and_wait();
        let error = match self.io.take() {
            Some(Io::Psync(mut buf)) => match self.sync_every {
                Some(n) if self.workload.is_write() => {
                    self.run_synced_every(n, &mut buf, stop, abandon, &mut tally)
                }
                _ => self.run_psync(&mut buf, stop, &mut tally),
            },
            Some(Io::Queued(mut ring)) => self.run_queued(&mut ring, stop, &mut tally),
            None => unreachable!("a worker runs once"),
        };
        if error.is_some() {
            abandon.store(true, Ordering::SeqCst);
            stop.store(true, Ordering::SeqCst);
        }
        let (ops, bytes, histogram) = tally.finish();
        WorkerDone {
            ops,
            bytes,
            histogram,
            syncs: self.syncs,
            sync_time: self.sync_time,
            error,
        }
    }

    /// Bytes one op moves: a read, or a commit's writes.
    fn op_bytes(&self) -> u64 {
        if self.workload.is_write() {
            self.block_size * self.writes_per_sync as u64
        } else {
            self.block_size
        }
    }

    /// One synchronous op after another: what a backend reading pages does.
    fn run_psync(
        &mut self,
        buf: &mut AlignedBuf,
        stop: &AtomicBool,
        tally: &mut Tally,
    ) -> Option<ProbeError> {
        let op_bytes = self.op_bytes();
        // Relaxed is enough: the flag carries no data, and a worker that
        // sees it one op late only does one op more.
        while !stop.load(Ordering::Relaxed) {
            let result = if self.workload.is_write() {
                self.commit(buf)
            } else {
                self.read(buf)
            };
            match result {
                Ok(latency) => {
                    tally.add(latency, op_bytes);
                    tally.publish();
                }
                Err(e) => return Some(e),
            }
        }
        None
    }

    /// One write per op, as iozone writes its records: each write is timed
    /// alone (the histogram holds write latencies), and the sync after
    /// every `n`-th write (none when 0) and after the last one is timed
    /// apart (`sync_time`), so that every write counted is durable when the
    /// worker returns and the probe's elapsed time holds its syncs. The
    /// last sync is skipped when the probe is abandoned.
    fn run_synced_every(
        &mut self,
        n: u32,
        buf: &mut AlignedBuf,
        stop: &AtomicBool,
        abandon: &AtomicBool,
        tally: &mut Tally,
    ) -> Option<ProbeError> {
        let every = u64::from(n);
        while !stop.load(Ordering::Relaxed) {
            match self.write(buf) {
                Ok(latency) => {
                    tally.add(latency, self.block_size);
                    tally.publish();
                }
                Err(e) => return Some(e),
            }
            if every > 0 && self.unsynced >= every {
                if let Err(e) = self.sync_now() {
                    return Some(e);
                }
            }
        }
        if self.unsynced > 0 && !abandon.load(Ordering::SeqCst) {
            if let Err(e) = self.sync_now() {
                return Some(e);
            }
        }
        None
    }

    /// Keeps the ring full: every completion is timed from its submission
    /// and replaced by a new request at the next offset, submitted before
    /// the next completion is reaped (see `Ring::reap`), until `stop` (or
    /// an error, after which the queue is only drained). The ring is dropped
    /// by the caller's scope, which waits for anything still in flight.
    fn run_queued(
        &mut self,
        ring: &mut Ring,
        stop: &AtomicBool,
        tally: &mut Tally,
    ) -> Option<ProbeError> {
        let op = if self.workload.is_write() {
            Op::Write
        } else {
            Op::Read
        };
        let fd = self.file.as_raw_fd();
        if let Err(e) = ring.enable() {
            return Some(ProbeError::io("enabling the worker's io_uring", e));
        }
        let mut error = None;
        loop {
            if error.is_none() && !stop.load(Ordering::Relaxed) {
                // the whole depth at the start, then the replacement of the
                // one completion just reaped
                while let Some(slot) = ring.free_slot() {
                    let offset = self.next_offset();
                    if op == Op::Write {
                        stamp(ring.buf_mut(slot), self.next_stamp());
                    }
                    ring.queue(fd, op, slot, offset);
                    if let Err(e) = ring.submit() {
                        error = Some(ProbeError::io("submitting to io_uring", e));
                        break;
                    }
                }
            } else if ring.in_flight() == 0 {
                return error;
            }
            if let Err(e) = ring.submit_and_wait(None) {
                return error.or(Some(ProbeError::io("waiting for io_uring completions", e)));
            }
            // one at a time: the others wait in the completion queue, their
            // clocks running, while this one's replacement is submitted
            let max = if error.is_none() && !stop.load(Ordering::Relaxed) {
                1
            } else {
                usize::MAX
            };
            ring.reap(max, |c| match c.result {
                Ok(()) => tally.add(c.latency, self.block_size),
                Err(e) => {
                    let what = if op == Op::Write { "write" } else { "read" };
                    error.get_or_insert_with(|| self.io_error(what, c.offset, e));
                }
            });
            tally.publish();
            if error.is_some() {
                // stop the others now; this one drains its queue first
                stop.store(true, Ordering::SeqCst);
            }
        }
    }

    fn next_offset(&mut self) -> u64 {
        match &mut self.pattern {
            Pattern::Random { file_size } => {
                random_offset(&mut self.rng, *file_size, self.block_size)
            }
            Pattern::Sequential { cursor, .. } => cursor.next_offset(),
        }
    }

    fn read(&mut self, buf: &mut AlignedBuf) -> Result<Duration, ProbeError> {
        let offset = self.next_offset();
        let t0 = Instant::now();
        // read_exact_at retries EINTR and short reads; EOF is an error.
        let result = self.file.read_exact_at(buf.as_mut_slice(), offset);
        let latency = t0.elapsed();
        result.map_err(|e| self.io_error("read", offset, e))?;
        Ok(latency)
    }

    /// `writes_per_sync` writes then the sync, timed as one operation
    /// because that is what a committing transaction waits for.
    fn commit(&mut self, buf: &mut AlignedBuf) -> Result<Duration, ProbeError> {
        if let Pattern::Sequential {
            cursor,
            rewind: true,
        } = &mut self.pattern
        {
            cursor.rewind();
        }
        let t0 = Instant::now();
        for _ in 0..self.writes_per_sync {
            self.write_block(buf)?;
        }
        self.sync
            .sync_after_writes(self.file.as_fd())
            .map_err(|e| self.sync_error(e))?;
        Ok(t0.elapsed())
    }

    /// One write of a block at the next offset, timed.
    fn write(&mut self, buf: &mut AlignedBuf) -> Result<Duration, ProbeError> {
        let t0 = Instant::now();
        self.write_block(buf)?;
        let latency = t0.elapsed();
        self.unsynced += 1;
        Ok(latency)
    }

    fn write_block(&mut self, buf: &mut AlignedBuf) -> Result<(), ProbeError> {
        let offset = self.next_offset();
        stamp(buf.as_mut_slice(), self.next_stamp());
        // write_all_at retries EINTR and short writes.
        self.file
            .write_all_at(buf.as_slice(), offset)
            .map_err(|e| self.io_error("write", offset, e))
    }

    /// The sync of the writes since the last one (sync_every), timed apart.
    fn sync_now(&mut self) -> Result<(), ProbeError> {
        let t0 = Instant::now();
        self.sync
            .sync_after_writes(self.file.as_fd())
            .map_err(|e| self.sync_error(e))?;
        self.sync_time += t0.elapsed();
        self.syncs += 1;
        self.unsynced = 0;
        Ok(())
    }

    fn sync_error(&self, e: io::Error) -> ProbeError {
        ProbeError::io(
            format!(
                "{} of {} by worker {}",
                self.sync,
                self.path.display(),
                self.index
            ),
            e,
        )
    }

    /// The value that makes the next written block unlike every other: a
    /// deduplicating layer (VDO, ZFS dedup) would otherwise turn repeated
    /// writes into metadata updates. Stamped into every 512-byte sector, it
    /// defeats dedup at any granularity for a few nanoseconds a write.
    fn next_stamp(&mut self) -> u64 {
        self.writes += 1;
        self.tag ^ self.writes
    }

    fn io_error(&self, what: &str, offset: u64, e: io::Error) -> ProbeError {
        let hint = if self.direct && e.raw_os_error() == Some(libc::EINVAL) {
            " (with O_DIRECT, EINVAL usually means the block size is below the device's \
             logical block size)"
        } else {
            ""
        };
        ProbeError::io(
            format!(
                "{what} of {} bytes at offset {offset} of {} by worker {}{hint}",
                self.block_size,
                self.path.display(),
                self.index
            ),
            e,
        )
    }
}

/// Writes `value` into the first bytes of every 512-byte sector of `buf`.
fn stamp(buf: &mut [u8], value: u64) {
    let bytes = value.to_le_bytes();
    for sector in buf.chunks_exact_mut(512) {
        sector[..8].copy_from_slice(&bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::test_dirs::TestDir;

    fn spec(dir: &Path, workload: Workload) -> ProbeSpec {
        ProbeSpec {
            file_size: 4 << 20,
            direct: false,
            ..ProbeSpec::new(dir, workload)
        }
    }

    fn scratch_for(spec: &ProbeSpec) -> ScratchFile {
        ScratchFile::create(
            &spec.dir,
            spec.file_size,
            spec.block_size,
            false,
            &mut || false,
        )
        .unwrap()
    }

    /// A psync worker and its buffer, for calling `read` and `commit`.
    fn psync_worker<'a>(
        spec: &ProbeSpec,
        scratch: &'a ScratchFile,
        index: usize,
        seed: u64,
    ) -> (Worker<'a>, AlignedBuf) {
        let mut w = Worker::prepare(spec, scratch, index, seed).unwrap();
        match w.io.take() {
            Some(Io::Psync(buf)) => (w, buf),
            _ => panic!("a psync spec makes a psync worker"),
        }
    }

    /// Which 8 KiB blocks of the file differ between two snapshots.
    fn changed_blocks(before: &[u8], after: &[u8]) -> Vec<usize> {
        before
            .chunks(8192)
            .zip(after.chunks(8192))
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .map(|(i, _)| i)
            .collect()
    }

    #[test]
    fn commits_walk_forward_or_rewind_to_the_region_start() {
        let dir = TestDir::new_on_disk("worker-rewind");
        for rewind in [false, true] {
            let spec = ProbeSpec {
                workers: 2,
                writes_per_sync: 2,
                rewind,
                ..spec(dir.path(), Workload::Wal)
            };
            let scratch = scratch_for(&spec);
            let before = std::fs::read(scratch.path()).unwrap();
            // Worker 1 of 2 owns the second half of the 4 MiB file.
            let (mut w, mut buf) = psync_worker(&spec, &scratch, 1, 5);
            for _ in 0..3 {
                w.commit(&mut buf).unwrap();
            }
            let after = std::fs::read(scratch.path()).unwrap();
            let first = 256; // (4 MiB / 2) / 8 KiB
            let expected: Vec<usize> = if rewind {
                vec![first, first + 1]
            } else {
                (first..first + 6).collect()
            };
            assert_eq!(changed_blocks(&before, &after), expected, "rewind={rewind}");
        }
    }

    #[test]
    fn random_reads_stay_inside_the_file() {
        let dir = TestDir::new_on_disk("worker-randread");
        let spec = ProbeSpec {
            file_size: 64 * 8192,
            ..spec(dir.path(), Workload::Randread)
        };
        let scratch = scratch_for(&spec);
        let (mut w, mut buf) = psync_worker(&spec, &scratch, 0, 9);
        // Any read past the end would fail with UnexpectedEof.
        for _ in 0..2_000 {
            w.read(&mut buf).unwrap();
        }
    }

    #[test]
    fn written_blocks_are_unique() {
        let dir = TestDir::new_on_disk("worker-stamp");
        let spec = spec(dir.path(), Workload::Seqwrite);
        let scratch = scratch_for(&spec);
        let (mut w, mut buf) = psync_worker(&spec, &scratch, 0, 1);
        stamp(buf.as_mut_slice(), w.next_stamp());
        let first = buf.as_slice().to_vec();
        stamp(buf.as_mut_slice(), w.next_stamp());
        let second = buf.as_slice().to_vec();
        for (a, b) in first.chunks(512).zip(second.chunks(512)) {
            assert_ne!(a, b, "a sector repeated between two writes");
        }
    }

    #[test]
    fn each_engine_allocates_only_its_own_buffers() {
        let dir = TestDir::new_on_disk("worker-io");
        let spec = spec(dir.path(), Workload::Randread);
        let scratch = scratch_for(&spec);
        let (_, buf) = psync_worker(&spec, &scratch, 0, 1);
        assert_eq!(buf.len(), spec.block_size);
        let queued = ProbeSpec {
            engine: IoEngine::IoUring,
            iodepth: 4,
            ..spec
        };
        match Worker::prepare(&queued, &scratch, 0, 1) {
            Ok(w) => assert!(matches!(w.io, Some(Io::Queued(_)))),
            Err(ProbeError::Unsupported(why)) => eprintln!("skipping: {why}"),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn each_replacement_is_submitted_before_the_next_completion_is_reaped() {
        let dir = TestDir::new_on_disk("worker-refill");
        let depth = 8;
        let spec = ProbeSpec {
            engine: IoEngine::IoUring,
            iodepth: depth,
            ..spec(dir.path(), Workload::Randread)
        };
        let scratch = scratch_for(&spec);
        let mut w = match Worker::prepare(&spec, &scratch, 0, 3) {
            Ok(w) => w,
            Err(ProbeError::Unsupported(why)) => return eprintln!("skipping: {why}"),
            Err(e) => panic!("{e}"),
        };
        let Some(Io::Queued(mut ring)) = w.io.take() else {
            panic!("an io_uring spec makes a queued worker")
        };
        let stop = AtomicBool::new(false);
        let (progress, epoch) = (Progress::default(), AtomicU64::new(0));
        let mut tally = Tally::new(&progress, &epoch);
        let error = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(200));
                stop.store(true, Ordering::SeqCst);
            });
            w.run_queued(&mut ring, &stop, &mut tally)
        });
        assert!(error.is_none(), "{error:?}");
        let (ops, _, histogram) = tally.finish();
        let c = ring.counts();
        assert!(ops > 100, "{ops} reads in 200 ms");
        assert_eq!(histogram.count(), ops);
        // every request went to the kernel once, in an enter of its own, and
        // came back once; none is left
        assert_eq!((c.submitted, c.reaped), (ops, ops), "{c:?}");
        assert_eq!(c.submitting_enters, c.submitted, "{c:?}");
        assert_eq!(ring.in_flight(), 0);
        // a completion is reaped only once every earlier one's replacement
        // is on its way, except in the drain after the stop, where no
        // replacement is made (reaping a burst of completions before
        // replacing them would count about ops * (1 - 1/burst))
        assert!(c.reaped_behind_a_free_slot < u64::from(depth), "{c:?}");
    }

    /// A sync_every 0 worker run for 50 ms with `abandon` as given.
    fn synced_at_the_end(abandon: bool) -> WorkerDone {
        let dir = TestDir::new_on_disk("worker-sync-end");
        let spec = ProbeSpec {
            sync: SyncMethod::Fsync,
            sync_every: Some(0),
            ..spec(dir.path(), Workload::Randwrite)
        };
        let scratch = scratch_for(&spec);
        let w = Worker::prepare(&spec, &scratch, 0, 1).unwrap();
        let gate = StartGate::new();
        gate.open();
        let (stop, abandoned) = (AtomicBool::new(false), AtomicBool::new(abandon));
        let (progress, epoch) = (Progress::default(), AtomicU64::new(0));
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                stop.store(true, Ordering::SeqCst);
            });
            w.run(&stop, &abandoned, &gate, &progress, &epoch)
        })
    }

    #[test]
    fn the_last_sync_is_made_unless_the_probe_is_abandoned() {
        let done = synced_at_the_end(false);
        assert!(done.error.is_none());
        assert!(done.ops > 0);
        assert_eq!(done.syncs, 1);
        assert!(done.sync_time > Duration::ZERO);
        // a cancelled probe (or one whose other worker failed) has no
        // figure to give: no flush to wait for
        let done = synced_at_the_end(true);
        assert!(done.ops > 0);
        assert_eq!((done.syncs, done.sync_time), (0, Duration::ZERO));
    }

    #[test]
    fn stop_before_start_does_no_io() {
        let dir = TestDir::new_on_disk("worker-stop");
        let spec = spec(dir.path(), Workload::Randwrite);
        let scratch = scratch_for(&spec);
        let w = Worker::prepare(&spec, &scratch, 0, 1).unwrap();
        let gate = StartGate::new();
        gate.open();
        let (progress, epoch) = (Progress::default(), AtomicU64::new(0));
        let done = w.run(
            &AtomicBool::new(true),
            &AtomicBool::new(false),
            &gate,
            &progress,
            &epoch,
        );
        assert_eq!(done.ops, 0);
        assert_eq!(done.histogram.count(), 0);
        assert!(done.error.is_none());
    }
}
