-- Identity: storlab never does more than its caller could do by hand, and a
-- caller's search_path never decides which code runs.
--
-- A role holds only the documented grants (EXECUTE on storlab's functions,
-- CREATE on one tablespace) and a hostile schema, first in its search_path,
-- that shadows every pg_catalog function and operator storlab's SQL uses.
-- Each shadow records current_user and session_user before doing the real
-- work. The role then calls every storlab function. Afterwards no shadow
-- ran as another role (no escalation) and none ran at all (storlab's SQL
-- is pinned to pg_catalog), and what the role's jobs created is its own.
--
-- Jobs need committed rows, so this file commits; it first removes what an
-- interrupted earlier run may have left.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS tap_evil, tap_attacker CASCADE;
DO $$ BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'tap_attacker') THEN
    EXECUTE 'DROP OWNED BY tap_attacker CASCADE';
    DROP ROLE tap_attacker;
  END IF;
END $$;
RESET client_min_messages;
-- the baseline a previous run of this file took (it is committed), so that
-- the file runs again in the same database
DELETE FROM storlab.baselines WHERE label = 'tap identity';
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(34);
\ir lib/probe_helpers.sql
SELECT clock_timestamp() AS t_start \gset

CREATE ROLE tap_attacker LOGIN;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA storlab TO tap_attacker;
GRANT EXECUTE ON ALL PROCEDURES IN SCHEMA storlab TO tap_attacker;
GRANT CREATE ON TABLESPACE lab_ram TO tap_attacker;
-- a reader of storlab's results, as pg_monitor's members are
GRANT pg_monitor TO tap_attacker;
-- the role's own schema, where pgbench -i (connecting as the role) puts its
-- tables; only that schema, so that pgbench never meets public's tables
CREATE SCHEMA tap_attacker AUTHORIZATION tap_attacker;
ALTER ROLE tap_attacker SET search_path = tap_attacker;
CREATE SCHEMA tap_evil AUTHORIZATION tap_attacker;

-- The shadows, made by the attacker itself.
SET ROLE tap_attacker;
CREATE TABLE tap_evil.calls (fn text, cur name, sess name);
GRANT INSERT, SELECT ON tap_evil.calls TO PUBLIC;
DO $$
DECLARE
  f record;
BEGIN
  -- name, argument types, return type, the real call
  FOR f IN SELECT * FROM (VALUES
      ('now', '', 'timestamptz', 'pg_catalog.now()'),
      ('clock_timestamp', '', 'timestamptz', 'pg_catalog.clock_timestamp()'),
      ('to_timestamp', 'a double precision', 'timestamptz', 'pg_catalog.to_timestamp(a)'),
      ('pg_backend_pid', '', 'integer', 'pg_catalog.pg_backend_pid()'),
      ('current_setting', 'a text', 'text', 'pg_catalog.current_setting(a)'),
      ('set_config', 'a text, b text, c boolean', 'text', 'pg_catalog.set_config(a, b, c)'),
      ('quote_ident', 'a text', 'text', 'pg_catalog.quote_ident(a)'),
      ('nextval', 'a regclass', 'bigint', 'pg_catalog.nextval(a)'),
      ('pg_size_bytes', 'a text', 'bigint', 'pg_catalog.pg_size_bytes(a)'),
      ('pg_table_size', 'a regclass', 'bigint', 'pg_catalog.pg_table_size(a)'),
      ('pg_relation_size', 'a regclass', 'bigint', 'pg_catalog.pg_relation_size(a)'),
      ('pg_relation_filepath', 'a regclass', 'text', 'pg_catalog.pg_relation_filepath(a)'),
      ('current_database', '', 'name', 'pg_catalog.current_database()'),
      ('pg_has_role', 'a oid, b text', 'boolean', 'pg_catalog.pg_has_role(a, b)'),
      ('pg_has_role', 'a oid, b text, c text', 'boolean', 'pg_catalog.pg_has_role(a, b, c)'),
      ('has_tablespace_privilege', 'a oid, b text', 'boolean', 'pg_catalog.has_tablespace_privilege(a, b)'),
      ('pg_my_temp_schema', '', 'oid', 'pg_catalog.pg_my_temp_schema()'),
      ('to_regclass', 'a text', 'regclass', 'pg_catalog.to_regclass(a)'),
      ('to_regrole', 'a text', 'regrole', 'pg_catalog.to_regrole(a)'),
      ('pg_sleep', 'a double precision', 'void', 'pg_catalog.pg_sleep(a)'),
      ('pg_current_wal_insert_lsn', '', 'pg_lsn', 'pg_catalog.pg_current_wal_insert_lsn()'),
      ('pg_options_to_table', 'a text[]', 'SETOF record', NULL),
      ('format', 'a text, b text, c text', 'text', 'pg_catalog.format(a, b, c)'),
      ('pg_partition_tree', 'a regclass', 'SETOF record', NULL)
    ) AS v(name, args, ret, real)
  LOOP
    IF f.real IS NULL THEN
      -- set-returning: record the call and return nothing
      EXECUTE format('CREATE FUNCTION tap_evil.%I(%s) RETURNS %s LANGUAGE plpgsql AS $b$
        BEGIN INSERT INTO tap_evil.calls VALUES (%L, current_user, session_user); RETURN; END $b$',
        f.name, f.args, f.ret, f.name);
    ELSE
      EXECUTE format('CREATE FUNCTION tap_evil.%I(%s) RETURNS %s LANGUAGE plpgsql AS $b$
        BEGIN INSERT INTO tap_evil.calls VALUES (%L, current_user, session_user); %s %s; END $b$',
        f.name, f.args, f.ret, f.name, CASE f.ret WHEN 'void' THEN 'PERFORM' ELSE 'RETURN' END, f.real);
    END IF;
  END LOOP;
  -- operators: =, <>, <, >, + and ~ on the types storlab's SQL compares
  FOR f IN SELECT * FROM (VALUES
      ('=', 'text', 'text', 'texteq'), ('=', 'name', 'name', 'nameeq'), ('=', 'oid', 'oid', 'oideq'),
      ('=', 'bigint', 'bigint', 'int8eq'), ('=', 'integer', 'integer', 'int4eq'),
      ('=', 'name', 'text', 'nameeqtext'), ('<>', 'text', 'text', 'textne'), ('<>', 'name', 'name', 'namene'),
      ('<>', 'integer', 'integer', 'int4ne'), ('<>', 'oid', 'oid', 'oidne'),
      ('>', 'timestamptz', 'timestamptz', 'timestamptz_gt'), ('<', 'timestamptz', 'timestamptz', 'timestamptz_lt'),
      ('>', 'integer', 'integer', 'int4gt'), ('<', 'oid', 'oid', 'oidlt'),
      ('~', 'text', 'text', 'textregexeq'), ('-', 'pg_lsn', 'pg_lsn', 'pg_lsn_mi'),
      ('+', 'timestamptz', 'interval', 'timestamptz_pl_interval'),
      ('-', 'timestamptz', 'interval', 'timestamptz_mi_interval')
    ) AS v(op, l, r, real)
  LOOP
    EXECUTE format('CREATE FUNCTION tap_evil.%I(a %s, b %s) RETURNS %s LANGUAGE plpgsql AS $b$
        BEGIN INSERT INTO tap_evil.calls VALUES (%L, current_user, session_user); RETURN pg_catalog.%I(a, b); END $b$',
      'op_' || f.real, f.l, f.r,
      (SELECT prorettype::regtype::text FROM pg_proc WHERE proname = f.real AND pronamespace = 'pg_catalog'::regnamespace LIMIT 1),
      f.op, f.real);
    EXECUTE format('CREATE OPERATOR tap_evil.%s (FUNCTION = tap_evil.%I, LEFTARG = %s, RIGHTARG = %s)',
      f.op, 'op_' || f.real, f.l, f.r);
  END LOOP;
END $$;
RESET ROLE;

-- Small, short probes: the settings are the superuser's to give.
SET storlab.suite_file_size = '4MB';
-- Young figures of every tablespace and pg_wal, so that the role's
-- compare_tablespaces() below reads them and probes nothing (it could not:
-- it may create in lab_ram only, and probing writes)
SELECT count(*) FROM storlab.compare_tablespaces('1 day', '50 ms');

-- From here on: the attacker, its hostile schema first.
SET ROLE tap_attacker;
SET search_path = tap_evil, pg_catalog, public;
SELECT count(*) FROM storlab.tablespaces();
SELECT (storlab.probe('lab_ram', 'randwrite', duration => '100 ms', file_size => 1048576, direct => false)).ops;
SELECT count(*) FROM storlab.fsync_cost('lab_ram', '20 ms');
SELECT count(*) FROM storlab.profile('lab_ram', '50 ms');
SELECT count(*) FROM storlab.compare_tablespaces('1 day', '50 ms');
-- PostgreSQL 18: the read path (its scratch table, scans and settings)
SELECT pg_catalog.current_setting('server_version_num')::int >= 180000 AS aio \gset
\if :aio
SELECT count(*) FROM storlab.probe_read_path('lab_ram', '{1,2}', 1048576, 1);
\endif
CREATE TABLE tap_attacker.tap_own (id int PRIMARY KEY, v text);
SELECT pg_catalog.clock_timestamp() AS before_moves \gset
SELECT count(*) FROM storlab.move('tap_attacker.tap_own', 'lab_ram', dry_run => true);
SELECT count(*) FROM storlab.move('tap_attacker.tap_own', 'lab_ram');
SELECT count(*) FROM storlab.apply_layout(NULL, 'pg_default', 'tap_attacker');
SELECT count(*) FROM storlab.layout('tap_attacker');
SELECT count(*) FROM storlab.restore_layout(:'before_moves');
SELECT count(*) FROM storlab.scripts();
SELECT storlab.bench_init(scale => 1) AS init_job \gset
CALL storlab.wait(:init_job);
SELECT storlab.bench_start('tpcb-like', clients => 1, jobs => 1, duration => '1 s') AS run_job \gset
SELECT * FROM storlab.job_status(:run_job);
CALL storlab.wait(:run_job);
-- every script, pgbench's and storlab's, as the role
SELECT string_agg(format('CALL storlab.bench(%L, 1, 1, ''1 s'');', name), E'\n' ORDER BY name) AS every_script
  FROM storlab.scripts() \gset
:every_script
CALL storlab.experiment('tap identity', '[{"name": "ram", "indexes": "lab_ram"}, {"name": "default", "indexes": "pg_default"}]',
                        'select-only', '{1}', 1, '1 s', 1, '0 s', 1) \gset
SELECT storlab.move_indexes_online('tap_attacker.pgbench_accounts', 'lab_ram') AS index_job \gset
CALL storlab.wait(:index_job);
SELECT storlab.bench_start('select-only', clients => 1, jobs => 1, duration => '20 s') AS own_job \gset
SELECT storlab.cancel(:own_job) AS cancelled_own \gset
-- reading: charts and advice
SELECT storlab.chart_svg('tablespaces') IS NOT NULL AS drawn, storlab.chart_svg('experiment', :experiment_id) IS NOT NULL AS drawn;
SELECT count(*) FROM storlab.recommend();
-- checks for CI: a check, a baseline and its regressions
SELECT count(*) FROM storlab.check('lab_ram', 'randread', 'iops', '>', 0, '50 ms', 1);
SELECT storlab.baseline('tap identity', '{lab_ram}', '50 ms', 2) IS NOT NULL AS taken;
SELECT count(*) FROM storlab.regressions('tap identity', duration => '50 ms', repetitions => 2);
-- deleting stored results is the owner's: refused before anything runs
SELECT pg_temp.sqlstate_of($$CALL storlab.prune('1 microsecond')$$) AS prune_state \gset
RESET search_path;
RESET ROLE;

SELECT is((SELECT count(*) FROM tap_evil.calls WHERE cur <> 'tap_attacker'), 0::bigint,
          'no shadow function or operator ever ran as another role');
SELECT is((SELECT string_agg(DISTINCT fn, ', ') FROM tap_evil.calls), NULL,
          'storlab''s SQL never reached the hostile schema at all');
SELECT is(:'prune_state'::text, '42501', 'a role granted EXECUTE on storlab.prune() may not prune (42501): it owns none of the results');
SELECT is((SELECT relowner::regrole::text FROM pg_class WHERE oid = 'tap_attacker.pgbench_accounts'::regclass),
          'tap_attacker', 'bench_init ran pgbench -i as the caller: it owns pgbench''s tables');
SELECT is((SELECT relowner::regrole::text FROM pg_class WHERE oid = 'tap_attacker.storlab_bench_append'::regclass),
          'tap_attacker', 'and storlab''s append table, made beside them');
SELECT is((SELECT string_agg(DISTINCT status, ',') FROM storlab.jobs WHERE id IN (:init_job, :run_job, :index_job)),
          'done', 'the role''s init, run and online index move all finished');
SELECT is((SELECT count(*) FROM storlab.bench_runs r JOIN storlab.jobs j ON j.id = r.id
            WHERE j.role = 'tap_attacker' AND j.created_at > :'t_start' AND r.tps > 0),
          (SELECT count(*) + 1 FROM storlab.scripts()), 'the role ran every script (and one more run), each stored');
SELECT is((SELECT (options->>'checkpoint_before')::boolean FROM storlab.bench_runs WHERE id = :run_job), false,
          'a role that may not CHECKPOINT runs without one, and the run says so');
SELECT is((SELECT count(*) FROM pg_indexes WHERE schemaname = 'tap_attacker' AND tablename = 'pgbench_accounts'
             AND tablespace = 'lab_ram'), 1::bigint, 'move_indexes_online moved its index, as the caller');
SELECT ok(:'cancelled_own', 'a role may cancel its own job');
SELECT is((SELECT count(*) FROM storlab.relocations WHERE moved_by = 'tap_attacker' AND moved_at > :'t_start'
              AND label IS DISTINCT FROM 'experiment ' || :experiment_id || ' (tap identity): layout ram'
              AND label IS DISTINCT FROM 'experiment ' || :experiment_id || ' (tap identity): layout default'),
          5::bigint, 'its five moves are recorded under its name');
SELECT count(*) FROM storlab.experiment_io(:experiment_id);
SELECT is((SELECT status || ', ' || runs FROM storlab.experiments, storlab.experiment_report(:experiment_id)
            WHERE id = :experiment_id AND layout = 'default'), 'done, 1',
          'its experiment ran, as the role (its report is for readers of storlab''s tables: pg_monitor)');
SELECT is((SELECT count(*) FROM storlab.relocations WHERE moved_by = 'tap_attacker'
             AND label LIKE 'experiment ' || :experiment_id || ' (tap identity): layout %'),
          10::bigint, 'and moved its own indexes there and back, under its name');

-- Privileges hold: another role's job, a superuser's table. (The
-- superuser's job starts only now: jobs on one database's pgbench tables
-- exclude each other.)
CREATE FUNCTION pg_temp.ended(job bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. 100 LOOP
    IF (SELECT status FROM storlab.jobs WHERE id = job) IN ('done', 'failed', 'cancelled') THEN RETURN true; END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN false;
END $$;
SELECT pg_temp.ended(:own_job);
SELECT storlab.bench_init(scale => 1) AS su_init \gset
CALL storlab.wait(:su_init);
SELECT storlab.bench_start('select-only', clients => 1, jobs => 1, duration => '20 s') AS su_job \gset
SET ROLE tap_attacker;
SELECT throws_ok(format('SELECT storlab.cancel(%s)', :su_job), '42501', NULL,
                 'a role cannot cancel a job another role started');
SELECT throws_ok(format('SELECT storlab.stop_now(%s)', :su_job), '42501', NULL,
                 'nor stop it at once');
SELECT throws_ok($$SELECT * FROM storlab.move('public.pgbench_accounts', 'lab_ram')$$, '42501', NULL,
                 'nor move a relation it does not own');
SELECT throws_ok($$SELECT storlab.bench_start('select-only', 1, 1, '1 s', options => '{"checkpoint_before": true}')$$,
                 '42501', NULL, 'nor ask for a CHECKPOINT it could not run by hand');
RESET ROLE;
SELECT ok(storlab.cancel(:su_job), 'the superuser cancels its own job');

-- A probe writes its scratch file into the tablespace: without CREATE on
-- it, every path that would write there is refused (42501), as CREATE
-- TABLE ... TABLESPACE is, and nothing is stored or left behind. The
-- database's default tablespace needs no grant, as for CREATE TABLE.
SELECT storlab.baseline('tap identity disk', '{lab_disk}', '50 ms', 2) IS NOT NULL AS taken;
SELECT count(*) AS probes_before FROM storlab.probes \gset
SET ROLE tap_attacker;
SELECT is(has_tablespace_privilege('lab_disk', 'CREATE'), false, 'the role has no CREATE on lab_disk');
SELECT throws_ok($$CREATE TABLE tap_attacker.nope (id int) TABLESPACE lab_disk$$, '42501', NULL,
                 'so it cannot create a table there');
SELECT throws_ok($$SELECT storlab.probe('lab_disk', 'randwrite', duration => '50 ms', file_size => 1048576)$$, '42501',
                 'permission denied for tablespace lab_disk', 'nor probe it');
SELECT throws_ok($$SELECT * FROM storlab.fsync_cost('lab_disk', '20 ms')$$, '42501', NULL, 'nor run fsync_cost there');
SELECT throws_ok($$SELECT * FROM storlab.profile('lab_disk', '20 ms')$$, '42501', NULL, 'nor profile it');
-- one call names every grant the role lacks, not one a call
RESET ROLE;
CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE m text; h text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, h = PG_EXCEPTION_HINT;
  RETURN SQLSTATE || ': ' || m || ' HINT: ' || h;
END $f$;
SELECT CASE WHEN count(*) > 1 THEN 'tablespaces ' ELSE 'tablespace ' END
         || regexp_replace(string_agg(spcname, ', ' ORDER BY spcname), ', ([^,]*)$', ' and \1') AS lab_list,
       string_agg(spcname, ', ' ORDER BY spcname) AS lab_grants
  FROM pg_tablespace WHERE spcname LIKE 'lab\_%' AND NOT has_tablespace_privilege('tap_attacker', oid, 'CREATE') \gset
SET ROLE tap_attacker;
SELECT is(pg_temp.error_of($$SELECT * FROM storlab.profile(NULL, '20 ms')$$),
          format('42501: permission denied for %s, and to probe pg_wal HINT: GRANT CREATE ON TABLESPACE %s TO the role; GRANT pg_write_server_files TO the role; (or let a superuser probe pg_wal)',
                 :'lab_list', :'lab_grants'),
          'nor profile every tablespace (it may create in one only): one error names every grant it lacks');
SELECT throws_ok($$SELECT * FROM storlab.check('lab_disk', 'randread', 'iops', '>', 0, '50 ms', 5)$$, '42501', NULL,
                 'nor check it where the check must probe (more repetitions than young probes)');
SELECT throws_ok($$SELECT storlab.baseline('tap denied', '{lab_disk}', '50 ms', 2)$$, '42501', NULL,
                 'nor take a baseline of it');
SELECT throws_ok($$SELECT * FROM storlab.regressions('tap identity disk', duration => '50 ms', repetitions => 2)$$,
                 '42501', NULL, 'nor measure it again against a baseline');
RESET ROLE;
SELECT coalesce(pg_catalog.pg_sequence_last_value('storlab.probes_id_seq'), 0) AS probe_seq_before \gset
-- compare_tablespaces() measures each volume (filesystem) once, through a
-- tablespace on it the caller may write to: pg_default's volume (lab_disk
-- and pg_wal in the lab) through pg_default, which needs no grant. It
-- names the grants of every other volume it would measure.
SELECT CASE WHEN count(*) > 1 THEN 'tablespaces ' ELSE 'tablespace ' END
         || regexp_replace(string_agg(c.tablespace, ', ' ORDER BY c.tablespace), ', ([^,]*)$', ' and \1') AS cmp_list,
       string_agg(c.tablespace, ', ' ORDER BY c.tablespace) AS cmp_grants
  FROM storlab.compare_tablespaces(measure => false) c JOIN pg_tablespace t ON t.spcname = c.tablespace
 WHERE coalesce(c.same_volume_as, c.tablespace) <> 'pg_default'
   AND NOT has_tablespace_privilege('tap_attacker', t.oid, 'CREATE') \gset
SELECT (SELECT coalesce(same_volume_as, tablespace) FROM storlab.compare_tablespaces(measure => false)
         WHERE tablespace = 'pg_wal') = 'pg_default' AS wal_on_default \gset
SET ROLE tap_attacker;
SELECT is(pg_temp.error_of($$SELECT * FROM storlab.compare_tablespaces('1 ms', '50 ms')$$),
          CASE WHEN :'wal_on_default'::boolean
               THEN format('42501: permission denied for %s HINT: GRANT CREATE ON TABLESPACE %s TO the role;', :'cmp_list', :'cmp_grants')
               ELSE format('42501: permission denied for %s, and to probe pg_wal HINT: GRANT CREATE ON TABLESPACE %s TO the role; GRANT pg_write_server_files TO the role; (or let a superuser probe pg_wal)',
                           :'cmp_list', :'cmp_grants') END,
          'nor have compare_tablespaces() probe them: one error names every grant it lacks');
RESET ROLE;
SELECT is(coalesce(pg_catalog.pg_sequence_last_value('storlab.probes_id_seq'), 0), :probe_seq_before::bigint,
          'compare_tablespaces() refused before probing anything, not after probing the tablespaces it may write');
SET ROLE tap_attacker;
SELECT throws_ok($$SELECT storlab.probe('pg_wal', 'wal', duration => '50 ms', file_size => 1048576)$$, '42501',
                 'permission denied to probe pg_wal', 'pg_wal is the server''s: a role that is not pg_write_server_files may not probe it');
SELECT ok((storlab.probe('pg_default', 'randread', duration => '50 ms', file_size => 1048576, direct => false)).ops > 0,
          'the database''s default tablespace needs no grant, as for CREATE TABLE');
RESET ROLE;
SELECT is((SELECT count(*) FROM storlab.probes), :probes_before + 1::bigint,
          'of all that, only the pg_default probe was stored');
GRANT pg_write_server_files TO tap_attacker;
SET ROLE tap_attacker;
SELECT ok((storlab.probe('pg_wal', 'wal', duration => '50 ms', file_size => 1048576)).ops > 0,
          'a member of pg_write_server_files may probe pg_wal');
RESET ROLE;
REVOKE pg_write_server_files FROM tap_attacker;
SELECT is(pg_temp.scratch_files(), 0::bigint, 'and no scratch file is left anywhere');

SELECT * FROM finish();

-- Clean up once the cancelled jobs have ended (pgbench's tables in public stay).
DO $$ BEGIN
  FOR i IN 1 .. 100 LOOP
    EXIT WHEN NOT EXISTS (SELECT FROM storlab.jobs WHERE status IN ('queued', 'running', 'cancelling'));
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SET client_min_messages = warning;
DELETE FROM storlab.baselines WHERE label = 'tap identity disk';
DROP SCHEMA tap_evil, tap_attacker CASCADE;
DROP OWNED BY tap_attacker CASCADE;
DROP ROLE tap_attacker;
