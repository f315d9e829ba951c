-- A role's own results: who measured each probe and took each baseline,
-- and what a role that holds no grant on storlab's tables may read of its
-- own. A CI role granted EXECUTE on check(), baseline() and regressions()
-- (docs/ci.md) is given probe ids and baseline labels: it may read those
-- rows, as it read the figures they hold when it measured them, and drop a
-- baseline it took (storlab.drop_baseline), never another role's rows.
--
-- Added after the fleet's copies (sql/catalog/fleet.sql) are made LIKE the
-- tables, as an update adds them: the copies do not carry these columns,
-- since a member's role names mean nothing on the collector.
ALTER TABLE storlab.probes ADD COLUMN measured_by name;  -- the role that measured it; NULL: before 0.9.0
ALTER TABLE storlab.baselines ADD COLUMN taken_by name;  -- the role that took it; NULL: before 0.9.0
COMMENT ON COLUMN storlab.probes.measured_by IS 'The role that measured it (its current_user); storlab.own_probes shows a role its own. NULL: measured before 0.9.0';
COMMENT ON COLUMN storlab.baselines.taken_by IS 'The role that took it (its current_user), which may drop it with storlab.drop_baseline(); NULL: taken before 0.9.0';

-- The probes the current role measured (or a role whose privileges it
-- has measured): every column but env, the storage facts that
-- storlab.tablespaces() shows pg_monitor. security_barrier: the filter runs
-- before any function of the caller's query sees a row.
CREATE VIEW storlab.own_probes WITH (security_barrier) AS
SELECT p.id, p.tablespace, p.location, p.workload, p.block_size, p.workers, p.direct, p.sync_method,
       p.writes_per_sync, p.file_size, p.duration_s, p.ops, p.bytes, p.iops, p.mib_s, p.lat_mean_us,
       p.lat_p50_us, p.lat_p90_us, p.lat_p99_us, p.lat_p999_us, p.lat_max_us, p.histogram, p.label,
       p.system_identifier, p.hostname, p.started_at, p.suite, p.iodepth, p.engine, p.precision_pct,
       p.iops_ci95_pct, p.io_method, p.effective_io_concurrency, p.node_id, p.measured_by
  FROM storlab.probes p
 WHERE p.measured_by OPERATOR(pg_catalog.=) ANY (ARRAY(
         SELECT r.rolname FROM pg_catalog.pg_roles r WHERE pg_catalog.pg_has_role(r.oid, 'USAGE')));
COMMENT ON VIEW storlab.own_probes IS 'The probes the current role measured (storlab.probes but env), for a role without SELECT on storlab.probes: the probe_ids check() gives a CI role';

-- The baselines the current role took, with their probes' ids.
CREATE VIEW storlab.own_baselines WITH (security_barrier) AS
SELECT b.id, b.label, b.tablespaces, b.duration_s, b.repetitions, b.system_identifier, b.hostname,
       b.taken_at, b.node_id, b.taken_by,
       ARRAY(SELECT bp.probe_id FROM storlab.baseline_probes bp
              WHERE bp.baseline_id OPERATOR(pg_catalog.=) b.id ORDER BY bp.probe_id) AS probe_ids
  FROM storlab.baselines b
 WHERE b.taken_by OPERATOR(pg_catalog.=) ANY (ARRAY(
         SELECT r.rolname FROM pg_catalog.pg_roles r WHERE pg_catalog.pg_has_role(r.oid, 'USAGE')));
COMMENT ON VIEW storlab.own_baselines IS 'The baselines the current role took, with their probes (storlab.own_probes); storlab.drop_baseline(label) drops one';
