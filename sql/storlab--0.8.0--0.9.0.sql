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
