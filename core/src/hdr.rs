//! HdrHistogram plumbing shared by the probe engine's latency histogram
//! (nanoseconds) and pgbench's transaction histogram (microseconds): bytea
//! encoding, checked decoding, and re-binning into a wrapper's own shape.
//! Pure Rust; errors are plain messages that each wrapper wraps in its type.

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// The shape a wrapper keeps its samples in.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub low: u64,
    pub high: u64,
    pub sigfig: u8,
}

impl Shape {
    pub fn empty(self) -> Histogram<u64> {
        // Only fails for bounds that break HdrHistogram's rules; the wrappers'
        // shapes are constants that their tests construct.
        Histogram::new_with_bounds(self.low, self.high, self.sigfig)
            .unwrap_or_else(|_| unreachable!("constant histogram bounds are valid"))
    }
}

/// Re-records every bucket of `from` into `to`, clamping to `to`'s range.
pub fn copy_clamped(from: &Histogram<u64>, to: &mut Histogram<u64>) {
    for v in from.iter_recorded() {
        to.saturating_record_n(v.value_iterated_to(), v.count_at_value());
    }
}

/// Adds `other` to `into`; histograms of another shape are re-binned, so
/// merging never fails.
pub fn merge(into: &mut Histogram<u64>, other: &Histogram<u64>) {
    if into.add(other).is_err() {
        copy_clamped(other, into);
    }
}

/// Compact, self-describing encoding (HdrHistogram V2 + deflate), the same
/// format other HdrHistogram implementations read.
pub fn encode(h: &Histogram<u64>) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut out)
        .map_err(|e| format!("cannot encode: {e}"))?;
    Ok(out)
}

/// Decodes a V2 blob (plain or deflated) into `shape`, re-binning one of
/// another shape.
pub fn decode(bytes: &[u8], shape: Shape) -> Result<Histogram<u64>, String> {
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
