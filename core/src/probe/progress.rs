//! What a running worker publishes for the calling thread: its operation
//! count (for throughput sampled at intervals) and, on request, the latency
//! samples recorded since its last publication (for a p99 that has settled).
//!
//! The hot loop only stores its count (a plain store to a cache line no
//! other worker writes) and compares an epoch; it takes its lock only when
//! the calling thread has asked for a new sample, about ten times a second.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::Histogram;

/// One worker's published state, on its own cache lines so that workers
/// do not slow each other down by writing neighbouring counters.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Progress {
    ops: AtomicU64,
    published: Mutex<Histogram>,
}

impl Progress {
    /// Operations the worker has completed so far.
    pub(crate) fn ops(&self) -> u64 {
        self.ops.load(Ordering::Relaxed)
    }

    /// Adds the worker's published latencies to `into`.
    pub(crate) fn merge_into(&self, into: &mut Histogram) {
        into.merge(&self.published());
    }

    /// The published latencies, locked (a worker that panicked holding the
    /// lock left them whole: merges do not panic midway).
    fn published(&self) -> MutexGuard<'_, Histogram> {
        self.published
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A worker's counts while it runs: what `WorkerDone` carries at the end.
pub(crate) struct Tally<'a> {
    ops: u64,
    bytes: u64,
    /// Latencies recorded since the last publication.
    recent: Histogram,
    progress: &'a Progress,
    epoch: &'a AtomicU64,
    epoch_seen: u64,
}

impl<'a> Tally<'a> {
    pub(crate) fn new(progress: &'a Progress, epoch: &'a AtomicU64) -> Tally<'a> {
        Tally {
            ops: 0,
            bytes: 0,
            recent: Histogram::new(),
            progress,
            epoch,
            epoch_seen: epoch.load(Ordering::Relaxed),
        }
    }

    /// One completed operation.
    pub(crate) fn add(&mut self, latency: Duration, bytes: u64) {
        self.recent.record(latency);
        self.ops += 1;
        self.bytes = self.bytes.saturating_add(bytes);
    }

    /// Makes the count visible, and the latencies too when the calling
    /// thread has started a new sample since the last call.
    pub(crate) fn publish(&mut self) {
        self.progress.ops.store(self.ops, Ordering::Relaxed);
        let epoch = self.epoch.load(Ordering::Relaxed);
        if epoch != self.epoch_seen {
            self.epoch_seen = epoch;
            self.flush();
        }
    }

    fn flush(&mut self) {
        self.progress.published().merge(&self.recent);
        self.recent.reset();
    }

    /// Every latency the worker recorded; the tally is spent.
    pub(crate) fn finish(mut self) -> (u64, u64, Histogram) {
        self.progress.ops.store(self.ops, Ordering::Relaxed);
        self.flush();
        let all = self.progress.published().clone();
        (self.ops, self.bytes, all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_are_published_only_when_a_sample_asks_and_all_come_back() {
        let progress = Progress::default();
        let epoch = AtomicU64::new(0);
        let mut tally = Tally::new(&progress, &epoch);
        tally.add(Duration::from_micros(10), 8192);
        tally.publish();
        assert_eq!(progress.ops(), 1);
        let mut seen = Histogram::new();
        progress.merge_into(&mut seen);
        assert_eq!(seen.count(), 0, "no sample asked yet");

        epoch.fetch_add(1, Ordering::Relaxed);
        tally.add(Duration::from_micros(20), 8192);
        tally.publish();
        let mut seen = Histogram::new();
        progress.merge_into(&mut seen);
        assert_eq!(seen.count(), 2);

        tally.add(Duration::from_micros(30), 8192);
        let (ops, bytes, all) = tally.finish();
        assert_eq!((ops, bytes, all.count()), (3, 3 * 8192, 3));
        assert_eq!(progress.ops(), 3);
    }
}
