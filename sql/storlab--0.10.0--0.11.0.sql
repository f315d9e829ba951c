-- storlab 0.10.0 -> 0.11.0: advice from repeated measurements.
-- One section per capability; each says what changed and why.

------------------------------------------------------------------------
-- profile() takes repetitions: the sweep that many times in one call, so
-- that recommend() tells a queue depth's IOPS from the next one's (its
-- effective_io_concurrency comes from one call's repeated sweep, no longer
-- from the newest probe at each depth, whose index goes).
DROP INDEX storlab.probes_newest_depth;
ALTER FUNCTION storlab.profile(name, interval, integer[], integer[], real) RENAME TO profile_0_10;
CREATE FUNCTION storlab."profile"(
	"tablespace" name DEFAULT NULL, /* Option < Name > */
	"duration" interval DEFAULT '3 seconds', /* Option < Interval > */
	"workers" INT[] DEFAULT '{1}', /* :: std :: option :: Option < Vec < Option < i32 > > > */
	"iodepths" INT[] DEFAULT '{1}', /* :: std :: option :: Option < Vec < Option < i32 > > > */
	"precision_pct" real DEFAULT 5, /* Option < f32 > */
	"repetitions" INT DEFAULT 1 /* Option < i32 > */
) RETURNS SETOF storlab.probes
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'profile_repeated_wrapper';
REVOKE ALL ON FUNCTION storlab.profile(name, interval, integer[], integer[], real, integer) FROM PUBLIC;

-- Every EXECUTE a DBA granted on the old profile(), granted on the new one
-- (compare_tablespaces() measures only for a role that may call it).
DO $$
DECLARE
    g record;
BEGIN
    FOR g IN
        SELECT a.grantee, a.is_grantable
          FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
         WHERE p.oid = 'storlab.profile_0_10(name, interval, integer[], integer[], real)'::pg_catalog.regprocedure
           AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION storlab.profile(name, interval, integer[], integer[], real, integer) TO %s%s',
            CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(g.grantee::regrole::text) END,
            CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END
$$;
DROP FUNCTION storlab.profile_0_10(name, interval, integer[], integer[], real);

------------------------------------------------------------------------
-- measure_volume, measure_tablespaces()'s step, is executable by PUBLIC:
-- whoever may CALL the procedure may take its steps (a role granted the
-- procedure, profile() and CREATE was refused by a plain 42501 on
-- measure_volume), and each step checks what measuring by hand takes
-- (EXECUTE on storlab.profile(), CREATE on the volume's tablespace) before
-- it measures anything.
GRANT EXECUTE ON FUNCTION storlab.measure_volume(name, uuid, interval, interval, real, integer, integer) TO PUBLIC;
