//! Percentiles of merged stored histograms: several probes of one case, or
//! several repetitions of one benchmark, read as one distribution. The
//! stored HDR histograms merge exactly (same bucket layout), so the merged
//! p99 is the p99 of every sample together, not an average of p99s.

use crate::error::{invalid, Error, Result, SqlState};
use crate::pgbench::TxHistogram;
use crate::probe::Histogram;

/// Percentiles as SQL gives them: each in (0, 100], at least one.
pub fn check_percentiles(percentiles: &[f64]) -> Result<()> {
    if percentiles.is_empty() {
        return Err(invalid(
            "percentiles must list at least one percentile, e.g. '{50,99,99.9}'",
        ));
    }
    match percentiles.iter().find(|p| !(**p > 0.0 && **p <= 100.0)) {
        Some(p) => Err(invalid(format!(
            "percentiles must be greater than 0 and at most 100, not {p}"
        ))),
        None => Ok(()),
    }
}

/// One merged distribution: how many samples, and the latency at each
/// requested percentile (in the unit of the function that made it).
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    pub samples: u64,
    pub values: Vec<f64>,
}

/// Probe histograms (stored in nanoseconds): latencies in microseconds.
/// A stored histogram that does not decode: the row was damaged, not the
/// request wrong.
fn unreadable(e: impl std::fmt::Display) -> Error {
    Error::new(
        SqlState::Internal,
        format!("a stored histogram cannot be read: {e}"),
    )
}

pub fn probe_percentiles(blobs: &[Vec<u8>], percentiles: &[f64]) -> Result<Merged> {
    check_percentiles(percentiles)?;
    let mut all = Histogram::new();
    for blob in blobs {
        all.merge(&Histogram::from_bytes(blob).map_err(unreadable)?);
    }
    Ok(Merged {
        samples: all.count(),
        values: percentiles.iter().map(|p| all.percentile_us(*p)).collect(),
    })
}

/// Benchmark histograms (stored in microseconds): latencies in milliseconds;
/// NaN for an empty distribution (SQL shows it as NULL).
pub fn run_percentiles(blobs: &[Vec<u8>], percentiles: &[f64]) -> Result<Merged> {
    check_percentiles(percentiles)?;
    let mut all = TxHistogram::new();
    for blob in blobs {
        all.merge(&TxHistogram::from_bytes(blob).map_err(unreadable)?);
    }
    Ok(Merged {
        samples: all.count(),
        values: percentiles
            .iter()
            .map(|p| all.quantile_ms(p / 100.0).unwrap_or(f64::NAN))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn probe_blob(latencies_us: &[u64]) -> Vec<u8> {
        let mut h = Histogram::new();
        for us in latencies_us {
            h.record(Duration::from_micros(*us));
        }
        h.to_bytes().unwrap()
    }

    #[test]
    fn merging_reads_every_sample_as_one_distribution() {
        // 99 fast operations in one probe, one slow one in another: neither
        // probe's own p99 shows what the merged p99.9 does
        let fast = probe_blob(&[100; 99]);
        let slow = probe_blob(&[10_000]);
        let m = probe_percentiles(&[fast, slow], &[50.0, 99.0, 100.0]).unwrap();
        assert_eq!(m.samples, 100);
        assert!((m.values[0] - 100.0).abs() < 1.0, "{:?}", m.values);
        assert!((m.values[1] - 100.0).abs() < 1.0, "{:?}", m.values);
        assert!((m.values[2] - 10_000.0).abs() < 10.0, "{:?}", m.values);
    }

    #[test]
    fn run_histograms_give_milliseconds() {
        let mut h = TxHistogram::new();
        for _ in 0..10 {
            h.record_us(2_000);
        }
        let m = run_percentiles(&[h.to_bytes().unwrap()], &[50.0]).unwrap();
        assert_eq!(m.samples, 10);
        assert!((m.values[0] - 2.0).abs() < 0.01, "{:?}", m.values);
        let empty = run_percentiles(&[], &[50.0]).unwrap();
        assert_eq!(empty.samples, 0);
        assert!(empty.values[0].is_nan());
    }

    #[test]
    fn percentiles_out_of_range_and_garbage_are_refused() {
        let message = |p: &[f64]| check_percentiles(p).unwrap_err().message;
        assert!(message(&[]).contains("at least one"));
        assert!(message(&[0.0]).contains("greater than 0"));
        assert!(message(&[100.5]).contains("at most 100"));
        assert_eq!(
            check_percentiles(&[f64::NAN]).unwrap_err().state,
            SqlState::InvalidParameterValue
        );
        let e = probe_percentiles(&[vec![1, 2, 3]], &[50.0]).unwrap_err();
        assert!(e.message.contains("cannot be read"), "{e}");
    }
}
