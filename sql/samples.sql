--
-- storlab.compare_samples(a, b): two sets of repeated figures compared
-- with experiment_report's statistics. Here: a RAID 10's random-write IOPS
-- from three probes against a RAID 5's, the change with its interval, then
-- the cases with too little to test.
--
CREATE EXTENSION IF NOT EXISTS storlab;

-- b against a: means with their 95 % intervals, the change, Welch's p
SELECT n_a, mean_a, round(ci95_low_a::numeric, 1) AS ci95_low_a, round(ci95_high_a::numeric, 1) AS ci95_high_a,
       n_b, mean_b, round(change_pct::numeric, 2) AS change_pct, round(p_value::numeric, 5) AS p_value, significant
  FROM storlab.compare_samples('{748, 702, 794}', '{355, 371, 340}');

-- the change with its 95 % interval: Welch's interval of mean_b - mean_a,
-- in percent of mean_a, around change_pct. RAID 5 writes 39 % to 66 %
-- fewer than RAID 10 here; a figure from elsewhere inside that range
-- agrees with these probes, one outside it does not.
SELECT round(change_pct::numeric, 2) AS change_pct,
       round(change_ci95_low_pct::numeric, 2) AS change_ci95_low_pct,
       round(change_ci95_high_pct::numeric, 2) AS change_ci95_high_pct, significant
  FROM storlab.compare_samples('{748, 702, 794}', '{355, 371, 340}');

-- overlapping figures: a change, but not a significant one; its interval
-- holds 0 (it leaves 0 out exactly when the change is significant)
SELECT round(change_pct::numeric, 2) AS change_pct, round(p_value::numeric, 3) AS p_value, significant
  FROM storlab.compare_samples('{100, 110, 90}', '{101, 95, 108}');
SELECT round(change_pct::numeric, 2) AS change_pct,
       round(change_ci95_low_pct::numeric, 2) AS change_ci95_low_pct,
       round(change_ci95_high_pct::numeric, 2) AS change_ci95_high_pct
  FROM storlab.compare_samples('{100, 110, 90}', '{101, 95, 108}');

-- one figure on a side: its mean, but no interval and no test
SELECT n_a, mean_a, ci95_low_a, n_b, p_value, significant
  FROM storlab.compare_samples('{100}', '{50, 52}');
-- nor an interval of the change, though the change itself is known
SELECT change_pct, change_ci95_low_pct, change_ci95_high_pct
  FROM storlab.compare_samples('{100}', '{50, 52}');

-- a mean of zero has no change in percent, nor an interval of it
SELECT change_pct, change_ci95_low_pct, change_ci95_high_pct
  FROM storlab.compare_samples('{0, 0}', '{1, 2}');

-- no spread on either side: each side's interval has no width, and
-- neither has the change's (Welch's p is 0: every figure of b is above
-- every figure of a, without any noise)
SELECT ci95_low_a, ci95_high_a, change_pct, change_ci95_low_pct, change_ci95_high_pct, p_value, significant
  FROM storlab.compare_samples('{4, 4, 4}', '{5, 5}');

-- bad input: a NULL array (22004); a NULL element, empty, not finite (22023)
\set VERBOSITY terse
SELECT * FROM storlab.compare_samples(NULL, '{1}');
SELECT * FROM storlab.compare_samples('{1, NULL}', '{1}');
SELECT * FROM storlab.compare_samples('{}', '{1}');
SELECT * FROM storlab.compare_samples('{1}', '{NaN}');
SELECT * FROM storlab.compare_samples('{1}', '{Infinity}');
\set VERBOSITY default
