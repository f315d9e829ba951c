//! Benchmark requests: `bench_init` (pgbench -i), a measured run, an online
//! index move. Checked once when the SQL function is called; the job that
//! carries one out reads back exactly this struct (see [`super::job`]).

use serde::{Deserialize, Serialize};

use crate::error::{invalid, Result};
use crate::pgbench::{self, Protocol};

/// pgbench -i: scale, fillfactor, tablespaces, partitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchInit {
    pub scale: i32,
    pub fillfactor: i32,
    pub tablespace: Option<String>,
    pub index_tablespace: Option<String>,
    pub partitions: i32,
}

impl BenchInit {
    pub fn new(
        scale: i32,
        fillfactor: i32,
        tablespace: Option<String>,
        index_tablespace: Option<String>,
        partitions: i32,
    ) -> Result<Self> {
        if scale < 1 {
            return Err(invalid(format!("scale must be at least 1, not {scale}")));
        }
        if !(10..=100).contains(&fillfactor) {
            return Err(invalid(format!(
                "fillfactor must be between 10 and 100, not {fillfactor}"
            )));
        }
        if partitions < 0 {
            return Err(invalid(format!(
                "partitions must be 0 (none) or more, not {partitions}"
            )));
        }
        Ok(BenchInit {
            scale,
            fillfactor,
            tablespace,
            index_tablespace,
            partitions,
        })
    }
}

/// A run's options, as the caller spelled them in the `options` jsonb (and
/// stored so in bench_runs.options); absent keys take pgbench's or
/// storlab's defaults where the run is built.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress_interval: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vacuum: Option<bool>,
    /// Filled in when the run starts: a role that may not CHECKPOINT runs
    /// without one unless it asked for one (then it is refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint_before: Option<bool>,
}

/// The run options an `options` jsonb may hold (bench_start's, and every
/// run of an experiment).
pub const OPTION_KEYS: [&str; 6] = [
    "protocol",
    "rate",
    "progress_interval",
    "sampling_rate",
    "vacuum",
    "checkpoint_before",
];

impl RunOptions {
    /// From the `options` jsonb, with the allowed keys and ranges in the message.
    pub fn from_json(options: &serde_json::Value) -> Result<Self> {
        let obj = options.as_object().ok_or_else(|| {
            invalid("options must be a JSON object, e.g. '{\"protocol\": \"prepared\"}'")
        })?;
        for (key, value) in obj {
            let ok = match key.as_str() {
                "protocol" => value.as_str().is_some_and(|p| Protocol::parse(p).is_ok()),
                "rate" => value.as_f64().is_some_and(|r| r > 0.0),
                "progress_interval" => value.as_i64().is_some_and(|p| p >= 1),
                "sampling_rate" => value.as_f64().is_some_and(|s| s > 0.0 && s <= 1.0),
                "vacuum" | "checkpoint_before" => value.is_boolean(),
                _ => {
                    return Err(invalid(format!(
                        "unknown option \"{key}\"; allowed: {}",
                        OPTION_KEYS.join(", ")
                    )))
                }
            };
            if !ok {
                return Err(invalid(format!(
                    "option {key} = {value} is out of range: protocol is simple, extended or prepared; rate > 0; \
                     progress_interval >= 1; sampling_rate in (0, 1]; vacuum and checkpoint_before are booleans"
                )));
            }
        }
        serde_json::from_value(options.clone()).map_err(|e| invalid(format!("options: {e}")))
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
            .as_deref()
            .and_then(|p| Protocol::parse(p).ok())
            .unwrap_or(Protocol::Simple)
    }
}

/// One measured pgbench run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRun {
    pub script: String,
    pub clients: i32,
    pub jobs: i32,
    /// Whole seconds: pgbench's -T takes nothing finer, and a run's TPS is
    /// transactions over the time pgbench really ran.
    pub duration_s: u32,
    pub options: RunOptions,
}

impl BenchRun {
    pub fn new(
        script: String,
        clients: i32,
        jobs: i32,
        duration_us: i64,
        max_duration_s: i64,
        options: &serde_json::Value,
    ) -> Result<Self> {
        pgbench::scripts::find(&script).map_err(invalid)?;
        if clients < 1 {
            return Err(invalid(format!(
                "clients must be at least 1, not {clients}"
            )));
        }
        if jobs < 1 || jobs > clients {
            return Err(invalid(format!(
                "jobs must be between 1 and clients ({clients}), not {jobs}"
            )));
        }
        if duration_us < 1_000_000 || duration_us > max_duration_s * 1_000_000 {
            return Err(invalid(format!(
                "duration must be at least 1 s and at most storlab.max_bench_duration ({max_duration_s} s), not {} s",
                duration_us as f64 / 1e6
            )));
        }
        if duration_us % 1_000_000 != 0 {
            return Err(invalid(format!(
                "duration must be whole seconds (pgbench -T counts seconds), not {} s",
                duration_us as f64 / 1e6
            )));
        }
        Ok(BenchRun {
            script,
            clients,
            jobs,
            duration_s: (duration_us / 1_000_000) as u32,
            options: RunOptions::from_json(options)?,
        })
    }

    /// Read-only scripts that run tens of thousands of transactions a second
    /// log one in ten unless told otherwise: writing every transaction costs
    /// pgbench about 2.5 % of its TPS at 28 000 TPS (measured on the lab,
    /// bare pgbench with and without --log), and the percentiles still rest
    /// on tens of thousands of samples.
    pub fn sampling_rate(&self) -> Option<f64> {
        self.options.sampling_rate.or(match self.script.as_str() {
            "select-only" | "index-lookup" => Some(0.1),
            _ => None,
        })
    }
}

/// REINDEX (TABLESPACE ...) INDEX CONCURRENTLY of every index of a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MoveIndexes {
    pub relation: u32,
    pub relation_name: String,
    pub tablespace: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(duration_us: i64, options: serde_json::Value) -> Result<BenchRun> {
        BenchRun::new("tpcb-like".into(), 8, 2, duration_us, 3600, &options)
    }

    #[test]
    fn init_limits_name_their_range() {
        assert!(BenchInit::new(1, 100, None, None, 0).is_ok());
        let e = |r: Result<BenchInit>| r.unwrap_err().message;
        assert!(e(BenchInit::new(0, 100, None, None, 0)).contains("scale"));
        assert!(e(BenchInit::new(1, 9, None, None, 0)).contains("between 10 and 100"));
        assert!(e(BenchInit::new(1, 100, None, None, -1)).contains("partitions"));
    }

    #[test]
    fn runs_take_whole_seconds_only() {
        assert_eq!(run(60_000_000, json!({})).unwrap().duration_s, 60);
        let e = run(1_500_000, json!({})).unwrap_err();
        assert_eq!(e.state.code(), "22023");
        assert!(e.message.contains("whole seconds"), "{}", e.message);
        assert!(run(500_000, json!({}))
            .unwrap_err()
            .message
            .contains("at least 1 s"));
        assert!(run(3_601_000_000, json!({}))
            .unwrap_err()
            .message
            .contains("3600 s"));
    }

    #[test]
    fn options_are_typed_and_checked() {
        let r = run(10_000_000, json!({"protocol": "prepared", "vacuum": false})).unwrap();
        assert_eq!(r.options.protocol(), Protocol::Prepared);
        assert_eq!(r.options.vacuum, Some(false));
        assert_eq!(
            r.options.to_json(),
            json!({"protocol": "prepared", "vacuum": false}),
            "stored as the caller spelled them"
        );
        assert!(run(10_000_000, json!({"speed": 1}))
            .unwrap_err()
            .message
            .contains("unknown option"));
        assert!(run(10_000_000, json!({"rate": -1}))
            .unwrap_err()
            .message
            .contains("out of range"));
        assert!(run(10_000_000, json!([1]))
            .unwrap_err()
            .message
            .contains("JSON object"));
    }

    #[test]
    fn fast_read_only_scripts_sample_their_log() {
        let r = BenchRun::new("select-only".into(), 1, 1, 1_000_000, 60, &json!({})).unwrap();
        assert_eq!(r.sampling_rate(), Some(0.1));
        let r = BenchRun::new(
            "select-only".into(),
            1,
            1,
            1_000_000,
            60,
            &json!({"sampling_rate": 1.0}),
        )
        .unwrap();
        assert_eq!(r.sampling_rate(), Some(1.0));
        assert_eq!(run(1_000_000, json!({})).unwrap().sampling_rate(), None);
    }

    #[test]
    fn unknown_scripts_are_refused() {
        let e = BenchRun::new("no-such".into(), 1, 1, 1_000_000, 60, &json!({})).unwrap_err();
        assert_eq!(e.state.code(), "22023");
    }
}
