-- storlab 0.7.0 -> 0.8.0: PostgreSQL 15, 17 and 18 from one source.
-- One section per capability; each says what changed and why.

-- ---- A run stores its pg_stat_io differences (PostgreSQL 16 and later) ----
-- The counters a run already stored (server_*, db_*) keep their names and
-- meaning on every major; each major's library reads them from the views
-- it has. pg_stat_io's rows are new, and NULL on 15.
ALTER TABLE storlab.bench_runs
  ADD COLUMN server_io jsonb;

-- ---- undo_batch of an earlier batch after undoing a later one ----
-- A row written by undo_batch(N) names N, so that a later batch and its
-- undo cancel out when an earlier batch is undone (0.7.0 refused it: the
-- undo counted as a move since). 0.7.0 wrote that only into the label,
-- which storlab itself set: it is read from there.
ALTER TABLE storlab.relocations
  ADD COLUMN undoes_batch bigint;
UPDATE storlab.relocations
   SET undoes_batch = pg_catalog.substring(label, '^undo of batch ([0-9]+)$')::bigint
 WHERE label ~ '^undo of batch [0-9]+$';

-- ---- PostgreSQL 18 names NOT NULL constraints ----
-- storlab.job_records was storlab.jobs before 0.2.0: on 18 its NOT NULL
-- constraints keep the old table's names (jobs_id_not_null, ...), where a
-- fresh install's are named for job_records. Renamed, so that an updated
-- install has a fresh install's objects on every major (before 18 there
-- are no such constraints, and nothing to rename).
DO $$
DECLARE
  c record;
BEGIN
  FOR c IN SELECT n.conname FROM pg_catalog.pg_constraint n
            WHERE n.conrelid = 'storlab.job_records'::pg_catalog.regclass
              AND n.contype = 'n' AND n.conname LIKE 'jobs\_%\_not\_null'
  LOOP
    EXECUTE pg_catalog.format('ALTER TABLE storlab.job_records RENAME CONSTRAINT %I TO %I',
                              c.conname, 'job_records' || pg_catalog.substr(c.conname, 5));
  END LOOP;
END
$$;

-- ---- PostgreSQL 18's asynchronous I/O ----
-- probe_read_path() times PostgreSQL's own read path (cold sequential and
-- bitmap heap scans of a scratch table) at several effective_io_concurrency
-- values; each scan is a probe row of suite 'read_path', engine 'postgres',
-- with the io_method and the value it ran at (NULL for every other probe).
ALTER TABLE storlab.probes
  ADD COLUMN io_method text CHECK (io_method IN ('sync', 'worker', 'io_uring')),
  ADD COLUMN effective_io_concurrency integer CHECK (effective_io_concurrency BETWEEN 0 AND 1000);
ALTER TABLE storlab.probes
  DROP CONSTRAINT probes_workload_check,
  ADD CONSTRAINT probes_workload_check
    CHECK (workload IN ('randread', 'randwrite', 'seqread', 'seqwrite', 'wal', 'seqscan', 'bitmapscan')),
  DROP CONSTRAINT probes_suite_check,
  ADD CONSTRAINT probes_suite_check CHECK (suite IN ('standard', 'fsync_cost', 'read_path')),
  DROP CONSTRAINT probes_engine_check,
  ADD CONSTRAINT probes_engine_check CHECK (engine IN ('psync', 'io_uring', 'postgres'));
COMMENT ON COLUMN storlab.probes.suite IS 'standard: a probe of the standard suite (profile, compare_tablespaces); fsync_cost: one of fsync_cost''s tests (writes rewound to the start of the file, as pg_test_fsync does); read_path: one cold scan of probe_read_path (PostgreSQL 18); NULL: a probe() call';
COMMENT ON COLUMN storlab.probes.io_method IS 'read_path probes: the server''s io_method during the scan (PostgreSQL 18); NULL for the other probes, which do their own I/O';
COMMENT ON COLUMN storlab.probes.effective_io_concurrency IS 'read_path probes: the effective_io_concurrency the scan ran at; NULL for the other probes';

CREATE FUNCTION storlab."probe_read_path"(
	"tablespace" name, /* Option < Name > */
	"effective_io_concurrency" INT[] DEFAULT '{1,16,64}', /* :: std :: option :: Option < Vec < Option < i32 > > > */
	"table_size" bigint DEFAULT 67108864, /* Option < i64 > */
	"repetitions" INT DEFAULT 3, /* Option < i32 > */
	"label" TEXT DEFAULT NULL /* Option < String > */
) RETURNS SETOF storlab.probes /* :: pgrx :: heap_tuple :: PgHeapTuple < '_, :: pgrx :: pgbox :: AllocatedByRust
> */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'probe_read_path_wrapper';
REVOKE ALL ON FUNCTION storlab.probe_read_path(name, integer[], bigint, integer, text) FROM PUBLIC;

-- storlab.tablespaces() shows the effective_io_concurrency reads in each
-- tablespace are prefetched at, and the server's io_method, io_workers and
-- io_combine_limit (NULL where the major has no such setting). New last
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
	"description" TEXT,  /* Option < String > */
	"effective_io_concurrency" INT,  /* Option < i32 > */
	"io_method" TEXT,  /* Option < String > */
	"io_workers" INT,  /* Option < i32 > */
	"io_combine_limit" TEXT  /* Option < String > */
)
STRICT VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'tablespaces_wrapper';
REVOKE ALL ON FUNCTION storlab.tablespaces() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.tablespaces() TO pg_monitor;

-- storlab.experiment_io(): what the server read, wrote, extended and synced
-- during an experiment's measured runs (their pg_stat_io differences), per
-- cell and backend type, object and context.
CREATE FUNCTION storlab."experiment_io"(
	"experiment_id" bigint /* Option < i64 > */
) RETURNS TABLE (
	"layout" TEXT,  /* String */
	"fillfactor" INT,  /* i32 */
	"clients" INT,  /* i32 */
	"backend_type" TEXT,  /* String */
	"object" TEXT,  /* String */
	"context" TEXT,  /* String */
	"runs" INT,  /* i32 */
	"reads" double precision,  /* Option < f64 > */
	"read_ms" double precision,  /* Option < f64 > */
	"writes" double precision,  /* Option < f64 > */
	"write_ms" double precision,  /* Option < f64 > */
	"extends" double precision,  /* Option < f64 > */
	"fsyncs" double precision,  /* Option < f64 > */
	"fsync_ms" double precision,  /* Option < f64 > */
	"hits" double precision,  /* Option < f64 > */
	"evictions" double precision,  /* Option < f64 > */
	"reuses" double precision  /* Option < f64 > */
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'experiment_io_wrapper';
REVOKE ALL ON FUNCTION storlab.experiment_io(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.experiment_io(bigint) TO pg_monitor;

-- ---- A server's history stays its own across pg_upgrade ----
-- storlab.server_identities: the system identifiers this database's
-- storlab has run under. Every stored row carries the system_identifier of
-- the server that wrote it, and "this server's rows" (what undo_batch and
-- restore_layout may undo, the probes compare_tablespaces reuses, the server
-- a baseline was taken on) are those of any identifier listed here, or of
-- the server's own. pg_upgrade gives a cluster a new system identifier but
-- copies this table: the server's earlier identifiers stay listed, and its
-- history stays its own across majors. pg_dump does not carry the table
-- (it is no configuration table), so a restore onto another server starts
-- its own list: the rows it restores stay another server's.
CREATE TABLE storlab.server_identities (
    system_identifier bigint      PRIMARY KEY,
    first_seen        timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE storlab.server_identities IS 'The system identifiers this database''s storlab has run under: the server''s own, and those it had before a pg_upgrade (copied by pg_upgrade, never by pg_dump)';
INSERT INTO storlab.server_identities (system_identifier)
  SELECT system_identifier FROM pg_catalog.pg_control_system();

-- Every statement that stores rows lists the identifier it runs under (a
-- cluster made by pg_upgrade gets its own listed at its first write).
CREATE FUNCTION storlab.remember_server() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  INSERT INTO storlab.server_identities (system_identifier)
    SELECT system_identifier FROM pg_catalog.pg_control_system()
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION storlab.remember_server() FROM PUBLIC;
CREATE TRIGGER remember_server AFTER INSERT ON storlab.probes
  FOR EACH STATEMENT EXECUTE FUNCTION storlab.remember_server();
CREATE TRIGGER remember_server AFTER INSERT ON storlab.relocations
  FOR EACH STATEMENT EXECUTE FUNCTION storlab.remember_server();
CREATE TRIGGER remember_server AFTER INSERT ON storlab.baselines
  FOR EACH STATEMENT EXECUTE FUNCTION storlab.remember_server();
CREATE TRIGGER remember_server AFTER INSERT ON storlab.bench_runs
  FOR EACH STATEMENT EXECUTE FUNCTION storlab.remember_server();

-- ---- Readers that do not grow with history ----
-- Years of results (a million probes, a hundred thousand runs) must not
-- slow the functions that read the newest of them. Each reader takes the
-- newest rows of each group through an index whose predicate is its filter
-- (core/src/newest.rs), a baseline's probes from the baseline's own rows;
-- storlab.jobs checks only the unfinished jobs against pg_stat_activity,
-- and storlab.experiments reads job_records by id (both: same columns, same
-- rows). CREATE INDEX reads each table once: at a million probes, seconds.
CREATE INDEX probes_newest_suite ON storlab.probes (tablespace, workload, workers, started_at DESC)
  WHERE suite = 'standard' AND ops > 0 AND iodepth = 1;
CREATE INDEX probes_newest_depth ON storlab.probes (tablespace, workload, iodepth, started_at DESC)
  WHERE suite = 'standard' AND ops > 0 AND workers = 1 AND block_size = 8192
    AND engine = CASE WHEN iodepth = 1 THEN 'psync' ELSE 'io_uring' END;
CREATE INDEX probes_newest_direct ON storlab.probes (tablespace, workload, started_at DESC)
  WHERE ops > 0 AND workers = 1 AND iodepth = 1 AND direct
    AND ((workload = 'randread' AND block_size = 8192)
         OR (workload IN ('seqread', 'seqwrite') AND block_size = 131072));
CREATE INDEX probes_read_path ON storlab.probes (tablespace, workload, started_at DESC)
  WHERE suite = 'read_path';
CREATE INDEX relocations_batch_id ON storlab.relocations (batch_id);
CREATE INDEX job_records_unfinished ON storlab.job_records (id)
  WHERE status IN ('queued', 'running', 'cancelling');
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
               (r.status IN ('running', 'cancelling')
                AND NOT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a
                                 WHERE a.pid = r.worker_pid AND a.backend_type = 'storlab job'
                                   AND a.backend_start <= r.started_at))
               OR (r.status = 'queued' AND r.created_at < pg_catalog.statement_timestamp() - interval '2 minutes') AS dead
          FROM storlab.job_records r
         WHERE r.status IN ('queued', 'running', 'cancelling')) j;
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
       CASE WHEN r.status = 'done' THEN e.wal_needed END AS wal_needed
  FROM storlab.experiment_records e
 -- each experiment's job by its id (the fence keeps it a lookup per
 -- experiment: a filter on status would otherwise read every job)
 CROSS JOIN LATERAL (SELECT * FROM storlab.job_records j WHERE j.id = e.id OFFSET 0) r
 CROSS JOIN LATERAL (
   SELECT (r.status IN ('running', 'cancelling')
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a
                            WHERE a.pid = r.worker_pid AND a.backend_type = 'storlab job'
                              AND a.backend_start <= r.started_at))
       OR (r.status = 'queued' AND r.created_at < pg_catalog.statement_timestamp() - interval '2 minutes') AS dead) d;

-- ---- 0.8.0: retention (storlab.prune) ----
-- CALL storlab.prune(older_than, dry_run) deletes stored results older
-- than that age, a batch per transaction (docs/prune.md). Everything below
-- is sql/catalog/prune.sql, the baseline_probes foreign key of
-- sql/catalog/checks.sql, and prune_cutoff() with its grant.
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


-- baseline_probes.probe_id refused nothing before: deleting a probe deleted
-- its baseline links (ON DELETE CASCADE), and a baseline lost figures
-- silently. Now the delete fails while a baseline refers to the probe.
ALTER TABLE storlab.baseline_probes
  DROP CONSTRAINT baseline_probes_probe_id_fkey,
  ADD CONSTRAINT baseline_probes_probe_id_fkey FOREIGN KEY (probe_id) REFERENCES storlab.probes (id);

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

-- The checks storlab.prune() makes before it deletes anything.
CREATE FUNCTION storlab."prune_cutoff"(
	"older_than" interval, /* Option < Interval > */
	"dry_run" bool DEFAULT false /* Option < bool > */
) RETURNS timestamp with time zone /* TimestampWithTimeZone */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'prune_cutoff_wrapper';
REVOKE ALL ON FUNCTION storlab.prune_cutoff(interval, boolean) FROM PUBLIC;
