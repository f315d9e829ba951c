//! One worker's io_uring: up to `depth` reads or writes in flight, each in
//! its own aligned buffer, each timed from its submission to its completion.
//!
//! The one rule that matters for memory safety: a buffer the kernel may
//! still read or write into is never freed. Dropping a `Ring` waits for
//! every request in flight (bounded by DRAIN_LIMIT); if the device does not
//! answer in that time the buffers are leaked rather than freed, since an
//! O_DIRECT read that completes later would write into reused memory.

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use io_uring::{opcode, types, IoUring};

use super::buffer::AlignedBuf;
use super::error::ProbeError;

/// io_uring_enter's flag that makes the call also run the ring's deferred
/// completion work (DEFER_TASKRUN runs it only in an enter carrying it).
/// fio passes it with every submission, wanting no completion: requests that
/// finished meanwhile are then posted at once, and the reap that follows a
/// refill finds them without another system call. Measured against fio at
/// depth 32 (bench/probe_vs_fio, 6 interleaved runs): RAM reads went from
/// 0.91 of fio's IOPS to 1.14, where completions come faster than the
/// submitting loop; the disk's figures did not move.
const IORING_ENTER_GETEVENTS: u32 = 1;

/// How many times a worker that found no completion asks the kernel again,
/// without waiting, before it sleeps for one. Where requests complete in a
/// microsecond or two (memory; reads that io_uring hands to a worker
/// thread on the other CPU) the answer is usually there by the second ask,
/// and a sleep costs more than the request: a context switch and a wakeup
/// sent across vCPUs. On a disk both asks find nothing and cost about a
/// microsecond against a request's 30 or more. Measured on this lab's
/// tmpfs, 8 kB random reads at depth 8, the engine as a plain process,
/// 3 alternating runs: 522 000 to 528 000 IOPS sleeping at once, 612 000
/// to 672 000 asking twice first, fio 537 000 to 586 000 in the same runs.
const TRIES_BEFORE_SLEEP: usize = 2;

/// How long a drain waits for the requests in flight before it gives up
/// and leaks their buffers. A healthy device answers in milliseconds; a
/// device that takes this long is broken, and the probe's caller must not
/// hang on it.
pub(crate) const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// Whether a slot's request reads or writes its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Read,
    Write,
}

/// One completed request.
#[derive(Debug)]
pub(crate) struct Completion {
    /// Which request this was (the worker needs only its offset; tests
    /// match results to requests by it).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) slot: usize,
    pub(crate) offset: u64,
    /// From submission to the reap that saw it complete.
    pub(crate) latency: Duration,
    /// An errno from the kernel, or a short transfer as UnexpectedEof
    /// (reads) or WriteZero (writes).
    pub(crate) result: io::Result<()>,
}

pub(crate) struct Ring {
    uring: IoUring,
    bufs: Vec<AlignedBuf>,
    op: Vec<Op>,
    offset: Vec<u64>,
    issued_at: Vec<Instant>,
    /// Slots queued since the last submit (their clock starts at it).
    queued: Vec<usize>,
    free: Vec<usize>,
    in_flight: usize,
    /// Made disabled, to be enabled by the thread that will use it (see new).
    disabled: bool,
    counts: RingCounts,
}

/// Counters of a ring's submissions and reaps, a few increments per
/// request: what the tests of the worker's loop check.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RingCounts {
    /// io_uring_enter calls that handed requests to the kernel.
    pub(crate) submitting_enters: u64,
    /// Requests handed to the kernel.
    pub(crate) submitted: u64,
    /// Completions reaped.
    pub(crate) reaped: u64,
    /// Completions reaped while the slot of an earlier one was still free,
    /// its replacement not yet queued: time that no clock counts (see
    /// `reap`).
    pub(crate) reaped_behind_a_free_slot: u64,
}

/// What `io_uring_setup` failing means to the user: io_uring is switched off
/// (kernel.io_uring_disabled, a seccomp filter, a kernel without it), not a
/// broken disk. Other errors (out of memory) stay I/O errors.
fn setup_error(e: io::Error) -> ProbeError {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) | Some(libc::ENOSYS) | Some(libc::EINVAL) => {
            let sysctl = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
                .map(|v| format!(" (kernel.io_uring_disabled = {})", v.trim()))
                .unwrap_or_default();
            ProbeError::Unsupported(format!(
                "io_uring is not available to this server: io_uring_setup failed: {e}{sysctl}"
            ))
        }
        _ => ProbeError::io("setting up an io_uring", e),
    }
}

impl Ring {
    /// A ring of `depth` entries and `depth` buffers of `block_size` bytes,
    /// each filled by `fill` (random bytes, so that writes are not zeroes).
    pub(crate) fn new(
        depth: u32,
        block_size: usize,
        mut fill: impl FnMut(&mut [u8]),
    ) -> Result<Ring, ProbeError> {
        let (uring, disabled) = build(depth).map_err(setup_error)?;
        let depth = depth as usize;
        let mut bufs = Vec::with_capacity(depth);
        for _ in 0..depth {
            let mut b = AlignedBuf::new(block_size)
                .map_err(|e| ProbeError::io("allocating a probe buffer", e))?;
            fill(b.as_mut_slice());
            bufs.push(b);
        }
        let now = Instant::now();
        Ok(Ring {
            uring,
            bufs,
            op: vec![Op::Read; depth],
            offset: vec![0; depth],
            issued_at: vec![now; depth],
            queued: Vec::with_capacity(depth),
            free: (0..depth).rev().collect(),
            in_flight: 0,
            disabled,
            counts: RingCounts::default(),
        })
    }

    /// Called once by the thread that submits: a ring set up for a single
    /// issuer belongs to the thread that enables it.
    pub(crate) fn enable(&mut self) -> io::Result<()> {
        if self.disabled {
            self.uring.submitter().register_enable_rings()?;
            self.disabled = false;
        }
        Ok(())
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// A slot with no request in flight, if any.
    pub(crate) fn free_slot(&mut self) -> Option<usize> {
        self.free.pop()
    }

    pub(crate) fn buf_mut(&mut self, slot: usize) -> &mut [u8] {
        self.bufs[slot].as_mut_slice()
    }

    /// Queues `op` of the slot's whole buffer at `offset` of `fd`; it goes
    /// to the kernel at the next `submit` or `submit_and_wait`.
    pub(crate) fn queue(&mut self, fd: RawFd, op: Op, slot: usize, offset: u64) {
        let buf = &mut self.bufs[slot];
        let len = buf.len() as u32;
        let entry = match op {
            Op::Read => opcode::Read::new(types::Fd(fd), buf.as_mut_slice().as_mut_ptr(), len)
                .offset(offset)
                .build(),
            Op::Write => opcode::Write::new(types::Fd(fd), buf.as_slice().as_ptr(), len)
                .offset(offset)
                .build(),
        }
        .user_data(slot as u64);
        // SAFETY: the buffer lives in self.bufs, which is never freed while
        // a request on it is in flight (see Drop); a slot is queued only when
        // free, so no two requests share a buffer; the queue has `depth`
        // entries and at most `depth` slots exist, so it cannot be full.
        let pushed = unsafe { self.uring.submission().push(&entry) };
        debug_assert!(pushed.is_ok(), "submission queue full");
        self.op[slot] = op;
        self.offset[slot] = offset;
        self.queued.push(slot);
        self.in_flight += 1;
    }

    /// Hands the queued requests to the kernel now (their clocks start),
    /// without waiting.
    ///
    /// Called after every single request, as fio does by default
    /// (iodepth_batch_submit=1): requests handed over together are plugged
    /// and dispatched together, complete together, and come back to be
    /// resubmitted together, so that the queue drains and fills in lockstep
    /// instead of staying full. Measured on this lab's virtual disk at
    /// depth 32: 98 000 IOPS submitting in batches, against fio's 120 000.
    pub(crate) fn submit(&mut self) -> io::Result<()> {
        self.enter(0, None)
    }

    /// Hands the queued requests to the kernel (their clocks start now) and
    /// waits until at least one request completes, or `timeout` passes.
    pub(crate) fn submit_and_wait(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        let mut completed = !self.uring.completion().is_empty();
        if timeout.is_none() && self.queued.is_empty() {
            for _ in 0..TRIES_BEFORE_SLEEP {
                if completed {
                    break;
                }
                self.enter(0, None)?;
                completed = !self.uring.completion().is_empty();
            }
        }
        if self.queued.is_empty() && completed {
            // completed already (on memory, reads complete while submitted):
            // no system call to make
            return Ok(());
        }
        self.enter(usize::from(self.in_flight > 0 && !completed), timeout)
    }

    /// One io_uring_enter: submits what is queued (starting its clocks) and
    /// waits for `want` completions, or `timeout`.
    fn enter(&mut self, want: usize, timeout: Option<Duration>) -> io::Result<()> {
        let now = Instant::now();
        if !self.queued.is_empty() {
            self.counts.submitting_enters += 1;
            self.counts.submitted += self.queued.len() as u64;
        }
        for slot in self.queued.drain(..) {
            self.issued_at[slot] = now;
        }
        // what the kernel has not taken from the submission ring yet
        let pending = self.uring.submission().len() as u32;
        let submitter = self.uring.submitter();
        let result = match timeout {
            // SAFETY: no argument pointer is passed (None), and `pending`
            // entries are in the submission ring, pushed by `queue`.
            None if want == 0 => unsafe {
                submitter.enter::<libc::sigset_t>(pending, 0, IORING_ENTER_GETEVENTS, None)
            },
            None => submitter.submit_and_wait(want),
            Some(t) => {
                let ts = types::Timespec::from(t);
                let args = types::SubmitArgs::new().timespec(&ts);
                submitter.submit_with_args(want, &args)
            }
        };
        match result {
            Ok(_) => Ok(()),
            // interrupted or timed out: the caller reaps what there is
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR) | Some(libc::ETIME)) => Ok(()),
            // the completion queue is full: reaping makes room
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Calls `each` for at most `max` completed requests, the oldest first;
    /// their slots become free.
    ///
    /// The worker reaps one at a time (`max` 1) and submits that request's
    /// replacement before it reaps the next, as fio does by default
    /// (iodepth_batch_complete_min and _max both 1): the completions it
    /// has not reaped yet wait in the completion queue with their clocks
    /// running, and the replacement of each goes out one enter after its
    /// reap. Reaping every completion first, as this loop did before, left
    /// the reaped ones waiting for the submissions of the others with no
    /// clock running: completions come back from this lab's virtual disk in
    /// bursts of up to the whole depth, a submission takes about 5 us, and
    /// Little's law (IOPS x mean latency) counted 28 of 32 requests in flight
    /// at 60 000 IOPS, fewer the faster the device, so that "depth 32"
    /// latencies were those of a shallower queue. Submitting the whole
    /// batch of replacements in one enter instead kept 31.9 in flight but
    /// brought back the lockstep described at `submit`: 0.77 to 0.88 of
    /// the IOPS of the other two loops on the disk at depth 32, 0.84 on
    /// RAM (4 to 6 alternating runs each, reads and writes; fio and this
    /// loop within 0.92 to 1.03 of each other on the disk in the same
    /// runs). bench/probe_vs_fio --groups inflight has the figures beside
    /// fio's.
    pub(crate) fn reap(&mut self, max: usize, mut each: impl FnMut(Completion)) {
        // one clock read per reap, as fio does: the completions seen
        // together are charged the same end time
        let now = Instant::now();
        let Ring {
            uring,
            bufs,
            op,
            offset,
            issued_at,
            free,
            in_flight,
            counts,
            ..
        } = self;
        for cqe in uring.completion().take(max) {
            let slot = cqe.user_data() as usize;
            *in_flight -= 1;
            counts.reaped += 1;
            if !free.is_empty() {
                counts.reaped_behind_a_free_slot += 1;
            }
            free.push(slot);
            each(Completion {
                slot,
                offset: offset[slot],
                latency: now.saturating_duration_since(issued_at[slot]),
                result: completion_result(cqe.result(), bufs[slot].len(), op[slot]),
            });
        }
    }

    /// What the ring has done so far (for the tests of the worker's loop).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn counts(&self) -> RingCounts {
        self.counts
    }

    /// Waits for every request in flight, discarding their results, for up
    /// to `limit`; true when none is left.
    pub(crate) fn drain(&mut self, limit: Duration) -> bool {
        let began = Instant::now();
        while self.in_flight > 0 {
            let left = limit.saturating_sub(began.elapsed());
            if left.is_zero() {
                return false;
            }
            if self
                .submit_and_wait(Some(left.min(Duration::from_millis(100))))
                .is_err()
            {
                // the ring itself failed: nothing will complete through it
                return false;
            }
            self.reap(usize::MAX, |_| {});
        }
        true
    }
}

/// A ring of `depth` entries set up as fio sets up its own: completions
/// posted when the submitter asks for them (no interrupts of the worker),
/// one submitting thread. That needs Linux 6.1; older kernels get the
/// flags they know, then none. Returns whether the ring awaits `enable`.
fn build(depth: u32) -> io::Result<(IoUring, bool)> {
    let mut tuned = IoUring::builder();
    tuned
        .setup_cqsize(depth)
        .setup_coop_taskrun()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_r_disabled();
    match tuned.build(depth) {
        Ok(ring) => return Ok((ring, true)),
        Err(e) if e.raw_os_error() != Some(libc::EINVAL) => return Err(e),
        Err(_) => {}
    }
    match IoUring::builder().setup_coop_taskrun().build(depth) {
        Ok(ring) => Ok((ring, false)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok((IoUring::new(depth)?, false)),
        Err(e) => Err(e),
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        if self.in_flight > 0 && !self.drain(DRAIN_LIMIT) {
            // The kernel may still write into these buffers: leak them.
            std::mem::forget(std::mem::take(&mut self.bufs));
        }
    }
}

/// A completion's result field as an I/O result: a negative errno, or a
/// transfer shorter than asked (which psync would retry; here the file is
/// pre-filled and block-aligned, so a short transfer means the file shrank
/// or the device misbehaves: an error, not a smaller count).
pub(crate) fn completion_result(res: i32, expected: usize, op: Op) -> io::Result<()> {
    if res < 0 {
        return Err(io::Error::from_raw_os_error(-res));
    }
    let done = res as usize;
    if done == expected {
        return Ok(());
    }
    let (kind, what) = match op {
        Op::Read => (io::ErrorKind::UnexpectedEof, "short read"),
        Op::Write => (io::ErrorKind::WriteZero, "short write"),
    };
    Err(io::Error::new(
        kind,
        format!("{what}: {done} of {expected} bytes"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::test_dirs::TestDir;
    use std::fs::OpenOptions;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;

    fn ring(depth: u32, bs: usize) -> Option<Ring> {
        match Ring::new(depth, bs, |b| b.fill(7)) {
            Ok(mut r) => {
                r.enable().unwrap();
                Some(r)
            }
            Err(ProbeError::Unsupported(why)) => {
                eprintln!("skipping: {why}");
                None
            }
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn completion_results_classify_errors_short_transfers_and_full_disks() {
        assert!(completion_result(8192, 8192, Op::Read).is_ok());
        let short = completion_result(4096, 8192, Op::Read).unwrap_err();
        assert_eq!(short.kind(), io::ErrorKind::UnexpectedEof);
        assert!(short.to_string().contains("4096 of 8192"), "{short}");
        assert_eq!(
            completion_result(0, 8192, Op::Write).unwrap_err().kind(),
            io::ErrorKind::WriteZero
        );
        let eio = completion_result(-libc::EIO, 8192, Op::Read).unwrap_err();
        assert_eq!(eio.raw_os_error(), Some(libc::EIO));
        let full = completion_result(-libc::ENOSPC, 8192, Op::Write).unwrap_err();
        assert!(matches!(
            ProbeError::io("write", full),
            ProbeError::DiskFull(_)
        ));
    }

    #[test]
    fn reads_and_writes_complete_with_their_data() {
        let Some(mut r) = ring(4, 4096) else { return };
        let dir = TestDir::new_on_disk("ring-rw");
        let path = dir.path().join("f");
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        f.write_all_at(&vec![1u8; 4 * 4096], 0).unwrap();
        // write slot 0's 7s at block 2, then read block 2 back into slot 1
        let s0 = r.free_slot().unwrap();
        r.queue(f.as_raw_fd(), Op::Write, s0, 2 * 4096);
        r.submit_and_wait(None).unwrap();
        let mut done = Vec::new();
        while done.is_empty() {
            r.reap(usize::MAX, |c| done.push(c));
        }
        assert!(done[0].result.is_ok(), "{:?}", done[0]);
        let s1 = r.free_slot().unwrap();
        r.buf_mut(s1).fill(0);
        r.queue(f.as_raw_fd(), Op::Read, s1, 2 * 4096);
        assert_eq!(r.in_flight(), 1);
        assert!(r.drain(DRAIN_LIMIT));
        assert_eq!(r.in_flight(), 0);
        assert!(r.buf_mut(s1).iter().all(|&b| b == 7));
    }

    #[test]
    fn reads_past_the_end_complete_short_and_failed_requests_carry_the_errno() {
        let Some(mut r) = ring(2, 4096) else { return };
        let dir = TestDir::new_on_disk("ring-short");
        let path = dir.path().join("f");
        std::fs::write(&path, vec![0u8; 6144]).unwrap();
        let f = OpenOptions::new().read(true).open(&path).unwrap();
        let s = r.free_slot().unwrap();
        r.queue(f.as_raw_fd(), Op::Read, s, 4096);
        // a write on a read-only fd fails in the kernel: EBADF
        let w = r.free_slot().unwrap();
        r.queue(f.as_raw_fd(), Op::Write, w, 0);
        let mut seen = Vec::new();
        while seen.len() < 2 {
            r.submit_and_wait(None).unwrap();
            r.reap(usize::MAX, |c| seen.push(c));
        }
        seen.sort_by_key(|c| c.slot);
        let by = |slot| seen.iter().find(|c| c.slot == slot).unwrap();
        let short = by(s).result.as_ref().unwrap_err();
        assert_eq!(short.kind(), io::ErrorKind::UnexpectedEof);
        assert!(short.to_string().contains("2048 of 4096"), "{short}");
        assert_eq!(
            by(w).result.as_ref().unwrap_err().raw_os_error(),
            Some(libc::EBADF)
        );
    }

    #[test]
    fn writes_to_a_full_device_fail_with_enospc() {
        let Some(mut r) = ring(1, 4096) else { return };
        let Ok(full) = OpenOptions::new().write(true).open("/dev/full") else {
            return;
        };
        let s = r.free_slot().unwrap();
        r.queue(full.as_raw_fd(), Op::Write, s, 0);
        let mut seen = Vec::new();
        while seen.is_empty() {
            r.submit_and_wait(None).unwrap();
            r.reap(usize::MAX, |c| seen.push(c));
        }
        let e = seen.pop().unwrap().result.unwrap_err();
        assert!(matches!(
            ProbeError::io("write", e),
            ProbeError::DiskFull(_)
        ));
    }

    #[test]
    fn dropping_a_ring_with_requests_in_flight_waits_for_them() {
        let Some(mut r) = ring(64, 4096) else { return };
        let dir = TestDir::new_on_disk("ring-drop");
        let path = dir.path().join("f");
        std::fs::write(&path, vec![3u8; 16 * 4096]).unwrap();
        let f = OpenOptions::new().read(true).open(&path).unwrap();
        // a depth larger than the file's blocks: requests share blocks
        while let Some(s) = r.free_slot() {
            r.queue(f.as_raw_fd(), Op::Read, s, (s as u64 % 16) * 4096);
        }
        r.submit_and_wait(Some(Duration::ZERO)).unwrap();
        assert!(r.in_flight() <= 64);
        drop(r);
    }
}
