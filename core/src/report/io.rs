//! An experiment's I/O by cell: the `pg_stat_io` differences its measured
//! runs stored (`bench_runs.server_io`, PostgreSQL 16 and later), as means
//! per run of each (layout, fillfactor, clients) and each backend type,
//! object and context: what the server read, wrote, extended and synced,
//! and the time it took, under each layout.

use std::collections::BTreeMap;

use serde_json::Value;

/// The counters shown, as pg_stat_io names them (times in ms).
pub const COUNTERS: [&str; 10] = [
    "reads",
    "read_time",
    "writes",
    "write_time",
    "extends",
    "fsyncs",
    "fsync_time",
    "hits",
    "evictions",
    "reuses",
];

/// One (layout, fillfactor, clients) cell of an experiment.
pub type Cell = (String, i32, i32);

/// One row of experiment_io(): per-run means of one cell and one
/// "backend type/object/context" of pg_stat_io.
#[derive(Debug, Clone, PartialEq)]
pub struct IoRow {
    pub cell: Cell,
    pub backend_type: String,
    pub object: String,
    pub context: String,
    /// runs of the cell with pg_stat_io figures
    pub runs: i32,
    /// per-run means, in COUNTERS' order; None where no run has the counter
    pub means: Vec<Option<f64>>,
}

/// Rows per cell and pg_stat_io row, from each measured run's server_io
/// (None: a run on 15, or one whose pg_stat_io was reset mid-run; left out).
/// A pg_stat_io row one run lacks counted nothing in that run: it is a 0
/// in the mean, since storlab stores only the rows that moved.
pub fn per_cell(runs: &[(Cell, Option<Value>)]) -> Vec<IoRow> {
    let mut by_cell: BTreeMap<&Cell, Vec<&serde_json::Map<String, Value>>> = BTreeMap::new();
    for (cell, io) in runs {
        if let Some(io) = io.as_ref().and_then(Value::as_object) {
            by_cell.entry(cell).or_default().push(io);
        }
    }
    let mut out = Vec::new();
    for (cell, ios) in by_cell {
        let n = ios.len();
        let mut keys: Vec<&String> = ios.iter().flat_map(|io| io.keys()).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let mut parts = key.splitn(3, '/');
            let (backend_type, object, context) = (
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
            );
            let means = COUNTERS
                .iter()
                .map(|c| {
                    let vals: Vec<f64> = ios
                        .iter()
                        .filter_map(|io| io.get(key))
                        .filter_map(|row| row.get(*c))
                        .filter_map(Value::as_f64)
                        .collect();
                    (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / n as f64)
                })
                .collect();
            out.push(IoRow {
                cell: cell.clone(),
                backend_type: backend_type.to_string(),
                object: object.to_string(),
                context: context.to_string(),
                runs: n as i32,
                means,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cell(layout: &str) -> Cell {
        (layout.into(), 100, 8)
    }

    #[test]
    fn means_per_run_with_missing_rows_as_zero() {
        let runs = vec![
            (
                cell("base"),
                Some(
                    json!({"client backend/relation/normal": {"reads": 100, "read_time": 5.0, "hits": 900}}),
                ),
            ),
            (
                cell("base"),
                Some(json!({
                    "client backend/relation/normal": {"reads": 300, "read_time": 15.0, "hits": 700},
                    "checkpointer/relation/normal": {"writes": 40, "fsyncs": 4}
                })),
            ),
            // a run on 15: no pg_stat_io, left out of the means
            (cell("base"), None),
            (
                cell("fast"),
                Some(json!({"client backend/relation/normal": {"reads": 10}})),
            ),
        ];
        let rows = per_cell(&runs);
        assert_eq!(rows.len(), 3);
        let cb = &rows[1];
        assert_eq!(
            (
                cb.backend_type.as_str(),
                cb.object.as_str(),
                cb.context.as_str()
            ),
            ("client backend", "relation", "normal")
        );
        assert_eq!(cb.runs, 2);
        assert_eq!(cb.means[0], Some(200.0)); // reads
        assert_eq!(cb.means[1], Some(10.0)); // read_time
        assert_eq!(cb.means[2], None); // writes: never counted
                                       // the checkpointer's row is in one run of two: its mean halves
        let cp = &rows[0];
        assert_eq!(cp.backend_type, "checkpointer");
        assert_eq!(cp.means[2], Some(20.0));
        assert_eq!(cp.means[5], Some(2.0));
        assert_eq!(rows[2].cell.0, "fast");
        assert_eq!(rows[2].runs, 1);
    }

    #[test]
    fn nothing_without_pg_stat_io() {
        assert!(per_cell(&[(cell("base"), None)]).is_empty());
    }
}
