\set ECHO none
-- What every study's report shares (\ir from each study): the table of
-- verdicts studies/README.md is generated from, and the rule that gives a
-- verdict. Kept in the lab's database (public), one row per comparison and
-- study run; a study run replaces its own rows.
--
-- The rule, from the lab's effect (percent, with its Welch 95 % interval)
-- and the seed's figure (a range seed_low..seed_high, a point when equal;
-- a bound such as "as much as -60 %" is the range 0..-60):
--   reproduced                     the interval excludes 0 on the seed's
--                                  side and overlaps the seed's range
--   not reproduced                 the interval excludes 0 on the other side,
--                                  or on the seed's side but misses its range
--                                  (the why column says which)
--   same direction, not significant the interval holds 0, the estimate is on
--                                  the seed's side
--   not reproduced (opposite sign, not significant) otherwise: the estimate's
--                                  sign is the seed's opposite, the interval
--                                  holds 0
--   not comparable                 set by a study where its lab cannot
--                                  measure what the seed measured, with why
-- each run of a study: its report reads what was measured since
-- the reports call storlab functions of the installed release: checked when
-- a report runs, not when this file is read
SET check_function_bodies = off;

CREATE TABLE IF NOT EXISTS public.study_runs (
    study      integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE IF NOT EXISTS public.study_verdicts (
    study        integer NOT NULL,
    comparison   text    NOT NULL,
    seed_setup   text    NOT NULL,
    lab_setup    text    NOT NULL,
    metric       text    NOT NULL,
    seed_figure  text    NOT NULL,           -- as the seed printed it
    seed_low     numeric,                    -- its range, percent
    seed_high    numeric,
    n_base       integer,
    n_other      integer,
    base_mean    numeric,
    other_mean   numeric,
    lab_pct      numeric,
    lab_low      numeric,
    lab_high     numeric,
    p_value      numeric,
    verdict      text    NOT NULL,
    why          text,
    recorded_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (study, comparison)
);

CREATE OR REPLACE FUNCTION public.study_verdict(seed_low numeric, seed_high numeric,
                                                est numeric, lo numeric, hi numeric,
                                                OUT verdict text, OUT why text)
LANGUAGE sql IMMUTABLE AS $$
  WITH s AS (SELECT least(seed_low, seed_high) AS s_lo, greatest(seed_low, seed_high) AS s_hi,
                    sign(coalesce(nullif(seed_low, 0), seed_high)) AS side)
  SELECT CASE
           WHEN lo IS NULL OR hi IS NULL THEN 'not comparable'
           WHEN lo > 0 AND s.side > 0 OR hi < 0 AND s.side < 0 THEN
             CASE WHEN hi >= s.s_lo AND lo <= s.s_hi THEN 'reproduced' ELSE 'not reproduced' END
           WHEN lo > 0 OR hi < 0 THEN 'not reproduced'
           WHEN sign(est) = s.side THEN 'same direction, not significant'
           ELSE 'not reproduced'
         END,
         CASE
           WHEN lo IS NULL OR hi IS NULL THEN 'no interval: fewer than two valid runs on a side'
           WHEN lo > 0 AND s.side > 0 OR hi < 0 AND s.side < 0 THEN
             CASE WHEN hi >= s.s_lo AND lo <= s.s_hi THEN NULL
                  WHEN abs(hi) < abs(s.s_lo) AND abs(lo) < abs(s.s_lo) THEN 'the seed''s direction, significantly smaller than its figure'
                  ELSE 'the seed''s direction, significantly larger than its figure' END
           WHEN lo > 0 OR hi < 0 THEN 'significant, in the opposite direction'
           WHEN sign(est) = s.side THEN NULL
           ELSE 'the estimate''s sign is the opposite of the seed''s (not significant)'
         END
    FROM s
$$;

-- The 0.975 quantile of Student's t for df degrees of freedom (Welch's df
-- is not whole): linear in 1/df between the printed table's rows. Between
-- rows it is never below the exact value (an interval a little wider, never
-- narrower): by 4 % at most between 2 and 3 degrees of freedom, under
-- 0.5 % from 4 on, where five repetitions a side put Welch's df.
CREATE OR REPLACE FUNCTION public.study_t975(df float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  WITH t(d, q) AS (VALUES (1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (5, 2.571), (6, 2.447), (7, 2.365),
                          (8, 2.306), (9, 2.262), (10, 2.228), (12, 2.179), (15, 2.131), (20, 2.086), (25, 2.060),
                          (30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980), (1000000, 1.960)),
       lo AS (SELECT d, q FROM t WHERE d <= greatest(df, 1) ORDER BY d DESC LIMIT 1),
       hi AS (SELECT d, q FROM t WHERE d >= greatest(df, 1) ORDER BY d LIMIT 1)
  SELECT CASE WHEN lo.d = hi.d THEN lo.q
              ELSE lo.q + (hi.q - lo.q) * (1.0 / lo.d - 1.0 / greatest(df, 1)) / (1.0 / lo.d - 1.0 / hi.d) END
    FROM lo, hi
$$;

-- study_record(study, comparison, seed_setup, lab_setup, metric, seed_figure,
-- seed_low, seed_high, base float8[], other float8[]): the lab's effect of
-- other against base with its Welch 95 % interval (in percent of base's
-- mean, as compare_samples() gives it from 0.12.0 on; computed here from
-- the figures, so that a lab made by an earlier build reports the same),
-- Welch's p from compare_samples(), and the verdict, stored (replacing the
-- comparison's earlier row).
CREATE OR REPLACE FUNCTION public.study_record(p_study integer, p_comparison text, p_seed_setup text,
                                               p_lab_setup text, p_metric text, p_seed_figure text,
                                               p_seed_low numeric, p_seed_high numeric,
                                               base float8[], other float8[],
                                               p_verdict text DEFAULT NULL, p_why text DEFAULT NULL)
RETURNS void LANGUAGE sql AS $$
  WITH a AS (SELECT count(*) AS n, avg(x) AS m, coalesce(var_samp(x), 0) AS v FROM unnest(base) x),
       b AS (SELECT count(*) AS n, avg(x) AS m, coalesce(var_samp(x), 0) AS v FROM unnest(other) x),
       w AS (SELECT a.n AS na, b.n AS nb, a.m AS ma, b.m AS mb, 100 * (b.m - a.m) / nullif(a.m, 0) AS pct,
                    CASE WHEN a.n > 1 AND b.n > 1 AND a.m <> 0 THEN
                      100 * sqrt(a.v / a.n + b.v / b.n) / abs(a.m)
                      * CASE WHEN a.v + b.v = 0 THEN 0
                             ELSE public.study_t975((a.v / a.n + b.v / b.n) ^ 2
                                  / ((a.v / a.n) ^ 2 / (a.n - 1) + (b.v / b.n) ^ 2 / (b.n - 1)
                                  )) END END AS half
               FROM a, b),
       c AS (SELECT w.*, w.pct - w.half AS lo, w.pct + w.half AS hi FROM w)
  INSERT INTO public.study_verdicts AS v
  SELECT p_study, p_comparison, p_seed_setup, p_lab_setup, p_metric, p_seed_figure, p_seed_low, p_seed_high,
         c.na, c.nb, round(c.ma::numeric, 2), round(c.mb::numeric, 2), round(c.pct::numeric, 1),
         round(c.lo::numeric, 1), round(c.hi::numeric, 1),
         (SELECT round(s.p_value::numeric, 4) FROM storlab.compare_samples(base, other) s),
         coalesce(p_verdict, d.verdict), coalesce(p_why, d.why)
    FROM c
   CROSS JOIN LATERAL public.study_verdict(p_seed_low, p_seed_high, c.pct::numeric, c.lo::numeric, c.hi::numeric) d
  ON CONFLICT (study, comparison) DO UPDATE
     SET seed_setup = excluded.seed_setup, lab_setup = excluded.lab_setup, metric = excluded.metric,
         seed_figure = excluded.seed_figure, seed_low = excluded.seed_low, seed_high = excluded.seed_high,
         n_base = excluded.n_base, n_other = excluded.n_other, base_mean = excluded.base_mean,
         other_mean = excluded.other_mean, lab_pct = excluded.lab_pct, lab_low = excluded.lab_low,
         lab_high = excluded.lab_high, p_value = excluded.p_value, verdict = excluded.verdict,
         why = excluded.why, recorded_at = clock_timestamp()
$$;

-- A study's verdicts as its report prints them.
CREATE OR REPLACE VIEW public.study_table AS
SELECT study, comparison, seed_figure AS seed, metric,
       lab_pct || ' % (' || lab_low || ' .. ' || lab_high || ')' AS "lab, 95 % interval",
       n_base || ' + ' || n_other AS runs, p_value AS p, verdict, why
  FROM public.study_verdicts;

-- The TPS of an experiment's valid measured runs of one layout (and
-- fillfactor): what its report pools, as an array for study_record.
CREATE OR REPLACE FUNCTION public.study_tps(p_experiment bigint, p_layout text, p_fillfactor integer DEFAULT NULL)
RETURNS float8[] LANGUAGE sql STABLE AS $$
  SELECT array_agg(tps ORDER BY repetition)
    FROM storlab.bench_runs
   WHERE experiment_id = p_experiment AND experiment_layout = p_layout
     AND (p_fillfactor IS NULL OR fillfactor = p_fillfactor)
     AND NOT warmup AND invalid IS NULL AND tps IS NOT NULL
$$;

-- The newest experiment of a study, by the name it gave it.
CREATE OR REPLACE FUNCTION public.study_experiment(p_name text) RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT max(id) FROM storlab.experiments WHERE name = p_name AND status = 'done'
$$;

-- The checkpoints the server log says began within each measured run of an
-- experiment (log_checkpoints is on in the studies lab): the statistics
-- count a checkpoint behind its schedule only when it ends, often after
-- the run (docs/experiment.md), the log when it begins.
CREATE OR REPLACE FUNCTION public.study_log_checkpoints(p_experiment bigint, p_log text)
RETURNS TABLE (layout text, fillfactor integer, runs bigint, checkpoints_per_run numeric)
LANGUAGE sql STABLE AS $$
  WITH began AS (
    SELECT substring(l FROM '^(\S+ \S+ \S+) ')::timestamptz AS at
      FROM regexp_split_to_table(pg_catalog.pg_read_file(p_log), E'\n') l
     WHERE l ~ '^\S+ \S+ \S+ \[\d+\] LOG:  checkpoint starting')
  SELECT r.experiment_layout, r.fillfactor, count(*),
         round(avg((SELECT count(*) FROM began b WHERE b.at >= r.started_at AND b.at < r.finished_at)), 1)
    FROM storlab.bench_runs r
   WHERE r.experiment_id = p_experiment AND NOT r.warmup AND r.invalid IS NULL
   GROUP BY 1, 2 ORDER BY 1, 2
$$;

\set ECHO queries
