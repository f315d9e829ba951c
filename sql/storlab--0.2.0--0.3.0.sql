-- storlab 0.2.0 -> 0.3.0: experiments. Stored rows are kept as they are;
-- this script only changes the extension's objects, so that an updated
-- server ends with the same objects as a fresh 0.3.0 install (the upgrade
-- test compares them).
\echo Use "ALTER EXTENSION storlab UPDATE TO '0.3.0'" to load this file. \quit

-- A job may be an experiment.
ALTER TABLE storlab.job_records DROP CONSTRAINT job_records_kind_check;
ALTER TABLE storlab.job_records ADD CONSTRAINT job_records_kind_check
  CHECK (kind IN ('bench_init', 'bench', 'move_indexes', 'experiment'));

-- An experiment's runs have ids of their own and job_id the experiment's:
-- the run's id no longer names a job, its job_id does.
ALTER TABLE storlab.bench_runs DROP CONSTRAINT bench_runs_id_fkey;
ALTER TABLE storlab.bench_runs ADD CONSTRAINT bench_runs_job_id_fkey
  FOREIGN KEY (job_id) REFERENCES storlab.job_records (id) ON DELETE CASCADE;
ALTER TABLE storlab.bench_runs
  ADD COLUMN experiment_id bigint,
  ADD COLUMN experiment_layout text,
  ADD COLUMN repetition integer,
  ADD COLUMN warmup boolean NOT NULL DEFAULT false;

-- Experiments: a layout x fillfactor x clients matrix of pgbench runs done by
-- one job (kind 'experiment'). The experiment's id is its job's id: cancel(),
-- wait() and storlab.jobs work on it as on any job, and experiment_resume()
-- starts the same job again. Its runs are storlab.bench_runs rows with
-- experiment_id set.
CREATE TABLE storlab.experiment_records (
    id                bigint PRIMARY KEY REFERENCES storlab.job_records (id) ON DELETE CASCADE,
    name              text    NOT NULL,
    steps_total       integer NOT NULL,
    current_step      integer NOT NULL DEFAULT 0,   -- steps done or skipped so far
    current_action    text,                         -- what the job does now, for a person to read
    layout_applied    text,                         -- the layout the relations were last placed in, completely
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    system_identifier bigint  NOT NULL,
    hostname          text    NOT NULL
);

-- The size of each of pgbench's relations under each layout, right after
-- pgbench -i at each fillfactor: logical (what PostgreSQL wrote), allocated
-- (what the filesystem allocated) and stored (what the storage really holds,
-- where the kernel can tell: btrfs compression, a zram device; else NULL).
CREATE TABLE storlab.experiment_sizes (
    experiment_id   bigint  NOT NULL REFERENCES storlab.experiment_records (id) ON DELETE CASCADE,
    fillfactor      integer NOT NULL,
    layout          text    NOT NULL,
    relation_name   text    NOT NULL,
    kind            text    NOT NULL,
    tablespace      name    NOT NULL,
    logical_bytes   bigint  NOT NULL,
    allocated_bytes bigint  NOT NULL,
    stored_bytes    bigint,
    measured_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (experiment_id, fillfactor, layout, relation_name)
);

ALTER TABLE storlab.bench_runs
  ADD CONSTRAINT bench_runs_experiment_id_fkey FOREIGN KEY (experiment_id)
      REFERENCES storlab.experiment_records (id) ON DELETE CASCADE;
CREATE INDEX bench_runs_experiment_id_idx ON storlab.bench_runs (experiment_id) WHERE experiment_id IS NOT NULL;

SELECT pg_catalog.pg_extension_config_dump('storlab.experiment_records', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.experiment_sizes', '');

-- Experiments as a person follows them: the job's status (a dead worker
-- shows as failed at once, as in storlab.jobs) and where the work stands.
CREATE VIEW storlab.experiments AS
SELECT e.id, e.name, j.status, j.args, e.current_step, e.steps_total, e.current_action,
       j.started_at, j.finished_at, j.error, e.system_identifier, e.hostname,
       e.layout_applied, j.role, e.created_at
  FROM storlab.experiment_records e
  JOIN storlab.jobs j ON j.id = e.id;
COMMENT ON VIEW storlab.experiments IS 'Every storlab experiment: its status, progress and where its relations were left';

CREATE FUNCTION storlab."experiment_start"(
	"name" TEXT, /* Option < String > */
	"layouts" jsonb, /* Option < JsonB > */
	"script" TEXT DEFAULT 'tpcb-like', /* Option < String > */
	"clients" INT[] DEFAULT '{8}', /* :: std :: option :: Option < Vec < Option < i32 > > > */
	"jobs" INT DEFAULT 2, /* Option < i32 > */
	"duration" interval DEFAULT '60 seconds', /* Option < Interval > */
	"repetitions" INT DEFAULT 3, /* Option < i32 > */
	"warmup" interval DEFAULT '10 seconds', /* Option < Interval > */
	"scale" INT DEFAULT 10, /* Option < i32 > */
	"fillfactors" INT[] DEFAULT '{100}', /* :: std :: option :: Option < Vec < Option < i32 > > > */
	"options" jsonb DEFAULT '{}' /* Option < JsonB > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'experiment_start_wrapper';

CREATE FUNCTION storlab."experiment_resume"(
	"experiment_id" bigint /* Option < i64 > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'experiment_resume_wrapper';

CREATE FUNCTION storlab."experiment_report"(
	"experiment_id" bigint /* Option < i64 > */
) RETURNS TABLE (
	"layout" TEXT,  /* String */
	"fillfactor" INT,  /* i32 */
	"clients" INT,  /* i32 */
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

-- storlab.experiment_start() and wait: a whole experiment from a CALL,
-- returning its id (its report: storlab.experiment_report(id)).
CREATE PROCEDURE storlab.experiment(name text, layouts jsonb, script text DEFAULT 'tpcb-like',
                                    clients integer[] DEFAULT '{8}', jobs integer DEFAULT 2,
                                    duration interval DEFAULT '60 seconds', repetitions integer DEFAULT 3,
                                    warmup interval DEFAULT '10 seconds', scale integer DEFAULT 10,
                                    fillfactors integer[] DEFAULT '{100}', options jsonb DEFAULT '{}',
                                    INOUT experiment_id bigint DEFAULT NULL)
LANGUAGE plpgsql AS $$
BEGIN
  experiment_id := storlab.experiment_start(name, layouts, script, clients, jobs, duration, repetitions,
                                            warmup, scale, fillfactors, options);
  COMMIT;  -- the worker can see the job only once it is committed
  CALL storlab.wait(experiment_id);
END $$;

-- Experiments run benchmarks and move relations: not for PUBLIC; their
-- report reads stored runs, as the caller.
REVOKE ALL ON FUNCTION storlab.experiment_start(text, jsonb, text, integer[], integer, interval, integer, interval,
                                                integer, integer[], jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.experiment_resume(bigint) FROM PUBLIC;
REVOKE ALL ON PROCEDURE storlab.experiment(text, jsonb, text, integer[], integer, interval, integer, interval,
                                           integer, integer[], jsonb, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.experiment_report(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.experiment_report(bigint) TO pg_monitor;
GRANT SELECT ON storlab.experiments, storlab.experiment_records, storlab.experiment_sizes TO pg_monitor;

-- tablespaces() tells what stands behind each device: backing,
-- raid_profile and compression (new last columns: a new return type).
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
	"compression" TEXT  /* Option < String > */
)
STRICT VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'tablespaces_wrapper';
REVOKE ALL ON FUNCTION storlab.tablespaces() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.tablespaces() TO pg_monitor;

-- A failed job keeps its error's SQLSTATE: job_status() gains a column
-- (a new return type), and CALL storlab.wait raises the error with it.
DROP FUNCTION storlab.job_status(bigint);
CREATE FUNCTION storlab."job_status"(
	"job_id" bigint /* i64 */
) RETURNS TABLE (
	"status" TEXT,  /* String */
	"error" TEXT,  /* Option < String > */
	"sqlstate" TEXT  /* Option < String > */
)
STRICT VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'job_status_wrapper';
REVOKE ALL ON FUNCTION storlab.job_status(bigint) FROM PUBLIC;
CREATE OR REPLACE PROCEDURE storlab.wait(job_id bigint, timeout interval DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  s pg_catalog.text;
  e pg_catalog.text;
  c pg_catalog.text;
  deadline pg_catalog.timestamptz := pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) timeout;
BEGIN
  LOOP
    BEGIN
      SELECT j.status, j.error, j.sqlstate INTO s, e, c FROM storlab.job_status(job_id) j;
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
    -- with the job's own SQLSTATE (a lock timeout is 55P03 here too);
    -- a failure outside PostgreSQL (pgbench's exit) is 38000
    RAISE EXCEPTION USING MESSAGE = pg_catalog.format('storlab job %s failed: %s', job_id, e),
                          ERRCODE = CASE WHEN c IS NULL THEN '38000' ELSE c END;
  ELSIF s OPERATOR(pg_catalog.=) 'cancelled' THEN
    RAISE EXCEPTION 'storlab job % was cancelled', job_id USING ERRCODE = '57014';
  END IF;
END $$;
