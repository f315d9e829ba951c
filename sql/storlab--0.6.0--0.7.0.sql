-- storlab 0.6.0 -> 0.7.0: the storage-bound studies lab.
-- One section per capability; each says what changed and why.

-- ---- compare_samples: repeated figures compared as experiment_report does ----
-- New; a pure function of its arguments, so EXECUTE stays with PUBLIC.
CREATE FUNCTION "compare_samples"(
	"a" double precision[],
	"b" double precision[]
) RETURNS TABLE (
	"n_a" INT,
	"mean_a" double precision,
	"ci95_low_a" double precision,
	"ci95_high_a" double precision,
	"n_b" INT,
	"mean_b" double precision,
	"ci95_low_b" double precision,
	"ci95_high_b" double precision,
	"change_pct" double precision,
	"p_value" double precision,
	"significant" bool
)
IMMUTABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'compare_samples_wrapper';

-- == A run measures the layout it records ==
-- storlab's moves of relations a running benchmark or experiment uses are
-- refused (55006); a job records where it found pgbench's tables in its
-- row's detail (pgbench_schema), and an experiment what its last placement
-- was observed to be (placed). No table changes. storlab.experiments no
-- longer claims, for a job whose worker died, that the relations are
-- placed as the last layout: it says where they were last placed.
CREATE OR REPLACE VIEW storlab.experiments AS
SELECT e.id, e.name, j.status, j.args, e.current_step, e.steps_total,
       CASE WHEN j.status = 'failed' AND r.status IN ('queued', 'running', 'cancelling')
            -- where the relations were last observed placed: a past fact,
            -- since the worker that would observe them now is gone
            THEN format('failed at step %s of %s (%s): its worker exited before finishing it; pgbench''s relations were last placed %s (storlab.layout() shows where they are now)',
                        e.current_step + 1, e.steps_total, coalesce(e.current_action, 'starting'),
                        coalesce('as layout ' || e.layout_applied, 'by pgbench -i or a move'))
            ELSE e.current_action END AS current_action,
       j.started_at, j.finished_at, j.error, e.system_identifier, e.hostname,
       e.layout_applied, j.role, e.created_at
  FROM storlab.experiment_records e
  JOIN storlab.jobs j ON j.id = e.id
  JOIN storlab.job_records r ON r.id = e.id;
