--
-- storlab.compare_samples(a, b): two sets of repeated figures compared
-- with experiment_report's statistics. Here: a RAID 10's random-write IOPS
-- from three probes against a RAID 5's, then the cases with too little to
-- test.
--
CREATE EXTENSION IF NOT EXISTS storlab;

-- b against a: means with their 95 % intervals, the change, Welch's p
SELECT n_a, mean_a, round(ci95_low_a::numeric, 1) AS ci95_low_a, round(ci95_high_a::numeric, 1) AS ci95_high_a,
       n_b, mean_b, round(change_pct::numeric, 2) AS change_pct, round(p_value::numeric, 5) AS p_value, significant
  FROM storlab.compare_samples('{748, 702, 794}', '{355, 371, 340}');

-- overlapping figures: a change, but not a significant one
SELECT round(change_pct::numeric, 2) AS change_pct, round(p_value::numeric, 3) AS p_value, significant
  FROM storlab.compare_samples('{100, 110, 90}', '{101, 95, 108}');

-- one figure on a side: its mean, but no interval and no test
SELECT n_a, mean_a, ci95_low_a, n_b, p_value, significant
  FROM storlab.compare_samples('{100}', '{50, 52}');

-- a mean of zero has no change in percent
SELECT change_pct FROM storlab.compare_samples('{0, 0}', '{1, 2}');

-- bad input: a NULL array (22004); a NULL element, empty, not finite (22023)
\set VERBOSITY terse
SELECT * FROM storlab.compare_samples(NULL, '{1}');
SELECT * FROM storlab.compare_samples('{1, NULL}', '{1}');
SELECT * FROM storlab.compare_samples('{}', '{1}');
SELECT * FROM storlab.compare_samples('{1}', '{NaN}');
SELECT * FROM storlab.compare_samples('{1}', '{Infinity}');
\set VERBOSITY default
