--
-- Storage checks for CI: a build fails when the storage under the database
-- gets worse, as it fails when a query gets slower. Every output here is
-- pass or fail with a stable sentence; the figures are in their own columns
-- (shown only as facts about them, since they vary from run to run).
--
SET storlab.suite_file_size = '8MB';

-- storlab.check(tablespace, workload, metric, op, threshold, duration,
-- repetitions): probes one workload of the standard suite `repetitions`
-- times and compares the median of the metric with the threshold. The
-- description says what was asserted, never what was measured.
SELECT ok, description, measured > 0 AS measured, cardinality(probe_ids) AS probes
  FROM storlab.check('lab_ram', 'randread', 'lat_p99_us', '<', 100000, '300 ms');
-- A check that cannot pass: RAM is fast, but not a trillion reads a second.
SELECT ok, description
  FROM storlab.check('lab_ram', 'randread', 'iops', '>=', 1e12, '300 ms');
-- Checks of one workload within a minute share its probes: this one probes nothing.
SELECT count(*) AS probes_before FROM storlab.probes \gset
SELECT ok, description
  FROM storlab.check('lab_ram', 'randread', 'lat_p50_us', '<=', 100000, '300 ms');
SELECT count(*) - :probes_before AS new_probes FROM storlab.probes;
-- Workloads are the standard suite's, the queued randread included.
SELECT ok, description
  FROM storlab.check('lab_ram', 'randread_qd32', 'iops', '>', 0, '300 ms', 1);

-- storlab.baseline(label, tablespaces, duration, repetitions): the standard
-- suite, `repetitions` times, stored under a label. Take it once on
-- known-good storage.
SELECT storlab.baseline('regress', '{lab_ram}', '300 ms', 3) > 0 AS taken;
SELECT label, tablespaces, repetitions, duration_s FROM storlab.baselines ORDER BY id;
SELECT p.workload, p.iodepth, count(*) AS repetitions
  FROM storlab.baseline_probes b JOIN storlab.probes p ON p.id = b.probe_id
 GROUP BY p.workload, p.iodepth ORDER BY min(p.id);

-- storlab.regressions(baseline, tablespaces, max_change_pct, duration,
-- repetitions): the suite again, each figure against the baseline's. A
-- regression is worse by more than max_change_pct AND significant
-- (Welch's t-test on the repetitions, one-sided, p < 0.05), so that noise
-- alone fails no build; a figure flagged is measured again (the NOTICE),
-- and has regressed only when the second round shows it too. Here the
-- baseline's figures are made a hundred times better than the storage can
-- do: every throughput and median has regressed. A p99 is a run's slowest
-- 1 %: one stall can make one repetition's p99 a hundred times its
-- neighbours', and Welch's test of three such figures cannot call even a
-- hundredfold change, so here the p99s are shown only as worse or not; so
-- is the median at queue depth 32, which waits for a CPU as much as for
-- the device and spread as widely while other work ran beside the test.
UPDATE storlab.probes SET iops = iops * 100, mib_s = mib_s * 100,
       lat_p50_us = lat_p50_us / 100, lat_p99_us = lat_p99_us / 100
 WHERE id IN (SELECT probe_id FROM storlab.baseline_probes);
SELECT tablespace, workload, metric,
       CASE WHEN metric = 'lat_p99_us' OR (workload, metric) = ('randread_qd32', 'lat_p50_us')
            THEN change_pct > 10 ELSE regressed END
         AS "regressed (p99: worse)",
       description
  FROM storlab.regressions('regress', duration => '300 ms', repetitions => 3);

-- Bad input: a clear error and its SQLSTATE.
-- pg_temp.error_of(call): what a call raises, as 'SQLSTATE: message' (sql/lib/helpers.sql)
\set ECHO none
\i sql/lib/helpers.sql
\set ECHO all
SELECT count(*) AS probes_before FROM storlab.probes \gset
SELECT call, pg_temp.error_of(call) AS error FROM (VALUES
  ($$storlab.check('lab_ram', 'randread', 'latency', '<', 1)$$),
  ($$storlab.check('lab_ram', 'randread', 'iops', '=', 1)$$),
  ($$storlab.check('lab_ram', 'scan', 'iops', '>', 1)$$),
  ($$storlab.check('lab_ram', 'randread', 'iops', '>', NULL)$$),
  ($$storlab.check('lab_ram', 'randread', 'iops', '>', 'NaN')$$),
  ($$storlab.check('lab_ram', 'randread', 'iops', '>', 1, repetitions => 0)$$),
  ($$storlab.check('no_such_tablespace', 'randread', 'iops', '>', 1)$$),
  ($$storlab.baseline('regress')$$),
  ($$storlab.baseline('')$$),
  ($$storlab.baseline('x', '{}')$$),
  ($$storlab.baseline('x', '{no_such_tablespace}')$$),
  ($$storlab.baseline('x', repetitions => 0)$$),
  ($$storlab.regressions('no such baseline')$$),
  ($$storlab.regressions('regress', '{pg_default}')$$),
  ($$storlab.regressions('regress', max_change_pct => -1)$$),
  ($$storlab.regressions('regress', repetitions => 0)$$)
) AS v(call);
SELECT count(*) - :probes_before AS new_probes FROM storlab.probes;
