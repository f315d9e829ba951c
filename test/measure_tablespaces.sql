-- CALL storlab.measure_tablespaces(): compare_tablespaces()'s measuring,
-- committed volume by volume, in a database of its own (a procedure that
-- commits cannot run inside the transaction a test rolls back). A cancel
-- (here pg_cancel_backend, as statement_timeout would) keeps every volume
-- it finished; compare_tablespaces(measure => false) ranks them.
SET client_min_messages = warning;
DROP DATABASE IF EXISTS tap_measure;
CREATE DATABASE tap_measure;
\c tap_measure
SET client_min_messages = warning;
CREATE EXTENSION pgtap;
CREATE EXTENSION dblink;
CREATE EXTENSION storlab;
SET storlab.suite_file_size = '4MB';
SELECT plan(14);

CREATE FUNCTION pg_temp.remote() RETURNS text LANGUAGE sql AS $$
  SELECT format('host=%s port=%s dbname=%s user=%s', current_setting('unix_socket_directories'),
                current_setting('port'), current_database(), current_user)
$$;
-- volumes with a complete suite call younger than max_age, and all volumes
CREATE FUNCTION pg_temp.volumes(OUT measured bigint, OUT total bigint) LANGUAGE sql AS $$
  SELECT count(*) FILTER (WHERE repetitions > 0), count(*)
    FROM storlab.compare_tablespaces(measure => false) WHERE same_volume_as IS NULL
$$;

-- Cancelled while it measures: what it committed stays. The CALL runs in a
-- second session; once one volume is committed, it is cancelled.
SELECT dblink_connect('m', pg_temp.remote()) \gset
SELECT dblink_exec('m', $$SET storlab.suite_file_size = '4MB'$$) \gset
SELECT is(dblink_send_query('m', $$CALL storlab.measure_tablespaces(duration => '300 ms', precision_pct => NULL)$$), 1,
          'a session CALLs measure_tablespaces()');
DO $$
BEGIN
  FOR i IN 1..600 LOOP
    EXIT WHEN (SELECT measured FROM pg_temp.volumes()) > 0;
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT ok((SELECT measured FROM pg_temp.volumes()) > 0, 'a volume it finished is committed while it goes on');
SELECT ok(pg_cancel_backend(pid), 'it is cancelled')
  FROM pg_stat_activity WHERE query LIKE 'CALL storlab.measure_tablespaces%' AND datname = current_database();
-- (PL/pgSQL cannot catch a cancel: the remote error is read as text)
SELECT count(*) AS rows FROM dblink_get_result('m', false) AS r(x text) \gset
SELECT alike(dblink_error_message('m'), '%canceling statement due to user request%', 'the CALL ends cancelled');
SELECT dblink_disconnect('m') \gset
SELECT measured AS kept FROM pg_temp.volumes() \gset
SELECT ok(:kept > 0 AND :kept < (SELECT total FROM pg_temp.volumes()),
          format('every volume it finished is kept (%s of %s), the one it was measuring is not', :kept, (SELECT total FROM pg_temp.volumes())));
SELECT is((SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'CALL storlab.measure_tablespaces%'
            AND datname = current_database() AND state = 'active'), 0::bigint, 'and nothing of it runs on');

-- Called again, it measures only the volumes left, under one suite call.
CALL storlab.measure_tablespaces(duration => '50 ms', max_repetitions => 2, suite_call => NULL) \gset
SELECT is((SELECT measured FROM pg_temp.volumes()), (SELECT total FROM pg_temp.volumes()),
          'called again, every volume has a complete suite call');
SELECT count(*) AS probes_before FROM storlab.probes \gset
CALL storlab.measure_tablespaces(duration => '50 ms', max_repetitions => 2, suite_call => NULL) \gset
SELECT is((SELECT count(*) FROM storlab.probes), :probes_before::bigint,
          'a third call within max_age measures nothing');
SELECT is((SELECT count(DISTINCT suite_call) FROM storlab.compare_tablespaces(measure => false)), 2::bigint,
          'the figures are those of the two calls that measured, each volume one call''s');
SELECT throws_ok($$CALL storlab.measure_tablespaces(min_repetitions => 1)$$, '22023', NULL,
                 'bad input is refused as compare_tablespaces() refuses it');
-- inside a transaction block it could not commit: refused before it measures
BEGIN;
SELECT throws_ok($$CALL storlab.measure_tablespaces(max_age => '1 microsecond')$$, '25001',
                 'storlab.measure_tablespaces cannot run inside a transaction block',
                 'inside BEGIN ... COMMIT it is refused (25001) before it measures anything');
ROLLBACK;

-- Who may measure: a role granted the procedure, EXECUTE on profile() and
-- CREATE on the tablespaces may take every step of it (measure_volume
-- checks the grants itself); a role without them is refused with 42501
-- naming every grant it lacks, in one error, before anything is measured.
SET client_min_messages = warning;
DROP ROLE IF EXISTS tap_measurer;
CREATE ROLE tap_measurer LOGIN;
GRANT EXECUTE ON PROCEDURE storlab.measure_tablespaces(interval, interval, real, integer, integer, uuid) TO tap_measurer;
SELECT ok(has_function_privilege('tap_measurer', 'storlab.measure_volume(name, uuid, interval, interval, real, integer, integer)', 'EXECUTE'),
          'a role granted the procedure may take its steps');
SELECT dblink_connect('r', pg_temp.remote() || ' user=tap_measurer') \gset
SELECT count(*) AS probes_before FROM storlab.probes \gset
SELECT dblink_send_query('r', $$SELECT storlab.measure_volume('lab_ram', gen_random_uuid(), '1 microsecond', '20 ms', 5, 2, 2)$$) AS sent \gset
SELECT count(*) AS rows FROM dblink_get_result('r', false) AS r(x text) \gset
SELECT alike(dblink_error_message('r'), '%would measure lab_ram, and measuring needs EXECUTE on storlab.profile()%Also: permission denied for tablespace lab_ram%',
             'without the grants: 42501 naming EXECUTE on profile() and CREATE on the tablespace, in one error');
SELECT is((SELECT count(*) FROM storlab.probes), :probes_before::bigint, 'and nothing was measured');
SELECT dblink_disconnect('r') \gset
DROP OWNED BY tap_measurer;
DROP ROLE tap_measurer;

SELECT * FROM finish();
\c postgres
DROP DATABASE tap_measure;
