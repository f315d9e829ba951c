-- Writes synced every N writes, or once after the last (probe()'s
-- sync_every, 0.12.0): iozone -e's reading of random writes, buffered, one
-- fsync at the end of the file, the flush inside the time. Such a probe
-- measures something else than a probe whose every write is a commit
-- (sync_every NULL, sync_method deciding): its rows say so, and no reader
-- pools or compares the two as one measurement.
--
-- Added after the suite calls (sql/catalog/suite_calls.sql), as an update
-- adds them: at the end of storlab.probes, of the fleet's copies (a
-- collector must tell them apart too: fleet_copy copies the columns both
-- sides have) and of own_probes.
ALTER TABLE storlab.probes
  ADD COLUMN sync_every integer CHECK (sync_every >= 0),  -- NULL: every write a commit as sync_method says (and before 0.12.0)
  ADD COLUMN sync_s     float8  CHECK (sync_s >= 0),      -- with sync_every: seconds in those syncs, summed over the workers
  -- the suites (compare_tablespaces, profile, check, fsync_cost, the read
  -- path) never set it: their readers see only sync_every NULL
  ADD CONSTRAINT probes_sync_every_probe_only CHECK (sync_every IS NULL OR suite IS NULL);
COMMENT ON COLUMN storlab.probes.sync_every IS 'probe()''s sync_every: each op is one write, and each worker calls sync_method (fsync or fdatasync) after every sync_every-th write and after its last write (0: only after its last, as iozone -e); ops, iops and mib_s count the writes over a time that holds the syncs, the histogram holds the writes. NULL: each op is a commit as sync_method says (every probe before 0.12.0)';
COMMENT ON COLUMN storlab.probes.sync_s IS 'With sync_every: the seconds the workers spent in those syncs, summed over the workers (with one worker, the part of duration_s spent syncing). NULL without sync_every, whose syncs are inside each op''s latency';
ALTER TABLE storlab.fleet_probes
  ADD COLUMN sync_every integer,
  ADD COLUMN sync_s     float8;

CREATE OR REPLACE VIEW storlab.own_probes WITH (security_barrier) AS
SELECT p.id, p.tablespace, p.location, p.workload, p.block_size, p.workers, p.direct, p.sync_method,
       p.writes_per_sync, p.file_size, p.duration_s, p.ops, p.bytes, p.iops, p.mib_s, p.lat_mean_us,
       p.lat_p50_us, p.lat_p90_us, p.lat_p99_us, p.lat_p999_us, p.lat_max_us, p.histogram, p.label,
       p.system_identifier, p.hostname, p.started_at, p.suite, p.iodepth, p.engine, p.precision_pct,
       p.iops_ci95_pct, p.io_method, p.effective_io_concurrency, p.node_id, p.measured_by, p.suite_call,
       p.sync_every, p.sync_s
  FROM storlab.probes p
 WHERE p.measured_by OPERATOR(pg_catalog.=) ANY (ARRAY(
         SELECT r.rolname FROM pg_catalog.pg_roles r WHERE pg_catalog.pg_has_role(r.oid, 'USAGE')));
