-- storlab 0.3.0 -> 0.4.0: charts and advice. Stored rows are kept as they are; this
-- script only adds the extension's new objects, so that an updated server
-- ends with the same objects as a fresh 0.4.0 install (the upgrade test
-- compares them).
\echo Use "ALTER EXTENSION storlab UPDATE TO '0.4.0'" to load this file. \quit

-- storlab.chart_svg(): a standalone SVG chart of stored results.
CREATE FUNCTION storlab."chart_svg"(
	"kind" TEXT, /* Option < String > */
	"id" bigint DEFAULT NULL, /* Option < i64 > */
	"title" TEXT DEFAULT NULL /* Option < String > */
) RETURNS TEXT /* String */
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'chart_svg_wrapper';

REVOKE ALL ON FUNCTION storlab.chart_svg(text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.chart_svg(text, bigint, text) TO pg_monitor;

-- storlab.recommend(): the settings and placements the stored results support.
CREATE FUNCTION storlab."recommend"() RETURNS TABLE (
	"topic" TEXT,  /* String */
	"target" TEXT,  /* Option < String > */
	"advice" TEXT,  /* String */
	"statement" TEXT,  /* Option < String > */
	"expected_gain" TEXT,  /* Option < String > */
	"evidence" jsonb  /* JsonB */
)
STRICT STABLE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'recommend_wrapper';

REVOKE ALL ON FUNCTION storlab.recommend() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.recommend() TO pg_monitor;
