//! Transaction latency histogram: records microseconds (pgbench's log
//! unit), reports milliseconds (the unit pgbench prints and storlab stores
//! transaction latencies in).
//!
//! Stored as bytea so that runs of one experiment can be merged later:
//! percentiles cannot be averaged, histograms can be added. Every histogram
//! has the same shape, so a merge is a plain addition of counters.

use std::fmt;

use crate::hdr::Shape;

/// 1 µs is pgbench's resolution; a transaction over an hour is a hung
/// server, recorded as an hour rather than lost. Three significant figures
/// keep the error under 0.1 %.
const LOWEST_US: u64 = 1;
const HIGHEST_US: u64 = 3_600 * 1_000_000;
const SIGFIGS: u8 = 3;

#[derive(Clone, Debug, PartialEq)]
pub struct TxHistogram {
    inner: hdrhistogram::Histogram<u64>,
}

/// A bytea that is not a histogram, or a histogram that cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxHistogramError(String);

impl fmt::Display for TxHistogramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "transaction latency histogram: {}", self.0)
    }
}

impl std::error::Error for TxHistogramError {}

/// Summary of a latency distribution, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyPercentiles {
    pub count: u64,
    pub lat_avg_ms: f64,
    pub lat_stddev_ms: f64,
    pub lat_p50_ms: f64,
    pub lat_p90_ms: f64,
    pub lat_p95_ms: f64,
    pub lat_p99_ms: f64,
    pub lat_max_ms: f64,
}

const SHAPE: Shape = Shape {
    low: LOWEST_US,
    high: HIGHEST_US,
    sigfig: SIGFIGS,
};

fn empty_inner() -> hdrhistogram::Histogram<u64> {
    SHAPE.empty()
}

impl Default for TxHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl TxHistogram {
    pub fn new() -> TxHistogram {
        TxHistogram {
            inner: empty_inner(),
        }
    }

    /// Records one transaction. Values outside 1 µs .. 1 h are clamped, so
    /// `count()` always equals the number of recorded transactions (a 0 µs
    /// line is possible in pgbench's log when a transaction is very fast).
    pub fn record_us(&mut self, us: u64) {
        self.inner.saturating_record(us.max(LOWEST_US));
    }

    pub fn merge(&mut self, other: &TxHistogram) {
        crate::hdr::merge(&mut self.inner, &other.inner);
    }

    pub fn count(&self) -> u64 {
        self.inner.len()
    }

    /// Latency at `quantile` (0..=1) in milliseconds; `None` when empty or
    /// for a quantile outside 0..=1.
    pub fn quantile_ms(&self, quantile: f64) -> Option<f64> {
        if self.inner.is_empty() || !(0.0..=1.0).contains(&quantile) {
            return None;
        }
        Some(us_to_ms(self.inner.value_at_quantile(quantile)))
    }

    /// p50/p90/p95/p99/max and the mean; `None` when nothing was recorded,
    /// so that SQL gets NULL rather than a latency of 0.
    pub fn percentiles(&self) -> Option<LatencyPercentiles> {
        if self.inner.is_empty() {
            return None;
        }
        let q = |p: f64| us_to_ms(self.inner.value_at_quantile(p));
        Some(LatencyPercentiles {
            count: self.inner.len(),
            lat_avg_ms: self.inner.mean() / 1_000.0,
            lat_stddev_ms: self.inner.stdev() / 1_000.0,
            lat_p50_ms: q(0.50),
            lat_p90_ms: q(0.90),
            lat_p95_ms: q(0.95),
            lat_p99_ms: q(0.99),
            lat_max_ms: us_to_ms(self.inner.max()),
        })
    }

    /// HdrHistogram V2 with deflate: compact, and readable by every
    /// HdrHistogram implementation.
    pub fn to_bytes(&self) -> Result<Vec<u8>, TxHistogramError> {
        crate::hdr::encode(&self.inner).map_err(TxHistogramError)
    }

    /// Decodes `to_bytes` output (or plain V2). A histogram of another
    /// shape is re-binned into ours so that merges stay exact additions.
    pub fn from_bytes(bytes: &[u8]) -> Result<TxHistogram, TxHistogramError> {
        Ok(TxHistogram {
            inner: crate::hdr::decode(bytes, SHAPE).map_err(TxHistogramError)?,
        })
    }

    /// The underlying HdrHistogram, for statistics not wrapped here.
    pub fn as_hdr(&self) -> &hdrhistogram::Histogram<u64> {
        &self.inner
    }
}

fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stddev_comes_from_the_histogram() {
        let mut h = TxHistogram::new();
        h.record_us(1_000);
        h.record_us(3_000);
        let p = h.percentiles().unwrap();
        assert!((p.lat_avg_ms - 2.0).abs() < 0.01, "{p:?}");
        assert!((p.lat_stddev_ms - 1.0).abs() < 0.01, "{p:?}");
    }
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= want.abs() * 0.001 + 1e-9
    }

    #[test]
    fn empty_histogram_has_no_percentiles() {
        let h = TxHistogram::new();
        assert_eq!(h.as_hdr().high(), HIGHEST_US);
        assert_eq!(h.count(), 0);
        assert_eq!(h.percentiles(), None);
        assert_eq!(h.quantile_ms(0.5), None);
    }

    #[test]
    fn percentiles_in_milliseconds_from_microseconds() {
        let mut h = TxHistogram::new();
        // 1..=1000 ms, one transaction each.
        for ms in 1..=1000u64 {
            h.record_us(ms * 1_000);
        }
        let p = h.percentiles().unwrap();
        assert_eq!(p.count, 1000);
        assert!(close(p.lat_p50_ms, 500.0), "{p:?}");
        assert!(close(p.lat_p90_ms, 900.0), "{p:?}");
        assert!(close(p.lat_p95_ms, 950.0), "{p:?}");
        assert!(close(p.lat_p99_ms, 990.0), "{p:?}");
        assert!(close(p.lat_max_ms, 1000.0), "{p:?}");
        assert!(close(p.lat_avg_ms, 500.5), "{p:?}");
        assert!(close(h.quantile_ms(0.999).unwrap(), 999.0));
        assert_eq!(h.quantile_ms(1.5), None);
        assert_eq!(h.quantile_ms(f64::NAN), None);
    }

    #[test]
    fn zero_and_huge_latencies_are_counted() {
        let mut h = TxHistogram::new();
        h.record_us(0);
        h.record_us(u64::MAX);
        assert_eq!(h.count(), 2);
        let p = h.percentiles().unwrap();
        assert!(close(p.lat_max_ms, 3_600_000.0), "{p:?}");
        assert!(h.quantile_ms(0.0).unwrap() <= 0.001);
    }

    #[test]
    fn merge_adds_counts() {
        let mut a = TxHistogram::new();
        let mut b = TxHistogram::new();
        for _ in 0..90 {
            a.record_us(1_000);
        }
        for _ in 0..10 {
            b.record_us(50_000);
        }
        a.merge(&b);
        assert_eq!(a.count(), 100);
        assert!(close(a.quantile_ms(0.9).unwrap(), 1.0));
        assert!(close(a.quantile_ms(0.95).unwrap(), 50.0));
        assert_eq!(b.count(), 10);
    }

    #[test]
    fn bytes_round_trip_and_refuse_damage() {
        let mut h = TxHistogram::new();
        for i in 1..2_000u64 {
            h.record_us(i * 37 % 90_000 + 100);
        }
        let bytes = h.to_bytes().unwrap();
        let back = TxHistogram::from_bytes(&bytes).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.percentiles(), h.percentiles());
        for cut in 0..bytes.len() {
            assert!(TxHistogram::from_bytes(&bytes[..cut]).is_err(), "cut {cut}");
        }
        let mut padded = bytes.clone();
        padded.push(0);
        assert!(TxHistogram::from_bytes(&padded).is_err());
        assert!(TxHistogram::from_bytes(b"garbage").is_err());
        // Flipped bytes must give Ok or Err, never a panic.
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x5a;
            let _ = TxHistogram::from_bytes(&bad);
        }
    }

    #[test]
    fn other_shapes_are_rebinned() {
        let mut other = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 10_000_000, 2).unwrap();
        other.record_n(2_500, 7).unwrap();
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&other, &mut bytes)
            .unwrap();
        let h = TxHistogram::from_bytes(&bytes).unwrap();
        assert_eq!(h.as_hdr().high(), HIGHEST_US);
        assert_eq!(h.count(), 7);
        assert!((h.quantile_ms(0.5).unwrap() - 2.5).abs() < 0.05);
    }
}
