//! What a job does, as one tagged enum: the SQL function that starts a job
//! stores its checked request here, serialized into `storlab.jobs.args`, and
//! the worker reads back the same struct. The job's kind is the tag.

use serde::{Deserialize, Serialize};

use super::bench::{BenchInit, BenchRun, MoveIndexes};
use super::experiment::Experiment;
use super::relocate::MoveOnline;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JobSpec {
    BenchInit(BenchInit),
    Bench(BenchRun),
    MoveIndexes(MoveIndexes),
    MoveOnline(MoveOnline),
    Experiment(Experiment),
}

impl JobSpec {
    /// The value of `storlab.jobs.kind` (its CHECK constraint lists the same).
    pub fn kind(&self) -> &'static str {
        match self {
            JobSpec::BenchInit(_) => "bench_init",
            JobSpec::Bench(_) => "bench",
            JobSpec::MoveIndexes(_) => "move_indexes",
            JobSpec::MoveOnline(_) => "move_online",
            JobSpec::Experiment(_) => "experiment",
        }
    }

    /// Jobs that use a database's pgbench tables: they must not overlap.
    pub fn uses_pgbench_tables(&self) -> bool {
        matches!(
            self,
            JobSpec::BenchInit(_) | JobSpec::Bench(_) | JobSpec::Experiment(_)
        )
    }
}

/// A job's `args`: the request, and how its programs connect
/// (storlab.conninfo as the caller had it; the worker does not see the
/// caller's settings).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobArgs {
    #[serde(flatten)]
    pub spec: JobSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conninfo: Option<String>,
}

impl JobArgs {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    pub fn from_json(args: &serde_json::Value) -> Result<Self, String> {
        serde_json::from_value(args.clone())
            .map_err(|e| format!("the job's args do not describe a job: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::bench::RunOptions;

    #[test]
    fn args_round_trip_with_the_kind_as_tag() {
        let args = JobArgs {
            spec: JobSpec::Bench(BenchRun {
                script: "tpcb-like".into(),
                clients: 4,
                jobs: 2,
                duration_s: 10,
                options: RunOptions {
                    protocol: Some("prepared".into()),
                    ..RunOptions::default()
                },
            }),
            conninfo: Some("port=5433".into()),
        };
        let json = args.to_json();
        assert_eq!(json["kind"], "bench");
        assert_eq!(json["clients"], 4);
        assert_eq!(json["options"]["protocol"], "prepared");
        assert_eq!(JobArgs::from_json(&json).unwrap(), args);
        assert_eq!(args.spec.kind(), "bench");
        assert!(args.spec.uses_pgbench_tables());
    }

    #[test]
    fn args_of_no_known_kind_are_an_error() {
        let e = JobArgs::from_json(&serde_json::json!({"kind": "vacuum_everything"})).unwrap_err();
        assert!(e.contains("do not describe a job"), "{e}");
        let m = JobSpec::MoveIndexes(MoveIndexes {
            relation: 16384,
            relation_name: "public.t".into(),
            tablespace: "fast".into(),
        });
        assert!(!m.uses_pgbench_tables());
        assert_eq!(m.kind(), "move_indexes");
    }
}
