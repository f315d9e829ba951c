-- The probes of one suite call. compare_tablespaces() ranks each volume on
-- the repetitions of one call (its own, or the newest complete one younger
-- than max_age), never on the newest probe of each item, which mixed a
-- suite, a check() and a profile() taken at different times under
-- different loads into one answer. profile() names its calls too.
--
-- Added after the fleet's copies (sql/catalog/fleet.sql) are made LIKE the
-- tables, as an update adds it: the copies do not carry it (compare_fleet()
-- takes every copy younger than max_age as a repetition, as
-- compare_servers() does).
ALTER TABLE storlab.probes ADD COLUMN suite_call uuid;  -- the suite call that measured it; NULL: a probe(), a check(), or before 0.10.0
COMMENT ON COLUMN storlab.probes.suite_call IS 'The call of compare_tablespaces() or profile() that measured it: the probes of one call share it (compare_tablespaces() ranks one call''s repetitions). NULL: a probe() or check(), or measured before 0.10.0';
-- a volume's newest call (one descent per tablespace), then that call's rows
CREATE INDEX probes_suite_call ON storlab.probes (tablespace, started_at DESC)
  WHERE suite = 'standard' AND ops > 0 AND suite_call IS NOT NULL;
CREATE INDEX probes_call_rows ON storlab.probes (suite_call, started_at)
  WHERE suite_call IS NOT NULL;
-- each tablespace's newest profile() sweep (the profile and depths charts):
-- more than one worker count, or a depth besides the suite's own 1 and 32
CREATE INDEX probes_sweeps ON storlab.probes (tablespace, started_at DESC)
  WHERE suite = 'standard' AND ops > 0 AND suite_call IS NOT NULL AND label = 'profile'
    AND ((workers > 1 AND iodepth = 1) OR (workers = 1 AND iodepth > 1 AND iodepth <> 32));

CREATE OR REPLACE VIEW storlab.own_probes WITH (security_barrier) AS
SELECT p.id, p.tablespace, p.location, p.workload, p.block_size, p.workers, p.direct, p.sync_method,
       p.writes_per_sync, p.file_size, p.duration_s, p.ops, p.bytes, p.iops, p.mib_s, p.lat_mean_us,
       p.lat_p50_us, p.lat_p90_us, p.lat_p99_us, p.lat_p999_us, p.lat_max_us, p.histogram, p.label,
       p.system_identifier, p.hostname, p.started_at, p.suite, p.iodepth, p.engine, p.precision_pct,
       p.iops_ci95_pct, p.io_method, p.effective_io_concurrency, p.node_id, p.measured_by, p.suite_call
  FROM storlab.probes p
 WHERE p.measured_by OPERATOR(pg_catalog.=) ANY (ARRAY(
         SELECT r.rolname FROM pg_catalog.pg_roles r WHERE pg_catalog.pg_has_role(r.oid, 'USAGE')));
