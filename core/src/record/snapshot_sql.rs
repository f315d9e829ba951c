//! Where each major keeps the counters a run reads at its start and end.
//!
//! The figures are the same on every major; the views moved:
//! - 15: `pg_stat_wal` (bytes, full-page images, writes, syncs and their
//!   time) and `pg_stat_bgwriter` (checkpoints, buffers the checkpointer
//!   wrote, buffers backends wrote and fsynced themselves).
//! - 16 added `pg_stat_io`; 17 moved the checkpointer's counters to
//!   `pg_stat_checkpointer` and dropped `buffers_backend` and
//!   `buffers_backend_fsync` from `pg_stat_bgwriter`: those are now
//!   `pg_stat_io`'s writes, extends and fsyncs of relations by every
//!   process but the checkpointer and the background writer.
//! - 18 moved WAL's writes, syncs and their times out of `pg_stat_wal` into
//!   `pg_stat_io` (object `wal`, context `normal`; context `init` is new
//!   segments being filled, which 15's `wal_write` never counted), and
//!   counts I/O there in bytes as well as operations, since one read or
//!   extend may now cover several blocks.
//!
//! The query's keys are [`super::Counters`]' fields on every major, so a
//! run's columns mean the same wherever it ran. Each group of counters
//! carries the reset time of the view it came from (its epoch): a
//! difference across a reset is unknown, never negative.

/// The `server_version_num` of `major`'s first release, for the server's
/// own `current_setting('server_version_num')`.
pub fn major_of(server_version_num: i32) -> u32 {
    (server_version_num / 10_000).max(0) as u32
}

/// The oldest major storlab is built for; an older one gets 15's views.
pub const OLDEST_MAJOR: u32 = 15;

/// pg_stat_io exists (and a run can store its rows' differences).
pub fn has_pg_stat_io(major: u32) -> bool {
    major >= 16
}

/// The SELECT list's terms and FROM items for the WAL counters.
fn wal_terms(major: u32) -> (&'static str, &'static str) {
    if major >= 18 {
        (
            "'wal_bytes', w.wal_bytes, 'wal_fpi', w.wal_fpi,
             'wal_write', wio.writes, 'wal_sync', wio.fsyncs, 'wal_sync_time', wio.fsync_time,
             'wal_reset', w.stats_reset, 'wal_io_reset', wio.stats_reset",
            "pg_stat_wal w,
             (SELECT sum(writes)::int8 AS writes, sum(fsyncs)::int8 AS fsyncs,
                     sum(fsync_time)::float8 AS fsync_time, max(stats_reset) AS stats_reset
                FROM pg_stat_io WHERE object = 'wal' AND context = 'normal') wio",
        )
    } else {
        (
            "'wal_bytes', w.wal_bytes, 'wal_fpi', w.wal_fpi,
             'wal_write', w.wal_write, 'wal_sync', w.wal_sync, 'wal_sync_time', w.wal_sync_time,
             'wal_reset', w.stats_reset, 'wal_io_reset', w.stats_reset",
            "pg_stat_wal w",
        )
    }
}

/// The terms and FROM items for the checkpointer's counters. `checkpoints`
/// counts the checkpoints the checkpointer began, timed
/// (`checkpoint_timeout`) and requested (`max_wal_size`, a CHECKPOINT, a
/// base backup) alike: 15's `checkpoints_timed + checkpoints_req`, 17's
/// and 18's `num_timed + num_requested`. The checkpointer adds a
/// checkpoint to these when it reports its statistics: while it writes,
/// between the pauses of a checkpoint on schedule, or, for one behind its
/// schedule (slow storage: it never pauses), only when it ends. So a run
/// during which a slow checkpoint began counts it only if the checkpoint
/// also ended within the run; on a 200-I/O drive runs of 40 s under a 30 s
/// checkpoint_timeout counted none. experiment_report's caveat therefore
/// speaks only of runs shorter than checkpoint_timeout. 18's `num_done`
/// counts them at their end too; a timed checkpoint skipped because
/// nothing was written since the last is counted on every major, which a
/// run that writes never sees.
fn checkpoint_terms(major: u32) -> (&'static str, &'static str) {
    if major >= 17 {
        (
            "'checkpoints', c.num_timed + c.num_requested, 'buffers_checkpoint', c.buffers_written,
             'checkpoint_reset', c.stats_reset",
            "pg_stat_checkpointer c",
        )
    } else {
        (
            "'checkpoints', b.checkpoints_timed + b.checkpoints_req, 'buffers_checkpoint', b.buffers_checkpoint,
             'checkpoint_reset', b.stats_reset",
            "pg_stat_bgwriter b",
        )
    }
}

/// The terms and FROM items for what backends wrote and fsynced
/// themselves. 15 counted a backend's write when it asked the checkpointer
/// to fsync the segment, an extension included; pg_stat_io counts writes
/// and extends apart, so both are added. 18 counts operations that may
/// cover several blocks: its bytes are divided by the block size.
fn backend_terms(major: u32) -> (&'static str, &'static str) {
    match major {
        0..=16 => (
            "'buffers_backend', b.buffers_backend, 'buffers_backend_fsync', b.buffers_backend_fsync,
             'backend_reset', b.stats_reset",
            "",
        ),
        17 => (
            "'buffers_backend', bio.writes + bio.extends, 'buffers_backend_fsync', bio.fsyncs,
             'backend_reset', bio.stats_reset",
            "(SELECT sum(writes)::int8 AS writes, sum(extends)::int8 AS extends, sum(fsyncs)::int8 AS fsyncs,
                     max(stats_reset) AS stats_reset
                FROM pg_stat_io
               WHERE object = 'relation' AND backend_type NOT IN ('checkpointer', 'background writer')) bio",
        ),
        _ => (
            "'buffers_backend', bio.writes + bio.extends, 'buffers_backend_fsync', bio.fsyncs,
             'backend_reset', bio.stats_reset",
            "(SELECT (sum(write_bytes) / current_setting('block_size')::int8)::int8 AS writes,
                     (sum(extend_bytes) / current_setting('block_size')::int8)::int8 AS extends,
                     sum(fsyncs)::int8 AS fsyncs, max(stats_reset) AS stats_reset
                FROM pg_stat_io
               WHERE object = 'relation' AND backend_type NOT IN ('checkpointer', 'background writer')) bio",
        ),
    }
}

/// pg_stat_io's rows (16 and later), one object per backend type, object
/// and context: `{"client backend/relation/normal": {"reads": .., ..}}`.
/// Sizes in blocks before 18 (`op_bytes`), in bytes from 18 on.
fn io_terms(major: u32) -> &'static str {
    match major {
        0..=15 => "'io', NULL",
        16 | 17 => {
            "'io', (SELECT jsonb_object_agg(backend_type || '/' || object || '/' || context,
                       jsonb_strip_nulls(jsonb_build_object(
                         'reads', reads, 'read_time', read_time, 'writes', writes, 'write_time', write_time,
                         'writebacks', writebacks, 'writeback_time', writeback_time,
                         'extends', extends, 'extend_time', extend_time, 'hits', hits,
                         'evictions', evictions, 'reuses', reuses, 'fsyncs', fsyncs, 'fsync_time', fsync_time,
                         'op_bytes', op_bytes, 'stats_reset', stats_reset)))
                     FROM pg_stat_io)"
        }
        _ => {
            "'io', (SELECT jsonb_object_agg(backend_type || '/' || object || '/' || context,
                       jsonb_strip_nulls(jsonb_build_object(
                         'reads', reads, 'read_bytes', read_bytes, 'read_time', read_time,
                         'writes', writes, 'write_bytes', write_bytes, 'write_time', write_time,
                         'writebacks', writebacks, 'writeback_time', writeback_time,
                         'extends', extends, 'extend_bytes', extend_bytes, 'extend_time', extend_time,
                         'hits', hits, 'evictions', evictions, 'reuses', reuses,
                         'fsyncs', fsyncs, 'fsync_time', fsync_time, 'stats_reset', stats_reset)))
                     FROM pg_stat_io)"
        }
    }
}

/// Blocks read per tablespace, from user relations (`$1` unused) or from
/// pgbench's own in schema `$1`.
fn by_tablespace(pgbench_only: bool) -> String {
    let filter = if pgbench_only {
        "WHERE schemaname = $1 AND relname ~ '^(pgbench_|storlab_bench_append)'"
    } else {
        ""
    };
    format!(
        "(SELECT coalesce(jsonb_object_agg(ts, n), '{{}}') FROM (
           SELECT coalesce(t.spcname, dts.spcname) AS ts, sum(n) AS n FROM (
               SELECT relid AS oid, coalesce(heap_blks_read, 0) AS n FROM pg_statio_user_tables {filter}
               UNION ALL SELECT indexrelid, coalesce(idx_blks_read, 0) FROM pg_statio_user_indexes {filter}
             ) r
             JOIN pg_class c ON c.oid = r.oid
             LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace
             CROSS JOIN (SELECT s.spcname FROM pg_database db JOIN pg_tablespace s ON s.oid = db.dattablespace
                          WHERE db.datname = current_database()) dts
            GROUP BY 1) x)"
    )
}

/// Rows updated (`n_tup_upd`), and of those HOT updated
/// (`n_tup_hot_upd`), in pgbench's own tables of schema `$1`, from
/// pg_stat_user_tables (the same on every major; a partitioned
/// pgbench_accounts counts through its partitions). A backend adds its
/// counts there when it flushes its statistics, at most once a second
/// while it works and at its exit: the worker reads them once pgbench's
/// sessions have exited.
fn tuples(counter: &str) -> String {
    format!(
        "(SELECT sum({counter})::int8 FROM pg_stat_user_tables
           WHERE schemaname = $1 AND relname ~ '^(pgbench_|storlab_bench_append)')"
    )
}

/// The one-row query whose jsonb holds a [`super::Counters`] on `major`;
/// `$1` is the schema of pgbench's tables. Run with
/// `search_path = pg_catalog, pg_temp`: names are left bare.
pub fn counters(major: u32) -> String {
    let (wal, wal_from) = wal_terms(major);
    let (ckpt, ckpt_from) = checkpoint_terms(major);
    let (backend, backend_from) = backend_terms(major);
    let mut from = vec![wal_from, ckpt_from];
    if !backend_from.is_empty() {
        from.push(backend_from);
    }
    from.push("pg_stat_database d");
    format!(
        "SELECT jsonb_build_object(
             {wal},
             {ckpt},
             {backend},
             'blks_read', d.blks_read, 'blks_hit', d.blks_hit,
             'blk_read_time', d.blk_read_time, 'blk_write_time', d.blk_write_time,
             'db_reset', d.stats_reset,
             {io},
             'by_tablespace', {all},
             'run_by_tablespace', {own},
             'tup_upd', {upd}, 'tup_hot_upd', {hot})
           FROM {from}
          WHERE d.datname = current_database()",
        io = io_terms(major),
        all = by_tablespace(false),
        own = by_tablespace(true),
        upd = tuples("n_tup_upd"),
        hot = tuples("n_tup_hot_upd"),
        from = from.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every column a query names, per view, must be one that major's view
    /// has (from the documentation of each release).
    fn names(sql: &str, alias: &str) -> Vec<String> {
        // the per-tablespace parts alias pg_class and pg_tablespace
        let sql = &sql[..sql.find("'by_tablespace'").unwrap()];
        let mut out = Vec::new();
        let needle = format!("{alias}.");
        let mut rest = sql;
        while let Some(i) = rest.find(&needle) {
            let before_ok = i == 0
                || !rest.as_bytes()[i - 1].is_ascii_alphanumeric()
                    && rest.as_bytes()[i - 1] != b'_';
            let tail = &rest[i + needle.len()..];
            let name: String = tail
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if before_ok && !name.is_empty() {
                out.push(name);
            }
            rest = &rest[i + needle.len()..];
        }
        out
    }

    #[test]
    fn major_from_server_version_num() {
        assert_eq!(major_of(150014), 15);
        assert_eq!(major_of(170006), 17);
        assert_eq!(major_of(180001), 18);
    }

    #[test]
    fn fifteen_reads_bgwriter_and_wal_only() {
        let q = counters(15);
        assert!(!q.contains("pg_stat_io"), "{q}");
        assert!(!q.contains("pg_stat_checkpointer"), "{q}");
        let bgw = [
            "checkpoints_timed",
            "checkpoints_req",
            "buffers_checkpoint",
            "buffers_backend",
            "buffers_backend_fsync",
            "stats_reset",
        ];
        for n in names(&q, "b") {
            assert!(
                bgw.contains(&n.as_str()),
                "pg_stat_bgwriter has no {n} on 15"
            );
        }
        let wal = [
            "wal_bytes",
            "wal_fpi",
            "wal_write",
            "wal_sync",
            "wal_sync_time",
            "stats_reset",
        ];
        for n in names(&q, "w") {
            assert!(wal.contains(&n.as_str()), "pg_stat_wal has no {n}");
        }
        assert!(q.contains("'io', NULL"));
    }

    #[test]
    fn seventeen_reads_the_checkpointer_and_io() {
        let q = counters(17);
        assert!(
            !q.contains("pg_stat_bgwriter"),
            "17's pg_stat_bgwriter lost these counters: {q}"
        );
        let ckpt = [
            "num_timed",
            "num_requested",
            "buffers_written",
            "stats_reset",
        ];
        for n in names(&q, "c") {
            assert!(
                ckpt.contains(&n.as_str()),
                "pg_stat_checkpointer has no {n}"
            );
        }
        assert!(names(&q, "w").contains(&"wal_sync".to_string()));
        assert!(q.contains("op_bytes"));
        assert!(!q.contains("read_bytes"), "read_bytes is 18's");
    }

    #[test]
    fn eighteen_reads_wal_io_from_pg_stat_io() {
        let q = counters(18);
        for n in names(&q, "w") {
            assert!(
                ["wal_bytes", "wal_fpi", "stats_reset"].contains(&n.as_str()),
                "18's pg_stat_wal has no {n}"
            );
        }
        assert!(q.contains("object = 'wal' AND context = 'normal'"));
        assert!(!q.contains("op_bytes"), "18 dropped op_bytes");
        assert!(q.contains("write_bytes") && q.contains("extend_bytes"));
    }

    #[test]
    fn checkpoints_timed_and_requested_on_every_major() {
        assert!(counters(15).contains("b.checkpoints_timed + b.checkpoints_req"));
        for major in [17, 18] {
            let q = counters(major);
            assert!(q.contains("c.num_timed + c.num_requested"), "{major}: {q}");
            assert!(!q.contains("num_done"), "{major}: counted when they begin");
        }
    }

    #[test]
    fn every_major_gives_every_key() {
        // the keys of Counters, whatever view they came from
        for major in [15, 16, 17, 18] {
            let q = counters(major);
            for key in [
                "'wal_bytes'",
                "'wal_fpi'",
                "'wal_write'",
                "'wal_sync'",
                "'wal_sync_time'",
                "'checkpoints'",
                "'buffers_checkpoint'",
                "'buffers_backend'",
                "'buffers_backend_fsync'",
                "'blks_read'",
                "'blks_hit'",
                "'blk_read_time'",
                "'blk_write_time'",
                "'io'",
                "'wal_reset'",
                "'wal_io_reset'",
                "'checkpoint_reset'",
                "'backend_reset'",
                "'db_reset'",
                "'by_tablespace'",
                "'run_by_tablespace'",
                "'tup_upd'",
                "'tup_hot_upd'",
            ] {
                assert_eq!(q.matches(key).count(), 1, "{major}: {key} in {q}");
            }
        }
    }
}
