-- storlab.compare_samples(a, b): behaviour and errors.
CREATE EXTENSION IF NOT EXISTS pgtap;
SET client_min_messages = warning;
SELECT plan(20);

SELECT is((SELECT round(change_pct::numeric, 2) FROM storlab.compare_samples('{100, 100, 100}', '{150, 150, 150}')),
          50.00, 'change_pct is b against a, in percent');
SELECT is((SELECT p_value FROM storlab.compare_samples('{1, 1}', '{1, 1}')), 1::float8,
          'equal figures without spread: p = 1, nothing tells them apart');
SELECT is((SELECT significant FROM storlab.compare_samples('{10, 11, 9, 10}', '{20, 21, 19, 20}')), true,
          'a difference ten times the spread is significant');
SELECT ok((SELECT ci95_low_a < mean_a AND mean_a < ci95_high_a FROM storlab.compare_samples('{10, 11, 9}', '{1, 2}')),
          'the interval of a side holds its mean');
-- Welch's p of this case: t = 2.2514, df = 5.5208, and the two tails of
-- Student's t density integrated numerically give 0.06913
SELECT is((SELECT round(p_value::numeric, 4) FROM storlab.compare_samples('{1, 2, 3, 4}', '{2, 4, 6, 8, 10}')),
          0.0691, 'p_value agrees with the t distribution integrated by hand (t = 2.2514, df = 5.52)');
-- The change's 95 % interval: Welch's interval of mean_b - mean_a in
-- percent of mean_a.
SELECT ok((SELECT bool_and(change_ci95_low_pct < change_pct AND change_pct < change_ci95_high_pct)
             FROM (VALUES ('{748, 702, 794}'::float8[], '{355, 371, 340}'::float8[]),
                          ('{100, 110, 90}', '{101, 95, 108}'),
                          ('{1, 2, 3, 4}', '{2, 4, 6, 8, 10}'),
                          ('{5, 5, 5}', '{4, 6, 5, 7}'),
                          ('{-10, -12, -11}', '{-5, -6, -4}')) v(a, b),
                  storlab.compare_samples(v.a, v.b)),
          'the change''s interval brackets change_pct, for a negative mean of a too');
SELECT ok((SELECT bool_and((change_ci95_low_pct > 0 OR change_ci95_high_pct < 0) = significant)
             FROM (VALUES ('{748, 702, 794}'::float8[], '{355, 371, 340}'::float8[]),
                          ('{100, 110, 90}', '{101, 95, 108}'),
                          ('{1, 2, 3, 4}', '{2, 4, 6, 8, 10}'),
                          ('{10, 11, 9, 10}', '{20, 21, 19, 20}')) v(a, b),
                  storlab.compare_samples(v.a, v.b)),
          'the interval leaves 0 out exactly when the change is significant');
-- By hand: s^2 = 1 on each side, n = 3, so se = sqrt(1/3 + 1/3) and
-- df = (2/3)^2 / ((1/3)^2/2 + (1/3)^2/2) = 4; t(0.975, 4) = 2.776445 (any
-- table of Student's t), half = 2.776445 * 0.816497 = 2.266958 of a mean of
-- 10: 100 % +- 22.6696 %.
SELECT is((SELECT array[round(change_ci95_low_pct::numeric, 4), round(change_ci95_high_pct::numeric, 4)]
             FROM storlab.compare_samples('{9, 10, 11}', '{19, 20, 21}')),
          array[77.3304, 122.6696], 'the change''s interval agrees with one computed by hand (df = 4)');
-- Unequal spreads, df = 2.4485: t(0.975, 2.4485) = 3.628993 (the root of
-- the t distribution's CDF, mpmath at 50 digits), half = 101.7054 of a
-- mean of 748.
SELECT is((SELECT array[round(change_ci95_low_pct::numeric, 2), round(change_ci95_high_pct::numeric, 2)]
             FROM storlab.compare_samples('{748, 702, 794}', '{355, 371, 340}')),
          array[-66.09, -38.90], 'and one computed apart at Welch-Satterthwaite''s df = 2.45');
SELECT is((SELECT array[change_ci95_low_pct, change_ci95_high_pct] FROM storlab.compare_samples('{100}', '{50, 52}')),
          array[NULL, NULL]::float8[], 'one value in a: no interval of the change');
SELECT is((SELECT array[change_ci95_low_pct, change_ci95_high_pct] FROM storlab.compare_samples('{50, 52}', '{100}')),
          array[NULL, NULL]::float8[], 'one value in b: no interval of the change');
SELECT is((SELECT array[change_ci95_low_pct, change_ci95_high_pct] FROM storlab.compare_samples('{0, 0}', '{1, 2}')),
          array[NULL, NULL]::float8[], 'a mean of a of 0: no change in percent, no interval of it');
SELECT is((SELECT array[change_pct, change_ci95_low_pct, change_ci95_high_pct] FROM storlab.compare_samples('{4, 4, 4}', '{5, 5}')),
          array[25, 25, 25]::float8[], 'no spread on either side: an interval of no width, at change_pct');
SELECT throws_ok($$SELECT * FROM storlab.compare_samples('{1e-300, 1e-300}', '{1e300, 1e300}')$$, '22003', NULL,
                 'a change in percent that overflows: 22003, not Infinity');

SELECT throws_ok($$SELECT * FROM storlab.compare_samples(NULL, '{1}')$$, '22004', 'a must not be NULL', 'a NULL array: 22004');
SELECT throws_ok($$SELECT * FROM storlab.compare_samples('{1}', '{2, NULL}')$$, '22023', 'b must not contain NULL', 'a NULL element: 22023, as for the other functions'' lists');
SELECT throws_ok($$SELECT * FROM storlab.compare_samples('{}', '{1}')$$, '22023', 'a must hold at least one value', 'an empty array: 22023');
SELECT throws_ok($$SELECT * FROM storlab.compare_samples('{1}', '{NaN}')$$, '22023', 'b must hold finite values, not NaN', 'NaN: 22023');
SELECT throws_ok($$SELECT * FROM storlab.compare_samples('{-Infinity}', '{1}')$$, '22023', 'a must hold finite values, not -Infinity', '-Infinity: 22023');

SELECT throws_ok($$SELECT * FROM storlab.compare_samples('{1e308, 1e308}', '{1}')$$, '22003', NULL,
                 'finite values whose sum overflows: 22003, not Infinity or NaN figures');

SELECT * FROM finish();
