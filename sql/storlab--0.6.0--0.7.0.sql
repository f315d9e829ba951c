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

-- ===== experiments: where pg_wal is, and fillfactor against fillfactor =====
-- A layout may name "wal": a tablespace whose filesystem pg_wal must be on
-- for its runs. pg_wal moves only while the server is stopped, so an
-- experiment stops (done, not failed) before the first run that needs it
-- elsewhere; wal_needed names that tablespace until experiment_resume()
-- (NULL otherwise), and CALL storlab.experiment returns the id with a
-- NOTICE saying what to do. Every run records where pg_wal was in
-- bench_runs.observed (no new column). experiment_records is already
-- registered with pg_extension_config_dump (sql/catalog/experiments.sql).
ALTER TABLE storlab.experiment_records ADD COLUMN wal_needed name;
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
       e.layout_applied, j.role, e.created_at,
       CASE WHEN j.status = 'done' THEN e.wal_needed END AS wal_needed
  FROM storlab.experiment_records e
  JOIN storlab.jobs j ON j.id = e.id
  JOIN storlab.job_records r ON r.id = e.id;
CREATE OR REPLACE PROCEDURE storlab.experiment(name text, layouts jsonb, script text DEFAULT 'tpcb-like',
                                    clients integer[] DEFAULT '{8}', jobs integer DEFAULT 2,
                                    duration interval DEFAULT '60 seconds', repetitions integer DEFAULT 3,
                                    warmup interval DEFAULT '10 seconds', scale integer DEFAULT 10,
                                    fillfactors integer[] DEFAULT '{100}', options jsonb DEFAULT '{}',
                                    INOUT experiment_id bigint DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  needed pg_catalog.name;
  why pg_catalog.text;
BEGIN
  experiment_id := storlab.experiment_start(name, layouts, script, clients, jobs, duration, repetitions,
                                            warmup, scale, fillfactors, options);
  COMMIT;  -- the worker can see the job only once it is committed
  CALL storlab.wait(experiment_id);
  SELECT e.wal_needed, e.current_action INTO needed, why FROM storlab.experiments e
   WHERE e.id OPERATOR(pg_catalog.=) experiment_id;
  IF needed IS NOT NULL THEN
    RAISE NOTICE 'storlab: experiment % stopped: %', experiment_id, why
      USING HINT = pg_catalog.format('storlab.experiments.wal_needed is %s until it is resumed.', needed);
  END IF;
END $$;
-- experiment_report(): where WAL was (wal), and each fillfactor against
-- fillfactor 100 (or the largest) at the same layout and clients
-- (ff_improvement_pct, ff_p_value, ff_significant): a new return type.
DROP FUNCTION storlab.experiment_report(bigint);
CREATE FUNCTION storlab."experiment_report"(
	"experiment_id" bigint /* Option < i64 > */
) RETURNS TABLE (
	"layout" TEXT,  /* String */
	"fillfactor" INT,  /* i32 */
	"clients" INT,  /* i32 */
	"wal" TEXT,  /* Option < String > */
	"runs" INT,  /* i32 */
	"tps_mean" double precision,  /* Option < f64 > */
	"tps_stddev" double precision,  /* Option < f64 > */
	"tps_ci95_low" double precision,  /* Option < f64 > */
	"tps_ci95_high" double precision,  /* Option < f64 > */
	"lat_p95_ms" double precision,  /* Option < f64 > */
	"lat_p99_ms" double precision,  /* Option < f64 > */
	"improvement_pct" double precision,  /* Option < f64 > */
	"p_value" double precision,  /* Option < f64 > */
	"significant" bool,  /* Option < bool > */
	"ff_improvement_pct" double precision,  /* Option < f64 > */
	"ff_p_value" double precision,  /* Option < f64 > */
	"ff_significant" bool,  /* Option < bool > */
	"wal_bytes_per_tx" double precision,  /* Option < f64 > */
	"logical_bytes" bigint,  /* Option < i64 > */
	"allocated_bytes" bigint,  /* Option < i64 > */
	"stored_bytes" bigint,  /* Option < i64 > */
	"bar" TEXT  /* String */
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'experiment_report_wrapper';
REVOKE ALL ON FUNCTION storlab.experiment_report(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.experiment_report(bigint) TO pg_monitor;
-- ===== end of experiments: where pg_wal is, and fillfactor against fillfactor =====

-- tablespaces() says what each tablespace runs on: the memory limit of the
-- server's cgroup (page cache included), the cgroup I/O throttles on the
-- tablespace's devices (read/write IOPS and bytes per second) and the
-- tablespace's comment, where its device class is stated. New last
-- columns: a new return type, so the function is made again, with its grants.
DROP FUNCTION storlab.tablespaces();
CREATE FUNCTION storlab."tablespaces"() RETURNS TABLE (
	"kind" TEXT,  /* String */
	"tablespace" name,  /* Name */
	"oid" oid,  /* Option < pg_sys :: Oid > */
	"location" TEXT,  /* String */
	"fs_type" TEXT,  /* Option < String > */
	"mount_point" TEXT,  /* Option < String > */
	"mount_options" TEXT,  /* Option < String > */
	"device" TEXT,  /* Option < String > */
	"rotational" bool,  /* Option < bool > */
	"fs_bytes" bigint,  /* Option < i64 > */
	"free_bytes" bigint,  /* Option < i64 > */
	"used_by_postgres_bytes" bigint,  /* Option < i64 > */
	"direct_io" bool,  /* Option < bool > */
	"backing" TEXT,  /* Option < String > */
	"raid_profile" TEXT,  /* Option < String > */
	"compression" TEXT,  /* Option < String > */
	"memory_limit_bytes" bigint,  /* Option < i64 > */
	"read_iops_limit" bigint,  /* Option < i64 > */
	"write_iops_limit" bigint,  /* Option < i64 > */
	"read_bps_limit" bigint,  /* Option < i64 > */
	"write_bps_limit" bigint,  /* Option < i64 > */
	"description" TEXT  /* Option < String > */
)
STRICT VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'tablespaces_wrapper';
REVOKE ALL ON FUNCTION storlab.tablespaces() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.tablespaces() TO pg_monitor;
