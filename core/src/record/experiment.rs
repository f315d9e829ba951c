//! An experiment's row of storlab.experiment_records.

use serde::Serialize;

use super::Record;

/// The row an experiment's start writes (field names = column names);
/// `current_step` (0), `created_at` and the rest keep their defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExperimentRecord {
    /// the experiment's job id
    pub id: i64,
    pub name: String,
    pub steps_total: i32,
    pub current_action: Option<String>,
    pub system_identifier: i64,
    pub hostname: String,
}

impl Record for ExperimentRecord {
    const TABLE: &'static str = "storlab.experiment_records";
}

/// Where a running experiment is: the steps done or skipped so far, and
/// what it does now.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExperimentProgress {
    pub current_step: i32,
    pub current_action: Option<String>,
}

impl Record for ExperimentProgress {
    const TABLE: &'static str = "storlab.experiment_records";
}

/// Where an experiment stopped because its next run needs pg_wal on the
/// filesystem of `wal_needed` (a tablespace): it ends, and waits there
/// until it is resumed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExperimentWalStop {
    pub current_step: i32,
    pub current_action: Option<String>,
    pub wal_needed: Option<String>,
}

impl Record for ExperimentWalStop {
    const TABLE: &'static str = "storlab.experiment_records";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_and_values() {
        let r = ExperimentRecord {
            id: 12,
            name: "indexes on ram".into(),
            steps_total: 9,
            current_action: Some("queued".into()),
            system_identifier: 7_000_000_000_000_000_001,
            hostname: "h".into(),
        };
        assert_eq!(
            r.to_json(),
            serde_json::json!({"id": 12, "name": "indexes on ram", "steps_total": 9, "current_action": "queued",
                               "system_identifier": 7_000_000_000_000_000_001_i64, "hostname": "h"})
        );
        // current_step, created_at, layout_applied, wal_needed: defaults
        for c in ["current_step", "created_at", "layout_applied", "wal_needed"] {
            assert!(!ExperimentRecord::columns().iter().any(|x| x == c), "{c}");
        }
        assert_eq!(
            ExperimentProgress::columns(),
            ["current_step", "current_action"]
        );
        assert_eq!(
            ExperimentWalStop::columns(),
            ["current_step", "current_action", "wal_needed"]
        );
    }
}
