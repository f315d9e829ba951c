-- storlab.recommend(): every topic has a row, every row names its evidence,
-- and every statement it proposes runs: each is executed in a
-- subtransaction that is then rolled back, so nothing is changed.
CREATE EXTENSION IF NOT EXISTS pgtap;
SET client_min_messages = warning;
SET storlab.suite_file_size = '16MB';
SELECT plan(10);

-- figures for every tablespace (only missing or day-old ones are probed)
SELECT diag(format('%s tablespaces measured', count(*))) FROM storlab.compare_tablespaces(duration => '100 ms');

CREATE TEMP TABLE advice AS SELECT * FROM storlab.recommend();
-- (PostgreSQL 18 adds io_method: whether another one reads faster)
SELECT is((SELECT array_agg(DISTINCT topic ORDER BY topic) FROM advice),
          CASE WHEN current_setting('server_version_num')::int >= 180000
               THEN '{costs,fillfactor,indexes,io_method,temp,wal}'
               ELSE '{costs,fillfactor,indexes,temp,wal}' END::text[], 'every topic has its row');
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
-- WAL on volatile storage is never advised to stay, however fast it
-- commits: the figures of pg_wal's volume (measured once, as the first
-- tablespace on it) made those of a tmpfs (in a transaction rolled back
-- once the advice is read), the advice names another durable volume.
-- (Without root the lab has no other durable volume: then it asks for one
-- to be measured, below.)
SELECT coalesce(same_volume_as, tablespace) AS wal_volume FROM storlab.compare_tablespaces(measure => false)
 WHERE tablespace = 'pg_wal' \gset
SELECT count(*) > 0 AS other_durable FROM storlab.compare_tablespaces(measure => false)
 WHERE NOT volatile AND coalesce(same_volume_as, tablespace) <> :'wal_volume' AND repetitions > 0 \gset
BEGIN;
UPDATE storlab.probes SET env = env || '{"fs_type": "tmpfs", "device": "tmpfs"}', lat_p99_us = 1, lat_p50_us = 1
 WHERE tablespace = :'wal_volume';
SELECT coalesce(target, '') AS wal_target, coalesce(advice, '') AS wal_advice
  FROM storlab.recommend() WHERE topic = 'wal' \gset
ROLLBACK;
SELECT CASE WHEN :'other_durable'::boolean THEN collect_tap(
  isnt(:'wal_target'::text, 'pg_wal', 'pg_wal on tmpfs: the advice moves it (target: ' || :'wal_target' || ')'),
  alike(:'wal_advice'::text, 'pg_wal is on volatile storage (%): a reboot loses the WAL, and the cluster with it. Of the durable volumes measured, %',
        'and says why: a reboot loses it'),
  alike(:'wal_advice'::text, '%mv "$(readlink -f $PGDATA/pg_wal)"/* %/pg_wal/%ln -s %',
        'its steps move the WAL''s files wherever pg_wal points (a link onto tmpfs included), then link the new folder'),
  unalike(:'wal_advice'::text, '%//pg_wal%', 'and never spell a path //pg_wal'))
ELSE skip('no durable volume but pg_wal''s was measured (a lab without root)', 4) END;
-- with no durable volume measured at all, it asks for one to be measured
BEGIN;
UPDATE storlab.probes SET env = env || '{"fs_type": "tmpfs", "device": "tmpfs"}';
SELECT target AS wal_target, advice AS wal_advice, statement AS wal_statement
  FROM storlab.recommend() WHERE topic = 'wal' \gset
ROLLBACK;
SELECT is(:'wal_statement'::text, 'SELECT * FROM storlab.compare_tablespaces()',
          'with only volatile storage measured, it asks to measure a durable volume, never to stay');
SELECT * FROM finish();
