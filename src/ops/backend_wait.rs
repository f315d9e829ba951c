//! The backend as a probe's caller: it waits on its latch while the probe's
//! threads run, so a cancel, a statement_timeout or a terminate (whose
//! signal handlers set the latch) wakes it at once, and nothing else does
//! until the engine's next sample. The wait shows in pg_stat_activity as
//! wait_event_type 'Extension'.

use std::time::Duration;

use pgrx::pg_sys;

use storlab_core::probe::Caller;

pub struct Backend;

impl Caller for Backend {
    fn stop_requested(&mut self) -> bool {
        // raises the pending ERROR (cancel, timeout) or FATAL (terminate)
        pg_sys::check_for_interrupts!();
        false
    }

    fn pause(&mut self, up_to: Duration) {
        // whole milliseconds, rounded up: a 0 ms wait would spin
        let ms = up_to.as_micros().div_ceil(1000).clamp(1, i32::MAX as u128) as std::ffi::c_long;
        // SAFETY: called on the backend's own thread (the engine's contract),
        // with the process latch that PostgreSQL set up for it. The latch is
        // reset before the caller checks for interrupts, as PostgreSQL's own
        // wait loops do: a signal that arrives after the check sets it again
        // and the next wait returns at once.
        unsafe {
            pg_sys::WaitLatch(
                pg_sys::MyLatch,
                (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
                ms,
                pg_sys::PG_WAIT_EXTENSION,
            );
            pg_sys::ResetLatch(pg_sys::MyLatch);
        }
    }
}
