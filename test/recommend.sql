-- storlab.recommend(): every topic has a row, every row names its evidence,
-- and every statement it proposes runs: each is executed in a
-- subtransaction that is then rolled back, so nothing is changed.
CREATE EXTENSION IF NOT EXISTS pgtap;
SET client_min_messages = warning;
SET storlab.suite_file_size = '8MB';
SELECT plan(16);

-- figures for every tablespace (only missing or day-old ones are probed)
SELECT diag(format('%s tablespaces measured', count(*)))
  FROM storlab.compare_tablespaces(duration => '50 ms', precision_pct => NULL, min_repetitions => 3, max_repetitions => 3);
-- lab_ram swept at three queue depths, three times over, in one call
SELECT diag(format('%s probes in lab_ram''s sweep', count(*)))
  FROM storlab.profile('lab_ram', '50 ms', iodepths => '{1,2,4}', repetitions => 3) WHERE workload = 'randread';

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

-- a cost cites at least 3 probes of each figure, with its interval
SELECT is((SELECT count(*) FROM advice
            WHERE topic = 'costs' AND statement LIKE 'ALTER TABLESPACE%'
              AND NOT (jsonb_array_length(evidence -> 'randread_mean_us' -> 'probes') >= 3
                       AND jsonb_array_length(evidence -> 'seqread_mib_s' -> 'probes') >= 3
                       AND jsonb_array_length(evidence -> 'unit_seqread_mib_s' -> 'probes') >= 3
                       AND evidence -> 'randread_mean_us' ->> 'ci95_pct' IS NOT NULL
                       AND advice ~ 'random reads take [0-9.]+ us on average \(±[0-9.]+ %, [0-9]+ probes\)')),
          0::bigint, 'every cost cites 3 probes or more of each figure and its interval');
-- lab_ram's effective_io_concurrency, where its costs are priced, comes
-- from that one sweep: every point its call's, three probes each
SELECT is((SELECT count(*) FROM advice a, jsonb_array_elements(a.evidence -> 'sweep' -> 'points') pt
            WHERE a.topic = 'costs' AND a.target = 'lab_ram' AND a.statement LIKE 'ALTER TABLESPACE%'
              AND (jsonb_array_length(pt -> 'probes') < 3
                   OR EXISTS (SELECT FROM storlab.probes p
                               WHERE p.id IN (SELECT jsonb_array_elements_text(pt -> 'probes')::bigint)
                                 AND p.suite_call IS DISTINCT FROM (a.evidence -> 'sweep' ->> 'call')::uuid))),
          0::bigint, 'a sweep''s points are one call''s, three probes each');
-- profile()'s repetitions: 1 to 20; NULL is refused
SELECT throws_ok($$SELECT * FROM storlab.profile('lab_ram', '20 ms', repetitions => 0)$$, '22023', NULL,
                 'profile(repetitions => 0) is refused');
SELECT throws_ok($$SELECT * FROM storlab.profile('lab_ram', '20 ms', repetitions => NULL)$$, '22004', NULL,
                 'profile(repetitions => NULL) is refused');
-- a statement_timeout shorter than the most it may take: refused at once
SELECT count(*) AS probes_before FROM storlab.probes \gset
SET statement_timeout = '2s';
SELECT throws_ok($$SELECT * FROM storlab.profile('lab_ram', '1 s', iodepths => '{1,2,4,8}', repetitions => 3)$$,
                 '54000', NULL, 'profile() longer than statement_timeout is refused before any probe');
RESET statement_timeout;
SELECT is((SELECT count(*) FROM storlab.probes), :'probes_before'::bigint, 'and nothing was measured');

CREATE TEMP TABLE executed (statement text, outcome text);
DO $$
DECLARE s text; st text; msg text;
BEGIN
  FOR s IN SELECT statement FROM advice WHERE statement IS NOT NULL LOOP
    BEGIN
      -- a statement that measures more (1-second probes, a dozen of them)
      -- is planned, not run: EXPLAIN checks that it parses and that every
      -- function it calls exists with those arguments
      IF s LIKE 'SELECT p.* FROM %storlab.probe(%' THEN
        EXECUTE 'EXPLAIN ' || s;
      ELSE
        EXECUTE s;
      END IF;
      RAISE EXCEPTION 'ran' USING ERRCODE = 'P0001';  -- roll the subtransaction back
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
      INSERT INTO executed VALUES (s, CASE WHEN st = 'P0001' AND msg = 'ran' THEN 'ran' ELSE st || ': ' || msg END);
    END;
  END LOOP;
END $$;
SELECT is((SELECT string_agg(statement || ' -> ' || outcome, E'\n') FROM executed WHERE outcome <> 'ran'), NULL,
          'every proposed statement runs (rolled back after; one that measures is planned)');
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
