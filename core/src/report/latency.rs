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

/// What one stored probe or run was measured with, as (attribute, value)
/// pairs; a value not recorded (None) is not compared.
pub type Conditions = Vec<(String, Option<String>)>;

/// Refuses (22023) to merge the histograms of `items` (id, conditions)
/// unless they were measured alike: a distribution of 1-worker and
/// 4-worker probes, or of two tablespaces, is the latency of no storage
/// and no workload. The message names each attribute that differs, with
/// its values and whose they are; `what` is "probe" or "run", `function`
/// the SQL function refusing.
pub fn check_alike(function: &str, what: &str, items: &[(i64, Conditions)]) -> Result<()> {
    let mut names: Vec<&str> = Vec::new();
    for (_, c) in items {
        for (name, _) in c {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
    }
    let mut differ = Vec::new();
    for name in names {
        // each value with the ids that have it, in the order first seen
        let mut values: Vec<(&str, Vec<i64>)> = Vec::new();
        for (id, c) in items {
            let Some(Some(v)) = c.iter().find(|(n, _)| n == name).map(|(_, v)| v) else {
                continue;
            };
            match values.iter_mut().find(|(seen, _)| *seen == v.as_str()) {
                Some((_, ids)) => ids.push(*id),
                None => values.push((v, vec![*id])),
            }
        }
        if values.len() > 1 {
            let each: Vec<String> = values
                .iter()
                .map(|(v, ids)| format!("{v} ({})", id_list(what, ids)))
                .collect();
            differ.push(format!("{name}: {}", each.join(", ")));
        }
    }
    if differ.is_empty() {
        return Ok(());
    }
    Err(invalid(format!(
        "{function} merges only {what}s measured alike, and these differ in {}",
        differ.join("; ")
    ))
    .with_hint(format!(
        "Pass the ids of one kind of {what} (one tablespace, workload and worker count), and call it once for each."
    )))
}

/// "probe 41", "probes 11, 36", at most ten ids and a count of the rest.
fn id_list(what: &str, ids: &[i64]) -> String {
    let shown: Vec<String> = ids.iter().take(10).map(i64::to_string).collect();
    let more = match ids.len() {
        n if n > 10 => format!(" and {} more", n - 10),
        _ => String::new(),
    };
    format!(
        "{what}{} {}{more}",
        if ids.len() == 1 { "" } else { "s" },
        shown.join(", ")
    )
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

    fn conditions(pairs: &[(&str, Option<&str>)]) -> Conditions {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.map(String::from)))
            .collect()
    }

    #[test]
    fn only_what_was_measured_alike_is_merged() {
        let one = |ts: &str, workers: &str| {
            conditions(&[("tablespace", Some(ts)), ("workers", Some(workers))])
        };
        let alike = [(11, one("lab_disk", "1")), (36, one("lab_disk", "1"))];
        assert!(check_alike("probe_latency", "probe", &alike).is_ok());
        let e = check_alike(
            "probe_latency",
            "probe",
            &[
                (11, one("lab_disk", "1")),
                (36, one("lab_disk", "1")),
                (41, one("lab_disk", "4")),
                (42, one("lab_ram", "4")),
            ],
        )
        .unwrap_err();
        assert_eq!(e.state, SqlState::InvalidParameterValue);
        assert_eq!(
            e.message,
            "probe_latency merges only probes measured alike, and these differ in \
             tablespace: lab_disk (probes 11, 36, 41), lab_ram (probe 42); workers: 1 (probes 11, 36), 4 (probes 41, 42)"
        );
        assert!(e.hint.unwrap().contains("call it once for each"));
        // a value one did not record is not compared
        let unrecorded = [
            (1, conditions(&[("synchronous_commit", Some("on"))])),
            (2, conditions(&[("synchronous_commit", None)])),
        ];
        assert!(check_alike("run_latency", "run", &unrecorded).is_ok());
        let many: Vec<(i64, Conditions)> = (1..=13)
            .map(|i| {
                (
                    i,
                    conditions(&[("clients", Some(if i == 13 { "4" } else { "8" }))]),
                )
            })
            .collect();
        let e = check_alike("run_latency", "run", &many).unwrap_err();
        assert!(
            e.message.ends_with(
                "clients: 8 (runs 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2 more), 4 (run 13)"
            ),
            "{}",
            e.message
        );
    }
}
