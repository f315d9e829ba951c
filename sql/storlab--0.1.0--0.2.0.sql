-- storlab 0.1.0 -> 0.2.0. Stored rows are kept as they are; this script only
-- changes the extension's objects, so that an updated server ends with the
-- same objects as a fresh 0.2.0 install (the upgrade test compares them).
\echo Use "ALTER EXTENSION storlab UPDATE TO '0.2.0'" to load this file. \quit

-- Stored results are the user's data: pg_dump keeps these rows and the
-- sequences' positions.
SELECT pg_catalog.pg_extension_config_dump('storlab.probes', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.probes_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.relocations', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.relocations_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.relocation_batches', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.bench_runs', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.bench_progress', '');

-- Jobs: the rows move to storlab.job_records; storlab.jobs becomes a view that
-- shows a job whose worker is gone as failed at once (a fresh install names
-- the sequence, key and checks after the table: so does this).
ALTER TABLE storlab.jobs RENAME TO job_records;
ALTER SEQUENCE storlab.jobs_id_seq RENAME TO job_records_id_seq;
ALTER INDEX storlab.jobs_pkey RENAME TO job_records_pkey;
ALTER TABLE storlab.job_records RENAME CONSTRAINT jobs_kind_check TO job_records_kind_check;
ALTER TABLE storlab.job_records RENAME CONSTRAINT jobs_status_check TO job_records_status_check;
SELECT pg_catalog.pg_extension_config_dump('storlab.job_records', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.job_records_id_seq', '');
CREATE VIEW storlab.jobs AS
SELECT j.id, j.kind,
       CASE WHEN d.dead THEN 'failed' ELSE j.status END AS status,
       j.args, j.database, j.role, j.worker_pid, j.created_at, j.started_at, j.finished_at,
       CASE WHEN d.dead
            THEN 'the job''s worker exited before finishing it (an error in the worker, a crash or a server restart: the server log says which)'
            ELSE j.error END AS error,
       j.detail
  FROM storlab.job_records j
 CROSS JOIN LATERAL (
   SELECT (j.status IN ('running', 'cancelling')
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a
                            WHERE a.pid = j.worker_pid AND a.backend_type = 'storlab job'
                              AND a.backend_start <= j.started_at))
       OR (j.status = 'queued' AND j.created_at < pg_catalog.clock_timestamp() - interval '2 minutes') AS dead) d;
COMMENT ON VIEW storlab.jobs IS 'Every storlab job with its status as of now: a job whose worker is gone is failed';
GRANT SELECT ON storlab.jobs TO pg_monitor;

-- A run's counters named for their scope (server-wide, database-wide), its
-- own reads per tablespace, and progress rows that keep partial seconds.
ALTER TABLE storlab.bench_runs RENAME COLUMN wal_bytes TO server_wal_bytes;
ALTER TABLE storlab.bench_runs RENAME COLUMN wal_fpi TO server_wal_fpi;
ALTER TABLE storlab.bench_runs RENAME COLUMN wal_write TO server_wal_write;
ALTER TABLE storlab.bench_runs RENAME COLUMN wal_sync TO server_wal_sync;
ALTER TABLE storlab.bench_runs RENAME COLUMN wal_sync_time_ms TO server_wal_sync_time_ms;
ALTER TABLE storlab.bench_runs RENAME COLUMN checkpoints TO server_checkpoints;
ALTER TABLE storlab.bench_runs RENAME COLUMN buffers_checkpoint TO server_buffers_checkpoint;
ALTER TABLE storlab.bench_runs RENAME COLUMN buffers_backend TO server_buffers_backend;
ALTER TABLE storlab.bench_runs RENAME COLUMN buffers_backend_fsync TO server_buffers_backend_fsync;
ALTER TABLE storlab.bench_runs RENAME COLUMN blks_read TO db_blks_read;
ALTER TABLE storlab.bench_runs RENAME COLUMN blks_hit TO db_blks_hit;
ALTER TABLE storlab.bench_runs RENAME COLUMN blk_read_time_ms TO db_blk_read_time_ms;
ALTER TABLE storlab.bench_runs RENAME COLUMN blk_write_time_ms TO db_blk_write_time_ms;
ALTER TABLE storlab.bench_runs RENAME COLUMN blks_read_by_tablespace TO db_blks_read_by_tablespace;
ALTER TABLE storlab.bench_runs ADD COLUMN run_blks_read_by_tablespace jsonb;
ALTER TABLE storlab.bench_progress ADD COLUMN partial boolean NOT NULL DEFAULT false;

-- compare_tablespaces says which storage is volatile; roles go to durable storage.
DROP FUNCTION storlab.compare_tablespaces(interval, interval);
CREATE FUNCTION storlab.compare_tablespaces(
	"max_age" interval DEFAULT '1 day',
	"duration" interval DEFAULT '2 seconds'
) RETURNS TABLE (
	"tablespace" name,
	"fs_type" TEXT,
	"device" TEXT,
	"randread_p50_us" double precision,
	"randread_p99_us" double precision,
	"randread_iops" double precision,
	"randwrite_p99_us" double precision,
	"wal_commit_p50_us" double precision,
	"wal_commit_p99_us" double precision,
	"seqwrite_mib_s" double precision,
	"seqread_mib_s" double precision,
	"volatile" bool,
	"randread_vs_best" double precision,
	"wal_commit_vs_best" double precision,
	"best_for" TEXT[],
	"probed_at" timestamp with time zone
)
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'compare_tablespaces_wrapper';
REVOKE ALL ON FUNCTION storlab.compare_tablespaces(interval, interval) FROM PUBLIC;

-- Every function runs behind a fixed search_path: the caller's never
-- decides which function or operator runs.
ALTER FUNCTION storlab.apply_layout(tables_tablespace name, indexes_tablespace name, schema_name name, lock_timeout interval, dry_run boolean) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION storlab.bench_init(scale integer, fillfactor integer, tablespace name, index_tablespace name, partitions integer) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION storlab.bench_start(script text, clients integer, jobs integer, duration interval, label text, options jsonb) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION storlab.cancel(job_id bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION storlab.fsync_cost(tablespace name, duration interval) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION storlab.job_status(job_id bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION storlab.layout(schema_name name) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION storlab.move(relation regclass, tablespace name, with_indexes boolean, lock_timeout interval, dry_run boolean) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION storlab.move_indexes_online(relation regclass, tablespace name) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION storlab.probe(tablespace name, workload text, block_size integer, duration interval, workers integer, file_size bigint, direct boolean, sync_method text, label text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION storlab.profile(tablespace name, duration interval, workers integer[]) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION storlab.scripts() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION storlab.tablespaces() SET search_path = pg_catalog, pg_temp;

-- restore_layout checks that a relation is still the one moved, and takes
-- a lock_timeout like move().
DROP FUNCTION storlab.restore_layout(timestamp with time zone);
CREATE FUNCTION storlab.restore_layout(
	"at" timestamp with time zone,
	"lock_timeout" interval DEFAULT '5 seconds'
) RETURNS SETOF storlab.relocations
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'restore_layout_wrapper';
REVOKE ALL ON FUNCTION storlab.restore_layout(timestamptz, interval) FROM PUBLIC;

-- Merged percentiles of stored histograms.
CREATE FUNCTION storlab.probe_latency(
	"probe_ids" bigint[],
	"percentiles" double precision[] DEFAULT '{50,90,99,99.9}'
) RETURNS TABLE (
	"percentile" double precision,
	"lat_us" double precision,
	"samples" bigint
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'probe_latency_wrapper';
CREATE FUNCTION storlab.run_latency(
	"run_ids" bigint[],
	"percentiles" double precision[] DEFAULT '{50,90,99,99.9}'
) RETURNS TABLE (
	"percentile" double precision,
	"lat_ms" double precision,
	"samples" bigint
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'run_latency_wrapper';
REVOKE ALL ON FUNCTION storlab.probe_latency(bigint[], double precision[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.run_latency(bigint[], double precision[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.probe_latency(bigint[], double precision[]) TO pg_monitor;
GRANT EXECUTE ON FUNCTION storlab.run_latency(bigint[], double precision[]) TO pg_monitor;

-- cancel() takes effect at commit; stop_now() is what CALL storlab.wait uses
-- when its own statement is cancelled.
CREATE FUNCTION storlab.stop_now(
	"job_id" bigint
) RETURNS bool
STRICT VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'stop_now_wrapper';
REVOKE ALL ON FUNCTION storlab.stop_now(bigint) FROM PUBLIC;

-- The waiting procedures cannot carry a SET clause (they COMMIT): every
-- type, function and operator in them is schema-qualified instead.
CREATE OR REPLACE PROCEDURE storlab.wait(job_id bigint, timeout interval DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  s pg_catalog.text;
  e pg_catalog.text;
  deadline pg_catalog.timestamptz := pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) timeout;
BEGIN
  LOOP
    BEGIN
      SELECT j.status, j.error INTO s, e FROM storlab.job_status(job_id) j;
      EXIT WHEN s IS NULL
             OR s OPERATOR(pg_catalog.=) ANY (ARRAY['done', 'failed', 'cancelled']::pg_catalog.text[]);
      PERFORM pg_catalog.pg_sleep(0.25);
    EXCEPTION WHEN query_canceled THEN
      -- this transaction rolls back, and a cancel() with it: stop the job now
      PERFORM storlab.stop_now(job_id);
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
    RAISE EXCEPTION 'storlab job % failed: %', job_id, e USING ERRCODE = '38000';
  ELSIF s OPERATOR(pg_catalog.=) 'cancelled' THEN
    RAISE EXCEPTION 'storlab job % was cancelled', job_id USING ERRCODE = '57014';
  END IF;
END $$;
