-- storlab 0.4.0 -> 0.5.0: queued probes (io_uring at a queue depth),
-- probes that stop once precise, and storage checks for CI (check,
-- baseline, regressions). Stored rows are kept: existing probes get
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

-- Storage checks for CI: baselines and the functions that take and read them.
-- Baselines for storage checks in CI: a labelled standard suite, taken once
-- on known-good storage, that regressions() compares today's figures with.
CREATE TABLE storlab.baselines (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    label             text        NOT NULL UNIQUE CHECK (label <> ''),
    tablespaces       name[]      NOT NULL,
    duration_s        float8      NOT NULL,   -- the upper bound of each probe
    repetitions       integer     NOT NULL CHECK (repetitions > 0),
    system_identifier bigint      NOT NULL,
    hostname          text        NOT NULL,
    taken_at          timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE storlab.baselines IS 'Labelled standard suites taken by storlab.baseline(); storlab.regressions() compares new figures with them. Deleting a row deletes its links to its probes (the probes stay)';

CREATE TABLE storlab.baseline_probes (
    baseline_id bigint  NOT NULL REFERENCES storlab.baselines (id) ON DELETE CASCADE,
    probe_id    bigint  NOT NULL REFERENCES storlab.probes (id) ON DELETE CASCADE,
    repetition  integer NOT NULL CHECK (repetition > 0),
    PRIMARY KEY (baseline_id, probe_id)
);
COMMENT ON TABLE storlab.baseline_probes IS 'The probes of each baseline, by repetition';

-- Stored results are the user's data: pg_dump keeps them.
SELECT pg_catalog.pg_extension_config_dump('storlab.baselines', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.baselines_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.baseline_probes', '');

CREATE FUNCTION storlab."check"(
	"tablespace" name, /* Option < Name > */
	"workload" TEXT, /* Option < String > */
	"metric" TEXT, /* Option < String > */
	"op" TEXT, /* Option < String > */
	"threshold" double precision, /* Option < f64 > */
	"duration" interval DEFAULT '2 seconds', /* Option < Interval > */
	"repetitions" INT DEFAULT 3 /* Option < i32 > */
) RETURNS TABLE (
	"ok" bool,  /* bool */
	"description" TEXT,  /* String */
	"measured" double precision,  /* Option < f64 > */
	"probe_ids" bigint[]  /* Vec < i64 > */
)
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'check_wrapper';

CREATE FUNCTION storlab."baseline"(
	"label" TEXT, /* Option < String > */
	"tablespaces" name[] DEFAULT NULL, /* :: std :: option :: Option < Vec < Option < Name > > > */
	"duration" interval DEFAULT '2 seconds', /* Option < Interval > */
	"repetitions" INT DEFAULT 5 /* Option < i32 > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'baseline_wrapper';

CREATE FUNCTION storlab."regressions"(
	"baseline" TEXT, /* Option < String > */
	"tablespaces" name[] DEFAULT NULL, /* :: std :: option :: Option < Vec < Option < Name > > > */
	"max_change_pct" double precision DEFAULT 10, /* Option < f64 > */
	"duration" interval DEFAULT '2 seconds', /* Option < Interval > */
	"repetitions" INT DEFAULT 5 /* Option < i32 > */
) RETURNS TABLE (
	"tablespace" name,  /* Name */
	"workload" TEXT,  /* String */
	"metric" TEXT,  /* String */
	"baseline" double precision,  /* f64 */
	"now" double precision,  /* f64 */
	"change_pct" double precision,  /* Option < f64 > */
	"p_value" double precision,  /* Option < f64 > */
	"regressed" bool,  /* bool */
	"description" TEXT  /* String */
)
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'regressions_wrapper';

REVOKE ALL ON FUNCTION storlab.check(name, text, text, text, double precision, interval, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.baseline(text, name[], interval, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.regressions(text, name[], double precision, interval, integer) FROM PUBLIC;
GRANT SELECT ON storlab.baselines, storlab.baseline_probes TO pg_monitor;
