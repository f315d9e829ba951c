//! Stop requests: a committed cancel() (the job's row turns
//! 'cancelling', and the worker's latch is set) or a signal to the worker
//! (SIGTERM: the waiting CALL cancelled, pg_terminate_backend, a shutdown).
//! Every client program a job runs polls these while it runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pgrx::bgworkers::BackgroundWorker;

use super::job::bookkeeping;
use crate::ops::read;

/// Has the job been cancelled, or the worker told to stop? For the child's
/// stop callback: it also waits on the latch, so it paces the polling.
pub fn stop_requested(job_id: i64) -> Option<String> {
    // every 250 ms: a transaction each time, on a server that is being
    // benchmarked; a committed cancel() also signals the worker, which
    // wakes this at once
    stop_requested_after(job_id, Duration::from_millis(250))
}

/// A SIGTERM the worker was sent (the waiting CALL cancelled, through
/// stop_now; pg_terminate_backend; a shutdown). pgrx clears its own flag in
/// the wait on the latch that sees it, so a caller that waits for its own
/// reasons (the online move's watcher paces its samples so) would consume
/// the request and the next look would find nothing: kept here, the worker
/// stops at its next look wherever the signal was seen.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

/// Waits on the latch up to `wait` (a committed cancel() or a signal ends
/// the wait at once): has the worker been sent SIGTERM, now or before?
pub fn wait_signalled(wait: Duration) -> bool {
    if !BackgroundWorker::wait_latch(Some(wait)) {
        SIGNALLED.store(true, Ordering::SeqCst);
    }
    SIGNALLED.load(Ordering::SeqCst)
}

/// [`stop_requested`], after waiting `wait` on the latch.
pub fn stop_requested_after(job_id: i64, wait: Duration) -> Option<String> {
    let signalled = wait_signalled(wait);
    let (status, error) = bookkeeping(|| {
        read::two::<String, String>(
            "SELECT status, error FROM storlab.job_records WHERE id = $1",
            &[job_id.into()],
        )
    });
    if status.as_deref() == Some("cancelling") {
        Some(error.unwrap_or_else(|| "cancelled with storlab.cancel()".into()))
    } else if signalled {
        Some(
            "stopped by a signal: the session waiting for it was cancelled (statement_timeout, pg_cancel_backend), \
             or pg_terminate_backend, or a server shutdown"
                .into(),
        )
    } else {
        None
    }
}
