//! The thread that runs a probe, as the engine sees it: something that can
//! say "stop" (a cancel, a timeout) and that waits while the workers run.
//!
//! In the server that thread is the backend: it waits on its latch, which
//! PostgreSQL's signal handlers set on a cancel, a statement_timeout or a
//! terminate, so it wakes for those at once and otherwise only when the
//! engine has something to do (a throughput sample, the end of the run).
//! Waking more often costs the measurement: on this lab's virtual disk a
//! process that only wakes every 10 ms took fio's random
//! reads at depth 32 from a median 176 000 to 154 000 IOPS (4 alternating
//! runs, docs/validation.md "Queued probes against fio's io_uring engine").
//! Tests and tools outside the server use a closure and plain sleeps.

use std::thread;
use std::time::Duration;

/// Longest plain sleep between two `stop_requested` calls of a caller that
/// cannot be woken (a closure): bounds how late such a caller's stop is seen.
pub const POLL_SLICE: Duration = Duration::from_millis(10);

pub trait Caller {
    /// True when the probe must stop. Called before each chunk of the
    /// scratch file's fill and after every `pause`. A backend raises its
    /// pending ERROR from here instead; the engine's guards stop the
    /// workers and remove the file while it unwinds.
    fn stop_requested(&mut self) -> bool;

    /// Waits at most `up_to` while the workers run. May return early; a
    /// caller whose stop can arrive at any time must return early for it,
    /// or wait no longer than POLL_SLICE.
    fn pause(&mut self, up_to: Duration) {
        thread::sleep(up_to.min(POLL_SLICE));
    }
}

/// Any `FnMut() -> bool` is a caller that sleeps in POLL_SLICE slices.
impl<F: FnMut() -> bool> Caller for F {
    fn stop_requested(&mut self) -> bool {
        self()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_closure_sleeps_at_most_a_slice() {
        let mut calls = 0;
        let mut caller = || {
            calls += 1;
            calls > 1
        };
        let began = Instant::now();
        caller.pause(Duration::from_secs(5));
        assert!(
            began.elapsed() < Duration::from_secs(1),
            "{:?}",
            began.elapsed()
        );
        assert!(!caller.stop_requested());
        assert!(caller.stop_requested());
    }
}
