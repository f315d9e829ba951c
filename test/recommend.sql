-- storlab.recommend(): every topic has a row, every row names its evidence,
-- and every statement it proposes runs: each is executed in a
-- subtransaction that is then rolled back, so nothing is changed.
CREATE EXTENSION IF NOT EXISTS pgtap;
SET client_min_messages = warning;
SET storlab.suite_file_size = '16MB';
SELECT plan(5);

-- figures for every tablespace (only missing or day-old ones are probed)
SELECT diag(format('%s tablespaces measured', count(*))) FROM storlab.compare_tablespaces(duration => '100 ms');

CREATE TEMP TABLE advice AS SELECT * FROM storlab.recommend();
SELECT is((SELECT array_agg(DISTINCT topic ORDER BY topic) FROM advice),
          '{costs,fillfactor,indexes,temp,wal}', 'every topic has its row');
SELECT is((SELECT count(*) FROM advice WHERE coalesce(advice, '') = '' OR jsonb_typeof(evidence) <> 'object'), 0::bigint,
          'every row says what to do and carries its evidence');
SELECT ok((SELECT bool_and(evidence ? 'probes') FROM advice WHERE topic IN ('costs', 'wal') AND target IS NOT NULL),
          'costs and WAL advice name the probes they rest on');

CREATE TEMP TABLE executed (statement text, outcome text);
DO $$
DECLARE s text; st text; msg text;
BEGIN
  FOR s IN SELECT statement FROM advice WHERE statement IS NOT NULL LOOP
    BEGIN
      EXECUTE s;
      RAISE EXCEPTION 'ran' USING ERRCODE = 'P0001';  -- roll the subtransaction back
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
      INSERT INTO executed VALUES (s, CASE WHEN st = 'P0001' AND msg = 'ran' THEN 'ran' ELSE st || ': ' || msg END);
    END;
  END LOOP;
END $$;
SELECT is((SELECT string_agg(statement || ' -> ' || outcome, E'\n') FROM executed WHERE outcome <> 'ran'), NULL,
          'every proposed statement runs (rolled back after)');
SELECT cmp_ok((SELECT count(*) FROM executed), '>=', 4::bigint, 'and there were statements to run');
SELECT diag(format('%s rows of advice, %s statements run and rolled back', (SELECT count(*) FROM advice),
                   (SELECT count(*) FROM executed)));
SELECT * FROM finish();
