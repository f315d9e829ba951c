-- storlab 0.11.0 -> 0.12.0
\echo Use "ALTER EXTENSION storlab UPDATE TO '0.12.0'" to load this file. \quit

------------------------------------------------------------------------
-- Experiments that know what they measured. PostgreSQL counts a page-cache
-- hit as a read, so a run's own figures cannot tell the storage from the
-- cache; the block devices' counters can. Each run now stores, beside its
-- figures, the devices beneath the tablespaces it used and what their
-- counters moved by (device_io), the memory the server could cache
-- pgbench's data in (memory_bytes, memory_source), and the rows pgbench's
-- tables updated and HOT updated (run_n_tup_upd, run_n_tup_hot_upd): the
-- same columns, in the same order, as a fresh install's
-- (sql/catalog/run_io.sql). The fleet's copies do not carry them.
ALTER TABLE storlab.bench_runs
  ADD COLUMN device_io jsonb,
  ADD COLUMN memory_bytes bigint,
  ADD COLUMN memory_source text,
  ADD COLUMN run_n_tup_upd bigint,
  ADD COLUMN run_n_tup_hot_upd bigint;
COMMENT ON COLUMN storlab.bench_runs.device_io IS 'The block devices beneath the tablespaces the run used, each once with the tablespaces on it, and what their counters (/sys/block/<dev>/stat) moved by over the run; tablespaces on no block device (tmpfs) under no_device. NULL: stored before 0.12.0';
COMMENT ON COLUMN storlab.bench_runs.memory_bytes IS 'The most memory the server could cache pgbench''s data in at the run''s start: its memory group''s limit, else MemTotal (memory_source says which)';
