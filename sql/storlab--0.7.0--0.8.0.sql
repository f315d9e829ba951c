-- storlab 0.7.0 -> 0.8.0: PostgreSQL 15, 17 and 18 from one source.
-- One section per capability; each says what changed and why.

-- The fleet (docs/fleet.md): every result row names the node that measured
-- it; the rows stored before this update have none (NULL), and a collector
-- counts them under their system identifier (storlab.fleet_legacy_node).
-- (experiment_records' column first: the experiments view below shows it;
-- the others at the fleet's section, after this update's other columns,
-- where a fresh install has them too)
ALTER TABLE storlab.experiment_records ADD COLUMN node_id uuid;

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

-- ---- online moves ----
-- A row says whether writes went on during its move (REINDEX CONCURRENTLY
-- through move_indexes_online, or pg_repack), and for a table moved online
-- the longest any other session waited for a lock on it meanwhile.
ALTER TABLE storlab.relocations
  ADD COLUMN online boolean NOT NULL DEFAULT false,
  ADD COLUMN writers_blocked_s float8;
UPDATE storlab.relocations SET online = true WHERE label = 'move_indexes_online';
-- a table moved online through pg_repack is a job of its own kind
ALTER TABLE storlab.job_records DROP CONSTRAINT job_records_kind_check;
ALTER TABLE storlab.job_records ADD CONSTRAINT job_records_kind_check
  CHECK (kind IN ('bench_init', 'bench', 'move_indexes', 'move_online', 'experiment'));
-- move, apply_layout, restore_layout and undo_batch take online => true:
-- a new last argument, so each is made again, with its grants, on a C
-- symbol of its own (the old ones stay for installs not updated yet).
DROP FUNCTION storlab.move(regclass, name, boolean, interval, boolean);
CREATE FUNCTION storlab."move"(
	"relation" regclass,
	"tablespace" name,
	"with_indexes" bool DEFAULT true,
	"lock_timeout" interval DEFAULT '5 seconds',
	"dry_run" bool DEFAULT false,
	"online" bool DEFAULT false
) RETURNS SETOF storlab.relocations
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'move_relation_or_online_wrapper';
REVOKE ALL ON FUNCTION storlab.move(regclass, name, boolean, interval, boolean, boolean) FROM PUBLIC;

DROP FUNCTION storlab.apply_layout(name, name, name, interval, boolean);
CREATE FUNCTION storlab."apply_layout"(
	"tables_tablespace" name,
	"indexes_tablespace" name,
	"schema_name" name DEFAULT 'public',
	"lock_timeout" interval DEFAULT '5 seconds',
	"dry_run" bool DEFAULT false,
	"online" bool DEFAULT false
) RETURNS SETOF storlab.relocations
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'apply_layout_or_online_wrapper';
REVOKE ALL ON FUNCTION storlab.apply_layout(name, name, name, interval, boolean, boolean) FROM PUBLIC;

DROP FUNCTION storlab.restore_layout(timestamptz, interval);
CREATE FUNCTION storlab."restore_layout"(
	"at" timestamp with time zone,
	"lock_timeout" interval DEFAULT '5 seconds',
	"online" bool DEFAULT false
) RETURNS SETOF storlab.relocations
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'restore_layout_or_online_wrapper';
REVOKE ALL ON FUNCTION storlab.restore_layout(timestamptz, interval, boolean) FROM PUBLIC;

DROP FUNCTION storlab.undo_batch(bigint, interval);
CREATE FUNCTION storlab."undo_batch"(
	"batch_id" bigint,
	"lock_timeout" interval DEFAULT '5 seconds',
	"online" bool DEFAULT false
) RETURNS SETOF storlab.relocations
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'undo_batch_or_online_wrapper';
REVOKE ALL ON FUNCTION storlab.undo_batch(bigint, interval, boolean) FROM PUBLIC;

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
       CASE WHEN r.status = 'done' THEN e.wal_needed END AS wal_needed,
       e.node_id
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

-- ===== The fleet (sql/catalog/fleet.sql, docs/fleet.md) =====
ALTER TABLE storlab.probes ADD COLUMN node_id uuid;
ALTER TABLE storlab.baselines ADD COLUMN node_id uuid;
ALTER TABLE storlab.bench_runs ADD COLUMN node_id uuid;

-- This server's node and the collector's checks and readers (Rust).
CREATE FUNCTION storlab."node_id"() RETURNS uuid /* Option < Uuid > */
STRICT VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'node_id_wrapper';

CREATE FUNCTION storlab."node_info"() RETURNS TABLE (
	"node_id" uuid,  /* Option < Uuid > */
	"system_identifier" bigint,  /* i64 */
	"hostname" TEXT,  /* String */
	"server_version_num" INT,  /* i32 */
	"storlab_version" TEXT  /* String */
)
STRICT VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'node_info_wrapper';

CREATE FUNCTION storlab."fleet_check_name"(
	"name" TEXT /* & str */
) RETURNS void
IMMUTABLE STRICT PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'fleet_check_name_wrapper';

CREATE FUNCTION storlab."fleet_check_version"(
	"remote" TEXT, /* & str */
	"collector" TEXT /* & str */
) RETURNS void
IMMUTABLE STRICT PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'fleet_check_version_wrapper';

CREATE FUNCTION storlab."fleet_conninfo_options"(
	"conninfo" TEXT /* & str */
) RETURNS TABLE (
	"context" TEXT,  /* String */
	"keyword" TEXT,  /* String */
	"value" TEXT  /* String */
)
IMMUTABLE STRICT PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'fleet_conninfo_options_wrapper';

CREATE FUNCTION storlab."fleet_conninfo_shown"(
	"conninfo" TEXT /* & str */
) RETURNS TEXT /* String */
IMMUTABLE STRICT PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'fleet_conninfo_shown_wrapper';

CREATE FUNCTION storlab."compare_fleet"(
	"servers" TEXT[] DEFAULT NULL, /* :: std :: option :: Option < Vec < Option < String > > > */
	"max_age" interval DEFAULT '30 days' /* Option < Interval > */
) RETURNS TABLE (
	"server" TEXT,  /* String */
	"tablespace" TEXT,  /* String */
	"fs_type" TEXT,  /* Option < String > */
	"device" TEXT,  /* Option < String > */
	"randread_p50_us" double precision,  /* Option < f64 > */
	"randread_p99_us" double precision,  /* Option < f64 > */
	"randread_iops" double precision,  /* Option < f64 > */
	"randread_iops_qd32" double precision,  /* Option < f64 > */
	"randwrite_p99_us" double precision,  /* Option < f64 > */
	"wal_commit_p50_us" double precision,  /* Option < f64 > */
	"wal_commit_p99_us" double precision,  /* Option < f64 > */
	"seqwrite_mib_s" double precision,  /* Option < f64 > */
	"seqread_mib_s" double precision,  /* Option < f64 > */
	"volatile" bool,  /* bool */
	"randread_vs_best" double precision,  /* Option < f64 > */
	"wal_commit_vs_best" double precision,  /* Option < f64 > */
	"best_for" TEXT[],  /* Vec < String > */
	"probed_at" timestamp with time zone  /* Option < pgrx :: datum :: TimestampWithTimeZone > */
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'compare_fleet_wrapper';

CREATE FUNCTION storlab."compare_servers"(
	"a" TEXT, /* Option < String > */
	"b" TEXT, /* Option < String > */
	"workloads" TEXT[] DEFAULT NULL, /* :: std :: option :: Option < Vec < Option < String > > > */
	"max_age" interval DEFAULT '30 days' /* Option < Interval > */
) RETURNS TABLE (
	"tablespace" TEXT,  /* Option < String > */
	"workload" TEXT,  /* String */
	"metric" TEXT,  /* String */
	"a_value" double precision,  /* f64 */
	"b_value" double precision,  /* f64 */
	"change_pct" double precision,  /* Option < f64 > */
	"a_n" INT,  /* i32 */
	"b_n" INT,  /* i32 */
	"p_value" double precision,  /* Option < f64 > */
	"significant" bool,  /* Option < bool > */
	"verdict" TEXT  /* String */
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'compare_servers_wrapper';

-- regressions() takes a fleet server's baseline (server => ...).
DROP FUNCTION storlab.regressions(text, name[], double precision, interval, integer);
CREATE FUNCTION storlab."regressions"(
	"baseline" TEXT, /* Option < String > */
	"tablespaces" name[] DEFAULT NULL, /* :: std :: option :: Option < Vec < Option < Name > > > */
	"max_change_pct" double precision DEFAULT 10, /* Option < f64 > */
	"duration" interval DEFAULT '2 seconds', /* Option < Interval > */
	"repetitions" INT DEFAULT 5, /* Option < i32 > */
	"server" TEXT DEFAULT NULL /* Option < String > */
) RETURNS TABLE (
	"tablespace" name,  /* Name */
	"workload" TEXT,  /* String */
	"metric" TEXT,  /* String */
	"baseline" double precision,  /* f64 */
	"now" double precision,  /* f64 */
	"change_pct" double precision,  /* Option < f64 > */
	"p_value" double precision,  /* Option < f64 > */
	"regressed" bool,  /* Option < bool > */
	"description" TEXT  /* String */
)
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'regressions_wrapper';
REVOKE ALL ON FUNCTION storlab.regressions(text, name[], double precision, interval, integer, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.compare_fleet(text[], interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.compare_fleet(text[], interval) TO pg_monitor;
REVOKE ALL ON FUNCTION storlab.compare_servers(text, text, text[], interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.compare_servers(text, text, text[], interval) TO pg_monitor;
REVOKE ALL ON FUNCTION storlab.fleet_conninfo_options(text) FROM PUBLIC;

-- A fleet in one database. Every server has an identity (its node); a
-- collector database gathers the results of many servers through
-- postgres_fdw, PostgreSQL's own federation: it pulls over an ordinary
-- connection and leaves no replication slot or retained WAL on the servers
-- it reads (which would disturb the storage being measured). See
-- docs/fleet.md.

------------------------------------------------------------------------
-- 1. This server's identity, on every server.
--
-- system_identifier alone does not tell servers apart: a physical replica
-- or a pg_basebackup clone has its origin's. A node is one database of one
-- cluster in one place: (system identifier, host name, data directory,
-- database oid). A clone, a copy on another host, a moved data directory, a
-- copy made with CREATE DATABASE ... TEMPLATE or a pg_upgrade (a new system
-- identifier) is a new node, with a new node_id, at its first use. The
-- table is no configuration table: pg_dump does not carry it, so a restore
-- starts with a node of its own, while the rows it restores keep the
-- node_id of the server that measured them.
CREATE TABLE storlab.nodes (
    node_id           uuid        PRIMARY KEY DEFAULT pg_catalog.gen_random_uuid(),
    system_identifier bigint      NOT NULL,
    hostname          text        NOT NULL,
    data_directory    text        NOT NULL,
    database_oid      oid         NOT NULL,
    first_seen        timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    UNIQUE (system_identifier, hostname, data_directory, database_oid)
);
COMMENT ON TABLE storlab.nodes IS 'The nodes this database''s storlab has run on: a node is one database of one cluster in one place (system identifier, host, data directory, database oid); storlab.node_id() names the current one. Not carried by pg_dump: a restore or a clone gets a node of its own';

-- Every result row names the node that measured it.
ALTER TABLE storlab.probes ALTER COLUMN node_id SET DEFAULT storlab.node_id();
ALTER TABLE storlab.baselines ALTER COLUMN node_id SET DEFAULT storlab.node_id();
ALTER TABLE storlab.bench_runs ALTER COLUMN node_id SET DEFAULT storlab.node_id();
ALTER TABLE storlab.experiment_records ALTER COLUMN node_id SET DEFAULT storlab.node_id();

-- What a collector reads of this server first: one row.
-- reads_all_stats: whether the role reading it sees every session's
-- transaction start (pg_read_all_stats, in pg_monitor), which a
-- collector's sync needs to know how far it has read; in_recovery: a
-- standby, whose sessions do not show its primary's (fleet_connect).
CREATE VIEW storlab.node AS
SELECT n.*, pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE') AS reads_all_stats,
       pg_catalog.pg_is_in_recovery() AS in_recovery
  FROM storlab.node_info() n;
COMMENT ON VIEW storlab.node IS 'This server as a fleet collector sees it: its node_id (NULL on a standby), system identifier, host name, PostgreSQL and storlab versions, whether the role reading it has pg_read_all_stats, and whether it is a standby';

-- The node a row whose node_id is NULL (written before 0.8.0, or read from
-- a server older than 0.8.0) is counted under: one per system identifier
-- and database (each database's storlab numbers its rows itself; a clone's
-- database keeps its origin's name, so the rows it inherited are its
-- origin's).
CREATE FUNCTION storlab.fleet_legacy_node(system_identifier bigint, database text) RETURNS uuid
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN pg_catalog.md5('storlab system ' OPERATOR(pg_catalog.||) system_identifier::pg_catalog.text
                        OPERATOR(pg_catalog.||) ' database ' OPERATOR(pg_catalog.||) database)::pg_catalog.uuid;
COMMENT ON FUNCTION storlab.fleet_legacy_node(bigint, text) IS 'The node a result row without a node_id (from before storlab 0.8.0) is counted under: one per system identifier and database';

------------------------------------------------------------------------
-- 2. A collector: the servers it reads, and their rows.

-- One row per server of the fleet. Its foreign server and its schema of
-- foreign tables are both named storlab_fleet_<name>; the credentials are
-- in the foreign server's user mapping (for storlab's owner), never here.
CREATE TABLE storlab.fleet_members (
    name              text        PRIMARY KEY,
    conninfo          text        NOT NULL,   -- as given, without its secrets (password, sslpassword)
    added_at          timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    node_id           uuid,       -- its node at the last contact (NULL: storlab older than 0.8.0 there)
    system_identifier bigint,
    hostname          text,
    server_version    text,
    storlab_version   text,       -- the version its foreign tables were imported for
    last_attempt      timestamptz,
    last_sync         timestamptz,  -- the end of the last sync that succeeded
    last_error        text          -- why the last attempt failed; NULL once one succeeds
);
COMMENT ON TABLE storlab.fleet_members IS 'The servers this collector reads (storlab.fleet_add); read them through storlab.fleet_servers';

-- How far each table of each server is copied: every row with an id above
-- last_id, or stamped at or after horizon, is read again at the next sync
-- (and copied only if new or changed). The horizon is the member's clock:
-- the start of its oldest transaction still open at the last sync, whose
-- rows that sync could not see yet.
CREATE TABLE storlab.fleet_marks (
    server     text   NOT NULL REFERENCES storlab.fleet_members (name) ON DELETE CASCADE,
    table_name text   NOT NULL,
    last_id    bigint NOT NULL DEFAULT 0,
    horizon    timestamptz,
    PRIMARY KEY (server, table_name)
);

-- Which server each node's rows are shown under: a member's own node
-- (seen in its storlab.node) is its own; a node only seen on rows (a
-- clone's origin, a server before a pg_upgrade) belongs to the first
-- member that delivered it, until a member names it as its own.
CREATE TABLE storlab.fleet_nodes (
    node_id    uuid        PRIMARY KEY,
    server     text        NOT NULL,
    own        boolean     NOT NULL DEFAULT false,  -- the member's storlab.node said so
    first_seen timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);

-- The copies: each the columns of this version's table (or view), the
-- member it is shown under, and when it was copied. Keyed by (node_id, id):
-- ids repeat across servers, never within a node. A later version that
-- adds a column to one of the four adds it to its copy too (fleet_copy
-- reads the columns both sides have).
CREATE TABLE storlab.fleet_probes (LIKE storlab.probes);
CREATE TABLE storlab.fleet_baselines (LIKE storlab.baselines);
CREATE TABLE storlab.fleet_baseline_probes (LIKE storlab.baseline_probes);
CREATE TABLE storlab.fleet_bench_runs (LIKE storlab.bench_runs);
CREATE TABLE storlab.fleet_experiments (LIKE storlab.experiments);
ALTER TABLE storlab.fleet_baseline_probes ADD COLUMN node_id uuid;
ALTER TABLE storlab.fleet_probes
  ALTER COLUMN node_id SET NOT NULL,
  ADD COLUMN server text NOT NULL,
  ADD COLUMN synced_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  ADD PRIMARY KEY (node_id, id);
ALTER TABLE storlab.fleet_baselines
  ALTER COLUMN node_id SET NOT NULL,
  ADD COLUMN server text NOT NULL,
  ADD COLUMN synced_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  ADD PRIMARY KEY (node_id, id);
ALTER TABLE storlab.fleet_baseline_probes
  ALTER COLUMN node_id SET NOT NULL,
  ADD COLUMN server text NOT NULL,
  ADD COLUMN synced_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  ADD PRIMARY KEY (node_id, baseline_id, probe_id);
ALTER TABLE storlab.fleet_bench_runs
  ALTER COLUMN node_id SET NOT NULL,
  ADD COLUMN server text NOT NULL,
  ADD COLUMN synced_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  ADD PRIMARY KEY (node_id, id);
ALTER TABLE storlab.fleet_experiments
  ALTER COLUMN id SET NOT NULL,
  ALTER COLUMN node_id SET NOT NULL,
  ADD COLUMN server text NOT NULL,
  ADD COLUMN synced_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  ADD PRIMARY KEY (node_id, id);
-- the newest standard-suite figure of each server, tablespace and
-- workload (chart_svg('fleet'), a walk of core/src/newest.rs), and a
-- server's rows
CREATE INDEX fleet_probes_suite ON storlab.fleet_probes (server, tablespace, workload, started_at DESC)
  WHERE suite = 'standard' AND ops > 0 AND workers = 1 AND iodepth = 1;
CREATE INDEX fleet_probes_server ON storlab.fleet_probes (server);
CREATE INDEX fleet_baselines_label ON storlab.fleet_baselines (server, label);
CREATE INDEX fleet_bench_runs_server ON storlab.fleet_bench_runs (server, script);
CREATE INDEX fleet_experiments_server ON storlab.fleet_experiments (server);

COMMENT ON TABLE storlab.fleet_probes IS 'Probes copied from the fleet''s servers (storlab.fleet_sync): storlab.probes'' columns, the server they are shown under, and when they were copied';
COMMENT ON TABLE storlab.fleet_baselines IS 'Baselines copied from the fleet''s servers; regressions(label, server => ...) checks this server against one';
COMMENT ON TABLE storlab.fleet_baseline_probes IS 'The probes of each copied baseline (their rows are in storlab.fleet_probes, same node_id)';
COMMENT ON TABLE storlab.fleet_bench_runs IS 'Bench runs copied from the fleet''s servers: storlab.bench_runs'' columns and the server';
COMMENT ON TABLE storlab.fleet_experiments IS 'Experiments copied from the fleet''s servers: storlab.experiments'' columns and the server';

-- The collector's rows are the user's data too.
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_members', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_marks', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_nodes', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_probes', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_baselines', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_baseline_probes', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_bench_runs', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_experiments', '');

CREATE VIEW storlab.fleet_servers AS
SELECT m.name, m.node_id, m.system_identifier, m.hostname, m.server_version, m.storlab_version,
       m.conninfo, m.added_at, m.last_attempt, m.last_sync, m.last_error,
       (SELECT pg_catalog.count(*) FROM storlab.fleet_probes p WHERE p.server = m.name) AS probes,
       (SELECT pg_catalog.count(*) FROM storlab.fleet_baselines b WHERE b.server = m.name) AS baselines,
       (SELECT pg_catalog.count(*) FROM storlab.fleet_bench_runs r WHERE r.server = m.name) AS bench_runs,
       (SELECT pg_catalog.count(*) FROM storlab.fleet_experiments e WHERE e.server = m.name) AS experiments
  FROM storlab.fleet_members m;
COMMENT ON VIEW storlab.fleet_servers IS 'The fleet''s servers: identity, versions, the last sync and its error, and how many of each result this collector holds';

------------------------------------------------------------------------
-- 3. Adding, reading and removing servers.

-- The schema (and foreign server) of a member.
CREATE FUNCTION storlab.fleet_schema(server text) RETURNS name
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN ('storlab_fleet_' OPERATOR(pg_catalog.||) server)::pg_catalog.name;

-- The database a member's foreign server reads.
CREATE FUNCTION storlab.fleet_database(server text) RETURNS text
  LANGUAGE sql STABLE STRICT SET search_path = pg_catalog, pg_temp
  RETURN (SELECT o.option_value FROM pg_foreign_server s, pg_options_to_table(s.srvoptions) o
           WHERE s.srvname = storlab.fleet_schema(server) AND o.option_name = 'dbname');

-- How a row of a member's foreign table `remote` (aliased r) names its
-- node: its node_id, or for rows from before 0.8.0 (and every row of an
-- older member) the legacy node of its system identifier and `database`.
CREATE FUNCTION storlab.fleet_node_expr(remote regclass, database text) RETURNS text
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
  RETURN CASE WHEN EXISTS (SELECT FROM pg_attribute a
                            WHERE a.attrelid = remote AND a.attname = 'node_id' AND NOT a.attisdropped)
              THEN format('coalesce(r.node_id, storlab.fleet_legacy_node(r.system_identifier, %L))', database)
              ELSE format('storlab.fleet_legacy_node(r.system_identifier, %L)', database) END;

-- Connects to a member and (re)imports its foreign tables when its storlab
-- version changed: the catalog views every server has (its extensions, its
-- sessions, its settings), then storlab's tables as that version has them.
-- Refuses a server without storlab (42704), whose storlab the collector
-- cannot read (0A000), or that is the node of another member (42710). Runs as storlab's owner, whose user mapping holds
-- the credentials.
CREATE FUNCTION storlab.fleet_connect(server text) RETURNS timestamptz
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  sch name := storlab.fleet_schema(server);
  mine text := (SELECT extversion FROM pg_extension WHERE extname = 'storlab');
  dbname text := storlab.fleet_database(server);
  theirs text;
  horizon timestamptz;
  n record;
  t name;
  other text;
  unseen boolean;
  prepared boolean;
  version text;
BEGIN
  IF pg_catalog.to_regclass(format('%I.remote_extension', sch)) IS NULL THEN
    EXECUTE format('CREATE FOREIGN TABLE %I.remote_extension (extname name, extversion text) SERVER %I OPTIONS (schema_name %L, table_name %L)',
                   sch, sch, 'pg_catalog', 'pg_extension');
    EXECUTE format('CREATE FOREIGN TABLE %I.remote_activity (datname name, xact_start timestamptz, query text) SERVER %I OPTIONS (schema_name %L, table_name %L)',
                   sch, sch, 'pg_catalog', 'pg_stat_activity');
    EXECUTE format('CREATE FOREIGN TABLE %I.remote_prepared (database name, prepared timestamptz) SERVER %I OPTIONS (schema_name %L, table_name %L)',
                   sch, sch, 'pg_catalog', 'pg_prepared_xacts');
    EXECUTE format('CREATE FOREIGN TABLE %I.remote_settings (name text, setting text) SERVER %I OPTIONS (schema_name %L, table_name %L)',
                   sch, sch, 'pg_catalog', 'pg_settings');
  END IF;
  -- The first query on the member connects, and begins the member's
  -- transaction (REPEATABLE READ: every table read in one snapshot). The
  -- start of the oldest transaction open in the database then (ours among
  -- them) is the sync's horizon: rows a transaction still open would write
  -- bear a later stamp, and the next sync reads from there again.
  -- (Needs pg_read_all_stats there, in pg_monitor: other roles' sessions
  -- show no xact_start without it; checked below.)
  EXECUTE format('SELECT min(xact_start), bool_or(query = %L) FROM %I.remote_activity WHERE datname = $1',
                 '<insufficient privilege>', sch)
    INTO horizon, unseen USING dbname;
  -- A prepared transaction (two-phase commit) is in no session: its rows
  -- may be stamped before any horizon read now. While one is there, the
  -- horizon does not move on (NULL: fleet_copy keeps the last one), and on
  -- a first sync every row stays to be read again until it is gone.
  EXECUTE format('SELECT EXISTS (SELECT FROM %I.remote_prepared WHERE database = $1)', sch) INTO prepared USING dbname;
  IF prepared THEN
    horizon := NULL;
  END IF;
  EXECUTE format('SELECT (SELECT extversion FROM %I.remote_extension WHERE extname = %L)', sch, 'storlab') INTO theirs;
  IF theirs IS NULL THEN
    RAISE EXCEPTION 'fleet server "%" has no storlab extension in database "%"', server, dbname
      USING ERRCODE = '42704',
            HINT = 'Install it there (CREATE EXTENSION storlab), or point the server at the database that has it.';
  END IF;
  PERFORM storlab.fleet_check_version(theirs, mine);
  IF theirs IS DISTINCT FROM (SELECT m.storlab_version FROM storlab.fleet_members m WHERE m.name = server) THEN
    FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
              WHERE s.nspname = sch AND c.relkind = 'f'
                AND c.relname NOT IN ('remote_extension', 'remote_activity', 'remote_prepared', 'remote_settings') LOOP
      EXECUTE format('DROP FOREIGN TABLE %I.%I', sch, t);
    END LOOP;
    -- (a table that version lacks is simply not imported)
    EXECUTE format('IMPORT FOREIGN SCHEMA storlab LIMIT TO (node, probes, baselines, baseline_probes, bench_runs, experiments) FROM SERVER %I INTO %I',
                   sch, sch);
  END IF;
  IF pg_catalog.to_regclass(format('%I.node', sch)) IS NOT NULL THEN
    EXECUTE format('SELECT node_id, system_identifier, hostname, reads_all_stats, in_recovery FROM %I.node', sch) INTO n;
    unseen := NOT n.reads_all_stats;
    IF n.in_recovery THEN
      RAISE EXCEPTION 'fleet server "%" is a standby: add its primary', server
        USING ERRCODE = '55000',
              DETAIL = 'A standby''s sessions do not show its primary''s open transactions, so a sync there could pass over results that a long transaction on the primary commits later.';
    END IF;
  ELSIF pg_catalog.to_regclass(format('%I.probes', sch)) IS NOT NULL THEN
    -- storlab older than 0.8.0 there: no node; its system identifier and
    -- host name as its newest probe stored them
    EXECUTE format('SELECT NULL::uuid AS node_id, system_identifier, hostname FROM %I.probes ORDER BY id DESC LIMIT 1', sch)
      INTO n;
  ELSE
    SELECT NULL::uuid AS node_id, NULL::bigint AS system_identifier, NULL::text AS hostname INTO n;
  END IF;
  -- Without pg_read_all_stats the horizon would pass over other roles'
  -- open transactions, and their results would never be copied: refused.
  -- (A server older than 0.8.0 has no storlab.node to say so: there it is
  -- refused when another session's transaction start is hidden.)
  IF unseen THEN
    RAISE EXCEPTION 'the role fleet server "%" is read as cannot see every session there: it needs pg_read_all_stats', server
      USING ERRCODE = '42501',
            DETAIL = 'A sync reads the start of the oldest transaction open in the database, so that the next sync copies what it was writing.',
            HINT = 'On that server: GRANT pg_monitor TO the role of the user mapping (it includes pg_read_all_stats and SELECT on storlab''s tables).';
  END IF;
  -- A node is one member: the same database under a second name would take
  -- the first one's rows (a member's own node is shown under it), and
  -- fleet_remove(keep_results => false) of either would delete them.
  SELECT m.name INTO other FROM storlab.fleet_members m
   WHERE m.node_id = n.node_id AND m.name <> fleet_connect.server;
  IF FOUND THEN
    RAISE EXCEPTION 'fleet server "%" is node %, which fleet server "%" is already', server, n.node_id, other
      USING ERRCODE = '42710',
            HINT = 'A server is read under one name: storlab.fleet_remove() the other first (its results can be kept).';
  END IF;
  EXECUTE format('SELECT setting FROM %I.remote_settings WHERE name = %L', sch, 'server_version') INTO version;
  UPDATE storlab.fleet_members m
     SET storlab_version = theirs, node_id = n.node_id, server_version = version,
         system_identifier = coalesce(n.system_identifier, m.system_identifier),
         hostname = coalesce(n.hostname, m.hostname)
   WHERE m.name = server;
  IF n.node_id IS NOT NULL THEN
    -- its own node is shown under it, whoever delivered that node's rows first
    INSERT INTO storlab.fleet_nodes AS f (node_id, server, own) VALUES (n.node_id, server, true)
      ON CONFLICT (node_id) DO UPDATE SET server = EXCLUDED.server, own = true
       WHERE f.server IS DISTINCT FROM EXCLUDED.server OR NOT f.own;
    IF FOUND THEN
      UPDATE storlab.fleet_probes SET server = fleet_connect.server WHERE node_id = n.node_id AND fleet_probes.server <> fleet_connect.server;
      UPDATE storlab.fleet_baselines SET server = fleet_connect.server WHERE node_id = n.node_id AND fleet_baselines.server <> fleet_connect.server;
      UPDATE storlab.fleet_baseline_probes SET server = fleet_connect.server WHERE node_id = n.node_id AND fleet_baseline_probes.server <> fleet_connect.server;
      UPDATE storlab.fleet_bench_runs SET server = fleet_connect.server WHERE node_id = n.node_id AND fleet_bench_runs.server <> fleet_connect.server;
      UPDATE storlab.fleet_experiments SET server = fleet_connect.server WHERE node_id = n.node_id AND fleet_experiments.server <> fleet_connect.server;
    END IF;
  END IF;
  RETURN horizon;
END $$;
REVOKE ALL ON FUNCTION storlab.fleet_connect(text) FROM PUBLIC;

-- Copies one table of a member (its foreign table in the member's schema)
-- into the collector's copy: rows with an id above the mark, or stamped at
-- or after the last horizon, and for rows that change (runs, experiments)
-- those not finished in the copy. A new row is inserted; a changed one
-- updated, but only by the member it is shown under (a clone holds its
-- origin's rows as they were when it was made: a run unfinished then must
-- not overwrite the origin's finished one); an unchanged one left alone.
-- Returns how many rows were copied,
-- or NULL when the member's storlab has no such table. Only the columns
-- both sides have are read: a member on an older storlab has fewer, and the
-- rest stay NULL. baseline_probes follow their baselines (call it before
-- 'baselines', whose mark it reads).
CREATE FUNCTION storlab.fleet_copy(server text, source text, horizon timestamptz) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  sch name := storlab.fleet_schema(server);
  target name := ('fleet_' OPERATOR(pg_catalog.||) source)::name;
  remote regclass;
  stamps text[] := CASE source WHEN 'probes' THEN '{started_at}'
                               WHEN 'baselines' THEN '{taken_at}'
                               WHEN 'bench_runs' THEN '{started_at,finished_at}'
                               WHEN 'experiments' THEN '{created_at,finished_at}' END;
  changing boolean := source IN ('bench_runs', 'experiments');
  cols text[];
  node_expr text;
  mark record;
  top bigint;
  copied bigint;
  unfinished bigint[];
BEGIN
  remote := pg_catalog.to_regclass(format('%I.%I', sch, source));
  IF remote IS NULL THEN
    RETURN NULL;
  END IF;
  SELECT array_agg(l.attname::text ORDER BY l.attnum) INTO cols
    FROM pg_attribute l
    JOIN pg_attribute r ON r.attrelid = remote AND r.attname = l.attname AND r.attnum > 0 AND NOT r.attisdropped
   WHERE l.attrelid = format('storlab.%I', target)::regclass AND l.attnum > 0 AND NOT l.attisdropped
     AND l.attname NOT IN ('node_id', 'server', 'synced_at');
  node_expr := storlab.fleet_node_expr(remote, storlab.fleet_database(server));

  IF source = 'baseline_probes' THEN
    -- the probes of the baselines copied by this sync (their node is the
    -- baseline's); read with the baselines' mark before it moves on
    node_expr := storlab.fleet_node_expr(pg_catalog.to_regclass(format('%I.baselines', sch)),
                                         storlab.fleet_database(server));
    SELECT m.last_id, m.horizon AS since INTO mark FROM storlab.fleet_marks m
     WHERE m.server = fleet_copy.server AND m.table_name = 'baselines';
    EXECUTE format($q$
      WITH ins AS (
        INSERT INTO storlab.fleet_baseline_probes AS t (baseline_id, probe_id, repetition, node_id, server)
        SELECT bp.baseline_id, bp.probe_id, bp.repetition, r.node_id,
               coalesce((SELECT f.server FROM storlab.fleet_nodes f WHERE f.node_id = r.node_id), $3)
          FROM %1$I.baseline_probes bp
          JOIN (SELECT r.id, %2$s AS node_id FROM %1$I.baselines r WHERE r.id > $1 OR r.taken_at >= $2) r
            ON r.id = bp.baseline_id
        ON CONFLICT DO NOTHING
        RETURNING 1)
      SELECT count(*) FROM ins$q$, sch, node_expr)
      INTO copied USING coalesce(mark.last_id, 0), mark.since, server;
    RETURN copied;
  END IF;

  INSERT INTO storlab.fleet_marks AS m (server, table_name) VALUES (fleet_copy.server, source)
    ON CONFLICT DO NOTHING;
  SELECT m.last_id, m.horizon AS since INTO mark FROM storlab.fleet_marks m
   WHERE m.server = fleet_copy.server AND m.table_name = source FOR UPDATE;
  EXECUTE format('SELECT max(id) FROM %I.%I', sch, source) INTO top;
  IF changing THEN
    EXECUTE format('SELECT array_agg(t.id) FROM storlab.%I t WHERE t.server = $1 AND t.finished_at IS NULL', target)
      INTO unfinished USING server;
  END IF;
  EXECUTE format($q$
    WITH r AS (
      SELECT %9$s, %2$s AS node_id FROM %3$I.%4$I r
       WHERE r.id > $1 %5$s %6$s),
    ins AS (
      INSERT INTO storlab.%7$I AS t (%1$s, node_id, server)
      SELECT %1$s, r.node_id, coalesce((SELECT f.server FROM storlab.fleet_nodes f WHERE f.node_id = r.node_id), $3)
        FROM r
      ON CONFLICT (node_id, id) DO %8$s
      RETURNING t.node_id, t.server),
    nodes AS (
      INSERT INTO storlab.fleet_nodes (node_id, server)
      SELECT DISTINCT ins.node_id, ins.server FROM ins
      ON CONFLICT DO NOTHING)
    SELECT count(*) FROM ins$q$,
    (SELECT string_agg(format('%I', c), ', ') FROM unnest(cols) c),
    node_expr, sch, source,
    (SELECT string_agg(format('OR r.%I >= $2', s), ' ') FROM unnest(stamps) s),
    CASE WHEN changing THEN 'OR r.id = ANY ($4)' ELSE '' END,
    target,
    CASE WHEN changing
         THEN format('UPDATE SET (%s, synced_at) = ROW(%s, pg_catalog.clock_timestamp()) WHERE t.server = $3 AND (%s) IS DISTINCT FROM (%s)',
                     (SELECT string_agg(format('%I', c), ', ') FROM unnest(cols) c),
                     (SELECT string_agg(format('EXCLUDED.%I', c), ', ') FROM unnest(cols) c),
                     (SELECT string_agg(format('t.%I', c), ', ') FROM unnest(cols) c),
                     (SELECT string_agg(format('EXCLUDED.%I', c), ', ') FROM unnest(cols) c))
         ELSE 'NOTHING' END,
    (SELECT string_agg(format('r.%I', c), ', ') FROM unnest(cols) c))
    INTO copied USING coalesce(mark.last_id, 0), mark.since, server, coalesce(unfinished, '{}');
  -- (a NULL horizon: a prepared transaction is open there; the last one
  -- stays, and without one every row is read again until it is gone)
  UPDATE storlab.fleet_marks m
     SET last_id = greatest(m.last_id, coalesce(top, 0)),
         horizon = coalesce(fleet_copy.horizon, m.horizon, '-infinity')
   WHERE m.server = fleet_copy.server AND m.table_name = source;
  RETURN copied;
END $$;
REVOKE ALL ON FUNCTION storlab.fleet_copy(text, text, timestamptz) FROM PUBLIC;

-- Copies the new and changed results of one member, or of all of them.
-- Each member is copied whole or not at all (a subtransaction): one that is
-- down, refuses the connection or fails half-way gives one row with its
-- error, and the others go on. A cancel or statement_timeout stops the
-- whole call, and nothing of it stays.
CREATE FUNCTION storlab.fleet_sync(name text DEFAULT NULL)
RETURNS TABLE (server text, table_name text, rows_copied bigint, error text)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  member text;
  horizon timestamptz;
  tables text[];
  counts bigint[];
  t text;
  n bigint;
  msg text;
  detail text;
  state text;
BEGIN
  IF fleet_sync.name IS NOT NULL
     AND NOT EXISTS (SELECT FROM storlab.fleet_members f WHERE f.name = fleet_sync.name) THEN
    RAISE EXCEPTION 'fleet server "%" does not exist', fleet_sync.name
      USING ERRCODE = '42704', HINT = 'storlab.fleet_servers lists the fleet; storlab.fleet_add() adds a server.';
  END IF;
  FOR member IN SELECT f.name FROM storlab.fleet_members f
                 WHERE fleet_sync.name IS NULL OR f.name = fleet_sync.name ORDER BY f.name LOOP
    tables := '{}';
    counts := '{}';
    UPDATE storlab.fleet_members f SET last_attempt = pg_catalog.clock_timestamp() WHERE f.name = member;
    BEGIN
      horizon := storlab.fleet_connect(member);
      FOREACH t IN ARRAY ARRAY['probes', 'baseline_probes', 'baselines', 'bench_runs', 'experiments'] LOOP
        n := storlab.fleet_copy(member, t, horizon);
        IF n IS NOT NULL THEN
          tables := tables || t;
          counts := counts || n;
        END IF;
      END LOOP;
      UPDATE storlab.fleet_members f SET last_sync = pg_catalog.clock_timestamp(), last_error = NULL
       WHERE f.name = member;
    EXCEPTION WHEN OTHERS THEN
      -- (a cancel is no OTHERS: it ends the whole call)
      GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL, state = RETURNED_SQLSTATE;
      msg := msg || coalesce(': ' || nullif(detail, ''), '') || ' (SQLSTATE ' || state || ')';
      UPDATE storlab.fleet_members f SET last_error = msg WHERE f.name = member;
      server := member;
      table_name := NULL;
      rows_copied := 0;
      error := msg;
      RETURN NEXT;
      CONTINUE;
    END;
    FOR i IN 1 .. pg_catalog.cardinality(tables) LOOP
      server := member;
      table_name := tables[i];
      rows_copied := counts[i];
      error := NULL;
      RETURN NEXT;
    END LOOP;
  END LOOP;
END $$;
REVOKE ALL ON FUNCTION storlab.fleet_sync(text) FROM PUBLIC;
COMMENT ON FUNCTION storlab.fleet_sync(text) IS 'Copies the new and changed results of one fleet server, or of all: a row per server and table, or one row with the error of a server that could not be read';

-- Superusers only: a fleet server is a foreign server with a user mapping
-- that holds the credentials to reach it.
CREATE FUNCTION storlab.fleet_check_superuser(what text) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF NOT coalesce((SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user), false) THEN
    RAISE EXCEPTION 'only a superuser may % storlab''s fleet', what
      USING ERRCODE = '42501',
            DETAIL = 'A fleet server is a foreign server of postgres_fdw, with a user mapping that holds the credentials to reach it.';
  END IF;
END $$;
-- (anyone may run it: it only says whether the caller may, so that a role
-- granted EXECUTE on fleet_add is told why not)

-- Adds a server to the fleet: a foreign server and a user mapping (for
-- storlab's owner, who syncs), a schema of foreign tables, and a first
-- contact, so that a server that cannot be reached, or has no storlab, or
-- one this collector cannot read, is refused now with nothing left behind.
-- Returns the server's node_id (NULL for storlab older than 0.8.0 there).
CREATE FUNCTION storlab.fleet_add(name text, conninfo text) RETURNS uuid
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  sch name;
  owner name := (SELECT r.rolname FROM pg_extension e JOIN pg_roles r ON r.oid = e.extowner WHERE e.extname = 'storlab');
  kept uuid[];
  kept_any boolean;
  node uuid;
  server_options text;
  mapping_options text;
  msg text;
  detail text;
  hint text;
  state text;
BEGIN
  IF fleet_add.name IS NULL OR fleet_add.conninfo IS NULL THEN
    RAISE EXCEPTION 'name and conninfo must not be NULL' USING ERRCODE = '22004';
  END IF;
  PERFORM storlab.fleet_check_superuser('add a server to');
  PERFORM storlab.fleet_check_name(fleet_add.name);
  IF EXISTS (SELECT FROM storlab.fleet_members m WHERE m.name = fleet_add.name) THEN
    RAISE EXCEPTION 'fleet server "%" already exists', fleet_add.name
      USING ERRCODE = '42710', HINT = 'storlab.fleet_remove() removes it; its results can be kept.';
  END IF;
  IF NOT EXISTS (SELECT FROM pg_extension e WHERE e.extname = 'postgres_fdw') THEN
    RAISE EXCEPTION 'storlab''s fleet reads its servers through postgres_fdw, which is not installed in this database'
      USING ERRCODE = '55000', HINT = 'CREATE EXTENSION postgres_fdw;';
  END IF;
  sch := storlab.fleet_schema(fleet_add.name);
  IF EXISTS (SELECT FROM pg_foreign_server s WHERE s.srvname = sch)
     OR EXISTS (SELECT FROM pg_namespace n WHERE n.nspname = sch) THEN
    RAISE EXCEPTION 'a foreign server or schema named % already exists', sch
      USING ERRCODE = '42710', HINT = 'storlab names a fleet server''s foreign server and schema storlab_fleet_<name>: choose another name, or drop them.';
  END IF;
  -- (refused here, in a statement short enough to read in the error's context)
  PERFORM storlab.fleet_conninfo_shown(fleet_add.conninfo);
  SELECT string_agg(format('%I %L', o.keyword, o.value), ', ') FILTER (WHERE o.context = 'server'),
         string_agg(format('%I %L', o.keyword, o.value), ', ') FILTER (WHERE o.context = 'mapping')
    INTO server_options, mapping_options
    FROM storlab.fleet_conninfo_options(fleet_add.conninfo) o;
  -- The statements carry the credentials: an error in them is raised again
  -- without the statement's text, which PL/pgSQL would otherwise show.
  BEGIN
    EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER postgres_fdw OPTIONS (%s)', sch, server_options);
    EXECUTE format('CREATE USER MAPPING FOR %I SERVER %I', owner, sch)
            || coalesce(' OPTIONS (' || mapping_options || ')', '');
  EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT, state = RETURNED_SQLSTATE;
    -- (an empty DETAIL or HINT would print as an empty line)
    IF detail = '' AND hint = '' THEN
      RAISE EXCEPTION USING MESSAGE = msg, ERRCODE = state;
    ELSIF hint = '' THEN
      RAISE EXCEPTION USING MESSAGE = msg, DETAIL = detail, ERRCODE = state;
    ELSIF detail = '' THEN
      RAISE EXCEPTION USING MESSAGE = msg, HINT = hint, ERRCODE = state;
    END IF;
    RAISE EXCEPTION USING MESSAGE = msg, DETAIL = detail, HINT = hint, ERRCODE = state;
  END;
  EXECUTE format('CREATE SCHEMA %I AUTHORIZATION %I', sch, owner);
  -- the nodes of results kept under this name (fleet_remove's default)
  kept := ARRAY(SELECT f.node_id FROM storlab.fleet_nodes f WHERE f.server = fleet_add.name AND f.own);
  kept_any := EXISTS (SELECT FROM storlab.fleet_nodes f WHERE f.server = fleet_add.name);
  INSERT INTO storlab.fleet_members (name, conninfo)
    VALUES (fleet_add.name, storlab.fleet_conninfo_shown(fleet_add.conninfo));
  PERFORM storlab.fleet_connect(fleet_add.name);
  node := (SELECT m.node_id FROM storlab.fleet_members m WHERE m.name = fleet_add.name);
  -- The name's kept results go on under it only for the same server: those
  -- of another one would be mixed with this one's in every comparison.
  IF kept_any AND NOT coalesce(node = ANY (kept), false) THEN
    RAISE EXCEPTION 'the results kept under fleet server name "%" are another server''s', fleet_add.name
      USING ERRCODE = '42710',
            DETAIL = format('This server is node %s; the kept results are of node %s.', coalesce(node::text, 'NULL (storlab older than 0.8.0)'),
                            coalesce(array_to_string(kept, ', '), 'unknown')),
            HINT = format('Choose another name, or delete them first: SELECT storlab.fleet_remove(%L, keep_results => false);', fleet_add.name);
  END IF;
  RETURN node;
END $$;
REVOKE ALL ON FUNCTION storlab.fleet_add(text, text) FROM PUBLIC;
COMMENT ON FUNCTION storlab.fleet_add(text, text) IS 'Adds a server to this collector''s fleet (superusers): a postgres_fdw foreign server, a user mapping and a schema storlab_fleet_<name>; returns the server''s node_id';

-- Removes a server from the fleet: its foreign server, user mapping and
-- schema; its copied results stay (under its name) unless keep_results is
-- false.
CREATE FUNCTION storlab.fleet_remove(name text, keep_results boolean DEFAULT true) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  sch name;
  owner name := (SELECT r.rolname FROM pg_extension e JOIN pg_roles r ON r.oid = e.extowner WHERE e.extname = 'storlab');
  member boolean;
  t name;
  msg text;
  detail text;
BEGIN
  IF fleet_remove.name IS NULL OR keep_results IS NULL THEN
    RAISE EXCEPTION 'name and keep_results must not be NULL' USING ERRCODE = '22004';
  END IF;
  PERFORM storlab.fleet_check_superuser('remove a server from');
  member := EXISTS (SELECT FROM storlab.fleet_members m WHERE m.name = fleet_remove.name);
  -- a server removed before, whose results were kept: keep_results => false
  -- deletes them
  IF NOT member AND (keep_results OR NOT EXISTS (SELECT FROM storlab.fleet_nodes f WHERE f.server = fleet_remove.name)) THEN
    RAISE EXCEPTION 'fleet server "%" does not exist', fleet_remove.name
      USING ERRCODE = '42704', HINT = 'storlab.fleet_servers lists the fleet.';
  END IF;
  sch := storlab.fleet_schema(fleet_remove.name);
  IF member THEN
    -- What fleet_add made, and only that: an object of someone else's that
    -- depends on it (a view on a foreign table, a table put in the schema,
    -- another role's user mapping) stops the removal, named.
    BEGIN
      FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = sch AND c.relkind = 'f' LOOP
        EXECUTE format('DROP FOREIGN TABLE %I.%I', sch, t);
      END LOOP;
      EXECUTE format('DROP SCHEMA IF EXISTS %I', sch);
      EXECUTE format('DROP USER MAPPING IF EXISTS FOR %I SERVER %I', owner, sch);
      EXECUTE format('DROP SERVER IF EXISTS %I', sch);
    EXCEPTION WHEN dependent_objects_still_exist THEN
      GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
      RAISE EXCEPTION 'fleet server "%" is not removed: %', fleet_remove.name, msg
        USING ERRCODE = '2BP01', DETAIL = coalesce(nullif(detail, ''), 'Something of someone else''s depends on it.'),
              HINT = format('storlab drops only what fleet_add made (foreign server, user mapping and schema %s): drop or move those objects first.', sch);
    END;
  END IF;
  IF NOT keep_results THEN
    DELETE FROM storlab.fleet_baseline_probes t WHERE t.server = fleet_remove.name;
    DELETE FROM storlab.fleet_baselines t WHERE t.server = fleet_remove.name;
    DELETE FROM storlab.fleet_probes t WHERE t.server = fleet_remove.name;
    DELETE FROM storlab.fleet_bench_runs t WHERE t.server = fleet_remove.name;
    DELETE FROM storlab.fleet_experiments t WHERE t.server = fleet_remove.name;
    DELETE FROM storlab.fleet_nodes t WHERE t.server = fleet_remove.name;
  END IF;
  DELETE FROM storlab.fleet_members m WHERE m.name = fleet_remove.name;
END $$;
REVOKE ALL ON FUNCTION storlab.fleet_remove(text, boolean) FROM PUBLIC;
COMMENT ON FUNCTION storlab.fleet_remove(text, boolean) IS 'Removes a server from the fleet (superusers): its foreign server, mapping and schema; its copied results stay unless keep_results is false';

-- This database's node, minted now (CREATE EXTENSION, or the update that
-- brings nodes), so that the rows it writes next name it at once.
SELECT storlab.node_id() IS NOT NULL AS minted;

-- Reading: the fleet's results for pg_monitor, as storlab's own are.
GRANT SELECT ON storlab.node, storlab.nodes, storlab.fleet_servers, storlab.fleet_members, storlab.fleet_nodes,
                storlab.fleet_probes, storlab.fleet_baselines, storlab.fleet_baseline_probes,
                storlab.fleet_bench_runs, storlab.fleet_experiments TO pg_monitor;

-- ===== sequential experiments: stop when every comparison is answered =====
-- experiment_start(..., options => '{"stop": "sequential", ...}') looks
-- after each repetition (storlab_core::sequential); experiment_report()
-- says where each layout's comparison stands: decision, decided_after and
-- the repeated confidence interval seq_ci_low_pct .. seq_ci_high_pct, as
-- four new columns at the end. No table changes: the design is stored in
-- the job's args, as the rest of the experiment is.
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
	"bar" TEXT,  /* String */
	"decision" TEXT,  /* Option < &str > */
	"decided_after" INT,  /* Option < i32 > */
	"seq_ci_low_pct" double precision,  /* Option < f64 > */
	"seq_ci_high_pct" double precision  /* Option < f64 > */
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'experiment_report_wrapper';
REVOKE ALL ON FUNCTION storlab.experiment_report(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.experiment_report(bigint) TO pg_monitor;
