-- storlab 0.5.0 -> 0.6.0: records that say what was observed, not only
-- what was asked; probes, checks and moves that respect their scope; undo
-- per call. Stored rows are kept. Each part of this update has a section
-- of its own below. An updated server ends with the same objects as a
-- fresh 0.6.0 install (the upgrade test compares them).
\echo Use "ALTER EXTENSION storlab UPDATE TO '0.6.0'" to load this file. \quit

-- ===== jobs =====
-- Jobs: a NULL job id is an error (22004), not a NULL answer; the waiting
-- procedure raises it too, and a cancelled wait on another role's job ends
-- with the cancel (57014), leaving that job alone.
ALTER FUNCTION storlab.cancel(bigint) CALLED ON NULL INPUT;
ALTER FUNCTION storlab.stop_now(bigint) CALLED ON NULL INPUT;
ALTER FUNCTION storlab.job_status(bigint) CALLED ON NULL INPUT;

CREATE OR REPLACE PROCEDURE storlab.wait(job_id bigint, timeout interval DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  s pg_catalog.text;
  e pg_catalog.text;
  c pg_catalog.text;
  deadline pg_catalog.timestamptz := pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) timeout;
BEGIN
  IF job_id IS NULL THEN
    RAISE EXCEPTION 'job_id must not be NULL' USING ERRCODE = '22004';
  END IF;
  LOOP
    BEGIN
      SELECT j.status, j.error, j.sqlstate INTO s, e, c FROM storlab.job_status(job_id) j;
      EXIT WHEN s IS NULL
             OR s OPERATOR(pg_catalog.=) ANY (ARRAY['done', 'failed', 'cancelled']::pg_catalog.text[]);
      PERFORM pg_catalog.pg_sleep(0.25);
    EXCEPTION WHEN query_canceled THEN
      -- this transaction rolls back, and a cancel() with it: stop the job
      -- now, if it is the caller's to stop (cancel()'s rule). Another
      -- role's job is left alone: the waiting ends, and the error is the
      -- cancel, never the refusal to stop someone else's job.
      BEGIN
        PERFORM storlab.stop_now(job_id);
      EXCEPTION WHEN insufficient_privilege THEN
        NULL;
      END;
      RAISE;
    END;
    COMMIT;
    IF deadline IS NOT NULL AND pg_catalog.clock_timestamp() OPERATOR(pg_catalog.>) deadline THEN
      RAISE EXCEPTION 'storlab job % is still % after %', job_id, s, timeout
        USING ERRCODE = '57014', HINT = 'The job goes on; wait again, or stop it with storlab.cancel().';
    END IF;
  END LOOP;
  IF s IS NULL THEN
    RAISE EXCEPTION 'storlab job % does not exist', job_id USING ERRCODE = '42704';
  ELSIF s OPERATOR(pg_catalog.=) 'failed' THEN
    -- with the job's own SQLSTATE (a lock timeout is 55P03 here too);
    -- a failure outside PostgreSQL (pgbench's exit) is 38000
    RAISE EXCEPTION USING MESSAGE = pg_catalog.format('storlab job %s failed: %s', job_id, e),
                          ERRCODE = CASE WHEN c IS NULL THEN '38000' ELSE c END;
  ELSIF s OPERATOR(pg_catalog.=) 'cancelled' THEN
    RAISE EXCEPTION 'storlab job % was cancelled', job_id USING ERRCODE = '57014';
  END IF;
END $$;
-- ===== end of jobs =====

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

-- ===== relocations =====
-- An online rebuild (REINDEX CONCURRENTLY) gives an index a new oid: the
-- oid it had before, so that restore_layout and undo_batch follow it. Rows
-- stored before 0.6.0 have none (NULL).
ALTER TABLE storlab.relocations ADD COLUMN previous_relation oid;
-- Undo one call of move / apply_layout / restore_layout / an online move.
CREATE FUNCTION storlab."undo_batch"(
	"batch_id" bigint, /* Option < i64 > */
	"lock_timeout" interval DEFAULT '5 seconds' /* Option < Interval > */
) RETURNS SETOF storlab.relocations /* :: pgrx :: heap_tuple :: PgHeapTuple < '_, :: pgrx :: pgbox :: AllocatedByRust
> */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'undo_batch_wrapper';
REVOKE ALL ON FUNCTION storlab.undo_batch(bigint, interval) FROM PUBLIC;
-- ===== end of relocations =====
