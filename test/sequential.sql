-- Sequential experiments: the design's refusals (22023, nothing started);
-- one real experiment whose answer is certain (every select of
-- "seqscan" reads all of pgbench_accounts, about a hundred times slower
-- than "idx"): decided at the first look, after 2 of at most 4
-- repetitions, so the job skips the 4 runs it no longer needs; while it
-- runs, storlab.experiments says which comparison is open; answered, it
-- cannot be resumed.
-- No BEGIN: the job's worker sees only what is committed.
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(16);

CREATE FUNCTION pg_temp.final_status(job bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE s text;
BEGIN
  FOR i IN 1 .. 1200 LOOP
    SELECT status INTO s FROM storlab.jobs WHERE id = job;
    EXIT WHEN s IN ('done', 'failed', 'cancelled');
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN s;
END $$;
CREATE FUNCTION pg_temp.wait_action(job bigint, pattern text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text;
BEGIN
  FOR i IN 1 .. 600 LOOP
    SELECT current_action INTO a FROM storlab.experiments WHERE id = job;
    EXIT WHEN a LIKE pattern;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN a;
END $$;

CREATE TEMP TABLE jobs_before AS SELECT count(*) AS n FROM storlab.job_records;
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {}, "b": {}}', options => '{"stop": "soon"}')$$,
                 '22023', NULL, 'an unknown stop rule: 22023');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {}, "b": {}}',
                     options => '{"stop": "sequential", "min_repetitions": 5, "max_repetitions": 4}')$$,
                 '22023', NULL, 'max_repetitions < min_repetitions: 22023');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {}, "b": {}}', options => '{"stop": "sequential", "equivalence_pct": -1}')$$,
                 '22023', NULL, 'equivalence_pct <= 0: 22023');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {}, "b": {}}', options => '{"stop": "sequential", "equivalence_pct": 150}')$$,
                 '22023', NULL, 'equivalence_pct >= 100: 22023');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {}}', options => '{"stop": "sequential"}')$$,
                 '22023', NULL, 'sequential with one layout: 22023');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {}, "b": {}}', options => '{"stop": null}')$$,
                 '22023', NULL, 'stop NULL: 22023, not the default taken silently');
SELECT is((SELECT count(*) FROM storlab.job_records), (SELECT n FROM jobs_before), 'nothing was started');

SELECT storlab.experiment_start('sequential tap',
  '[{"name": "idx"},
    {"name": "seqscan", "settings": {"enable_indexscan": "off", "enable_bitmapscan": "off", "enable_indexonlyscan": "off"}}]',
  script => 'select-only', clients => '{2}', jobs => 1, duration => '1 s', warmup => '0', scale => 1,
  options => '{"stop": "sequential", "min_repetitions": 2, "max_repetitions": 4}') AS exp \gset
SELECT is((SELECT steps_total FROM storlab.experiments WHERE id = :exp), 11,
          'steps: pgbench -i, sizes under 2 layouts, at most 4 x 2 runs');
SELECT alike(pg_temp.wait_action(:exp, '%measured run (open: seqscan at 2 clients)'),
             'repetition 1 of at most 4, layout %, clients 2: measured run (open: seqscan at 2 clients)',
             'while it runs, storlab.experiments says which comparison is open');
SELECT is(pg_temp.final_status(:exp), 'done', 'it finishes');
SELECT is((SELECT array_agg(experiment_layout || ' ' || repetition ORDER BY id) FROM storlab.bench_runs
            WHERE experiment_id = :exp AND NOT warmup AND tps IS NOT NULL),
          ARRAY['idx 1', 'seqscan 1', 'seqscan 2', 'idx 2'],
          'decided after repetition 2: the 4 runs of repetitions 3 and 4 were not run');
SELECT alike((SELECT current_action FROM storlab.experiments WHERE id = :exp),
             'done: 4 measured runs in the report, 4 measured in this session; comparisons: 1 different (decided: seqscan at 2 clients different after repetition 2); storlab.experiment_report(%) compares them',
             'its last words say how each comparison ended');
SELECT is((SELECT current_step FROM storlab.experiments WHERE id = :exp), 11, 'every step done or not needed');
SELECT results_eq(
  format($$SELECT layout, decision, decided_after, seq_ci_high_pct < 0 FROM storlab.experiment_report(%s) ORDER BY layout$$, :exp),
  $$VALUES ('idx', NULL::text, NULL::int, NULL::boolean), ('seqscan', 'different', 2, true)$$,
  'the report: seqscan is different, decided after 2, its whole interval below 0');

-- Answered, it has nothing left to run: resuming it is refused, as for
-- any finished experiment.
SELECT throws_ok(format('SELECT storlab.experiment_resume(%s)', :exp), '55006', NULL,
                 'an answered experiment has nothing to resume: 55006');
SELECT is((SELECT count(*)::int FROM storlab.bench_runs WHERE experiment_id = :exp AND NOT warmup), 4,
          'and nothing more ran');
SELECT * FROM finish();
