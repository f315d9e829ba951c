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
