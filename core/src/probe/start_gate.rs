//! A start line for the worker threads.
//!
//! Like `std::sync::Barrier`, but it can also be opened without everyone
//! arriving: if spawning the third of four threads fails, or the calling
//! thread unwinds, the two already waiting must be released, and a Barrier
//! would leave them (and the scope joining them) blocked forever.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

#[derive(Default)]
pub(crate) struct StartGate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    arrived: usize,
    open: bool,
}

impl StartGate {
    pub(crate) fn new() -> StartGate {
        StartGate::default()
    }

    /// Called by a worker: announces it is ready and blocks until opened.
    pub(crate) fn arrive_and_wait(&self) {
        let mut state = self.lock();
        state.arrived += 1;
        self.changed.notify_all();
        while !state.open {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Called by the starter: blocks until `n` workers wait at the gate (or
    /// it was opened some other way).
    pub(crate) fn wait_for_arrivals(&self, n: usize) {
        let mut state = self.lock();
        while state.arrived < n && !state.open {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Releases every waiter, present and future. Idempotent.
    pub(crate) fn open(&self) {
        self.lock().open = true;
        self.changed.notify_all();
    }

    // Nothing panics while holding the lock, but a poisoned gate must still
    // open rather than turn into a panic in a backend.
    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn nobody_passes_before_open() {
        let gate = StartGate::new();
        let passed = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    gate.arrive_and_wait();
                    passed.fetch_add(1, Ordering::SeqCst);
                });
            }
            gate.wait_for_arrivals(3);
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(passed.load(Ordering::SeqCst), 0);
            gate.open();
        });
        assert_eq!(passed.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn opening_early_releases_partial_arrivals() {
        // Two of an expected four arrive (as when spawning fails); opening
        // must release both, and waiting for four must not block after that.
        let gate = StartGate::new();
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| gate.arrive_and_wait());
            }
            gate.wait_for_arrivals(2);
            gate.open();
            gate.wait_for_arrivals(4);
        });
        // Late arrivals pass straight through.
        gate.arrive_and_wait();
    }
}
