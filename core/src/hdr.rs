//! The one HDR latency histogram of storlab, for the probe engine's I/O
//! latencies (recorded in nanoseconds, reported in microseconds) and
//! pgbench's transaction latencies (recorded in microseconds, pgbench's log
//! unit, reported in milliseconds, the unit storlab stores them in): one
//! type, [`LatencyHistogram`], whose unit is its type parameter, so that a
//! probe's histogram and a transaction's are never merged by mistake.
//!
//! Results are stored in the database as bytea and merged later across
//! workers, runs and tablespaces, so the serialised form must be complete
//! (an HdrHistogram, not precomputed percentiles: percentiles cannot be
//! averaged) and every histogram of a unit has the same shape, so that a
//! merge is a plain addition of counters. The encoding is HdrHistogram V2
//! with deflate, as every earlier version stored it (see the tests that
//! decode stored bytes). Pure Rust.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// The unit a histogram records in, with the shape its samples are kept in.
pub trait Unit {
    /// Every histogram of this unit has this shape.
    const SHAPE: Shape;
    /// What the histogram is, in its error messages.
    const WHAT: &'static str;
}

/// Nanoseconds: a probe's I/O latencies. Below 1 ns is meaningless for a
/// syscall, and above an hour the device is effectively dead; 3
/// significant figures keep the error under 0.1% with small counts arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Nanoseconds;

impl Unit for Nanoseconds {
    const SHAPE: Shape = Shape {
        low: 1,
        high: 3_600 * 1_000_000_000,
        sigfig: 3,
    };
    const WHAT: &'static str = "latency histogram";
}

/// Microseconds: pgbench's transaction latencies. 1 µs is pgbench's
/// resolution; a transaction over an hour is a hung server, recorded as an
/// hour rather than lost. Three significant figures keep the error under
/// 0.1 %.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Microseconds;

impl Unit for Microseconds {
    const SHAPE: Shape = Shape {
        low: 1,
        high: 3_600 * 1_000_000,
        sigfig: 3,
    };
    const WHAT: &'static str = "transaction latency histogram";
}

/// A probe's latency histogram: records nanoseconds, reports microseconds.
pub type ProbeHistogram = LatencyHistogram<Nanoseconds>;
/// A benchmark's transaction latency histogram: records microseconds,
/// reports milliseconds.
pub type TxHistogram = LatencyHistogram<Microseconds>;

/// Latencies in the unit `U`, in `U`'s shape.
#[derive(Clone, Debug, PartialEq)]
pub struct LatencyHistogram<U: Unit> {
    inner: Histogram<u64>,
    unit: PhantomData<U>,
}

/// A bytea that does not decode as a histogram, or a histogram that cannot
/// be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistogramError {
    what: &'static str,
    message: String,
}

impl fmt::Display for HistogramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.message)
    }
}

impl std::error::Error for HistogramError {}

impl<U: Unit> Default for LatencyHistogram<U> {
    fn default() -> Self {
        Self::new()
    }
}

impl<U: Unit> LatencyHistogram<U> {
    pub fn new() -> Self {
        LatencyHistogram {
            inner: U::SHAPE.empty(),
            unit: PhantomData,
        }
    }

    fn error(message: String) -> HistogramError {
        HistogramError {
            what: U::WHAT,
            message,
        }
    }

    /// Records one latency in the unit `U`; values outside the shape are
    /// clamped to the nearest end rather than dropped, so `count()` always
    /// equals the number of records.
    pub fn record_value(&mut self, value: u64) {
        self.inner.saturating_record(value);
    }

    /// Forgets every sample, keeping the shape (and the memory).
    pub fn reset(&mut self) {
        self.inner.reset();
    }

    /// Adds every sample of `other` to `self`.
    pub fn merge(&mut self, other: &Self) {
        merge(&mut self.inner, &other.inner);
    }

    pub fn count(&self) -> u64 {
        self.inner.len()
    }

    /// Compact, self-describing encoding (HdrHistogram V2 + deflate), the
    /// same format other HdrHistogram implementations read.
    pub fn to_bytes(&self) -> Result<Vec<u8>, HistogramError> {
        encode(&self.inner).map_err(Self::error)
    }

    /// Decodes `to_bytes` output (compressed or plain V2). A histogram with
    /// another shape, e.g. written by another tool, is re-binned into ours
    /// so that later merges stay exact additions.
    ///
    /// Caveat: inside the compressed payload the format states the length
    /// of the decompressed counts, and the decoder allocates that much
    /// before reading; a forged blob can therefore cost up to 4 GiB of
    /// memory. Blobs written by this module are a few KiB.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, HistogramError> {
        Ok(LatencyHistogram {
            inner: decode(bytes, U::SHAPE).map_err(Self::error)?,
            unit: PhantomData,
        })
    }

    /// The underlying HdrHistogram, for statistics not wrapped here.
    pub fn as_hdr(&self) -> &Histogram<u64> {
        &self.inner
    }
}

fn thousandths(v: u64) -> f64 {
    v as f64 / 1_000.0
}

impl LatencyHistogram<Nanoseconds> {
    /// Records one latency. Values outside 1 ns .. 1 h are clamped to the
    /// nearest end rather than dropped, so `count()` always equals the
    /// number of operations.
    pub fn record_ns(&mut self, ns: u64) {
        self.record_value(ns);
    }

    pub fn record(&mut self, latency: Duration) {
        self.record_ns(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
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
        thousandths(self.inner.value_at_percentile(p.clamp(0.0, 100.0)))
    }

    /// Largest latency in microseconds (to the histogram's precision); 0 when empty.
    pub fn max_us(&self) -> f64 {
        if self.inner.is_empty() {
            return 0.0;
        }
        thousandths(self.inner.max())
    }

    /// Smallest latency in microseconds (to the histogram's precision); 0 when empty.
    pub fn min_us(&self) -> f64 {
        if self.inner.is_empty() {
            return 0.0;
        }
        thousandths(self.inner.min())
    }
}

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

impl LatencyHistogram<Microseconds> {
    /// Records one transaction. Values outside 1 µs .. 1 h are clamped, so
    /// `count()` always equals the number of recorded transactions (a 0 µs
    /// line is possible in pgbench's log when a transaction is very fast).
    pub fn record_us(&mut self, us: u64) {
        self.record_value(us.max(Microseconds::SHAPE.low));
    }

    /// Latency at `quantile` (0..=1) in milliseconds; `None` when empty or
    /// for a quantile outside 0..=1.
    pub fn quantile_ms(&self, quantile: f64) -> Option<f64> {
        if self.inner.is_empty() || !(0.0..=1.0).contains(&quantile) {
            return None;
        }
        Some(thousandths(self.inner.value_at_quantile(quantile)))
    }

    /// p50/p90/p95/p99/max and the mean; `None` when nothing was recorded,
    /// so that SQL gets NULL rather than a latency of 0.
    pub fn percentiles(&self) -> Option<LatencyPercentiles> {
        if self.inner.is_empty() {
            return None;
        }
        let q = |p: f64| thousandths(self.inner.value_at_quantile(p));
        Some(LatencyPercentiles {
            count: self.inner.len(),
            lat_avg_ms: self.inner.mean() / 1_000.0,
            lat_stddev_ms: self.inner.stdev() / 1_000.0,
            lat_p50_ms: q(0.50),
            lat_p90_ms: q(0.90),
            lat_p95_ms: q(0.95),
            lat_p99_ms: q(0.99),
            lat_max_ms: thousandths(self.inner.max()),
        })
    }
}

/// The bounds and precision every histogram of one unit is kept in.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub low: u64,
    pub high: u64,
    pub sigfig: u8,
}

impl Shape {
    pub fn empty(self) -> Histogram<u64> {
        // Only fails for bounds that break HdrHistogram's rules; the units'
        // shapes are constants that the tests construct.
        Histogram::new_with_bounds(self.low, self.high, self.sigfig)
            .unwrap_or_else(|_| unreachable!("constant histogram bounds are valid"))
    }
}

/// Re-records every bucket of `from` into `to`, clamping to `to`'s range.
fn copy_clamped(from: &Histogram<u64>, to: &mut Histogram<u64>) {
    for v in from.iter_recorded() {
        to.saturating_record_n(v.value_iterated_to(), v.count_at_value());
    }
}

/// Adds `other` to `into`; histograms of another shape are re-binned, so
/// merging never fails.
fn merge(into: &mut Histogram<u64>, other: &Histogram<u64>) {
    if into.add(other).is_err() {
        copy_clamped(other, into);
    }
}

/// Compact, self-describing encoding (HdrHistogram V2 + deflate), the same
/// format other HdrHistogram implementations read.
fn encode(h: &Histogram<u64>) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut out)
        .map_err(|e| format!("cannot encode: {e}"))?;
    Ok(out)
}

/// Decodes a V2 blob (plain or deflated) into `shape`, re-binning one of
/// another shape.
fn decode(bytes: &[u8], shape: Shape) -> Result<Histogram<u64>, String> {
    check_declared_length(bytes)?;
    let mut reader = bytes;
    let decoded: Histogram<u64> = Deserializer::new()
        .deserialize(&mut reader)
        .map_err(|e| format!("cannot decode: {e}"))?;
    if decoded.low() == shape.low
        && decoded.high() == shape.high
        && decoded.sigfig() == shape.sigfig
    {
        return Ok(decoded);
    }
    let mut inner = shape.empty();
    copy_clamped(&decoded, &mut inner);
    Ok(inner)
}

/// Both V2 formats start with a cookie and the length of what follows;
/// insisting that the length matches the input rejects truncated or padded
/// blobs (the zlib decoder alone accepts a blob missing its checksum), and
/// keeps a short forged plain blob from forcing a huge allocation.
fn check_declared_length(bytes: &[u8]) -> Result<(), String> {
    const PLAIN_COOKIE: u32 = 0x1c84_9303 | 0x10;
    const COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
    // Cookie, payload length, and for the plain format the rest of the
    // fixed header (normalizing offset, digits, low, high, ratio).
    const PLAIN_HEADER_LEN: usize = 40;
    const COMPRESSED_HEADER_LEN: usize = 8;
    let word = |at: usize| -> Option<u32> {
        let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(u32::from_be_bytes(b))
    };
    let header_len = match word(0) {
        Some(PLAIN_COOKIE) => PLAIN_HEADER_LEN,
        Some(COMPRESSED_COOKIE) => COMPRESSED_HEADER_LEN,
        _ => return Err("cannot decode: not an HdrHistogram V2 blob".into()),
    };
    let declared = word(4).map(|n| n as usize);
    let actual = bytes.len().checked_sub(header_len);
    if declared.is_none() || declared != actual {
        return Err(format!(
            "cannot decode: the blob declares {} payload bytes but holds {}",
            declared.map_or("no".to_string(), |n| n.to_string()),
            actual.unwrap_or(0)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod probe_tests {
    //! A probe's histogram (these tests were core/src/probe/histogram.rs's).
    use super::*;
    type Histogram = ProbeHistogram;
    const LOWEST_NS: u64 = Nanoseconds::SHAPE.low;
    const HIGHEST_NS: u64 = Nanoseconds::SHAPE.high;
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

#[cfg(test)]
mod tx_tests {
    //! A transaction histogram (these tests were core/src/pgbench/tx_histogram.rs's).
    use super::*;
    const HIGHEST_US: u64 = Microseconds::SHAPE.high;

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

#[cfg(test)]
mod stored_bytes_tests {
    //! Histograms as earlier versions stored them (bytea written by the two
    //! wrappers this type replaced, storlab 0.7.0): they must still decode
    //! to the same samples, and the same samples must still encode to the
    //! same bytes.
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// A probe's: 900 ns, 1 µs, 3 × 250 µs, 5 ms and 2 s.
    const PROBE_0_7: &str = "1c84931400000043789c013800c7ff1c84931300000010000000000000000300000000000000010000034630b8a0003ff0000000000000870e02c50102ef7e06c34402db8a0102c373099e";
    /// A run's: 0 µs, 2 × 1.5 ms, 90 ms and 4 s.
    const TX_0_7: &str = "1c8493140000003e789c013300ccff1c8493130000000b0000000000000003000000000000000100000000d693a4003ff00000000000000002b31704c15e02c35802951d07a0";

    #[test]
    fn units_keep_the_shapes_they_were_stored_with() {
        assert_eq!(
            (
                Nanoseconds::SHAPE.low,
                Nanoseconds::SHAPE.high,
                Nanoseconds::SHAPE.sigfig
            ),
            (1, 3_600_000_000_000, 3)
        );
        assert_eq!(
            (
                Microseconds::SHAPE.low,
                Microseconds::SHAPE.high,
                Microseconds::SHAPE.sigfig
            ),
            (1, 3_600_000_000, 3)
        );
    }

    #[test]
    fn a_stored_probe_histogram_decodes_and_encodes_the_same() {
        let stored = unhex(PROBE_0_7);
        let h = ProbeHistogram::from_bytes(&stored).unwrap();
        assert_eq!(h.count(), 7);
        assert_eq!(h.min_us(), 0.9);
        assert_eq!(h.max_us(), 2000683.007);
        assert_eq!(h.percentile_us(50.0), 250.111);
        let mut again = ProbeHistogram::new();
        for ns in [
            900u64,
            1_000,
            250_000,
            250_000,
            250_000,
            5_000_000,
            2_000_000_000,
        ] {
            again.record_ns(ns);
        }
        assert_eq!(again, h);
        assert_eq!(again.to_bytes().unwrap(), stored);
    }

    #[test]
    fn a_stored_run_histogram_decodes_and_encodes_the_same() {
        let stored = unhex(TX_0_7);
        let h = TxHistogram::from_bytes(&stored).unwrap();
        let p = h.percentiles().unwrap();
        assert_eq!(p.count, 5);
        assert_eq!(p.lat_p50_ms, 1.5);
        assert_eq!(p.lat_max_ms, 4001.791);
        assert!((p.lat_avg_ms - 818.757).abs() < 1e-9, "{p:?}");
        let mut again = TxHistogram::new();
        for us in [0u64, 1_500, 1_500, 90_000, 4_000_000] {
            again.record_us(us);
        }
        assert_eq!(again, h);
        assert_eq!(again.to_bytes().unwrap(), stored);
    }

    #[test]
    fn a_stored_histogram_keeps_its_unit_when_read_as_the_other() {
        // a probe's blob read as a run's is re-binned into the run's shape,
        // never silently taken as microseconds of the same buckets
        let as_tx = TxHistogram::from_bytes(&unhex(PROBE_0_7)).unwrap();
        assert_eq!(as_tx.as_hdr().high(), Microseconds::SHAPE.high);
        assert_eq!(as_tx.count(), 7);
    }
}
