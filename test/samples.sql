-- storlab.compare_samples(a, b): behaviour and errors.
CREATE EXTENSION IF NOT EXISTS pgtap;
SET client_min_messages = warning;
SELECT plan(11);

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
SELECT throws_ok($$SELECT * FROM storlab.compare_samples(NULL, '{1}')$$, '22004', 'a must not be NULL', 'a NULL array: 22004');
SELECT throws_ok($$SELECT * FROM storlab.compare_samples('{1}', '{2, NULL}')$$, '22023', 'b must not contain NULL', 'a NULL element: 22023, as for the other functions'' lists');
SELECT throws_ok($$SELECT * FROM storlab.compare_samples('{}', '{1}')$$, '22023', 'a must hold at least one value', 'an empty array: 22023');
SELECT throws_ok($$SELECT * FROM storlab.compare_samples('{1}', '{NaN}')$$, '22023', 'b must hold finite values, not NaN', 'NaN: 22023');
SELECT throws_ok($$SELECT * FROM storlab.compare_samples('{-Infinity}', '{1}')$$, '22023', 'a must hold finite values, not -Infinity', '-Infinity: 22023');

SELECT throws_ok($$SELECT * FROM storlab.compare_samples('{1e308, 1e308}', '{1}')$$, '22003', NULL,
                 'finite values whose sum overflows: 22003, not Infinity or NaN figures');

SELECT * FROM finish();
