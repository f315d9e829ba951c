//! A run's counters: the server's cumulative statistics read at a run's
//! start and end ([`Counters`]), their differences ([`RunCounters`]), and
//! everything a measured run stores in its storlab.bench_runs row
//! ([`RunResult`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, Serializer};

use super::Record;

/// The server's cumulative counters at one moment, as the worker reads
/// them (the WAL's, the checkpointer's, what backends wrote themselves,
/// pg_stat_database, pg_stat_io on 16 and later, and the blocks read from
/// each tablespace, pg_statio_user_*), in a transaction of their own, from
/// the views each major keeps them in ([`super::snapshot_sql`]). A counter
/// the server did not give is None. The `*_reset` fields are the views'
/// `stats_reset`: a counter whose view was reset between two snapshots has
/// no difference.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    pub wal_bytes: Option<i64>,
    pub wal_fpi: Option<i64>,
    pub wal_write: Option<i64>,
    pub wal_sync: Option<i64>,
    /// milliseconds
    pub wal_sync_time: Option<f64>,
    /// timed and requested
    pub checkpoints: Option<i64>,
    pub buffers_checkpoint: Option<i64>,
    pub buffers_backend: Option<i64>,
    pub buffers_backend_fsync: Option<i64>,
    pub blks_read: Option<i64>,
    pub blks_hit: Option<i64>,
    /// milliseconds
    pub blk_read_time: Option<f64>,
    /// milliseconds
    pub blk_write_time: Option<f64>,
    /// blocks read from every user table and index, per tablespace
    pub by_tablespace: BTreeMap<String, i64>,
    /// blocks read from pgbench's own tables and indexes, per tablespace
    pub run_by_tablespace: BTreeMap<String, i64>,
    /// rows updated in pgbench's own tables (pg_stat_user_tables.n_tup_upd)
    pub tup_upd: Option<i64>,
    /// of those, HOT updates (n_tup_hot_upd)
    pub tup_hot_upd: Option<i64>,
    /// pg_stat_io's rows (16 and later): `{"backend/object/context": {"reads": .., ..}}`
    pub io: Option<serde_json::Value>,
    /// pg_stat_wal's (bytes, full-page images)
    pub wal_reset: Option<String>,
    /// where WAL writes and syncs came from (pg_stat_wal; 18: pg_stat_io)
    pub wal_io_reset: Option<String>,
    /// pg_stat_bgwriter's (15), pg_stat_checkpointer's (17 and later)
    pub checkpoint_reset: Option<String>,
    /// where backends' own writes came from (pg_stat_bgwriter; 17: pg_stat_io)
    pub backend_reset: Option<String>,
    pub db_reset: Option<String>,
}

/// What a run's counters moved by, as storlab.bench_runs stores it (field
/// names = column names): `server_*` the whole server's, `db_*` the whole
/// database's, `run_blks_read_by_tablespace` pgbench's own relations'.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunCounters {
    pub server_wal_bytes: Option<i64>,
    pub server_wal_fpi: Option<i64>,
    pub server_wal_write: Option<i64>,
    pub server_wal_sync: Option<i64>,
    pub server_wal_sync_time_ms: Option<f64>,
    pub server_checkpoints: Option<i64>,
    pub server_buffers_checkpoint: Option<i64>,
    pub server_buffers_backend: Option<i64>,
    pub server_buffers_backend_fsync: Option<i64>,
    pub db_blks_read: Option<i64>,
    pub db_blks_hit: Option<i64>,
    pub db_blk_read_time_ms: Option<f64>,
    pub db_blk_write_time_ms: Option<f64>,
    pub db_blks_read_by_tablespace: Option<BTreeMap<String, Option<i64>>>,
    pub run_blks_read_by_tablespace: Option<BTreeMap<String, Option<i64>>>,
    /// pg_stat_io's differences per backend type, object and context (16
    /// and later): rows whose counters all stood still are left out
    pub server_io: Option<serde_json::Value>,
    /// rows of pgbench's own tables updated, and of those HOT updated
    /// (pg_stat_user_tables): the run's HOT ratio
    pub run_n_tup_upd: Option<i64>,
    pub run_n_tup_hot_upd: Option<i64>,
}

/// `after - before` of a counter that only grows: None when either is
/// unknown, when its view was reset in between, or when it went back (a
/// reset the view does not date, a relation dropped).
fn grew<T: Copy + PartialOrd + std::ops::Sub<Output = T>>(
    before: Option<T>,
    after: Option<T>,
    same_epoch: bool,
) -> Option<T> {
    match (before, after) {
        (Some(b), Some(a)) if same_epoch && a >= b => Some(a - b),
        _ => None,
    }
}

/// Per tablespace, what was read since `before`: every tablespace of
/// `after` (one that held nothing before counts from 0; one that holds
/// nothing any more is left out); None when `after` has none, or the
/// database's statistics were reset in between.
fn grew_by_tablespace(
    before: &BTreeMap<String, i64>,
    after: &BTreeMap<String, i64>,
    same_epoch: bool,
) -> Option<BTreeMap<String, Option<i64>>> {
    if after.is_empty() || !same_epoch {
        return None;
    }
    Some(
        after
            .iter()
            .map(|(ts, &a)| {
                let b = before.get(ts).copied().unwrap_or(0);
                (ts.clone(), (a >= b).then(|| a - b))
            })
            .collect(),
    )
}

/// pg_stat_io's differences, row by row: for each backend type, object
/// and context of `after`, every counter's growth since `before` (a row
/// reset in between, by its own `stats_reset`, or new, counts from
/// nothing only when it is new; a reset row is left out). Sizes
/// (`op_bytes`) are kept as they are; rows where nothing moved are left
/// out. None before 16 (no pg_stat_io) or when a snapshot is missing.
fn io_delta(
    before: Option<&serde_json::Value>,
    after: Option<&serde_json::Value>,
) -> Option<serde_json::Value> {
    let (before, after) = (before?.as_object()?, after?.as_object()?);
    let mut out = serde_json::Map::new();
    for (key, a) in after {
        let Some(a) = a.as_object() else { continue };
        let b = before.get(key).and_then(|b| b.as_object());
        if let Some(b) = b {
            if b.get("stats_reset") != a.get("stats_reset") {
                continue;
            }
        }
        let mut row = serde_json::Map::new();
        let mut moved = false;
        for (counter, av) in a {
            if counter == "stats_reset" {
                continue;
            }
            if counter == "op_bytes" {
                row.insert(counter.clone(), av.clone());
                continue;
            }
            let Some(av) = av.as_f64() else { continue };
            let bv = match b {
                Some(b) => match b.get(counter).and_then(|v| v.as_f64()) {
                    Some(bv) => bv,
                    None => continue,
                },
                None => 0.0,
            };
            if av < bv {
                continue;
            }
            let d = av - bv;
            moved |= d != 0.0;
            // counts stay integers, times (ms) floats
            let v = if counter.ends_with("_time") {
                serde_json::json!(d)
            } else {
                serde_json::json!(d.round() as i64)
            };
            row.insert(counter.clone(), v);
        }
        if moved {
            out.insert(key.clone(), serde_json::Value::Object(row));
        }
    }
    Some(serde_json::Value::Object(out))
}

impl Counters {
    /// What the counters moved by from `self` (a run's start) to `after`
    /// (its end).
    pub fn delta(&self, after: &Counters) -> RunCounters {
        let wal = self.wal_reset == after.wal_reset;
        let wal_io = self.wal_io_reset == after.wal_io_reset;
        let ckpt = self.checkpoint_reset == after.checkpoint_reset;
        let backend = self.backend_reset == after.backend_reset;
        let db = self.db_reset == after.db_reset;
        RunCounters {
            server_wal_bytes: grew(self.wal_bytes, after.wal_bytes, wal),
            server_wal_fpi: grew(self.wal_fpi, after.wal_fpi, wal),
            server_wal_write: grew(self.wal_write, after.wal_write, wal_io),
            server_wal_sync: grew(self.wal_sync, after.wal_sync, wal_io),
            server_wal_sync_time_ms: grew(self.wal_sync_time, after.wal_sync_time, wal_io),
            server_checkpoints: grew(self.checkpoints, after.checkpoints, ckpt),
            server_buffers_checkpoint: grew(
                self.buffers_checkpoint,
                after.buffers_checkpoint,
                ckpt,
            ),
            server_buffers_backend: grew(self.buffers_backend, after.buffers_backend, backend),
            server_buffers_backend_fsync: grew(
                self.buffers_backend_fsync,
                after.buffers_backend_fsync,
                backend,
            ),
            db_blks_read: grew(self.blks_read, after.blks_read, db),
            db_blks_hit: grew(self.blks_hit, after.blks_hit, db),
            db_blk_read_time_ms: grew(self.blk_read_time, after.blk_read_time, db),
            db_blk_write_time_ms: grew(self.blk_write_time, after.blk_write_time, db),
            db_blks_read_by_tablespace: grew_by_tablespace(
                &self.by_tablespace,
                &after.by_tablespace,
                db,
            ),
            run_blks_read_by_tablespace: grew_by_tablespace(
                &self.run_by_tablespace,
                &after.run_by_tablespace,
                db,
            ),
            server_io: io_delta(self.io.as_ref(), after.io.as_ref()),
            run_n_tup_upd: grew(self.tup_upd, after.tup_upd, db),
            run_n_tup_hot_upd: grew(self.tup_hot_upd, after.tup_hot_upd, db),
        }
    }
}

/// What a measured run stores in its storlab.bench_runs row once pgbench
/// finished (field names = column names); `finished_at` and the run's top
/// statements are computed by SQL where it is written.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunResult {
    pub tps: Option<f64>,
    pub transactions: Option<i64>,
    pub failures: Option<i64>,
    pub lat_avg_ms: Option<f64>,
    pub lat_stddev_ms: Option<f64>,
    pub lat_p50_ms: Option<f64>,
    pub lat_p90_ms: Option<f64>,
    pub lat_p95_ms: Option<f64>,
    pub lat_p99_ms: Option<f64>,
    pub lat_max_ms: Option<f64>,
    /// serialized HDR histogram (bytea: written in its hex input form)
    #[serde(serialize_with = "bytea_hex")]
    pub histogram: Option<Vec<u8>>,
    pub pgbench_version: Option<String>,
    /// `{"start": .., "end": ..}`
    pub observed: serde_json::Value,
    /// why the run's observations disagree, if they do
    pub invalid: Option<String>,
    /// the block devices beneath the run's tablespaces and what their
    /// counters moved by (None: not read, as before 0.12.0)
    pub device_io: Option<super::RunDeviceIo>,
    /// the most memory the server could cache pgbench's data in at the
    /// run's start, and where that was read from (`memory limit`: its
    /// memory group's, as storlab.tablespaces() reads it; `MemTotal`)
    pub memory_bytes: Option<i64>,
    pub memory_source: Option<String>,
    #[serde(flatten)]
    pub counters: RunCounters,
}

impl Record for RunResult {
    const TABLE: &'static str = "storlab.bench_runs";
    /// What 0.12.0 added beside a run's figures: an install whose table
    /// lacks them (not updated yet) stores the run without them.
    const OPTIONAL: &'static [&'static str] = &[
        "device_io",
        "memory_bytes",
        "memory_source",
        "run_n_tup_upd",
        "run_n_tup_hot_upd",
    ];
}

/// bytea's hex input form, `\x0a1b`.
fn bytea_hex<S: Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        None => s.serialize_none(),
        Some(bytes) => {
            let mut out = String::with_capacity(2 + 2 * bytes.len());
            out.push_str("\\x");
            for b in bytes {
                out.push_str(&format!("{b:02x}"));
            }
            s.serialize_some(&out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A snapshot as the worker's query gives it (numbers as jsonb prints
    /// them: pg_stat_wal.wal_bytes is numeric, the times float8).
    fn snapshot(wal_bytes: i64, blks_read: i64, read_time: f64) -> Counters {
        serde_json::from_value(json!({
            "wal_bytes": wal_bytes, "wal_fpi": 10, "wal_write": 20, "wal_sync": 5, "wal_sync_time": 1.5,
            "checkpoints": 3, "buffers_checkpoint": 100, "buffers_backend": 7, "buffers_backend_fsync": 0,
            "blks_read": blks_read, "blks_hit": 1000, "blk_read_time": read_time, "blk_write_time": 0.0,
            "by_tablespace": {"pg_default": 40, "lab_ram": 2},
            "run_by_tablespace": {"pg_default": 30}, "tup_upd": 1000, "tup_hot_upd": 900,
            "wal_reset": "2026-11-24 10:00:00+00", "wal_io_reset": "2026-11-24 10:00:00+00",
            "checkpoint_reset": "2026-11-24 10:00:00+00", "backend_reset": "2026-11-24 10:00:00+00", "db_reset": null
        }))
        .unwrap()
    }

    #[test]
    fn a_run_moves_every_counter() {
        let before = snapshot(1_000, 50, 0.1);
        let mut after = snapshot(5_000_000_000, 80, 0.30000000000000004);
        after.wal_fpi = Some(12);
        after.checkpoints = Some(4);
        after.by_tablespace.insert("lab_disk".into(), 9);
        after.run_by_tablespace.insert("pg_default".into(), 45);
        after.tup_upd = Some(4000);
        after.tup_hot_upd = Some(3500);
        let d = before.delta(&after);
        assert_eq!(d.run_n_tup_upd, Some(3000));
        assert_eq!(d.run_n_tup_hot_upd, Some(2600));
        assert_eq!(d.server_wal_bytes, Some(4_999_999_000));
        assert_eq!(d.server_wal_fpi, Some(2));
        assert_eq!(d.server_wal_write, Some(0));
        assert_eq!(d.server_checkpoints, Some(1));
        assert_eq!(d.db_blks_read, Some(30));
        // float8 minus float8, as SQL subtracted them
        assert_eq!(d.db_blk_read_time_ms, Some(0.30000000000000004 - 0.1));
        assert_eq!(d.server_wal_sync_time_ms, Some(0.0));
        let by = d.db_blks_read_by_tablespace.unwrap();
        // a tablespace read from for the first time counts from 0
        assert_eq!(by["lab_disk"], Some(9));
        assert_eq!(by["pg_default"], Some(0));
        assert_eq!(by["lab_ram"], Some(0));
        assert_eq!(
            d.run_blks_read_by_tablespace.unwrap(),
            BTreeMap::from([("pg_default".to_string(), Some(15))])
        );
    }

    #[test]
    fn unknown_counters_have_no_difference() {
        let before = snapshot(1_000, 50, 0.1);
        let mut after = snapshot(2_000, 60, 0.2);
        after.wal_fpi = None;
        after.blk_write_time = None;
        let d = before.delta(&after);
        assert_eq!(d.server_wal_fpi, None);
        assert_eq!(d.db_blk_write_time_ms, None);
        assert_eq!(d.server_wal_bytes, Some(1_000));
        // a snapshot that could not be read at all (JSON null)
        let none: Counters = serde_json::from_value(json!({})).unwrap();
        let d = none.delta(&after);
        assert_eq!(d.server_wal_bytes, None);
        assert_eq!(d.db_blks_read, None);
        assert_eq!(before.delta(&none), RunCounters::default());
        // keys a server does not give are NULLs, not errors
        let partial: Counters =
            serde_json::from_value(json!({"wal_bytes": 5, "blks_read": null})).unwrap();
        assert_eq!(partial.wal_bytes, Some(5));
        assert_eq!(partial.blks_read, None);
    }

    #[test]
    fn a_reset_view_has_no_difference() {
        let before = snapshot(1_000, 50, 0.1);
        // pg_stat_reset_shared('wal') during the run: the WAL counters
        // start again (even past where they were), the others go on
        let mut after = snapshot(9_000, 60, 0.2);
        after.wal_reset = Some("2026-11-24 10:05:00+00".into());
        // before 18, WAL writes and syncs are the same view's
        after.wal_io_reset = after.wal_reset.clone();
        let d = before.delta(&after);
        assert_eq!(d.server_wal_bytes, None);
        assert_eq!(d.server_wal_fpi, None);
        assert_eq!(d.server_wal_sync_time_ms, None);
        assert_eq!(d.server_checkpoints, Some(0));
        assert_eq!(d.db_blks_read, Some(10));
        // pg_stat_reset(): the database's, per tablespace too
        let mut after = snapshot(2_000, 60, 0.2);
        after.db_reset = Some("2026-11-24 10:05:00+00".into());
        let d = before.delta(&after);
        assert_eq!(d.db_blks_read, None);
        assert_eq!(d.db_blk_read_time_ms, None);
        assert_eq!(d.db_blks_read_by_tablespace, None);
        assert_eq!(d.run_blks_read_by_tablespace, None);
        assert_eq!(d.run_n_tup_upd, None);
        assert_eq!(d.run_n_tup_hot_upd, None);
        assert_eq!(d.server_wal_bytes, Some(1_000));
        // pg_stat_reset_shared('bgwriter') on 15 resets both groups
        let mut after = snapshot(2_000, 60, 0.2);
        after.checkpoint_reset = None;
        after.backend_reset = None;
        let d = before.delta(&after);
        assert_eq!(d.server_checkpoints, None);
        assert_eq!(d.server_buffers_backend_fsync, None);
        assert_eq!(d.server_wal_bytes, Some(1_000));
        // 17: pg_stat_reset_shared('checkpointer') leaves backends' writes
        let mut after = snapshot(2_000, 60, 0.2);
        after.checkpoint_reset = Some("2026-11-24 10:05:00+00".into());
        let d = before.delta(&after);
        assert_eq!(d.server_checkpoints, None);
        assert_eq!(d.server_buffers_backend, Some(0));
        // 18: pg_stat_reset_shared('io') resets WAL writes, not WAL bytes
        let mut after = snapshot(2_000, 60, 0.2);
        after.wal_io_reset = Some("2026-11-24 10:05:00+00".into());
        let d = before.delta(&after);
        assert_eq!(d.server_wal_sync, None);
        assert_eq!(d.server_wal_bytes, Some(1_000));
    }

    #[test]
    fn a_counter_that_went_back_has_no_difference() {
        // a reset the view does not date (a relation's own counters, a
        // dropped relation): no negative counts
        let before = snapshot(1_000, 50, 0.1);
        let mut after = snapshot(900, 40, 0.05);
        after.by_tablespace.insert("pg_default".into(), 1);
        let d = before.delta(&after);
        assert_eq!(d.server_wal_bytes, None);
        assert_eq!(d.db_blks_read, None);
        assert_eq!(d.db_blk_read_time_ms, None);
        let by = d.db_blks_read_by_tablespace.unwrap();
        assert_eq!(by["pg_default"], None);
        assert_eq!(by["lab_ram"], Some(0));
    }

    #[test]
    fn io_rows_differ_by_row() {
        let before = serde_json::json!({
            "client backend/relation/normal": {"reads": 10, "read_time": 1.5, "writes": 3, "op_bytes": 8192, "stats_reset": "t0"},
            "checkpointer/relation/normal": {"writes": 100, "fsyncs": 5, "stats_reset": "t0"},
            "autovacuum worker/relation/vacuum": {"reads": 7, "stats_reset": "t0"}
        });
        let after = serde_json::json!({
            "client backend/relation/normal": {"reads": 25, "read_time": 4.0, "writes": 3, "op_bytes": 8192, "stats_reset": "t0"},
            // reset during the run: no difference
            "checkpointer/relation/normal": {"writes": 2, "fsyncs": 1, "stats_reset": "t1"},
            // nothing moved: left out
            "autovacuum worker/relation/vacuum": {"reads": 7, "stats_reset": "t0"},
            // a row that appeared counts from nothing
            "client backend/relation/bulkread": {"reads": 4, "stats_reset": "t0"}
        });
        let mut b = Counters::default();
        let mut a = Counters::default();
        b.io = Some(before);
        a.io = Some(after);
        let d = b.delta(&a).server_io.unwrap();
        assert_eq!(
            d,
            serde_json::json!({
                "client backend/relation/normal": {"reads": 15, "read_time": 2.5, "writes": 0, "op_bytes": 8192},
                "client backend/relation/bulkread": {"reads": 4}
            })
        );
        // 15 has no pg_stat_io
        assert_eq!(
            Counters::default().delta(&Counters::default()).server_io,
            None
        );
    }

    #[test]
    fn no_tablespace_read_is_null() {
        let before = snapshot(1_000, 50, 0.1);
        let mut after = snapshot(1_000, 50, 0.1);
        after.run_by_tablespace.clear();
        let d = before.delta(&after);
        // as jsonb_object_agg over no row: NULL, not {}
        assert_eq!(d.run_blks_read_by_tablespace, None);
        assert!(d.db_blks_read_by_tablespace.is_some());
    }

    /// The keys storlab.bench_runs' columns are written from: its
    /// (sql/catalog/jobs.sql) columns, by name.
    #[test]
    fn run_result_columns() {
        assert_eq!(
            RunResult::columns(),
            [
                "tps",
                "transactions",
                "failures",
                "lat_avg_ms",
                "lat_stddev_ms",
                "lat_p50_ms",
                "lat_p90_ms",
                "lat_p95_ms",
                "lat_p99_ms",
                "lat_max_ms",
                "histogram",
                "pgbench_version",
                "observed",
                "invalid",
                "device_io",
                "memory_bytes",
                "memory_source",
                "server_wal_bytes",
                "server_wal_fpi",
                "server_wal_write",
                "server_wal_sync",
                "server_wal_sync_time_ms",
                "server_checkpoints",
                "server_buffers_checkpoint",
                "server_buffers_backend",
                "server_buffers_backend_fsync",
                "db_blks_read",
                "db_blks_hit",
                "db_blk_read_time_ms",
                "db_blk_write_time_ms",
                "db_blks_read_by_tablespace",
                "run_blks_read_by_tablespace",
                "server_io",
                "run_n_tup_upd",
                "run_n_tup_hot_upd"
            ]
        );
    }

    /// A library under an install not updated to 0.12.0 yet: its
    /// bench_runs has no device_io, memory or tuple columns, and a run is
    /// stored without them, not refused.
    #[test]
    fn a_table_before_0_12_stores_the_run_without_its_devices() {
        let added = [
            "device_io",
            "memory_bytes",
            "memory_source",
            "run_n_tup_upd",
            "run_n_tup_hot_upd",
        ];
        let before_0_12: Vec<String> = RunResult::columns()
            .into_iter()
            .filter(|c| !added.contains(&c.as_str()))
            .collect();
        let r = RunResult {
            tps: Some(10.0),
            device_io: Some(crate::record::RunDeviceIo::default()),
            memory_bytes: Some(1 << 30),
            memory_source: Some("MemTotal".into()),
            counters: RunCounters {
                run_n_tup_upd: Some(5),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(r.columns_in(&before_0_12).unwrap(), before_0_12);
        assert_eq!(
            r.columns_in(&RunResult::columns()).unwrap(),
            RunResult::columns()
        );
    }

    #[test]
    fn run_result_as_json() {
        let r = RunResult {
            tps: Some(1234.5),
            histogram: Some(vec![0x1c, 0x84, 0x93, 0x00, 0xff]),
            observed: json!({"start": {"tables": {}}}),
            counters: RunCounters {
                server_wal_bytes: Some(42),
                db_blks_read_by_tablespace: Some(BTreeMap::from([("lab_ram".into(), Some(3))])),
                ..Default::default()
            },
            ..Default::default()
        };
        let j = r.to_json();
        assert_eq!(j["histogram"], "\\x1c849300ff");
        assert_eq!(j["tps"], 1234.5);
        assert_eq!(j["server_wal_bytes"], 42);
        assert_eq!(j["db_blks_read_by_tablespace"], json!({"lab_ram": 3}));
        assert_eq!(j["run_blks_read_by_tablespace"], serde_json::Value::Null);
        assert_eq!(j["invalid"], serde_json::Value::Null);
        assert_eq!(j["observed"]["start"], json!({"tables": {}}));
        assert_eq!(
            RunResult::default().to_json()["histogram"],
            serde_json::Value::Null
        );
    }
}
