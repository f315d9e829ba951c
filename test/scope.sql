-- Scope: each guarantee holds across its whole scope. Probes of one device
-- from two databases of the cluster never overlap; a tablespace that cannot
-- be measured at all is an error, never an empty answer; a NULL job id is
-- 22004; a cancelled wait on another role's job ends with the cancel;
-- charts are well-formed XML whatever their titles hold; and with
-- RUST_BACKTRACE=1 in the server's environment (the lab starts it so, as a
-- DBA's shell may) no error reaches the client with a Rust backtrace.
--
-- Jobs need committed rows and CREATE DATABASE / TABLESPACE run outside a
-- transaction, so this file commits; it first removes what an interrupted
-- earlier run may have left.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
DROP DATABASE IF EXISTS storlab_scope_other;
DROP TABLESPACE IF EXISTS scope_gone;
DROP ROLE IF EXISTS scope_waiter;
DROP ROLE IF EXISTS scope_super;
RESET client_min_messages;
SELECT plan(26);

\ir lib/probe_helpers.sql
-- The SQLSTATE, detail and hint of what a statement raised.
CREATE FUNCTION pg_temp.error_of(q text, OUT state text, OUT detail text, OUT hint text) LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  state := 'no error';
EXCEPTION
  WHEN query_canceled THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
  WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
END $$;
SELECT current_database() AS db,
       format('host=%s port=%s', split_part(current_setting('unix_socket_directories'), ',', 1),
              current_setting('port')) AS server \gset

-- 1. A device is shared by every database of the cluster: a probe in
-- another database holds it, and a probe here waits for it (bounded by
-- lock_timeout, as any lock wait) instead of measuring alongside.
CREATE DATABASE storlab_scope_other;
SELECT dblink_exec(:'server' || ' dbname=storlab_scope_other', 'CREATE EXTENSION storlab');
SELECT dblink_connect('other', :'server' || ' dbname=storlab_scope_other');
SELECT dblink_send_query('other',
  $$SELECT storlab.probe('lab_ram', 'randwrite', duration => '3 s', file_size => 1048576, direct => false)$$);
DO $$ BEGIN
  FOR i IN 1 .. 100 LOOP
    EXIT WHEN EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND classid = 1398033474 AND granted);
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT is((SELECT string_agg(DISTINCT database::text, ',') FROM pg_locks
            WHERE locktype = 'advisory' AND classid = 1398033474 AND granted),
          '0', 'a probe''s device lock is in no database: pg_locks shows it with database 0');
SET lock_timeout = '300ms';
SELECT is(pg_temp.sqlstate_of($$SELECT storlab.probe('lab_ram', 'randwrite', duration => '100 ms', file_size => 1048576, direct => false)$$),
          '55P03', 'a probe of the same device from another database waits for it (here: lock_timeout, 55P03)');
RESET lock_timeout;
SELECT is((SELECT count(*) FROM dblink_get_result('other') AS r(p storlab.probes)), 1::bigint,
          'the other database''s probe finished undisturbed');
SELECT dblink_disconnect('other');
DROP DATABASE storlab_scope_other;

-- 2. A named tablespace that cannot be measured at all is an error.
-- Nothing fits: the 1 GB xfs volume with a 2 GB reserve.
SET storlab.min_free_bytes = 2147483647;
SELECT pg_temp.tick();
SELECT is(pg_temp.sqlstate_of($$SELECT * FROM storlab.fsync_cost('lab_xfs', '20 ms')$$), '53100',
          'fsync_cost where nothing fits: 53100, not a few warnings and no rows');
SELECT cmp_ok(pg_temp.since_tick(), '<', 5.0, 'and it says so at once, not after every test in turn');
SELECT is(pg_temp.sqlstate_of($$SELECT * FROM storlab.profile('lab_xfs', '20 ms')$$), '53100',
          'profile of a named tablespace where nothing fits: 53100');
RESET storlab.min_free_bytes;
-- The folder is gone: an in-place tablespace whose folder is removed.
SELECT dblink_exec(format('%s dbname=%s options=-callow_in_place_tablespaces=on', :'server', :'db'),
                   $$CREATE TABLESPACE scope_gone LOCATION ''$$);
SELECT format('rm -rf %s/pg_tblspc/%s/PG_*', current_setting('data_directory'),
              (SELECT oid FROM pg_tablespace WHERE spcname = 'scope_gone')) AS rm \gset
COPY (SELECT 1) TO PROGRAM :'rm';
SELECT is(pg_temp.sqlstate_of($$SELECT * FROM storlab.probe('scope_gone', 'randread', duration => '20 ms', file_size => 1048576)$$),
          '58030', 'probe of a tablespace whose folder is gone: 58030');
SELECT is(pg_temp.sqlstate_of($$SELECT * FROM storlab.fsync_cost('scope_gone', '20 ms')$$), '58030',
          'fsync_cost there: 58030, not warnings and no rows');
SELECT is(pg_temp.sqlstate_of($$SELECT * FROM storlab.profile('scope_gone', '20 ms')$$), '58030',
          'profile there: 58030');
SET client_min_messages = error;
DROP TABLESPACE scope_gone;
RESET client_min_messages;
SELECT is(pg_temp.scratch_files(), 0::bigint, 'and no scratch file is left anywhere');

-- 3. NULL job ids: 22004, never a NULL answer.
SELECT throws_ok('SELECT storlab.job_status(NULL)', '22004', 'job_id must not be NULL', 'job_status(NULL): 22004');
SELECT throws_ok('SELECT storlab.cancel(NULL)', '22004', 'job_id must not be NULL', 'cancel(NULL): 22004');
SELECT throws_ok('SELECT storlab.stop_now(NULL)', '22004', 'job_id must not be NULL', 'stop_now(NULL): 22004');
SELECT throws_ok('CALL storlab.wait(NULL)', '22004', 'job_id must not be NULL', 'wait(NULL): 22004');

-- 4. statement_timeout while waiting on another role's job: the wait ends
-- with the cancel (57014), and that job is left alone.
CREATE ROLE scope_waiter LOGIN;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA storlab TO scope_waiter;
GRANT EXECUTE ON ALL PROCEDURES IN SCHEMA storlab TO scope_waiter;
GRANT pg_monitor TO scope_waiter;
SELECT storlab.bench_init(scale => 1) AS init \gset
CALL storlab.wait(:init);
SELECT storlab.bench_start('select-only', clients => 1, jobs => 1, duration => '30 s') AS long_job \gset
SELECT is(pg_temp.sqlstate_of(format(
            $$SELECT dblink_exec('%s dbname=%s user=scope_waiter options=-cstatement_timeout=500', 'CALL storlab.wait(%s)')$$,
            :'server', :'db', :long_job)),
          '57014', 'a cancelled wait on another role''s job raises the cancel (57014), not 42501');
SELECT is((SELECT status FROM storlab.jobs WHERE id = :long_job), 'running', 'and that job goes on');
GRANT pg_signal_backend TO scope_waiter;
SELECT is(pg_temp.sqlstate_of(format(
            $$SELECT dblink_exec('%s dbname=%s user=scope_waiter options=-cstatement_timeout=500', 'CALL storlab.wait(%s)')$$,
            :'server', :'db', :long_job)),
          '57014', 'so does a waiter with pg_signal_backend''s rights over it');
CREATE ROLE scope_super SUPERUSER LOGIN;
SELECT is(pg_temp.sqlstate_of(format(
            $$SELECT dblink_exec('%s dbname=%s user=scope_super options=-cstatement_timeout=500', 'CALL storlab.wait(%s)')$$,
            :'server', :'db', :long_job)),
          '57014', 'and another superuser''s timed-out wait');
DROP ROLE scope_super;
SELECT is((SELECT status FROM storlab.jobs WHERE id = :long_job), 'running',
          'the job still goes on: only its own role''s cancelled wait stops a job');
SELECT ok(storlab.cancel(:long_job), 'its owner cancels it');
DO $$ BEGIN
  FOR i IN 1 .. 100 LOOP
    EXIT WHEN NOT EXISTS (SELECT FROM storlab.jobs WHERE status IN ('queued', 'running', 'cancelling'));
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
DROP OWNED BY scope_waiter;
DROP ROLE scope_waiter;

-- 5. Charts: what XML 1.0 forbids in a title never reaches the document
-- (the standard suite on lab_ram gives them something to draw).
SET storlab.suite_file_size = '4MB';
SELECT count(*) > 0 AS profiled FROM storlab.profile('lab_ram', '50 ms');
RESET storlab.suite_file_size;
SELECT ok(xml_is_well_formed_document(storlab.chart_svg(k, title => E'bell\x01 vtab\x0b esc\x1b')),
          format('a %s chart with control characters in its title is well-formed XML', k))
  FROM unnest('{tablespaces}'::text[]) k;
SELECT ok(xml_is_well_formed_document(storlab.chart_svg('probe', (SELECT max(id) FROM storlab.probes WHERE ops > 0),
                                                        title => E'nul-free \x02\x1f')),
          'and so is a probe''s');

-- 6. No Rust backtrace in any error, whatever the server's environment.
CREATE TEMP TABLE server_env (line text);
COPY server_env FROM PROGRAM 'env';  -- a child of this backend: the server's environment
SELECT ok(EXISTS (SELECT FROM server_env WHERE line = 'RUST_BACKTRACE=1'),
          'this server runs with RUST_BACKTRACE=1 in its environment');
SET statement_timeout = '200ms';
SELECT is(e.state || ' / ' || coalesce(nullif(e.detail, ''), '(no detail)'), '57014 / (no detail)',
          'a cancel inside a probe reaches the client as PostgreSQL raised it')
  FROM pg_temp.error_of($$SELECT storlab.probe('lab_ram', 'randwrite', duration => '30 s', file_size => 1048576, direct => false)$$) e;
RESET statement_timeout;
SELECT is(e.state || ' / ' || coalesce(nullif(e.detail, ''), '(no detail)') || ' / ' || e.hint,
          '22023 / (no detail) / Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".',
          'PostgreSQL''s own error inside storlab (an invalid setting) keeps its hint and gains no detail')
  FROM pg_temp.error_of($$SELECT storlab.experiment_start('x', '[{"name": "a", "settings": {"work_mem": "64XB"}}]')$$) e;
SET storlab.min_free_bytes = 2147483647;
SELECT alike(e.state || ' / ' || e.detail, '53100 / % bytes free at %, % needed: file_size % + storlab.min_free_bytes %.',
             'storlab''s own error (disk full) carries its own detail, and nothing after it')
  FROM pg_temp.error_of($$SELECT storlab.probe('lab_xfs', 'randread', duration => '20 ms')$$) e;
RESET storlab.min_free_bytes;

SELECT * FROM finish();
