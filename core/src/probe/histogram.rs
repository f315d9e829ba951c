//! Latency histogram: records nanoseconds, reports microseconds.
//!
//! Results are stored in the database as bytea and merged later across
//! workers, runs and tablespaces, so the serialised form must be complete
//! (an HdrHistogram, not precomputed percentiles: percentiles cannot be
//! averaged) and every histogram must have the same shape so merging is a
//! plain counter addition.

use std::fmt;
use std::time::Duration;

use crate::hdr::Shape;

/// Shape of every histogram we make. Below 1 ns is meaningless for a
/// syscall, and above an hour the device is effectively dead; 3
/// significant figures keep the error under 0.1% with small counts arrays.
const LOWEST_NS: u64 = 1;
const HIGHEST_NS: u64 = 3_600 * 1_000_000_000;
const SIGFIGS: u8 = 3;

#[derive(Clone, Debug)]
pub struct Histogram {
    inner: hdrhistogram::Histogram<u64>,
}

/// A bytea that does not decode as a histogram, or a histogram that cannot
/// be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistogramError(String);

impl fmt::Display for HistogramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "latency histogram: {}", self.0)
    }
}

impl std::error::Error for HistogramError {}

const SHAPE: Shape = Shape {
    low: LOWEST_NS,
    high: HIGHEST_NS,
    sigfig: SIGFIGS,
};

fn empty_inner() -> hdrhistogram::Histogram<u64> {
    SHAPE.empty()
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            inner: empty_inner(),
        }
    }

    /// Records one latency. Values outside 1 ns .. 1 h are clamped to the
    /// nearest end rather than dropped, so `count()` always equals the
    /// number of operations.
    pub fn record_ns(&mut self, ns: u64) {
        self.inner.saturating_record(ns);
    }

    pub fn record(&mut self, latency: Duration) {
        self.record_ns(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Forgets every sample, keeping the shape (and the memory).
    pub fn reset(&mut self) {
        self.inner.reset();
    }

    /// Adds every sample of `other` to `self`.
    pub fn merge(&mut self, other: &Histogram) {
        crate::hdr::merge(&mut self.inner, &other.inner);
    }

    /// Compact, self-describing encoding (HdrHistogram V2 + deflate), the
    /// same format other HdrHistogram implementations read.
    pub fn to_bytes(&self) -> Result<Vec<u8>, HistogramError> {
        crate::hdr::encode(&self.inner).map_err(HistogramError)
    }

    /// Decodes `to_bytes` output (compressed or plain V2). A histogram with
    /// another shape, e.g. written by another tool, is re-binned into ours
    /// so that later merges stay exact additions.
    ///
    /// Caveat: inside the compressed payload the format states the length
    /// of the decompressed counts, and the decoder allocates that much
    /// before reading; a forged blob can therefore cost up to 4 GiB of
    /// memory. Blobs written by this module are a few KiB.
    pub fn from_bytes(bytes: &[u8]) -> Result<Histogram, HistogramError> {
        Ok(Histogram {
            inner: crate::hdr::decode(bytes, SHAPE).map_err(HistogramError)?,
        })
    }

    pub fn count(&self) -> u64 {
        self.inner.len()
    }

    /// Mean latency in microseconds; 0 when empty.
    pub fn mean_us(&self) -> f64 {
        self.inner.mean() / 1_000.0
    }

    /// Latency in microseconds at percentile `p` (0..=100, e.g. 99.9);
    /// out-of-range `p` is clamped, NaN gives NaN, and an empty histogram
    /// gives 0.
    pub fn percentile_us(&self, p: f64) -> f64 {
        if p.is_nan() {
            return f64::NAN;
        }
        if self.inner.is_empty() {
            return 0.0;
        }
        self.inner.value_at_percentile(p.clamp(0.0, 100.0)) as f64 / 1_000.0
    }

    /// Largest latency in microseconds (to the histogram's precision); 0 when empty.
    pub fn max_us(&self) -> f64 {
        if self.inner.is_empty() {
            return 0.0;
        }
        self.inner.max() as f64 / 1_000.0
    }

    /// Smallest latency in microseconds (to the histogram's precision); 0 when empty.
    pub fn min_us(&self) -> f64 {
        if self.inner.is_empty() {
            return 0.0;
        }
        self.inner.min() as f64 / 1_000.0
    }

    /// The underlying HdrHistogram, for statistics not wrapped here.
    pub fn as_hdr(&self) -> &hdrhistogram::Histogram<u64> {
        &self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

    fn us(ns: u64) -> f64 {
        ns as f64 / 1_000.0
    }

    /// Relative error allowed by 3 significant figures.
    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= want.abs() * 0.001 + 1e-9
    }

    #[test]
    fn bounds_are_accepted_by_hdrhistogram() {
        let h = Histogram::new();
        assert_eq!(h.as_hdr().low(), LOWEST_NS);
        assert_eq!(h.as_hdr().high(), HIGHEST_NS);
        assert_eq!(h.count(), 0);
        assert_eq!(h.mean_us(), 0.0);
        assert_eq!(h.percentile_us(99.0), 0.0);
        assert_eq!(h.max_us(), 0.0);
        assert_eq!(h.min_us(), 0.0);
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = Histogram::new();
        // 1..=1000 microseconds, one sample each.
        for i in 1..=1000u64 {
            h.record_ns(i * 1_000);
        }
        assert_eq!(h.count(), 1000);
        assert!(
            close(h.percentile_us(50.0), 500.0),
            "{}",
            h.percentile_us(50.0)
        );
        assert!(
            close(h.percentile_us(99.0), 990.0),
            "{}",
            h.percentile_us(99.0)
        );
        assert!(close(h.percentile_us(100.0), 1000.0));
        assert!(close(h.min_us(), 1.0), "{}", h.min_us());
        assert!(close(h.max_us(), 1000.0), "{}", h.max_us());
        assert!(close(h.mean_us(), 500.5), "{}", h.mean_us());
        // Out-of-range percentiles clamp; NaN is not silently a number.
        assert_eq!(h.percentile_us(250.0), h.percentile_us(100.0));
        assert_eq!(h.percentile_us(-3.0), h.percentile_us(0.0));
        assert!(h.percentile_us(f64::NAN).is_nan());
    }

    #[test]
    fn tail_percentiles_separate_rare_outliers() {
        // 5 slow ops in 10,000: p99.9 must still be the fast value and
        // p99.99 the slow one. (Counts sit off the exact rank boundaries
        // because 99.9 / 100 is not exact in binary.)
        let mut h = Histogram::new();
        for _ in 0..9_995 {
            h.record_ns(100_000);
        }
        for _ in 0..5 {
            h.record_ns(5_000_000);
        }
        assert!(
            close(h.percentile_us(99.9), 100.0),
            "{}",
            h.percentile_us(99.9)
        );
        assert!(
            close(h.percentile_us(99.99), 5_000.0),
            "{}",
            h.percentile_us(99.99)
        );
    }

    #[test]
    fn durations_are_recorded_in_nanoseconds() {
        let mut h = Histogram::new();
        h.record(Duration::from_micros(250));
        assert!(close(h.max_us(), 250.0), "{}", h.max_us());
    }

    #[test]
    fn out_of_range_values_are_clamped_not_lost() {
        let mut h = Histogram::new();
        h.record_ns(0);
        h.record_ns(u64::MAX);
        h.record(Duration::from_secs(10 * 3_600));
        assert_eq!(h.count(), 3);
        assert!(close(h.max_us(), us(HIGHEST_NS)), "{}", h.max_us());
        assert!(h.min_us() <= 0.001, "{}", h.min_us());
    }

    #[test]
    fn merge_adds_counts_and_extends_range() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        for _ in 0..100 {
            a.record_ns(10_000);
        }
        for _ in 0..50 {
            b.record_ns(2_000_000);
        }
        a.merge(&b);
        assert_eq!(a.count(), 150);
        assert!(close(a.max_us(), 2_000.0));
        assert!(close(a.min_us(), 10.0));
        assert!(close(a.percentile_us(60.0), 10.0));
        assert!(close(a.percentile_us(70.0), 2_000.0));
        assert_eq!(b.count(), 50, "merge must not change its argument");
    }

    #[test]
    fn bytes_round_trip_and_merge_after_decoding() {
        let mut h = Histogram::new();
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..10_000 {
            h.record_ns(rng.u64(1_000..5_000_000));
        }
        let bytes = h.to_bytes().unwrap();
        assert!(bytes.len() < 64 * 1024, "{} bytes", bytes.len());
        let back = Histogram::from_bytes(&bytes).unwrap();
        assert_eq!(back.count(), h.count());
        for p in [0.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
            assert_eq!(back.percentile_us(p), h.percentile_us(p), "p{p}");
        }
        assert_eq!(back.mean_us(), h.mean_us());
        assert_eq!(back.as_hdr(), h.as_hdr());

        let mut merged = Histogram::from_bytes(&bytes).unwrap();
        merged.merge(&back);
        assert_eq!(merged.count(), 20_000);
        assert_eq!(merged.percentile_us(99.0), h.percentile_us(99.0));
    }

    #[test]
    fn empty_histogram_round_trips() {
        let bytes = Histogram::new().to_bytes().unwrap();
        assert_eq!(Histogram::from_bytes(&bytes).unwrap().count(), 0);
    }

    #[test]
    fn foreign_shapes_are_rebinned_into_ours() {
        let mut other = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 1_000_000, 2).unwrap();
        other.record_n(500_000, 4).unwrap();
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&other, &mut bytes)
            .unwrap();
        let mut h = Histogram::from_bytes(&bytes).unwrap();
        assert_eq!(h.as_hdr().high(), HIGHEST_NS);
        assert_eq!(h.count(), 4);
        assert!((h.max_us() - 500.0).abs() < 5.0, "{}", h.max_us());
        // And it merges as an exact addition with a native one.
        h.merge(&Histogram::new());
        assert_eq!(h.count(), 4);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(Histogram::from_bytes(&[]).is_err());
        assert!(Histogram::from_bytes(b"not a histogram").is_err());

        let mut h = Histogram::new();
        for i in 1..500 {
            h.record_ns(i * 977);
        }
        let good = h.to_bytes().unwrap();
        for cut in 0..good.len() {
            assert!(Histogram::from_bytes(&good[..cut]).is_err(), "cut {cut}");
        }
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..2_000 {
            let mut bad = good.clone();
            for _ in 0..rng.usize(1..4) {
                let at = rng.usize(..bad.len());
                bad[at] = rng.u8(..);
            }
            // Must return (Ok or Err), never panic.
            let _ = Histogram::from_bytes(&bad);
        }
    }

    #[test]
    fn plain_v2_with_an_impossible_length_is_refused_before_allocating() {
        let mut forged = Vec::new();
        forged.extend_from_slice(&(0x1c84_9303u32 | 0x10).to_be_bytes());
        forged.extend_from_slice(&u32::MAX.to_be_bytes());
        forged.extend_from_slice(&[0; 40]);
        let err = Histogram::from_bytes(&forged).unwrap_err();
        assert!(err.to_string().contains("declares 4294967295"), "{err}");
    }

    #[test]
    fn plain_v2_is_accepted_too() {
        let mut h = Histogram::new();
        h.record_ns(42_000);
        let mut bytes = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(h.as_hdr(), &mut bytes)
            .unwrap();
        let back = Histogram::from_bytes(&bytes).unwrap();
        assert_eq!(back.as_hdr(), h.as_hdr());
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let mut bytes = Histogram::new().to_bytes().unwrap();
        bytes.push(0);
        assert!(Histogram::from_bytes(&bytes).is_err());
    }
}
