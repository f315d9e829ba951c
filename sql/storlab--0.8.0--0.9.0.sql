-- storlab 0.8.0 -> 0.9.0: answers on every server (hot standbys, read-only
-- callers), online moves that give way to other sessions' DDL, and a fleet
-- that keeps every row and no secret.
-- One section per capability; each says what changed and why.

-- ---- who may prune: storlab's own answer ----
-- CALL storlab.prune() checks its caller through prune_cutoff, which deletes
-- nothing. It was not executable by PUBLIC, so a role granted EXECUTE on
-- prune (as docs/prune.md shows) was told "permission denied for function
-- prune_cutoff" instead of who may prune (42501, storlab's message).
GRANT EXECUTE ON FUNCTION storlab.prune_cutoff(interval, boolean) TO PUBLIC;

-- ---- on a hot standby, a job's status is the primary's ----
-- storlab.jobs and storlab.experiments show a job whose worker is gone as
-- failed. A standby cannot see the primary's workers, so every running job
-- showed there as failed; in recovery the replicated status stands.
CREATE OR REPLACE VIEW storlab.jobs AS
SELECT j.id, j.kind, j.status, j.args, j.database, j.role, j.worker_pid, j.created_at, j.started_at,
       j.finished_at, j.error, j.detail
  FROM storlab.job_records j
 WHERE j.status IN ('done', 'failed', 'cancelled')
UNION ALL
SELECT j.id, j.kind,
       CASE WHEN j.dead THEN 'failed' ELSE j.status END,
       j.args, j.database, j.role, j.worker_pid, j.created_at, j.started_at, j.finished_at,
       CASE WHEN j.dead
            THEN 'the job''s worker exited before finishing it (an error in the worker, a crash or a server restart: the server log says which)'
            ELSE j.error END,
       j.detail
  FROM (SELECT r.*,
               -- on a hot standby a job runs on the primary, whose workers
               -- this server cannot see: its status is the replicated one
               NOT pg_catalog.pg_is_in_recovery() AND (
               (r.status IN ('running', 'cancelling')
                AND NOT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a
                                 WHERE a.pid = r.worker_pid AND a.backend_type = 'storlab job'
                                   AND a.backend_start <= r.started_at))
               OR (r.status = 'queued' AND r.created_at < pg_catalog.statement_timestamp() - interval '2 minutes')) AS dead
          FROM storlab.job_records r
         WHERE r.status IN ('queued', 'running', 'cancelling')) j;
COMMENT ON VIEW storlab.jobs IS 'Every storlab job with its status as of now: a job whose worker is gone is failed (on a hot standby, the status replicated from the primary)';
CREATE OR REPLACE VIEW storlab.experiments AS
SELECT e.id, e.name, CASE WHEN d.dead THEN 'failed' ELSE r.status END AS status, r.args,
       e.current_step, e.steps_total,
       CASE WHEN d.dead
            -- where the relations were last observed placed: a past fact,
            -- since the worker that would observe them now is gone
            THEN format('failed at step %s of %s (%s): its worker exited before finishing it; pgbench''s relations were last placed %s (storlab.layout() shows where they are now)',
                        e.current_step + 1, e.steps_total, coalesce(e.current_action, 'starting'),
                        coalesce('as layout ' || e.layout_applied, 'by pgbench -i or a move'))
            ELSE e.current_action END AS current_action,
       r.started_at, r.finished_at,
       CASE WHEN d.dead
            THEN 'the job''s worker exited before finishing it (an error in the worker, a crash or a server restart: the server log says which)'
            ELSE r.error END AS error,
       e.system_identifier, e.hostname, e.layout_applied, r.role, e.created_at,
       CASE WHEN r.status = 'done' THEN e.wal_needed END AS wal_needed,
       e.node_id
  FROM storlab.experiment_records e
 -- each experiment's job by its id (the fence keeps it a lookup per
 -- experiment: a filter on status would otherwise read every job)
 CROSS JOIN LATERAL (SELECT * FROM storlab.job_records j WHERE j.id = e.id OFFSET 0) r
 -- (on a hot standby the job runs on the primary, whose workers this
 -- server cannot see: its status is the replicated one)
 CROSS JOIN LATERAL (
   SELECT NOT pg_catalog.pg_is_in_recovery() AND (
          (r.status IN ('running', 'cancelling')
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a
                            WHERE a.pid = r.worker_pid AND a.backend_type = 'storlab job'
                              AND a.backend_start <= r.started_at))
       OR (r.status = 'queued' AND r.created_at < pg_catalog.statement_timestamp() - interval '2 minutes')) AS dead) d;
COMMENT ON VIEW storlab.experiments IS 'Every storlab experiment: its status, progress and where its relations were left';

-- ---- on a hot standby, or in a read-only transaction ----
-- The refusal every path that writes makes there (25006, before it does
-- anything), for the PL/pgSQL functions that write (the fleet's). Anyone
-- may call it: it only raises.
CREATE FUNCTION storlab."check_writable"(
	"what" TEXT /* core::option::Option<alloc::string::String> */
) RETURNS void
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'check_writable_wrapper';

-- ---- A CI role reads its own results and drops its own baselines ----
-- A role granted EXECUTE on check(), baseline() and regressions() (the CI
-- role of docs/ci.md) is given probe ids and baseline labels, and
-- baseline()'s 42710 HINT sent it to DELETE FROM storlab.baselines, which
-- it may not. Each probe and baseline now records the role that made it;
-- storlab.own_probes and storlab.own_baselines show a role its own (never
-- another role's), and storlab.drop_baseline() drops a baseline its caller
-- took. The fleet's copies (LIKE the tables in 0.8.0) do not get the
-- columns: a member's role names mean nothing on the collector (as a fresh
-- install adds them after the copies are made: sql/catalog/own_rows.sql).
ALTER TABLE storlab.probes ADD COLUMN measured_by name;  -- the role that measured it; NULL: before 0.9.0
ALTER TABLE storlab.baselines ADD COLUMN taken_by name;  -- the role that took it; NULL: before 0.9.0
COMMENT ON COLUMN storlab.probes.measured_by IS 'The role that measured it (its current_user); storlab.own_probes shows a role its own. NULL: measured before 0.9.0';
COMMENT ON COLUMN storlab.baselines.taken_by IS 'The role that took it (its current_user), which may drop it with storlab.drop_baseline(); NULL: taken before 0.9.0';

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

CREATE VIEW storlab.own_baselines WITH (security_barrier) AS
SELECT b.id, b.label, b.tablespaces, b.duration_s, b.repetitions, b.system_identifier, b.hostname,
       b.taken_at, b.node_id, b.taken_by,
       ARRAY(SELECT bp.probe_id FROM storlab.baseline_probes bp
              WHERE bp.baseline_id OPERATOR(pg_catalog.=) b.id ORDER BY bp.probe_id) AS probe_ids
  FROM storlab.baselines b
 WHERE b.taken_by OPERATOR(pg_catalog.=) ANY (ARRAY(
         SELECT r.rolname FROM pg_catalog.pg_roles r WHERE pg_catalog.pg_has_role(r.oid, 'USAGE')));
COMMENT ON VIEW storlab.own_baselines IS 'The baselines the current role took, with their probes (storlab.own_probes); storlab.drop_baseline(label) drops one';
GRANT SELECT ON storlab.own_probes, storlab.own_baselines TO PUBLIC;

-- storlab.drop_baseline(label): for the role that took it, or one that may
-- DELETE from storlab.baselines; not for PUBLIC, as baseline() is not.
CREATE FUNCTION storlab."drop_baseline"(
	"label" TEXT /* Option < String > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'drop_baseline_wrapper';
REVOKE ALL ON FUNCTION storlab.drop_baseline(text) FROM PUBLIC;
