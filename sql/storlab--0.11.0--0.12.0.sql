-- storlab 0.11.0 -> 0.12.0
\echo Use "ALTER EXTENSION storlab UPDATE TO '0.12.0'" to load this file. \quit

------------------------------------------------------------------------
-- probe() takes sync_every: random or sequential writes synced every N
-- writes of each worker and after its last, or (0) once after its last,
-- as iozone -e measures buffered writes with the flush inside the time.
-- Such a probe is another measurement than one whose every write is a
-- commit, so its rows carry sync_every (and the time spent syncing,
-- sync_s) at the end of storlab.probes, of the fleet's copies (a collector
-- must tell them apart too) and of own_probes, as a fresh install has them
-- (sql/catalog/sync_every.sql); the suites never set it, which the
-- constraint keeps true for every reader of their probes.
ALTER TABLE storlab.probes
  ADD COLUMN sync_every integer CHECK (sync_every >= 0),  -- NULL: every write a commit as sync_method says (and before 0.12.0)
  ADD COLUMN sync_s     float8  CHECK (sync_s >= 0),      -- with sync_every: seconds in those syncs, summed over the workers
  ADD CONSTRAINT probes_sync_every_probe_only CHECK (sync_every IS NULL OR suite IS NULL);
COMMENT ON COLUMN storlab.probes.sync_every IS 'probe()''s sync_every: each op is one write, and each worker calls sync_method (fsync or fdatasync) after every sync_every-th write and after its last write (0: only after its last, as iozone -e); ops, iops and mib_s count the writes over a time that holds the syncs, the histogram holds the writes. NULL: each op is a commit as sync_method says (every probe before 0.12.0)';
COMMENT ON COLUMN storlab.probes.sync_s IS 'With sync_every: the seconds the workers spent in those syncs, summed over the workers (with one worker, the part of duration_s spent syncing). NULL without sync_every, whose syncs are inside each op''s latency';
ALTER TABLE storlab.fleet_probes
  ADD COLUMN sync_every integer,
  ADD COLUMN sync_s     float8;

CREATE OR REPLACE VIEW storlab.own_probes WITH (security_barrier) AS
SELECT p.id, p.tablespace, p.location, p.workload, p.block_size, p.workers, p.direct, p.sync_method,
       p.writes_per_sync, p.file_size, p.duration_s, p.ops, p.bytes, p.iops, p.mib_s, p.lat_mean_us,
       p.lat_p50_us, p.lat_p90_us, p.lat_p99_us, p.lat_p999_us, p.lat_max_us, p.histogram, p.label,
       p.system_identifier, p.hostname, p.started_at, p.suite, p.iodepth, p.engine, p.precision_pct,
       p.iops_ci95_pct, p.io_method, p.effective_io_concurrency, p.node_id, p.measured_by, p.suite_call,
       p.sync_every, p.sync_s
  FROM storlab.probes p
 WHERE p.measured_by OPERATOR(pg_catalog.=) ANY (ARRAY(
         SELECT r.rolname FROM pg_catalog.pg_roles r WHERE pg_catalog.pg_has_role(r.oid, 'USAGE')));

-- probe() with sync_every as its last argument: made anew (a C symbol of
-- its own, probe_sync_every_wrapper; 0.11.0's probe_wrapper stays in the
-- library for an install not updated yet), and whatever EXECUTE a DBA
-- granted on the old one is granted on the new one.
ALTER FUNCTION storlab.probe(name, text, integer, interval, integer, bigint, boolean, text, text, integer, text, real) RENAME TO probe_0_11;
CREATE FUNCTION storlab."probe"(
	"tablespace" name, /* Option < Name > */
	"workload" TEXT DEFAULT 'randread', /* Option < String > */
	"block_size" INT DEFAULT 8192, /* Option < i32 > */
	"duration" interval DEFAULT '5 seconds', /* Option < Interval > */
	"workers" INT DEFAULT 1, /* Option < i32 > */
	"file_size" bigint DEFAULT 268435456, /* Option < i64 > */
	"direct" bool DEFAULT true, /* Option < bool > */
	"sync_method" TEXT DEFAULT NULL, /* Option < String > */
	"label" TEXT DEFAULT NULL, /* Option < String > */
	"iodepth" INT DEFAULT 1, /* Option < i32 > */
	"engine" TEXT DEFAULT NULL, /* Option < String > */
	"precision_pct" real DEFAULT NULL, /* Option < f32 > */
	"sync_every" INT DEFAULT NULL /* Option < i32 > */
) RETURNS storlab.probes /* :: pgrx :: heap_tuple :: PgHeapTuple < '_, :: pgrx :: pgbox :: AllocatedByRust
> */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'probe_sync_every_wrapper';
REVOKE ALL ON FUNCTION storlab.probe(name, text, integer, interval, integer, bigint, boolean, text, text, integer, text, real, integer) FROM PUBLIC;

DO $$
DECLARE
    g record;
BEGIN
    FOR g IN
        SELECT a.grantee, a.is_grantable
          FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
         WHERE p.oid = 'storlab.probe_0_11(name, text, integer, interval, integer, bigint, boolean, text, text, integer, text, real)'::pg_catalog.regprocedure
           AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION storlab.probe(name, text, integer, interval, integer, bigint, boolean, text, text, integer, text, real, integer) TO %s%s',
            CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(g.grantee::regrole::text) END,
            CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END
$$;
DROP FUNCTION storlab.probe_0_11(name, text, integer, interval, integer, bigint, boolean, text, text, integer, text, real);


------------------------------------------------------------------------
-- Experiments that know what they measured. PostgreSQL counts a page-cache
-- hit as a read, so a run's own figures cannot tell the storage from the
-- cache; the block devices' counters can. Each run now stores, beside its
-- figures, the devices beneath the tablespaces it used and what their
-- counters moved by (device_io), the memory the server could cache
-- pgbench's data in (memory_bytes, memory_source), and the rows pgbench's
-- tables updated and HOT updated (run_n_tup_upd, run_n_tup_hot_upd): the
-- same columns, in the same order, as a fresh install's
-- (sql/catalog/run_io.sql). The fleet's copies do not carry them.
ALTER TABLE storlab.bench_runs
  ADD COLUMN device_io jsonb,
  ADD COLUMN memory_bytes bigint,
  ADD COLUMN memory_source text,
  ADD COLUMN run_n_tup_upd bigint,
  ADD COLUMN run_n_tup_hot_upd bigint;
COMMENT ON COLUMN storlab.bench_runs.device_io IS 'The block devices beneath the tablespaces the run used, each once with the tablespaces on it, and what their counters (/sys/block/<dev>/stat) moved by over the run; tablespaces on no block device (tmpfs) under no_device. NULL: stored before 0.12.0';
COMMENT ON COLUMN storlab.bench_runs.memory_bytes IS 'The most memory the server could cache pgbench''s data in at the run''s start: its memory group''s limit, else MemTotal (memory_source says which)';

-- experiment_report() appends the HOT ratio, checkpoints per run, the
-- devices' reads per transaction and its caveats (a writing workload whose
-- runs contained no checkpoint; pgbench's data small enough for the
-- server's memory) to its columns, whose positions stay: a new result
-- type, so the function is made anew, under a C symbol of its own (the
-- old one, which this release's library still answers, says that the
-- update is needed: 55000). EXECUTE a DBA granted on the old one is
-- granted on the new one.
ALTER FUNCTION storlab.experiment_report(bigint) RENAME TO experiment_report_0_11;
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
	"decision" TEXT,  /* Option < & '_ str > */
	"decided_after" INT,  /* Option < i32 > */
	"seq_ci_low_pct" double precision,  /* Option < f64 > */
	"seq_ci_high_pct" double precision,  /* Option < f64 > */
	"hot_ratio" double precision,  /* Option < f64 > */
	"checkpoints_per_run" double precision,  /* Option < f64 > */
	"device_reads_per_tx" double precision,  /* Option < f64 > */
	"caveats" TEXT[]  /* Vec < String > */
)
STABLE PARALLEL SAFE 
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'experiment_cells_wrapper';
REVOKE ALL ON FUNCTION storlab.experiment_report(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.experiment_report(bigint) TO pg_monitor;
DO $$
DECLARE
    g record;
BEGIN
    FOR g IN
        SELECT a.grantee, a.is_grantable
          FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
         WHERE p.oid = 'storlab.experiment_report_0_11(bigint)'::pg_catalog.regprocedure
           AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner
           AND a.grantee <> 'pg_monitor'::pg_catalog.regrole
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION storlab.experiment_report(bigint) TO %s%s',
            CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(g.grantee::regrole::text) END,
            CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END
$$;
DROP FUNCTION storlab.experiment_report_0_11(bigint);

-- experiment_devices(): per cell, the block devices beneath its runs, each
-- once with the tablespaces on it: reads and writes per run and per
-- transaction, bytes, flushes, busy and queue time. A report of its own
-- rather than more columns of experiment_io(), whose rows are pg_stat_io's
-- (backend type, object, context) and which has none on 15.
CREATE FUNCTION storlab."experiment_devices"(
	"experiment_id" bigint /* Option < i64 > */
) RETURNS TABLE (
	"layout" TEXT,  /* String */
	"fillfactor" INT,  /* i32 */
	"clients" INT,  /* i32 */
	"device" TEXT,  /* Option < String > */
	"tablespaces" TEXT[],  /* Vec < String > */
	"runs" INT,  /* i32 */
	"reads" double precision,  /* Option < f64 > */
	"writes" double precision,  /* Option < f64 > */
	"reads_per_tx" double precision,  /* Option < f64 > */
	"writes_per_tx" double precision,  /* Option < f64 > */
	"read_bytes" double precision,  /* Option < f64 > */
	"write_bytes" double precision,  /* Option < f64 > */
	"flushes" double precision,  /* Option < f64 > */
	"busy_ms" double precision,  /* Option < f64 > */
	"queue_ms" double precision,  /* Option < f64 > */
	"busy_pct" double precision  /* Option < f64 > */
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'experiment_devices_wrapper';
REVOKE ALL ON FUNCTION storlab.experiment_devices(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.experiment_devices(bigint) TO pg_monitor;

-- CALL storlab.experiment() says an experiment's caveats when it finishes
-- (NOTICEs, from its job's detail).
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
  caveat pg_catalog.text;
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
  ELSE
    FOR caveat IN SELECT c.value FROM storlab.jobs j
                   CROSS JOIN LATERAL pg_catalog.jsonb_array_elements_text(j.detail OPERATOR(pg_catalog.->) 'caveats') c
                  WHERE j.id OPERATOR(pg_catalog.=) experiment_id
    LOOP
      RAISE NOTICE 'storlab: experiment %: %', experiment_id, caveat;
    END LOOP;
  END IF;
END $$;


------------------------------------------------------------------------
-- compare_samples() gives the interval of the change: Welch's 95 %
-- interval of mean_b - mean_a (Welch-Satterthwaite degrees of freedom), in
-- percent of mean_a so that it brackets change_pct, as two columns at the
-- end of its row (change_ci95_low_pct, change_ci95_high_pct); the columns
-- before them keep their places. Made anew (a C symbol of its own,
-- compare_samples_change_ci_wrapper; 0.11.0's compare_samples_wrapper
-- stays in the library for an install not updated yet), with the ACL the
-- old one had: the default (EXECUTE for PUBLIC), as a fresh install has
-- it, or whatever a DBA made of it.
ALTER FUNCTION storlab.compare_samples(double precision[], double precision[]) RENAME TO compare_samples_0_11;
CREATE FUNCTION storlab."compare_samples"(
	"a" double precision[], /* :: std :: option :: Option < Vec < Option < f64 > > > */
	"b" double precision[] /* :: std :: option :: Option < Vec < Option < f64 > > > */
) RETURNS TABLE (
	"n_a" INT,  /* i32 */
	"mean_a" double precision,  /* f64 */
	"ci95_low_a" double precision,  /* Option < f64 > */
	"ci95_high_a" double precision,  /* Option < f64 > */
	"n_b" INT,  /* i32 */
	"mean_b" double precision,  /* f64 */
	"ci95_low_b" double precision,  /* Option < f64 > */
	"ci95_high_b" double precision,  /* Option < f64 > */
	"change_pct" double precision,  /* Option < f64 > */
	"p_value" double precision,  /* Option < f64 > */
	"significant" bool,  /* Option < bool > */
	"change_ci95_low_pct" double precision,  /* Option < f64 > */
	"change_ci95_high_pct" double precision  /* Option < f64 > */
)
IMMUTABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'compare_samples_change_ci_wrapper';

DO $$
DECLARE
    g record;
BEGIN
    -- NULL: the default, EXECUTE for PUBLIC, which the new one has too
    IF (SELECT p.proacl IS NOT NULL
          FROM pg_catalog.pg_proc p
         WHERE p.oid = 'storlab.compare_samples_0_11(double precision[], double precision[])'::pg_catalog.regprocedure) THEN
        REVOKE ALL ON FUNCTION storlab.compare_samples(double precision[], double precision[]) FROM PUBLIC;
        FOR g IN
            SELECT a.grantee, a.is_grantable
              FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
             WHERE p.oid = 'storlab.compare_samples_0_11(double precision[], double precision[])'::pg_catalog.regprocedure
               AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner
        LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION storlab.compare_samples(double precision[], double precision[]) TO %s%s',
                CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(g.grantee::regrole::text) END,
                CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
    END IF;
END
$$;
DROP FUNCTION storlab.compare_samples_0_11(double precision[], double precision[]);
