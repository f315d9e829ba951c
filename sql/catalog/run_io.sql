-- What a run measured beneath PostgreSQL (0.12.0), so that a DBA can tell
-- the storage from the page cache (PostgreSQL counts a page-cache hit as a
-- read) and read a run's HOT ratio:
-- - device_io: the block devices beneath the tablespaces the run used
--   (pgbench's tables and indexes at its start, its sessions' temporary
--   tablespaces, pg_wal's folder), each device once with the tablespaces on
--   it, and what its counters (/sys/block/<dev>/stat) moved by over the
--   run: {"elapsed_ms": n, "devices": [{"device", "dev", "tablespaces",
--   "reads", "read_bytes", "read_ms", "writes", "write_bytes", "write_ms",
--   "flushes", "io_ticks_ms", "time_in_queue_ms"}], "no_device":
--   [{"tablespace", "fs_type"}]} (a tablespace on tmpfs has no device);
-- - memory_bytes, memory_source: the most memory the server could cache
--   pgbench's data in at the run's start: its memory group's limit
--   ('memory limit', as storlab.tablespaces() reads it), else 'MemTotal';
-- - run_n_tup_upd, run_n_tup_hot_upd: rows of pgbench's own tables updated,
--   and of those HOT updated, over the run (pg_stat_user_tables).
-- NULL in runs stored before 0.12.0.
--
-- Added after the fleet's copies (sql/catalog/fleet.sql) are made LIKE the
-- tables, as an update appends them: the copies do not carry them (the
-- fleet's readers do not read them).
ALTER TABLE storlab.bench_runs
  ADD COLUMN device_io jsonb,
  ADD COLUMN memory_bytes bigint,
  ADD COLUMN memory_source text,
  ADD COLUMN run_n_tup_upd bigint,
  ADD COLUMN run_n_tup_hot_upd bigint;
COMMENT ON COLUMN storlab.bench_runs.device_io IS 'The block devices beneath the tablespaces the run used, each once with the tablespaces on it, and what their counters (/sys/block/<dev>/stat) moved by over the run; tablespaces on no block device (tmpfs) under no_device. NULL: stored before 0.12.0';
COMMENT ON COLUMN storlab.bench_runs.memory_bytes IS 'The most memory the server could cache pgbench''s data in at the run''s start: its memory group''s limit, else MemTotal (memory_source says which)';
