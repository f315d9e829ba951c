//! One row of storlab.probes.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::Record;

/// A measured probe: one row of storlab.probes, field names = column names.
/// `id` (an identity) and `node_id` (the column's default, the node that
/// stores it) are not carried; nor are read_path's `io_method` and
/// `effective_io_concurrency`, which the probes of files do not have.
/// Under an install not updated to 0.12.0 (no `sync_every`, `sync_s`) a
/// probe without sync_every is stored as before.
/// Under an install not updated to 0.9.0 (no `measured_by` column) a probe
/// is refused (55000, record::Record::columns_in), as any record whose
/// value the table cannot hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Probe {
    pub tablespace: String,
    pub location: String,
    pub workload: String,
    pub block_size: i32,
    pub workers: i32,
    pub direct: bool,
    pub sync_method: String,
    pub writes_per_sync: i32,
    pub file_size: i64,
    pub duration_s: f64,
    pub ops: i64,
    pub bytes: i64,
    pub iops: f64,
    pub mib_s: f64,
    pub lat_mean_us: Option<f64>,
    pub lat_p50_us: Option<f64>,
    pub lat_p90_us: Option<f64>,
    pub lat_p99_us: Option<f64>,
    pub lat_p999_us: Option<f64>,
    pub lat_max_us: Option<f64>,
    /// the serialized HDR histogram as bytea's hex text (`\x...`)
    pub histogram: String,
    pub env: serde_json::Value,
    pub label: Option<String>,
    pub system_identifier: i64,
    pub hostname: String,
    /// timestamptz text, UTC (`timestamp_text`)
    pub started_at: String,
    pub suite: Option<String>,
    pub iodepth: i32,
    pub engine: String,
    pub precision_pct: Option<f64>,
    pub iops_ci95_pct: Option<f64>,
    /// the role that measured it (storlab.own_probes shows a role its own)
    pub measured_by: Option<String>,
    /// the suite call that measured it (uuid text): the probes of one call
    /// of compare_tablespaces() or profile() share it, so that a figure is
    /// read from one call's repetitions
    pub suite_call: Option<String>,
    /// probe()'s sync_every: None, every op a commit as sync_method says;
    /// Some(n), every op one write and a sync after every n-th write of a
    /// worker and after its last (0: only after its last). Under an
    /// install not updated to 0.12.0 only None can be stored.
    pub sync_every: Option<i32>,
    /// With sync_every: the seconds the workers spent in those syncs,
    /// summed over the workers (part of duration_s: a worker's syncs are
    /// part of its run). None without sync_every, whose syncs are inside
    /// each op's latency.
    pub sync_s: Option<f64>,
}

impl Record for Probe {
    const TABLE: &'static str = "storlab.probes";
}

/// Bytes as bytea's hex input (`\x0a1b...`), which jsonb_populate_record
/// reads into a bytea column.
pub fn bytea_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(2 + 2 * bytes.len());
    s.push_str("\\x");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A point in time as timestamptz input in UTC, to the microsecond
/// (`2026-11-28 07:48:29.123456+00`), as PostgreSQL prints it.
pub fn timestamp_text(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:06}+00",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_micros()
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's days_from_civil, inverted).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_as_bytea_reads_it() {
        assert_eq!(bytea_hex(&[0, 10, 255]), "\\x000aff");
        assert_eq!(bytea_hex(&[]), "\\x");
    }

    #[test]
    fn timestamps_as_postgres_prints_them() {
        let at = |s: u64, us: u32| {
            timestamp_text(UNIX_EPOCH + Duration::from_secs(s) + Duration::from_micros(us.into()))
        };
        assert_eq!(at(0, 0), "1970-01-01 00:00:00.000000+00");
        // date -u -d @1795852109 +"%F %T": 2026-11-28 07:48:29
        assert_eq!(at(1_795_852_109, 123_456), "2026-11-28 07:48:29.123456+00");
        // a leap day, and the day after the end of February of a century year
        assert_eq!(at(951_782_400, 0), "2000-02-29 00:00:00.000000+00");
        assert_eq!(at(4_107_542_400, 1), "2100-03-01 00:00:00.000001+00");
    }

    #[test]
    fn a_probe_without_sync_every_fits_a_table_before_0_12_0() {
        let before: Vec<String> = Probe::columns()
            .into_iter()
            .filter(|c| c != "sync_every" && c != "sync_s")
            .collect();
        assert_eq!(Probe::default().columns_in(&before).unwrap(), before);
        let synced = Probe {
            sync_every: Some(0),
            sync_s: Some(0.25),
            ..Probe::default()
        };
        let e = synced.columns_in(&before).unwrap_err();
        assert_eq!(e.state.code(), "55000");
        assert!(e.message.contains("no column sync_every"), "{}", e.message);
    }

    #[test]
    fn columns_are_the_tables_but_id_node_and_read_path() {
        let cols = Probe::columns();
        for c in ["id", "node_id", "io_method", "effective_io_concurrency"] {
            assert!(!cols.iter().any(|x| x == c), "{c}");
        }
        assert_eq!(cols.first().map(String::as_str), Some("tablespace"));
        assert_eq!(cols.last().map(String::as_str), Some("sync_s"));
        assert_eq!(cols.len(), 35);
    }
}
