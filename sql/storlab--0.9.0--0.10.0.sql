-- storlab 0.9.0 -> 0.10.0: answers that carry their evidence.
-- One section per capability; each says what changed and why.

------------------------------------------------------------------------
-- compare_tablespaces(): one volume, one answer; figures with their
-- intervals; a role only for a significant winner; figures from one call.
--
-- Every probe of a compare_tablespaces() or profile() call carries the
-- call's uuid, so that a volume's figures are one call's repetitions and
-- never a mix of the newest probe of each item (sql/catalog/suite_calls.sql).
-- The fleet's copies (LIKE the tables in 0.8.0) do not get the column.
ALTER TABLE storlab.probes ADD COLUMN suite_call uuid;  -- the suite call that measured it; NULL: a probe(), a check(), or before 0.10.0
COMMENT ON COLUMN storlab.probes.suite_call IS 'The call of compare_tablespaces() or profile() that measured it: the probes of one call share it (compare_tablespaces() ranks one call''s repetitions). NULL: a probe() or check(), or measured before 0.10.0';
-- a volume's newest call (one descent per tablespace), then that call's rows
CREATE INDEX probes_suite_call ON storlab.probes (tablespace, started_at DESC)
  WHERE suite = 'standard' AND ops > 0 AND suite_call IS NOT NULL;
CREATE INDEX probes_call_rows ON storlab.probes (suite_call, started_at)
  WHERE suite_call IS NOT NULL;
-- each tablespace's newest profile() sweep (the profile and depths charts):
-- more than one worker count, or a depth besides the suite's own 1 and 32
CREATE INDEX probes_sweeps ON storlab.probes (tablespace, started_at DESC)
  WHERE suite = 'standard' AND ops > 0 AND suite_call IS NOT NULL AND label = 'profile'
    AND ((workers > 1 AND iodepth = 1) OR (workers = 1 AND iodepth > 1 AND iodepth <> 32));

CREATE OR REPLACE VIEW storlab.own_probes WITH (security_barrier) AS
SELECT p.id, p.tablespace, p.location, p.workload, p.block_size, p.workers, p.direct, p.sync_method,
       p.writes_per_sync, p.file_size, p.duration_s, p.ops, p.bytes, p.iops, p.mib_s, p.lat_mean_us,
       p.lat_p50_us, p.lat_p90_us, p.lat_p99_us, p.lat_p999_us, p.lat_max_us, p.histogram, p.label,
       p.system_identifier, p.hostname, p.started_at, p.suite, p.iodepth, p.engine, p.precision_pct,
       p.iops_ci95_pct, p.io_method, p.effective_io_concurrency, p.node_id, p.measured_by, p.suite_call
  FROM storlab.probes p
 WHERE p.measured_by OPERATOR(pg_catalog.=) ANY (ARRAY(
         SELECT r.rolname FROM pg_catalog.pg_roles r WHERE pg_catalog.pg_has_role(r.oid, 'USAGE')));

-- compare_tablespaces() takes min_repetitions, max_repetitions and measure,
-- and adds same_volume_as, repetitions, four intervals, tied_for, caveats
-- and suite_call at the end. pg_monitor may call it: measuring still takes
-- EXECUTE on storlab.profile(), and measure => false ranks stored figures.
ALTER FUNCTION storlab.compare_tablespaces(interval, interval, real) RENAME TO compare_tablespaces_0_9;
CREATE FUNCTION storlab."compare_tablespaces"(
	"max_age" interval DEFAULT '1 day', /* Option < Interval > */
	"duration" interval DEFAULT '2 seconds', /* Option < Interval > */
	"precision_pct" real DEFAULT 5, /* Option < f32 > */
	"min_repetitions" INT DEFAULT 2, /* Option < i32 > */
	"max_repetitions" INT DEFAULT 4, /* Option < i32 > */
	"measure" bool DEFAULT true /* Option < bool > */
) RETURNS TABLE (
	"tablespace" name,  /* Name */
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
	"probed_at" timestamp with time zone,  /* Option < TimestampWithTimeZone > */
	"same_volume_as" name,  /* Option < Name > */
	"repetitions" INT,  /* i32 */
	"randread_p99_ci95_pct" double precision,  /* Option < f64 > */
	"wal_commit_p99_ci95_pct" double precision,  /* Option < f64 > */
	"seqwrite_ci95_pct" double precision,  /* Option < f64 > */
	"seqread_ci95_pct" double precision,  /* Option < f64 > */
	"tied_for" TEXT[],  /* Vec < String > */
	"caveats" TEXT[],  /* Vec < String > */
	"suite_call" uuid  /* Option < pgrx :: datum :: Uuid > */
)
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'compare_volumes_wrapper';
REVOKE ALL ON FUNCTION storlab.compare_tablespaces(interval, interval, real, integer, integer, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.compare_tablespaces(interval, interval, real, integer, integer, boolean) TO pg_monitor;

-- compare_fleet(): the same figures, intervals, ties and caveats, a
-- server's tablespaces on one device as one volume.
ALTER FUNCTION storlab.compare_fleet(text[], interval) RENAME TO compare_fleet_0_9;
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
	"probed_at" timestamp with time zone,  /* Option < pgrx :: datum :: TimestampWithTimeZone > */
	"same_volume_as" TEXT,  /* Option < String > */
	"repetitions" INT,  /* i32 */
	"randread_p99_ci95_pct" double precision,  /* Option < f64 > */
	"wal_commit_p99_ci95_pct" double precision,  /* Option < f64 > */
	"seqwrite_ci95_pct" double precision,  /* Option < f64 > */
	"seqread_ci95_pct" double precision,  /* Option < f64 > */
	"tied_for" TEXT[],  /* Vec < String > */
	"caveats" TEXT[]  /* Vec < String > */
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'compare_fleet_wrapper';
REVOKE ALL ON FUNCTION storlab.compare_fleet(text[], interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.compare_fleet(text[], interval) TO pg_monitor;

-- Every EXECUTE a DBA granted on an old function, granted on its successor.
DO $$
DECLARE
    pair record;
    g record;
BEGIN
    FOR pair IN
        SELECT * FROM (VALUES
            ('storlab.compare_tablespaces_0_9(interval, interval, real)',
             'storlab.compare_tablespaces(interval, interval, real, integer, integer, boolean)'),
            ('storlab.compare_fleet_0_9(text[], interval)',
             'storlab.compare_fleet(text[], interval)')) AS p(old, new)
    LOOP
        FOR g IN
            SELECT a.grantee, a.is_grantable
              FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
             WHERE p.oid = pair.old::pg_catalog.regprocedure
               AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner
        LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', pair.new,
                CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(g.grantee::regrole::text) END,
                CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
    END LOOP;
END
$$;
DROP FUNCTION storlab.compare_tablespaces_0_9(interval, interval, real);
DROP FUNCTION storlab.compare_fleet_0_9(text[], interval);

-- measure_tablespaces(): compare_tablespaces()'s measuring, committed
-- volume by volume, so that a cancel keeps what it finished.
CREATE FUNCTION storlab."measure_volume"(
	"tablespace" name, /* Option < Name > */
	"suite_call" uuid, /* Option < pgrx :: datum :: Uuid > */
	"max_age" interval, /* Option < Interval > */
	"duration" interval, /* Option < Interval > */
	"precision_pct" real, /* Option < f32 > */
	"min_repetitions" INT, /* Option < i32 > */
	"max_repetitions" INT /* Option < i32 > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'measure_volume_wrapper';
-- compare_tablespaces()'s measuring as a procedure that keeps what it
-- measured: each volume without a complete suite call younger than max_age
-- is measured in a transaction of its own and committed, so a cancel
-- (statement_timeout, pg_cancel_backend) keeps every volume it finished;
-- compare_tablespaces() then ranks them. The volumes go one after another
-- (not round after round across them, as one compare_tablespaces() call
-- does). Returns the suite call's uuid (storlab.probes.suite_call).
CREATE PROCEDURE storlab.measure_tablespaces(max_age interval DEFAULT '1 day', duration interval DEFAULT '2 seconds',
                                             precision_pct real DEFAULT 5, min_repetitions integer DEFAULT 2,
                                             max_repetitions integer DEFAULT 4, INOUT suite_call uuid DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  v pg_catalog.name;
  n pg_catalog.int8;
  done pg_catalog.int4 := 0;
BEGIN
  IF suite_call IS NULL THEN
    suite_call := pg_catalog.gen_random_uuid();
  END IF;
  FOR v IN SELECT c.tablespace
             FROM storlab.compare_tablespaces(max_age, duration, precision_pct, min_repetitions, max_repetitions, false) c
            WHERE c.same_volume_as IS NULL AND c.repetitions OPERATOR(pg_catalog.=) 0
  LOOP
    n := storlab.measure_volume(v, suite_call, max_age, duration, precision_pct, min_repetitions, max_repetitions);
    COMMIT;
    IF n OPERATOR(pg_catalog.>) 0 THEN
      done := done OPERATOR(pg_catalog.+) 1;
      RAISE NOTICE 'storlab: the volume of % measured and committed (% probes)', v, n;
    END IF;
  END LOOP;
  RAISE NOTICE 'storlab: % volume(s) measured; storlab.compare_tablespaces() ranks them', done;
END $$;

REVOKE ALL ON FUNCTION storlab.measure_volume(name, uuid, interval, interval, real, integer, integer) FROM PUBLIC;
REVOKE ALL ON PROCEDURE storlab.measure_tablespaces(interval, interval, real, integer, integer, uuid) FROM PUBLIC;
