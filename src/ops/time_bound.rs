//! How long a measuring call may take, said before it starts: the most a
//! compare_tablespaces() or profile() call may take (from the probes'
//! count, duration and scratch files, `storlab_core::report::volumes`), the
//! NOTICE's wording of it, and 54000 when statement_timeout is shorter, so
//! that a call is refused at once rather than cancelled with nothing kept.

use std::time::Duration;

use pgrx::prelude::*;

use super::error::{Error, SqlState};
use super::identity::as_owner;
use super::read;
use super::server::this_server;
use super::standby;
use storlab_core::report::volumes::FILL_SHARE;

/// The sequential write speed of the volume of `names` that its scratch
/// files are assumed to fill at FILL_SHARE of: its newest seqwrite probe's
/// (O_DIRECT), else the speed at which a never-measured volume is assumed
/// to fill them, UNKNOWN_FILL_MIB_S, given as such.
pub(crate) fn fill_rate(names: &[String]) -> f64 {
    last_fill_rate(names).unwrap_or(UNKNOWN_FILL_MIB_S / FILL_SHARE)
}

/// The newest sequential-write speed stored for the volume (any age, any
/// call); None: never measured.
fn last_fill_rate(names: &[String]) -> Option<f64> {
    let probes = standby::probes_from(3);
    as_owner(|| {
        read::one::<f64>(
            &format!(
                "SELECT mib_s FROM {probes}
                  WHERE tablespace = ANY($1::name[]) AND workload = 'seqwrite' AND ops > 0
                    AND system_identifier = ANY($2)
                  ORDER BY started_at DESC LIMIT 1"
            ),
            &[
                names.to_vec().into(),
                this_server().into(),
                standby::probes_arg(),
            ],
        )
    })
    .ok()
    .flatten()
    .filter(|r| r.is_finite() && *r > 0.0)
}

/// How fast a scratch file is assumed to fill on a volume never measured:
/// a slow disk's buffered writes (a first call on the lab stated 21 min
/// for 4 min when this was taken as an O_DIRECT speed and shared again).
const UNKNOWN_FILL_MIB_S: f64 = 100.0;

pub(crate) fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        return format!("{} ms", d.as_millis());
    }
    let s = d.as_secs_f64().ceil() as u64;
    match (s / 60, s % 60) {
        (0, s) => format!("{s} s"),
        (m, 0) => format!("{m} min"),
        (m, s) => format!("{m} min {s} s"),
    }
}

/// 54000 before anything is measured when statement_timeout is shorter
/// than the most the call may take; `hint` says the ways out.
pub(crate) fn check_time(
    call: &str,
    most: Duration,
    hint: impl Fn(u64) -> String,
) -> Result<(), Error> {
    // SAFETY: reads a backend-global GUC (milliseconds; 0: no limit).
    let timeout_ms = unsafe { pg_sys::StatementTimeout };
    if timeout_ms > 0 && most > Duration::from_millis(timeout_ms as u64) {
        return Err(Error::new(
            SqlState::ProgramLimitExceeded,
            format!(
                "{call} may take {} to measure, longer than statement_timeout ({})",
                seconds(most),
                seconds(Duration::from_millis(timeout_ms as u64))
            ),
        )
        .with_detail(
            "Nothing was measured: a call cancelled by statement_timeout would keep nothing.",
        )
        .with_hint(hint(most.as_secs_f64().ceil() as u64)));
    }
    Ok(())
}
