-- Retention: storlab.prune() deletes what is older than its cutoff and
-- nothing else, whole or not at all, and only for a superuser or storlab's
-- owner. Bad ages and callers are refused before anything is deleted; a
-- cancel keeps the batches already committed and rolls back the one under
-- way; two prunes at once neither deadlock nor count a row twice; a
-- caller's search_path decides nothing; baselines, regressions() and the
-- report of a kept experiment are untouched; the relocation history
-- refuses to be undone across the horizon; a running job stays whatever
-- the cutoff.
--
-- The prune commits, so this file commits. Its rows are dated 2001 and it
-- prunes with a cutoff in 2002: the lab's other results are far younger.
-- It first removes what an interrupted earlier run may have left, and
-- at its end its rows and its prunes' log (the horizon it left).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
DELETE FROM storlab.baselines WHERE label = 'tap prune';
DELETE FROM storlab.probes WHERE started_at < '2002-01-01';
DELETE FROM storlab.job_records WHERE id BETWEEN 960000 AND 960999;
DELETE FROM storlab.relocations WHERE batch_id BETWEEN 960000 AND 960999;
DELETE FROM storlab.prunes WHERE cutoff < '2002-01-02';
DROP SCHEMA IF EXISTS tap_prune_evil CASCADE;
DROP TABLE IF EXISTS public.tap_prune_t;
DO $$ BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'tap_prune_granted') THEN
    EXECUTE 'DROP OWNED BY tap_prune_granted CASCADE';
    DROP ROLE tap_prune_granted;
  END IF;
END $$;
DROP ROLE IF EXISTS tap_prune_nobody;
DO $$ BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'tap_prune_docs') THEN
    EXECUTE 'DROP OWNED BY tap_prune_docs CASCADE';
    DROP ROLE tap_prune_docs;
  END IF;
END $$;
DROP DATABASE IF EXISTS storlab_prune_jobs WITH (FORCE);
RESET client_min_messages;
SELECT plan(45);
\ir lib/probe_helpers.sql

-- The age that puts the cutoff at the start of 2002.
SELECT now() - timestamptz '2002-01-01' AS age \gset
SELECT format('host=%s port=%s dbname=%s user=%s', split_part(current_setting('unix_socket_directories'), ',', 1),
              current_setting('port'), current_database(), current_user) AS remote \gset

-- Old results. Probes: 12,000 copies of one measured now (three batches
-- of 5,000), and a baseline's probes, aged to 2001.
SET client_min_messages = warning;
SET storlab.suite_file_size = '4MB';
SELECT (storlab.probe('lab_ram', 'randread', duration => '100 ms', file_size => 1048576, direct => false)).id AS probe_id \gset
SELECT storlab.baseline('tap prune', '{lab_ram}', '50 ms', 2) AS baseline_id \gset
RESET client_min_messages;
CREATE FUNCTION pg_temp.old_probes(n int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO storlab.probes (tablespace, location, workload, block_size, workers, direct, sync_method, file_size,
                              duration_s, ops, bytes, iops, mib_s, histogram, env, label, system_identifier,
                              hostname, started_at)
  SELECT tablespace, location, workload, block_size, workers, direct, sync_method, file_size, duration_s, ops, bytes,
         iops, mib_s, histogram, env, 'tap prune', system_identifier, hostname,
         timestamptz '2001-01-01' + g * interval '1 minute'
    FROM storlab.probes, generate_series(1, n) g
   WHERE id = (SELECT min(id) FROM storlab.probes WHERE label IS DISTINCT FROM 'tap prune' AND suite IS NULL
                  AND started_at > '2002-01-01')
$$;
SELECT pg_temp.old_probes(12000);
UPDATE storlab.probes SET started_at = started_at - (now() - timestamptz '2001-06-01')
 WHERE id IN (SELECT l.probe_id FROM storlab.baseline_probes l JOIN storlab.baselines b ON b.id = l.baseline_id
               WHERE b.label = 'tap prune');
UPDATE storlab.baselines SET taken_at = '2001-06-01' WHERE label = 'tap prune';
SELECT count(*) AS baseline_probes FROM storlab.baseline_probes l JOIN storlab.baselines b ON b.id = l.baseline_id
 WHERE b.label = 'tap prune' \gset

-- Jobs: a benchmark (a run, 100 progress rows); an experiment of 2001
-- (sizes, a warm-up and three runs, 10 progress rows each); an experiment
-- queued in 2001 that finished now (kept, with a report); an experiment
-- stopped for pg_wal in 2001 (kept); a cancelled bench_init; a benchmark
-- "running" since 2001 whose worker is gone (failed, as storlab.jobs says).
INSERT INTO storlab.job_records (id, kind, status, args, worker_pid, created_at, started_at, finished_at)
OVERRIDING SYSTEM VALUE
VALUES (960001, 'bench', 'done', '{}', NULL, '2001-02-01', '2001-02-01', '2001-02-01 00:01'),
       (960002, 'experiment', 'failed', '{}', NULL, '2001-03-01', '2001-03-01', '2001-03-01 01:00'),
       (960003, 'experiment', 'done',
        '{"kind": "experiment", "name": "tap prune kept", "layouts": [
            {"name": "base", "placement": {"tables": "lab_disk", "indexes": "lab_disk", "temp": null, "settings": []}},
            {"name": "fast", "placement": {"tables": "lab_disk", "indexes": "lab_ram", "temp": null, "settings": []}}],
          "script": "tpcb-like", "clients": [8], "jobs": 2, "duration_s": 10, "repetitions": 3, "warmup_s": 2,
          "scale": 1, "fillfactors": [100], "order": "alternating", "lock_timeout_ms": 5000, "run": {}}',
        NULL, '2001-04-01', now() - interval '1 hour', now()),
       (960004, 'experiment', 'done', '{}', NULL, '2001-05-01', '2001-05-01', '2001-05-01 00:30'),
       (960005, 'bench_init', 'cancelled', '{}', NULL, '2001-06-01', NULL, '2001-06-01'),
       (960006, 'bench', 'running', '{}', 2147483000, '2001-07-01', '2001-07-01', NULL);
INSERT INTO storlab.experiment_records (id, name, steps_total, current_step, system_identifier, hostname, wal_needed)
VALUES (960002, 'tap prune gone', 8, 5, 0, 'tap', NULL),
       (960003, 'tap prune kept', 8, 8, 0, 'tap', NULL),
       (960004, 'tap prune waiting for WAL', 8, 3, 0, 'tap', 'lab_disk');
INSERT INTO storlab.experiment_sizes (experiment_id, fillfactor, layout, relation_name, kind, tablespace,
                                      logical_bytes, allocated_bytes)
VALUES (960002, 100, 'base', 'pgbench_accounts', 'table', 'lab_disk', 1000, 1000),
       (960002, 100, 'base', 'pgbench_accounts_pkey', 'index', 'lab_disk', 200, 200),
       (960003, 100, 'base', 'pgbench_accounts', 'table', 'lab_disk', 1000, 1000);
INSERT INTO storlab.bench_runs (id, job_id, experiment_id, experiment_layout, fillfactor, repetition, warmup, script,
                                clients, jobs, duration_s, tps, transactions, system_identifier, hostname, started_at)
SELECT id, job, CASE WHEN job IN (960002, 960003, 960004) THEN job END, layout, 100, rep, warmup, 'tpcb-like',
       8, 2, 10, tps, tps * 10, 0, 'tap', '2001-01-01'
  FROM (VALUES (960101, 960001, NULL, NULL, false, 500.0),
               (960201, 960002, 'base', 1, true, 400.0), (960202, 960002, 'base', 1, false, 410.0),
               (960203, 960002, 'fast', 1, false, 420.0), (960204, 960002, 'base', 2, false, 430.0),
               (960301, 960003, 'base', 1, false, 100.0), (960302, 960003, 'fast', 1, false, 120.0),
               (960303, 960003, 'fast', 2, false, 125.0), (960304, 960003, 'base', 2, false, 110.0),
               (960305, 960003, 'base', 3, false, 105.0), (960306, 960003, 'fast', 3, false, 130.0),
               (960401, 960004, 'base', 1, false, 300.0)) AS v(id, job, layout, rep, warmup, tps);
INSERT INTO storlab.bench_progress (run_id, t_s, tps)
SELECT 960101, t, 500 FROM generate_series(1, 100) t
UNION ALL
SELECT r, t, 400 FROM generate_series(960201, 960204) r, generate_series(1, 10) t;

-- Relocations: a batch of 2001, and two batches that began in 2001 and
-- ended after the cutoff (kept whole), one numbered before it.
CREATE TABLE public.tap_prune_t (id int);
INSERT INTO storlab.relocations (batch_id, relation, relation_name, kind, from_tablespace, to_tablespace, bytes,
                                 statement, moved_by, moved_at, system_identifier, hostname)
SELECT b, 'public.tap_prune_t'::regclass, 'public.tap_prune_t', 'table', f, t, 0, 'ALTER TABLE ...', current_user, at,
       (SELECT system_identifier FROM pg_control_system()), 'tap'
  FROM (VALUES (960000, 'pg_default', 'lab_disk', timestamptz '2001-07-01'),
               (960000, 'lab_disk', 'pg_default', now()),
               (960001, 'pg_default', 'lab_disk', timestamptz '2001-08-01'),
               (960001, 'lab_disk', 'pg_default', timestamptz '2001-08-01 00:01'),
               (960002, 'pg_default', 'lab_disk', timestamptz '2001-09-01'),
               (960002, 'lab_disk', 'pg_default', now())) AS v(b, f, t, at);

CREATE TEMP TABLE held AS
SELECT (SELECT count(*) FROM storlab.probes WHERE label = 'tap prune') AS probes,
       (SELECT count(*) FROM storlab.job_records WHERE id BETWEEN 960000 AND 960999) AS jobs,
       (SELECT count(*) FROM storlab.bench_runs WHERE id BETWEEN 960000 AND 960999) AS runs,
       (SELECT count(*) FROM storlab.relocations WHERE batch_id BETWEEN 960000 AND 960999) AS relocations;
CREATE TEMP VIEW holds AS
SELECT (SELECT count(*) FROM storlab.probes WHERE label = 'tap prune') AS probes,
       (SELECT count(*) FROM storlab.job_records WHERE id BETWEEN 960000 AND 960999) AS jobs,
       (SELECT count(*) FROM storlab.bench_runs WHERE id BETWEEN 960000 AND 960999) AS runs,
       (SELECT count(*) FROM storlab.relocations WHERE batch_id BETWEEN 960000 AND 960999) AS relocations;
SELECT md5(string_agg(r::text, '|' ORDER BY r::text)) AS kept_report FROM storlab.experiment_report(960003) r \gset
SELECT count(*) AS kept_report_rows FROM storlab.experiment_report(960003) \gset
SELECT count(*) AS prunes_before FROM storlab.prunes \gset

-- 1. Bad ages: 22023, before anything is deleted.
SELECT throws_ok('CALL storlab.prune(NULL)', '22023', NULL, 'a NULL age is 22023');
SELECT throws_ok($$CALL storlab.prune('0 s')$$, '22023', NULL, 'a zero age is 22023');
SELECT throws_ok($$CALL storlab.prune('-1 day')$$, '22023', NULL, 'a negative age is 22023');
SELECT throws_ok($$CALL storlab.prune('1 mon -30 days')$$, '22023', NULL,
                 'an age that adds up to zero (a month is 30 days) is 22023');
-- beyond 64 bits of microseconds: the sign is kept, a negative age stays
-- negative (it once became the largest positive one, and deleted
-- everything), and no age is over 1000 years
SELECT throws_ok($$CALL storlab.prune('-1000000 years')$$, '22023', NULL, 'a negative age beyond 64 bits is 22023');
SELECT throws_ok($$CALL storlab.prune('1000000 years')$$, '22023', NULL, 'an age beyond 1000 years is 22023');
-- PostgreSQL 17 has infinite intervals: neither is an age
SELECT CASE WHEN current_setting('server_version_num')::int >= 170000
            THEN throws_ok($$CALL storlab.prune('-infinity')$$, '22023', NULL, '''-infinity'' is 22023')
            ELSE pass('''-infinity'' is no interval before PostgreSQL 17') END;
SELECT CASE WHEN current_setting('server_version_num')::int >= 170000
            THEN throws_ok($$CALL storlab.prune('infinity', dry_run => true)$$, '22023', NULL, '''infinity'' is 22023')
            ELSE pass('''infinity'' is no interval before PostgreSQL 17') END;
SELECT throws_like($$CALL storlab.prune('-1 day', dry_run => true)$$, '%positive age%', 'a dry run checks the age too');

-- 2. Only a superuser or storlab's owner: a role granted EXECUTE on all
-- three and DELETE on every table is refused (42501), and a role with no
-- grant too; nothing is deleted either way.
CREATE ROLE tap_prune_granted;
GRANT EXECUTE ON PROCEDURE storlab.prune(interval, boolean, bigint, bigint, bigint, bigint, bigint, bigint, bigint)
  TO tap_prune_granted;
GRANT EXECUTE ON FUNCTION storlab.prune_cutoff(interval, boolean), storlab.prune_batch(timestamptz, boolean, bigint)
  TO tap_prune_granted;
GRANT SELECT, DELETE ON ALL TABLES IN SCHEMA storlab TO tap_prune_granted;
CREATE ROLE tap_prune_nobody;
SET ROLE tap_prune_granted;
SELECT throws_ok(format('CALL storlab.prune(%L)', :'age'), '42501', 'permission denied to prune storlab''s results',
                 'a role granted EXECUTE and DELETE, but neither superuser nor owner, may not prune: 42501');
SELECT throws_ok(format('CALL storlab.prune(%L, dry_run => true)', :'age'), '42501', NULL, 'nor dry-run one');
SELECT throws_ok($$SELECT storlab.prune_batch(now(), false, 0)$$, '22023', NULL,
                 'nor delete a batch outside a prune under way (22023)');
RESET ROLE;
SET ROLE tap_prune_nobody;
SELECT throws_ok(format('CALL storlab.prune(%L)', :'age'), '42501', NULL, 'a role with no grant: 42501');
RESET ROLE;
-- granted EXECUTE on the procedure alone, as docs/prune.md shows the
-- GRANT: told storlab's own reason, not "permission denied for function
-- prune_cutoff", an internal name
CREATE ROLE tap_prune_docs;
GRANT EXECUTE ON PROCEDURE storlab.prune TO tap_prune_docs;
SET ROLE tap_prune_docs;
SELECT throws_ok(format('CALL storlab.prune(%L)', :'age'), '42501', 'permission denied to prune storlab''s results',
                 'a role granted EXECUTE on prune as the docs show it is told who may prune');
RESET ROLE;
SELECT is((SELECT h::text FROM holds h), (SELECT h::text FROM held h), 'nothing was deleted by the refused calls');
SELECT is((SELECT count(*) FROM storlab.prunes), :prunes_before::bigint, 'and none was logged');

-- 3. Inside a transaction block a prune cannot commit between batches:
-- 25001 before anything (a dry run is fine there).
BEGIN;
SELECT is(pg_temp.sqlstate_of(format('CALL storlab.prune(%L)', :'age')), '25001',
          'a prune inside a transaction block is refused (25001)');
SELECT is(pg_temp.sqlstate_of(format('CALL storlab.prune(%L, dry_run => true)', :'age')), 'no error',
          'a dry run works inside one');
COMMIT;

-- 4. The dry run counts exactly what the prune will delete.
CALL storlab.prune(:'age', dry_run => true) \gset dry_
SELECT is(ARRAY[:dry_probes, :dry_jobs, :dry_bench_runs, :dry_bench_progress, :dry_experiments,
                :dry_experiment_sizes, :dry_relocations]::bigint[],
          ARRAY[12000, 4, 5, 140, 1, 2, 2]::bigint[],
          'dry run: 12,000 probes; 4 jobs (bench, experiment, cancelled init, dead worker) with 5 runs and 140 progress rows; 1 experiment, 2 sizes; 1 relocation batch of 2 rows');
SELECT is((SELECT h::text FROM holds h), (SELECT h::text FROM held h), 'and deletes nothing');

-- 5. A cancel: another session holds job 960001's row, so the prune waits
-- in its jobs batch until its statement_timeout. The probe batches it
-- committed stay deleted; the jobs batch is rolled back whole.
SELECT dblink_connect('holder', :'remote');
SELECT dblink_exec('holder', 'BEGIN');
SELECT count(*) AS locked FROM dblink('holder', 'SELECT id FROM storlab.job_records WHERE id = 960001 FOR UPDATE') AS t(id bigint) \gset
SELECT dblink_connect('pruner', :'remote');
SELECT dblink_exec('pruner', 'SET statement_timeout = ''3 s''');
SELECT is(pg_temp.sqlstate_of(format($$SELECT dblink_exec('pruner', %L)$$, format('CALL storlab.prune(%L)', :'age'))),
          '57014', 'the prune is cancelled by its statement_timeout while a job row is locked');
SELECT dblink_exec('holder', 'ROLLBACK');
SELECT dblink_disconnect('holder');
SELECT dblink_disconnect('pruner');
SELECT is((SELECT ARRAY[probes, jobs] FROM holds), ARRAY[0, (SELECT jobs FROM held)]::bigint[],
          'the probes'' batches committed before the cancel stay deleted; no job went');
SELECT is((SELECT ARRAY[probes, jobs, bench_runs, bench_progress, experiments] FROM storlab.prunes ORDER BY id DESC LIMIT 1),
          ARRAY[12000, 0, 0, 0, 0]::bigint[], 'storlab.prunes counts what the committed batches deleted');
SELECT ok((SELECT finished_at IS NULL FROM storlab.prunes ORDER BY id DESC LIMIT 1), 'and says the prune did not finish');

-- 6. Two prunes at once, one of them under a hostile search_path: 12,000
-- probes more, two sessions, no deadlock, every row counted once.
SELECT pg_temp.old_probes(12000);
CREATE SCHEMA tap_prune_evil;
CREATE TABLE tap_prune_evil.calls (fn text);
DO $$
DECLARE
  f record;
BEGIN
  FOR f IN SELECT * FROM (VALUES
      ('now', '', 'timestamptz', 'pg_catalog.now()'),
      ('clock_timestamp', '', 'timestamptz', 'pg_catalog.clock_timestamp()'),
      ('hashtextextended', 'a text, b bigint', 'bigint', 'pg_catalog.hashtextextended(a, b)'),
      ('pg_advisory_xact_lock', 'a bigint', 'void', 'pg_catalog.pg_advisory_xact_lock(a)'),
      ('cardinality', 'a anyarray', 'integer', 'pg_catalog.cardinality(a)')
    ) AS v(name, args, ret, real)
  LOOP
    EXECUTE format('CREATE FUNCTION tap_prune_evil.%I(%s) RETURNS %s LANGUAGE plpgsql AS $b$
      BEGIN INSERT INTO tap_prune_evil.calls VALUES (%L); %s %s; END $b$',
      f.name, f.args, f.ret, f.name, CASE f.ret WHEN 'void' THEN 'PERFORM' ELSE 'RETURN' END, f.real);
  END LOOP;
  FOR f IN SELECT * FROM (VALUES
      ('=', 'bigint', 'bigint', 'int8eq'), ('<', 'timestamptz', 'timestamptz', 'timestamptz_lt'),
      ('+', 'bigint', 'bigint', 'int8pl'), ('-', 'timestamptz', 'interval', 'timestamptz_mi_interval'),
      ('>=', 'timestamptz', 'timestamptz', 'timestamptz_ge'), ('<', 'bigint', 'bigint', 'int8lt'))
    AS v(op, l, r, real)
  LOOP
    EXECUTE format('CREATE FUNCTION tap_prune_evil.%I(a %s, b %s) RETURNS %s LANGUAGE plpgsql AS $b$
      BEGIN INSERT INTO tap_prune_evil.calls VALUES (%L); RETURN pg_catalog.%I(a, b); END $b$',
      'op_' || f.real, f.l, f.r,
      (SELECT prorettype::regtype::text FROM pg_proc WHERE proname = f.real AND pronamespace = 'pg_catalog'::regnamespace),
      f.op, f.real);
    EXECUTE format('CREATE OPERATOR tap_prune_evil.%s (FUNCTION = tap_prune_evil.%I, LEFTARG = %s, RIGHTARG = %s)',
      f.op, 'op_' || f.real, f.l, f.r);
  END LOOP;
END $$;
GRANT USAGE ON SCHEMA tap_prune_evil TO PUBLIC;
GRANT INSERT ON tap_prune_evil.calls TO PUBLIC;
SELECT dblink_connect('other', :'remote');
SELECT dblink_send_query('other', format('CALL storlab.prune(%L)', :'age'));
SET search_path = tap_prune_evil, pg_catalog, public;
CALL storlab.prune(:'age') \gset mine_
RESET search_path;
SELECT * FROM dblink_get_result('other') AS r(probes bigint, jobs bigint, bench_runs bigint, bench_progress bigint,
                                               experiments bigint, experiment_sizes bigint, relocations bigint) \gset other_
SELECT dblink_disconnect('other');
SELECT is(ARRAY[:mine_probes + :other_probes, :mine_jobs + :other_jobs, :mine_bench_runs + :other_bench_runs,
                :mine_bench_progress + :other_bench_progress, :mine_experiments + :other_experiments,
                :mine_experiment_sizes + :other_experiment_sizes, :mine_relocations + :other_relocations]::bigint[],
          ARRAY[12000, 4, 5, 140, 1, 2, 2]::bigint[],
          'two prunes at once: both finish, and together they counted every row once');
SELECT diag(format('this session deleted %s probes and %s jobs, the other %s and %s',
                   :mine_probes, :mine_jobs, :other_probes, :other_jobs));
SELECT is((SELECT count(*) FROM storlab.prunes WHERE finished_at IS NOT NULL AND id > (SELECT max(id) - 2 FROM storlab.prunes)),
          2::bigint, 'both are logged as finished');
SELECT is((SELECT string_agg(DISTINCT fn, ', ') FROM tap_prune_evil.calls), NULL,
          'the hostile search_path''s functions and operators never ran');

-- 7. What stayed.
SELECT is((SELECT probes FROM holds), 0::bigint, 'every old probe no baseline refers to went');
SELECT is((SELECT count(*) FROM storlab.baseline_probes l JOIN storlab.baselines b ON b.id = l.baseline_id
            JOIN storlab.probes p ON p.id = l.probe_id WHERE b.label = 'tap prune' AND p.started_at < '2002-01-01'),
          :baseline_probes::bigint, 'the baseline''s probes of 2001 stayed');
SET client_min_messages = warning;
SELECT lives_ok($$SELECT count(*) FROM storlab.regressions('tap prune', duration => '50 ms', repetitions => 2)$$,
                'regressions() still compares with the baseline after the prune');
RESET client_min_messages;
SELECT is((SELECT array_agg(id ORDER BY id) FROM storlab.job_records WHERE id BETWEEN 960000 AND 960999),
          '{960003,960004}'::bigint[], 'the jobs left are the experiment finished now and the one waiting for pg_wal');
SELECT is((SELECT count(*) FROM storlab.bench_runs WHERE id BETWEEN 960000 AND 960999 AND job_id NOT IN (960003, 960004))
          + (SELECT count(*) FROM storlab.bench_progress WHERE run_id BETWEEN 960000 AND 960999 AND run_id NOT BETWEEN 960300 AND 960499)
          + (SELECT count(*) FROM storlab.experiment_sizes WHERE experiment_id = 960002)
          + (SELECT count(*) FROM storlab.experiment_records WHERE id = 960002),
          0::bigint, 'the experiment of 2001 went whole: its row, sizes, runs (the warm-up too) and progress rows');
SELECT is((SELECT count(*) FROM storlab.bench_runs WHERE experiment_id IN (960003, 960004)), 7::bigint,
          'the kept experiments keep every run');
SELECT is((SELECT md5(string_agg(r::text, '|' ORDER BY r::text)) FROM storlab.experiment_report(960003) r), :'kept_report',
          'the kept experiment''s report is unchanged');
SELECT cmp_ok(:kept_report_rows::int, '>', 0, 'and it has rows');
SELECT is((SELECT array_agg(batch_id ORDER BY batch_id) FROM storlab.relocations WHERE batch_id BETWEEN 960000 AND 960999),
          '{960000,960000,960002,960002}'::bigint[], 'the relocation batches that ended after the cutoff stay whole');

-- 8. The horizon: no undo across it.
SELECT throws_like('SELECT * FROM storlab.undo_batch(960001)', 'cannot undo relocation batch 960001: it is not in the history any more, which storlab.prune cut at %',
                   'undo_batch of a pruned batch is refused, naming the horizon');
SELECT is(pg_temp.sqlstate_of('SELECT * FROM storlab.undo_batch(960001)'), '22023', 'with 22023');
SELECT is(pg_temp.sqlstate_of($$SELECT * FROM storlab.restore_layout('2001-01-01')$$), '22023',
          'restore_layout to a time before the horizon: 22023');
SELECT throws_like('SELECT * FROM storlab.undo_batch(960000)', 'cannot undo relocation batch 960000: storlab.prune deleted later batches%',
                   'undo_batch of a kept batch numbered before a pruned one is refused too (the later batch may have moved its relations again)');
SELECT is(pg_temp.sqlstate_of('SELECT * FROM storlab.undo_batch(960999)'), '42704',
          'a batch after every pruned one that never existed is still 42704');

-- 9. A running job is never deleted, whatever the age: in a database of
-- its own, a real benchmark runs while everything older than a
-- microsecond is pruned; its finished bench_init goes, it stays, and once
-- it has finished, the next prune takes it with its run and progress rows.
CREATE DATABASE storlab_prune_jobs;
SELECT dblink_connect('jobs', format('host=%s port=%s dbname=storlab_prune_jobs user=%s',
                                     split_part(current_setting('unix_socket_directories'), ',', 1),
                                     current_setting('port'), current_user));
SELECT dblink_exec('jobs', 'SET client_min_messages = warning');
SELECT dblink_exec('jobs', 'CREATE EXTENSION storlab');
SELECT id AS init_job FROM dblink('jobs', 'SELECT storlab.bench_init(scale => 1)') AS t(id bigint) \gset
SELECT dblink_exec('jobs', format('CALL storlab.wait(%s)', :init_job));
SELECT id AS run_job FROM dblink('jobs', $$SELECT storlab.bench_start('select-only', 1, 1, '6 s')$$) AS t(id bigint) \gset
CREATE FUNCTION pg_temp.remote_status(job bigint) RETURNS text LANGUAGE sql AS $$
  SELECT s FROM dblink('jobs', format('SELECT status FROM storlab.jobs WHERE id = %s', job)) AS t(s text)
$$;
SELECT set_config('prune_tap.run_job', :'run_job', false) IS NOT NULL AS noted \gset
DO $$ BEGIN
  FOR i IN 1 .. 100 LOOP
    EXIT WHEN pg_temp.remote_status(current_setting('prune_tap.run_job')::bigint) = 'running';
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT count(*) AS pruned FROM dblink('jobs', $$CALL storlab.prune('1 microsecond')$$)
  AS t(p bigint, j bigint, r bigint, g bigint, e bigint, z bigint, l bigint) \gset
SELECT is(pg_temp.remote_status(:run_job), 'running', 'a running job stays, however young the cutoff');
SELECT is(pg_temp.remote_status(:init_job), NULL, 'while the finished bench_init went');
SELECT dblink_exec('jobs', format('CALL storlab.wait(%s)', :run_job));
SELECT n AS run_progress FROM dblink('jobs', format('SELECT count(*) FROM storlab.bench_progress p JOIN storlab.bench_runs r
                                                        ON r.id = p.run_id WHERE r.job_id = %s', :run_job)) AS t(n bigint) \gset
SELECT cmp_ok(:run_progress::bigint, '>', 0::bigint, 'the benchmark finished, with its run''s progress rows');
SELECT is((SELECT ARRAY[j, r, g] FROM dblink('jobs', $$CALL storlab.prune('1 microsecond')$$)
             AS t(p bigint, j bigint, r bigint, g bigint, e bigint, z bigint, l bigint)),
          ARRAY[1, 1, :run_progress]::bigint[], 'and the next prune took it, with its run and progress rows');
SELECT dblink_disconnect('jobs');
DROP DATABASE storlab_prune_jobs;

SELECT * FROM finish();

DELETE FROM storlab.baselines WHERE label = 'tap prune';
DELETE FROM storlab.probes WHERE started_at < '2002-01-01';
DELETE FROM storlab.job_records WHERE id BETWEEN 960000 AND 960999;
DELETE FROM storlab.relocations WHERE batch_id BETWEEN 960000 AND 960999;
-- this file's prunes, and with them the horizon they left in the lab
DELETE FROM storlab.prunes WHERE cutoff < '2002-01-02';
DROP TABLE public.tap_prune_t;
DROP SCHEMA tap_prune_evil CASCADE;
DROP OWNED BY tap_prune_granted, tap_prune_nobody, tap_prune_docs;
DROP ROLE tap_prune_granted, tap_prune_nobody, tap_prune_docs;
