-- storlab 0.6.0 -> 0.7.0: the storage-bound studies lab.
-- One section per capability; each says what changed and why.

-- ---- compare_samples: repeated figures compared as experiment_report does ----
-- New; a pure function of its arguments, so EXECUTE stays with PUBLIC.
CREATE FUNCTION "compare_samples"(
	"a" double precision[],
	"b" double precision[]
) RETURNS TABLE (
	"n_a" INT,
	"mean_a" double precision,
	"ci95_low_a" double precision,
	"ci95_high_a" double precision,
	"n_b" INT,
	"mean_b" double precision,
	"ci95_low_b" double precision,
	"ci95_high_b" double precision,
	"change_pct" double precision,
	"p_value" double precision,
	"significant" bool
)
IMMUTABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'compare_samples_wrapper';
