//! `storlab.probe_read_path()`'s request: which effective_io_concurrency
//! values to time PostgreSQL's own read path at, how large a scratch table,
//! how many repetitions. PostgreSQL 18 and later only (the caller checks
//! the major, since the version is the server's, not the request's).

use crate::error::{invalid, Error, Result, SqlState};

/// The first major whose reads go through asynchronous I/O (io_method).
pub const MIN_SERVER_VERSION: i32 = 180_000;
/// PostgreSQL's own bounds of effective_io_concurrency (0: no prefetching).
pub const MAX_EIC: i32 = 1000;
/// More values make a probe longer than anyone waits for in psql.
pub const MAX_EIC_VALUES: usize = 12;
pub const MIN_TABLE_BYTES: i64 = 1 << 20;
/// 16 GB: a table larger than that is a load test, not a probe.
pub const MAX_TABLE_BYTES: i64 = 16 << 30;
pub const MAX_REPETITIONS: i32 = 20;

/// The two scans timed at every value: a sequential scan (a read stream of
/// adjacent blocks, combined up to io_combine_limit) and a bitmap heap
/// scan of scattered blocks (where prefetching distance matters most).
pub const SCANS: [&str; 2] = ["seqscan", "bitmapscan"];

#[derive(Debug, Clone, PartialEq)]
pub struct ReadPathArgs {
    /// distinct values, in the order given
    pub eic: Vec<i32>,
    pub table_bytes: i64,
    pub repetitions: i32,
}

/// The refusal on a major before 18, with the reason.
pub fn unsupported_major(server_version_num: i32) -> Option<Error> {
    (server_version_num < MIN_SERVER_VERSION).then(|| {
        Error::new(
            SqlState::FeatureNotSupported,
            "the read-path probe needs PostgreSQL 18 or later, for its asynchronous I/O",
        )
        .with_detail(format!(
            "This server is PostgreSQL {}: its reads have no io_method and no read streams to time.",
            server_version_num / 10_000
        ))
        .with_hint("storlab.probe() and storlab.profile() measure the storage itself on every major.")
    })
}

pub fn check(eic: &[Option<i32>], table_bytes: i64, repetitions: i32) -> Result<ReadPathArgs> {
    if eic.is_empty() {
        return Err(invalid(
            "effective_io_concurrency must list at least one value, e.g. '{1,16,64}'",
        ));
    }
    if eic.len() > MAX_EIC_VALUES {
        return Err(invalid(format!(
            "effective_io_concurrency lists {} values; at most {MAX_EIC_VALUES}",
            eic.len()
        )));
    }
    let mut values = Vec::new();
    for v in eic {
        match v {
            Some(v) if (0..=MAX_EIC).contains(v) => {
                if !values.contains(v) {
                    values.push(*v)
                }
            }
            other => {
                return Err(invalid(format!(
                    "every effective_io_concurrency must be between 0 and {MAX_EIC}, not {}",
                    other.map_or("NULL".to_string(), |v| v.to_string())
                )))
            }
        }
    }
    if !(MIN_TABLE_BYTES..=MAX_TABLE_BYTES).contains(&table_bytes) {
        return Err(invalid(format!(
            "table_size must be between 1 MB and 16 GB, not {table_bytes} bytes"
        )));
    }
    if !(1..=MAX_REPETITIONS).contains(&repetitions) {
        return Err(invalid(format!(
            "repetitions must be between 1 and {MAX_REPETITIONS}, not {repetitions}"
        )));
    }
    Ok(ReadPathArgs {
        eic: values,
        table_bytes,
        repetitions,
    })
}

/// The order the scans run in: every (repetition, value, scan), values
/// rotated from one repetition to the next, so that a drift over the
/// probe (a device warming, a neighbour starting) is spread over every
/// value instead of landing on the last one.
pub fn schedule(args: &ReadPathArgs) -> Vec<(i32, i32, &'static str)> {
    let n = args.eic.len();
    let mut out = Vec::with_capacity(n * SCANS.len() * args.repetitions as usize);
    for rep in 0..args.repetitions {
        for i in 0..n {
            let eic = args.eic[(i + rep as usize) % n];
            for scan in SCANS {
                out.push((rep + 1, eic, scan));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_checked_and_deduplicated_in_order() {
        let a = check(&[Some(16), Some(1), Some(16), Some(0)], 8 << 20, 3).unwrap();
        assert_eq!(a.eic, [16, 1, 0]);
        assert!(check(&[], 8 << 20, 3).is_err());
        assert!(check(&[None], 8 << 20, 3).is_err());
        assert!(check(&[Some(-1)], 8 << 20, 3).is_err());
        assert!(check(&[Some(1001)], 8 << 20, 3).is_err());
        assert!(check(&vec![Some(1); 13], 8 << 20, 3).is_err());
        let e = check(&[Some(1)], 1000, 3).unwrap_err();
        assert_eq!(e.state, SqlState::InvalidParameterValue);
        assert!(check(&[Some(1)], 8 << 20, 0).is_err());
        assert!(check(&[Some(1)], 8 << 20, 21).is_err());
    }

    #[test]
    fn only_18_and_later() {
        let e = unsupported_major(170_005).unwrap();
        assert_eq!(e.state, SqlState::FeatureNotSupported);
        assert!(
            e.detail.as_deref().unwrap().contains("PostgreSQL 17:"),
            "{:?}",
            e.detail
        );
        assert!(unsupported_major(180_001).is_none());
    }

    #[test]
    fn schedule_rotates_values_between_repetitions() {
        let a = check(&[Some(1), Some(16), Some(64)], 8 << 20, 2).unwrap();
        let s = schedule(&a);
        assert_eq!(s.len(), 12);
        let firsts: Vec<i32> = s.iter().step_by(2).map(|x| x.1).collect();
        assert_eq!(firsts, [1, 16, 64, 16, 64, 1]);
        assert_eq!(s[0].2, "seqscan");
        assert_eq!(s[1].2, "bitmapscan");
    }
}
