-- Retention: CALL storlab.prune(older_than) deletes stored results older
-- than that age, batch by batch, committing between batches (docs/prune.md).
--
-- What goes, and what stays:
-- - probes that started before the cutoff, except those a baseline refers
--   to (storlab.baseline_probes): a baseline keeps every probe it compares
--   with, however old;
-- - jobs (bench_init, bench, move_indexes, experiment) that are finished,
--   as storlab.jobs shows them (done, failed, cancelled; a job whose worker
--   died is failed there), whose last activity (finished_at, else
--   started_at, else created_at) is before the cutoff, together with their
--   runs (warm-ups included) and the runs' progress rows. An experiment
--   goes whole, in one transaction: its job, experiment_records row, sizes,
--   runs and progress rows. An experiment that stopped to have pg_wal
--   moved (storlab.experiments.wal_needed) is kept whatever its age: it is
--   waiting for experiment_resume(). Queued, running and cancelling jobs
--   are never deleted;
-- - relocations: every batch (one call of move, apply_layout, an undo, an
--   online index move, an experiment's placement) whose moves are all
--   before the cutoff, each batch whole. storlab.prunes records the
--   horizon: undo_batch of a batch it deleted and restore_layout to a time
--   before the cutoff are refused (22023) naming it, never run on a
--   history with a hole. A batch still in the history is undone as
--   before: the batches a prune deletes all ended before any batch
--   restore_layout(at) may take back (at is at or after the cutoff).

-- A baseline's probes cannot be deleted under it: a DELETE by hand that
-- would leave a baseline without its figures fails (the foreign key has
-- no ON DELETE CASCADE, sql/catalog/checks.sql); this index serves the
-- check of each deleted probe.
CREATE INDEX baseline_probes_probe_id_idx ON storlab.baseline_probes (probe_id);
-- A deleted job's runs are found by job_id (the cascade from job_records
-- too); experiment_sizes and bench_progress are found by their keys'
-- first columns.
CREATE INDEX bench_runs_job_id_idx ON storlab.bench_runs (job_id);

-- One row per prune (dry runs are not logged), written in the same
-- transactions as its batches: the counts are what its committed batches
-- deleted, and finished_at stays NULL when it was stopped (a cancel,
-- statement_timeout, an error) before its last batch.
CREATE TABLE storlab.prunes (
    id                      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    started_at              timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    finished_at             timestamptz,
    pruned_by               name        NOT NULL DEFAULT CURRENT_USER,
    older_than              interval    NOT NULL,
    cutoff                  timestamptz NOT NULL,   -- the horizon: rows older than this went
    probes                  bigint      NOT NULL DEFAULT 0,
    jobs                    bigint      NOT NULL DEFAULT 0,
    bench_runs              bigint      NOT NULL DEFAULT 0,
    bench_progress          bigint      NOT NULL DEFAULT 0,
    experiments             bigint      NOT NULL DEFAULT 0,
    experiment_sizes        bigint      NOT NULL DEFAULT 0,
    relocations             bigint      NOT NULL DEFAULT 0,
    relocation_batches_upto bigint      -- the newest relocation batch it deleted: undo_batch of a missing batch up to it names the prune
);
COMMENT ON TABLE storlab.prunes IS 'Every storlab.prune() call: when, by whom, its cutoff and what it deleted per table; undo_batch and restore_layout refuse to cross the cutoff of one that deleted relocations';

-- pg_dump keeps the log, and with it the horizon of the relocations it keeps.
SELECT pg_catalog.pg_extension_config_dump('storlab.prunes', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.prunes_id_seq', '');

-- One batch of a prune: the first kind of row with anything left to delete
-- (probes, then jobs, then relocations), about batch_rows rows of it in id
-- order, each job and each relocation batch whole. done is true when
-- nothing was left; the prune's row is then marked finished. With dry_run,
-- it deletes nothing and counts everything the prune would delete (no
-- prune_id needed). Runs as its caller: it deletes only what the caller
-- could delete by hand (storlab.prune checks first that the caller is a
-- superuser or storlab's owner).
CREATE FUNCTION storlab.prune_batch(cutoff timestamptz, dry_run boolean, prune_id bigint DEFAULT NULL,
                                    OUT probes bigint, OUT jobs bigint, OUT bench_runs bigint,
                                    OUT bench_progress bigint, OUT experiments bigint,
                                    OUT experiment_sizes bigint, OUT relocations bigint, OUT done boolean)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  -- a batch deletes about this many rows, never fewer than one job (an
  -- experiment with everything it holds) or one relocation batch
  batch_rows constant integer := 5000;
  -- jobs weighed for one batch, before the rows each holds are counted
  batch_jobs constant integer := 100;
  ids bigint[];
  seen tid[];
  n bigint;
BEGIN
  IF prune_batch.cutoff IS NULL OR prune_batch.dry_run IS NULL THEN
    RAISE EXCEPTION '% must not be NULL', CASE WHEN prune_batch.cutoff IS NULL THEN 'cutoff' ELSE 'dry_run' END
      USING ERRCODE = '22004';
  END IF;
  probes := 0; jobs := 0; bench_runs := 0; bench_progress := 0;
  experiments := 0; experiment_sizes := 0; relocations := 0; done := false;
  IF NOT prune_batch.dry_run THEN
    -- two prunes at once take turns, a batch each: neither deletes what
    -- the other counted, and they never wait for each other's row locks
    PERFORM pg_advisory_xact_lock(hashtextextended('storlab: prune', 0));
    IF NOT EXISTS (SELECT FROM storlab.prunes p
                    WHERE p.id = prune_batch.prune_id AND p.cutoff = prune_batch.cutoff AND p.finished_at IS NULL) THEN
      RAISE EXCEPTION 'storlab.prune_batch deletes only for a storlab.prune() under way, and prune % is none', prune_batch.prune_id
        USING ERRCODE = '22023', HINT = 'CALL storlab.prune(older_than); for the counts alone, dry_run => true.';
    END IF;
  END IF;

  -- 1. Probes before the cutoff that no baseline refers to.
  SELECT array_agg(c.id ORDER BY c.id) INTO ids FROM (
    SELECT p.id FROM storlab.probes p
     WHERE p.started_at < prune_batch.cutoff
       AND NOT EXISTS (SELECT FROM storlab.baseline_probes b WHERE b.probe_id = p.id)
     ORDER BY p.id
     LIMIT CASE WHEN prune_batch.dry_run THEN NULL ELSE batch_rows END) c;
  IF prune_batch.dry_run THEN
    probes := coalesce(cardinality(ids), 0);
  ELSIF ids IS NOT NULL THEN
    -- the foreign key of baseline_probes refuses the batch (rolled back
    -- whole) if a baseline took one of them meanwhile
    DELETE FROM storlab.probes p WHERE p.id = ANY (ids);
    GET DIAGNOSTICS n = ROW_COUNT;
    probes := n;
    UPDATE storlab.prunes p SET probes = p.probes + n WHERE p.id = prune_batch.prune_id;
    RETURN;
  END IF;

  -- 2. Finished jobs whose last activity is before the cutoff, with their
  -- runs, progress rows and, for an experiment, its row and sizes.
  SELECT array_agg(c.id ORDER BY c.id), array_agg(c.t ORDER BY c.id) INTO ids, seen FROM (
    SELECT j.id, r.ctid AS t FROM storlab.jobs j JOIN storlab.job_records r ON r.id = j.id
     WHERE j.status IN ('done', 'failed', 'cancelled')
       AND coalesce(j.finished_at, j.started_at, j.created_at) < prune_batch.cutoff
       -- stopped for pg_wal to be moved, waiting for experiment_resume()
       AND NOT EXISTS (SELECT FROM storlab.experiments e WHERE e.id = j.id AND e.wal_needed IS NOT NULL)
     ORDER BY j.id
     LIMIT CASE WHEN prune_batch.dry_run THEN NULL ELSE batch_jobs END) c;
  IF NOT prune_batch.dry_run AND ids IS NOT NULL THEN
    -- as many jobs, in id order, as fit in batch_rows rows (the first always)
    SELECT array_agg(w.id ORDER BY w.id), array_agg(w.t ORDER BY w.id) INTO ids, seen FROM (
      SELECT c.id, c.t, sum(c.n) OVER (ORDER BY c.id) - c.n AS before FROM (
        SELECT i.id, i.t, 1
               + (SELECT count(*) FROM storlab.bench_runs r WHERE r.job_id = i.id)
               + (SELECT count(*) FROM storlab.bench_progress g JOIN storlab.bench_runs r ON r.id = g.run_id
                   WHERE r.job_id = i.id)
               + (SELECT count(*) FROM storlab.experiment_records e WHERE e.id = i.id)
               + (SELECT count(*) FROM storlab.experiment_sizes s WHERE s.experiment_id = i.id) AS n
          FROM unnest(ids, seen) AS i(id, t)) c) w
     WHERE w.before < batch_rows;
    -- locked only while unchanged since they were judged: a job resumed
    -- meanwhile (experiment_resume() queues the same row again) is a new
    -- row version, not in seen, and stays
    SELECT array_agg(l.id ORDER BY l.id) INTO ids FROM (
      SELECT r.id FROM storlab.job_records r
       WHERE r.ctid = ANY (seen) AND r.id = ANY (ids)
       ORDER BY r.id FOR UPDATE) l;
  END IF;
  IF ids IS NOT NULL THEN
    IF prune_batch.dry_run THEN
      jobs := cardinality(ids);
      SELECT count(*) INTO bench_progress FROM storlab.bench_progress g JOIN storlab.bench_runs r ON r.id = g.run_id
       WHERE r.job_id IN (SELECT unnest(ids));
      SELECT count(*) INTO bench_runs FROM storlab.bench_runs r WHERE r.job_id IN (SELECT unnest(ids));
      SELECT count(*) INTO experiment_sizes FROM storlab.experiment_sizes s WHERE s.experiment_id IN (SELECT unnest(ids));
      SELECT count(*) INTO experiments FROM storlab.experiment_records e WHERE e.id IN (SELECT unnest(ids));
    ELSE
      -- children first, so that each count is this table's own
      DELETE FROM storlab.bench_progress g USING storlab.bench_runs r
       WHERE g.run_id = r.id AND r.job_id = ANY (ids);
      GET DIAGNOSTICS n = ROW_COUNT; bench_progress := n;
      DELETE FROM storlab.bench_runs r WHERE r.job_id = ANY (ids);
      GET DIAGNOSTICS n = ROW_COUNT; bench_runs := n;
      DELETE FROM storlab.experiment_sizes s WHERE s.experiment_id = ANY (ids);
      GET DIAGNOSTICS n = ROW_COUNT; experiment_sizes := n;
      DELETE FROM storlab.experiment_records e WHERE e.id = ANY (ids);
      GET DIAGNOSTICS n = ROW_COUNT; experiments := n;
      DELETE FROM storlab.job_records r WHERE r.id = ANY (ids);
      GET DIAGNOSTICS n = ROW_COUNT; jobs := n;
      UPDATE storlab.prunes p
         SET jobs = p.jobs + prune_batch.jobs, bench_runs = p.bench_runs + prune_batch.bench_runs,
             bench_progress = p.bench_progress + prune_batch.bench_progress,
             experiments = p.experiments + prune_batch.experiments,
             experiment_sizes = p.experiment_sizes + prune_batch.experiment_sizes
       WHERE p.id = prune_batch.prune_id;
      RETURN;
    END IF;
  END IF;

  -- 3. Relocations: whole batches whose every move is before the cutoff,
  -- oldest batch first.
  SELECT array_agg(b.batch_id ORDER BY b.batch_id) INTO ids FROM (
    SELECT b.batch_id, sum(b.n) OVER (ORDER BY b.batch_id) - b.n AS before FROM (
      SELECT l.batch_id, count(*) AS n FROM storlab.relocations l
       GROUP BY l.batch_id HAVING max(l.moved_at) < prune_batch.cutoff) b) b
   WHERE prune_batch.dry_run OR b.before < batch_rows;
  IF ids IS NOT NULL THEN
    IF prune_batch.dry_run THEN
      SELECT count(*) INTO relocations FROM storlab.relocations l WHERE l.batch_id IN (SELECT unnest(ids));
    ELSE
      DELETE FROM storlab.relocations l WHERE l.batch_id = ANY (ids);
      GET DIAGNOSTICS n = ROW_COUNT; relocations := n;
      UPDATE storlab.prunes p
         SET relocations = p.relocations + n,
             relocation_batches_upto = greatest(p.relocation_batches_upto, (SELECT max(i) FROM unnest(ids) i))
       WHERE p.id = prune_batch.prune_id;
      RETURN;
    END IF;
  END IF;

  -- nothing left (a dry run: everything counted)
  done := true;
  IF NOT prune_batch.dry_run THEN
    UPDATE storlab.prunes p SET finished_at = clock_timestamp() WHERE p.id = prune_batch.prune_id;
  END IF;
END $$;
REVOKE ALL ON FUNCTION storlab.prune_batch(timestamptz, boolean, bigint) FROM PUBLIC;

-- CALL storlab.prune('90 days'): the prune, a batch per transaction. The
-- checks come first, before anything is deleted (storlab.prune_cutoff:
-- 22023 for an age that is NULL, zero or negative, 42501 for a caller who
-- is neither a superuser nor storlab's owner, 25001 inside a transaction
-- block). A cancel or statement_timeout stops it within a batch: the
-- batches committed before stay deleted (and counted in storlab.prunes),
-- the one under way is rolled back whole. Returns one row: what it deleted
-- (with dry_run, would delete) per table.
--
-- A procedure that COMMITs cannot carry a SET search_path clause: every
-- name in it is schema-qualified, its one operator is written
-- OPERATOR(pg_catalog.=), and the work is done by prune_cutoff and
-- prune_batch, which have a fixed search_path.
CREATE PROCEDURE storlab.prune(older_than interval, dry_run boolean DEFAULT false,
                               INOUT probes bigint DEFAULT NULL, INOUT jobs bigint DEFAULT NULL,
                               INOUT bench_runs bigint DEFAULT NULL, INOUT bench_progress bigint DEFAULT NULL,
                               INOUT experiments bigint DEFAULT NULL, INOUT experiment_sizes bigint DEFAULT NULL,
                               INOUT relocations bigint DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  cut pg_catalog.timestamptz;
  this_prune pg_catalog.int8;
  b record;
BEGIN
  cut := storlab.prune_cutoff(older_than, dry_run);
  IF dry_run THEN
    SELECT * INTO b FROM storlab.prune_batch(cut, true);
    probes := b.probes; jobs := b.jobs; bench_runs := b.bench_runs; bench_progress := b.bench_progress;
    experiments := b.experiments; experiment_sizes := b.experiment_sizes; relocations := b.relocations;
    RETURN;
  END IF;
  INSERT INTO storlab.prunes (older_than, cutoff) VALUES (older_than, cut) RETURNING id INTO this_prune;
  COMMIT;
  LOOP
    SELECT * INTO b FROM storlab.prune_batch(cut, false, this_prune);
    COMMIT;
    EXIT WHEN b.done;
  END LOOP;
  SELECT p.probes, p.jobs, p.bench_runs, p.bench_progress, p.experiments, p.experiment_sizes, p.relocations
    INTO probes, jobs, bench_runs, bench_progress, experiments, experiment_sizes, relocations
    FROM storlab.prunes p WHERE p.id OPERATOR(pg_catalog.=) this_prune;
END $$;
REVOKE ALL ON PROCEDURE storlab.prune(interval, boolean, bigint, bigint, bigint, bigint, bigint, bigint, bigint) FROM PUBLIC;
GRANT SELECT ON storlab.prunes TO pg_monitor;
