-- storlab 0.4.0 -> 0.5.0: queued probes (io_uring at a queue depth) and
-- probes that stop once precise. Stored rows are kept: existing probes get
-- iodepth 1 and engine psync (what they ran with) and no precision figures.
-- probe(), profile() and compare_tablespaces() gain arguments (and
-- compare_tablespaces a column), so they are made anew; whatever EXECUTE a
-- DBA had granted on the old ones is granted on the new ones. An updated
-- server ends with the same objects as a fresh 0.5.0 install (the upgrade
-- test compares them).
\echo Use "ALTER EXTENSION storlab UPDATE TO '0.5.0'" to load this file. \quit

ALTER TABLE storlab.probes
    ADD COLUMN iodepth       integer NOT NULL DEFAULT 1 CHECK (iodepth BETWEEN 1 AND 256),
    ADD COLUMN engine        text    NOT NULL DEFAULT 'psync' CHECK (engine IN ('psync', 'io_uring')),
    ADD COLUMN precision_pct float8,
    ADD COLUMN iops_ci95_pct float8;
COMMENT ON COLUMN storlab.probes.iops_ci95_pct IS 'Precision reached: half-width of the 95 % confidence interval of the mean IOPS over the probe''s 100 ms samples, in percent of the mean (NULL below two samples)';
COMMENT ON COLUMN storlab.probes.precision_pct IS 'The precision the probe was asked for (percent): it stopped once iops_ci95_pct was within it and the p99 had settled, or at its duration; NULL: it ran for its whole duration';

-- The old functions step aside until their grants are copied.
ALTER FUNCTION storlab.probe(name, text, integer, interval, integer, bigint, boolean, text, text) RENAME TO probe_0_4;
ALTER FUNCTION storlab.profile(name, interval, integer[]) RENAME TO profile_0_4;
ALTER FUNCTION storlab.compare_tablespaces(interval, interval) RENAME TO compare_tablespaces_0_4;

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
	"precision_pct" real DEFAULT NULL /* Option < f32 > */
) RETURNS storlab.probes /* :: pgrx :: heap_tuple :: PgHeapTuple < '_, :: pgrx :: pgbox :: AllocatedByRust
> */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'probe_wrapper';

CREATE FUNCTION storlab."profile"(
	"tablespace" name DEFAULT NULL, /* Option < Name > */
	"duration" interval DEFAULT '3 seconds', /* Option < Interval > */
	"workers" INT[] DEFAULT '{1}', /* :: std :: option :: Option < Vec < Option < i32 > > > */
	"iodepths" INT[] DEFAULT '{1}', /* :: std :: option :: Option < Vec < Option < i32 > > > */
	"precision_pct" real DEFAULT 5 /* Option < f32 > */
) RETURNS SETOF storlab.probes /* :: pgrx :: heap_tuple :: PgHeapTuple < '_, :: pgrx :: pgbox :: AllocatedByRust
> */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'profile_wrapper';

CREATE FUNCTION storlab."compare_tablespaces"(
	"max_age" interval DEFAULT '1 day', /* Option < Interval > */
	"duration" interval DEFAULT '2 seconds', /* Option < Interval > */
	"precision_pct" real DEFAULT 5 /* Option < f32 > */
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
	"probed_at" timestamp with time zone  /* Option < TimestampWithTimeZone > */
)
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'compare_tablespaces_wrapper';

REVOKE ALL ON FUNCTION storlab.probe(name, text, integer, interval, integer, bigint, boolean, text, text, integer, text, real) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.profile(name, interval, integer[], integer[], real) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.compare_tablespaces(interval, interval, real) FROM PUBLIC;

-- Every EXECUTE granted on an old function, granted on its successor.
DO $$
DECLARE
    pair record;
    g record;
BEGIN
    FOR pair IN
        SELECT * FROM (VALUES
            ('storlab.probe_0_4(name, text, integer, interval, integer, bigint, boolean, text, text)',
             'storlab.probe(name, text, integer, interval, integer, bigint, boolean, text, text, integer, text, real)'),
            ('storlab.profile_0_4(name, interval, integer[])',
             'storlab.profile(name, interval, integer[], integer[], real)'),
            ('storlab.compare_tablespaces_0_4(interval, interval)',
             'storlab.compare_tablespaces(interval, interval, real)')) AS p(old, new)
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

DROP FUNCTION storlab.probe_0_4(name, text, integer, interval, integer, bigint, boolean, text, text);
DROP FUNCTION storlab.profile_0_4(name, interval, integer[]);
DROP FUNCTION storlab.compare_tablespaces_0_4(interval, interval);
