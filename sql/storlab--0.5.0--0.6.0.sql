-- storlab 0.5.0 -> 0.6.0: records that say what was observed, not only
-- what was asked. Stored rows are kept. Each part of this update has a
-- section of its own below.
\echo Use "ALTER EXTENSION storlab UPDATE TO '0.6.0'" to load this file. \quit

-- ===== experiment records =====
-- A run stores what it observed at its start and end (placement of
-- pgbench's relations, pgbench_accounts' fillfactor) and why its
-- observations disagree with its layout, if they do; experiment_report()
-- pools only runs without such a reason. Runs stored before 0.6.0 have
-- neither (NULL) and are pooled as before. bench_runs is already registered
-- with pg_extension_config_dump (sql/catalog/jobs.sql).
ALTER TABLE storlab.bench_runs
  ADD COLUMN observed jsonb,
  ADD COLUMN invalid  text;
-- A run whose worker died is ended by storlab (ops::jobs::sweep_dead_jobs);
-- until then the view already says where the experiment stopped.
CREATE OR REPLACE VIEW storlab.experiments AS
SELECT e.id, e.name, j.status, j.args, e.current_step, e.steps_total,
       CASE WHEN j.status = 'failed' AND r.status IN ('queued', 'running', 'cancelling')
            THEN format('failed at step %s of %s (%s): its worker exited before finishing it; pgbench''s relations are placed as %s',
                        e.current_step + 1, e.steps_total, coalesce(e.current_action, 'starting'),
                        coalesce('layout ' || e.layout_applied, 'pgbench -i left them'))
            ELSE e.current_action END AS current_action,
       j.started_at, j.finished_at, j.error, e.system_identifier, e.hostname,
       e.layout_applied, j.role, e.created_at
  FROM storlab.experiment_records e
  JOIN storlab.jobs j ON j.id = e.id
  JOIN storlab.job_records r ON r.id = e.id;
-- ===== end of experiment records =====
