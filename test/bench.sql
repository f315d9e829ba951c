-- Benchmark jobs: cancel paths leave no pgbench behind, a run outlives the
-- session that started it, a dead worker's job is marked failed.
-- No BEGIN: jobs are seen by their worker only once committed, and
-- CALL storlab.wait commits as it polls.
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT plan(57);

-- Waits (up to 20 s) until a job is done, failed or cancelled; its status.
CREATE FUNCTION pg_temp.final_status(job bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE s text;
BEGIN
  FOR i IN 1 .. 200 LOOP
    SELECT status INTO s FROM storlab.jobs WHERE id = job;
    EXIT WHEN s IN ('done', 'failed', 'cancelled');
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN s;
END $$;
CREATE TEMP TABLE procs (n int);
CREATE FUNCTION pg_temp.pgbench_processes() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE procs;
  -- this server's pgbench only (its jobs run it in the data folder's
  -- temp folder): other servers on the machine may run theirs
  EXECUTE format($c$COPY procs FROM PROGRAM 'for p in $(pgrep -x pgbench); do readlink /proc/$p/cwd; done | grep -c "^%s/" || true'$c$,
                 current_setting('data_directory'));
  RETURN (SELECT n FROM procs);
END $$;
CREATE FUNCTION pg_temp.remote() RETURNS text LANGUAGE sql AS $$
  SELECT format('host=%s port=%s dbname=%s user=%s', current_setting('unix_socket_directories'),
                current_setting('port'), current_database(), current_user)
$$;

SELECT storlab.bench_init(scale => 1) AS init_job \gset
SELECT is(pg_temp.final_status(:init_job), 'done', 'bench_init made pgbench''s tables');

-- storlab.cancel(): the job ends 'cancelled' and pgbench is gone within 2 s.
SELECT storlab.bench_start('tpcb-like', clients => 2, jobs => 1, duration => '30 s') AS job \gset
SELECT pg_sleep(1.5);
SELECT is(pg_temp.pgbench_processes(), 1, 'pgbench runs');
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS t;
SELECT ok(storlab.cancel(:job), 'cancel() finds the running job');
SELECT is(pg_temp.final_status(:job), 'cancelled', 'the job ends cancelled');
SELECT cmp_ok(extract(epoch FROM clock_timestamp() - (SELECT t FROM t0)), '<', 2.0, 'within 2 s');
SELECT is(pg_temp.pgbench_processes(), 0, 'and no pgbench process outlives it');

-- pg_terminate_backend of the worker stops pgbench too.
SELECT storlab.bench_start('select-only', clients => 1, jobs => 1, duration => '30 s') AS job \gset
SELECT pg_sleep(1.5);
SELECT pg_terminate_backend(worker_pid) FROM storlab.jobs WHERE id = :job;
SELECT is(pg_temp.final_status(:job), 'cancelled', 'a terminated worker ends its job cancelled');
SELECT is(pg_temp.pgbench_processes(), 0, 'and takes pgbench with it');

-- statement_timeout on a waiting CALL cancels the job it waits for.
SELECT dblink_connect('caller', pg_temp.remote());
SELECT dblink_exec('caller', 'SET statement_timeout = ''2 s''');
SELECT is(dblink_send_query('caller', $$CALL storlab.bench('select-only', 1, 1, '30 s')$$), 1,
          'a session CALLs a 30 s run with a 2 s statement_timeout');
SELECT pg_sleep(3.5);
SELECT is((SELECT status FROM storlab.jobs ORDER BY id DESC LIMIT 1), 'cancelled', 'its timeout cancelled the job');
SELECT dblink_disconnect('caller');

-- A run started by a session that then disconnects still finishes.
SELECT dblink_connect('leaver', pg_temp.remote());
SELECT * FROM dblink('leaver', $$SELECT storlab.bench_start('select-only', 1, 1, '2 s')$$) AS r(id bigint) \gset leaver_
SELECT dblink_disconnect('leaver');
SELECT is(pg_temp.final_status(:leaver_id), 'done', 'a run outlives the session that started it');
SELECT ok((SELECT transactions > 0 FROM storlab.bench_runs WHERE id = :leaver_id), 'and stores its results');

-- move_indexes_online: indexes rebuilt in another tablespace while a writer
-- keeps committing (REINDEX CONCURRENTLY takes only brief locks).
DROP TABLE IF EXISTS tap_online;
CREATE TABLE tap_online (id bigserial PRIMARY KEY, v int, at timestamptz DEFAULT clock_timestamp());
CREATE INDEX tap_online_v ON tap_online (v);
INSERT INTO tap_online (v) SELECT g FROM generate_series(1, 300000) g;
SELECT dblink_connect('writer', pg_temp.remote());
SELECT dblink_send_query('writer', $q$DO $d$ BEGIN
  FOR i IN 1 .. 80 LOOP INSERT INTO tap_online (v) VALUES (-i); COMMIT; PERFORM pg_sleep(0.05); END LOOP;
END $d$$q$);
SELECT pg_sleep(0.5);
SELECT storlab.move_indexes_online('tap_online', 'lab_ram') AS move_job \gset
-- REINDEX CONCURRENTLY waits for older snapshots: wait with CALL, which
-- commits between polls (a polling function would hold one and never end)
CALL storlab.wait(:move_job);
SELECT is((SELECT status FROM storlab.jobs WHERE id = :move_job), 'done', 'move_indexes_online finishes');
CREATE TEMP VIEW this_move AS
  SELECT r.* FROM storlab.relocations r, storlab.jobs j
   WHERE j.id = :move_job AND r.label = 'move_indexes_online' AND r.moved_at BETWEEN j.started_at AND j.finished_at;
SELECT * FROM dblink_get_result('writer') AS r(status text);
SELECT dblink_disconnect('writer');
SELECT is((SELECT count(*) FROM storlab.layout('public') WHERE parent = 'tap_online'::regclass AND tablespace = 'lab_ram'),
          2::bigint, 'both indexes now live in lab_ram, recorded in storlab.relocations')
  WHERE (SELECT count(*) FROM this_move) = 2
UNION ALL SELECT fail('the moves were not recorded') WHERE (SELECT count(*) FROM this_move) <> 2;
SELECT ok((SELECT bool_and(r.relation = to_regclass(r.relation_name)::oid) FROM this_move r),
          'the history names each rebuilt index by its new oid (REINDEX CONCURRENTLY gives it one)');
SELECT cmp_ok((SELECT count(*) FROM tap_online t, this_move r
                WHERE t.v < 0 AND t.at BETWEEN r.moved_at - r.duration_s * interval '1 s' AND r.moved_at),
              '>', 0::bigint, 'the writer committed while the indexes were being rebuilt');
DROP TABLE tap_online;

-- When pgbench itself fails, its own words land in jobs.error.
SET storlab.conninfo = 'port=1';
SELECT storlab.bench_start('select-only', 1, 1, '1 s') AS bad_job \gset
RESET storlab.conninfo;
SELECT is(pg_temp.final_status(:bad_job), 'failed', 'a run pgbench cannot start fails');
SELECT alike((SELECT error FROM storlab.jobs WHERE id = :bad_job), 'pgbench exited with status 1:%connection to server%',
             'and jobs.error holds pgbench''s stderr');
SELECT ok((SELECT finished_at IS NOT NULL FROM storlab.bench_runs WHERE id = :bad_job), 'the failed run has its finished_at');

-- Jobs on one database's pgbench tables exclude each other: while a run is
-- going, pgbench -i (which drops the tables) and a second run are refused.
SELECT storlab.bench_start('select-only', 1, 1, '3 s') AS busy_run \gset
SELECT throws_ok($$SELECT storlab.bench_init(scale => 1)$$, '55006', NULL, 'bench_init during a run is refused (55006)');
SELECT throws_like($$SELECT storlab.bench_init(scale => 1)$$,
                   format('pgbench''s tables in this database are in use by storlab job %s (bench, %%)', :busy_run),
                   'naming the run');
SELECT throws_ok($$SELECT storlab.bench_start('select-only', 1, 1, '1 s')$$, '55006', NULL,
                 'and so is a second run at the same time');

-- cancel() is transactional: rolled back, it cancels nothing; committed, it
-- stops the job and says who stopped it.
BEGIN;
SELECT ok(storlab.cancel(:busy_run), 'cancel() inside a transaction finds the job');
ROLLBACK;
SELECT pg_sleep(1);
SELECT is((SELECT status FROM storlab.jobs WHERE id = :busy_run), 'running', 'after ROLLBACK the job runs on');
SELECT ok(storlab.cancel(:busy_run), 'cancel() again, committed');
SELECT is(pg_temp.final_status(:busy_run), 'cancelled', 'stops it');
SELECT is((SELECT error FROM storlab.jobs WHERE id = :busy_run), 'cancelled with storlab.cancel() by ' || current_user,
          'and the job says who cancelled it');

-- A job left 'running' by a worker that is gone (a crash, a restart) reads
-- as failed in storlab.jobs at once, and is stored so the next time anyone
-- calls job_status() or wait().
INSERT INTO storlab.job_records (kind, status, args, worker_pid, started_at)
VALUES ('bench', 'running', '{}', 2147483000, clock_timestamp()) RETURNING id AS ghost \gset
SELECT is((SELECT status FROM storlab.jobs WHERE id = :ghost), 'failed', 'storlab.jobs shows a job whose worker is gone as failed');
SELECT is((SELECT status FROM storlab.job_status(:ghost)), 'failed', 'a job whose worker is gone is marked failed');
DELETE FROM storlab.job_records WHERE id = :ghost;

-- A job dies with the transaction that created it: after a ROLLBACK its
-- worker sees the creating transaction aborted and exits at once, instead of
-- holding a slot of max_worker_processes while it waits for a row.
SELECT count(*) AS workers_before FROM pg_stat_activity WHERE backend_type = 'storlab job' \gset
BEGIN;
SELECT storlab.bench_start('select-only', 1, 1, '5 s') AS rolled_back \gset
ROLLBACK;
BEGIN;
SELECT storlab.bench_init(scale => 1) AS rolled_back_init \gset
ROLLBACK;
SELECT pg_sleep(1);
SELECT is((SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'storlab job'), :workers_before::bigint,
          'a rolled-back bench_start or bench_init leaves no worker behind within a second');
SELECT is((SELECT count(*) FROM storlab.jobs WHERE id IN (:rolled_back, :rolled_back_init)), 0::bigint,
          'and no job row');

-- pgbench -i makes the primary keys last: tables it left half-loaded (it
-- failed, or was cancelled) have none, and a run on them is refused,
-- naming bench_init, instead of measuring a fraction of the data.
ALTER TABLE pgbench_accounts DROP CONSTRAINT pgbench_accounts_pkey;
SELECT throws_ok($$SELECT storlab.bench_start('select-only', 1, 1, '1 s')$$, '55000', NULL,
                 'a run on tables pgbench -i did not finish is refused (55000)');
SELECT throws_like($$SELECT storlab.bench_start('select-only', 1, 1, '1 s')$$,
                   '%pgbench_accounts has no primary key%', 'saying what is missing');
ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid);

-- Every table pgbench's scripts use must be there: without pgbench_history
-- (where tpcb-like inserts) a run is refused with 42P01, naming it.
BEGIN;
DROP TABLE pgbench_history;
SELECT throws_ok($$SELECT storlab.bench_start('tpcb-like', 1, 1, '1 s')$$, '42P01', NULL,
                 'a run without pgbench_history is refused (42P01)');
SELECT throws_like($$SELECT storlab.bench_start('tpcb-like', 1, 1, '1 s')$$,
                   '%pgbench_history missing%', 'naming the missing table');
ROLLBACK;

-- A job that fails in its worker keeps its error's SQLSTATE, and CALL
-- storlab.wait raises the error with it: here the run's tables lose their
-- primary key before the worker gets to them (the worker starts once the
-- transaction that made the job commits), and the worker's check refuses.
BEGIN;
SELECT storlab.bench_start('select-only', 1, 1, '1 s') AS late_job \gset
ALTER TABLE pgbench_accounts DROP CONSTRAINT pgbench_accounts_pkey;
COMMIT;
SELECT is(pg_temp.final_status(:late_job), 'failed', 'the worker refuses tables made incomplete after the call');
SELECT is((SELECT sqlstate FROM storlab.job_status(:late_job)), '55000', 'the job keeps the error''s SQLSTATE');
SELECT throws_ok(format('CALL storlab.wait(%s)', :late_job), '55000', NULL, 'CALL storlab.wait raises it with that SQLSTATE');
ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid);
SELECT throws_ok(format('CALL storlab.wait(%s)', :bad_job), '38000', NULL,
                 'a failure outside PostgreSQL (pgbench''s exit) is raised as 38000');

-- A run measures the layout it records: while a run uses pgbench's tables,
-- storlab's own moves of them (tables, indexes, a whole schema, an undo, a
-- restore, an online index move) are refused at the call with 55006, naming
-- the job and the relation, and nothing moves; other relations still move.
CREATE FUNCTION pg_temp.started(job bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. 200 LOOP
    IF EXISTS (SELECT FROM storlab.bench_runs WHERE id = job AND started_at IS NOT NULL) THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN false;
END $$;
CREATE TEMP VIEW pgbench_places AS
  SELECT string_agg(format('%s=%s', relation, tablespace), ' ' ORDER BY relation::text) AS places
    FROM storlab.layout('public') WHERE relation::text ~ '^pgbench_';
SELECT batch_id AS branches_batch FROM storlab.move('pgbench_branches', 'lab_disk') LIMIT 1 \gset
CREATE TEMP TABLE before_run AS SELECT clock_timestamp() AS t;
SELECT batch_id AS tellers_batch FROM storlab.move('pgbench_tellers', 'lab_disk') LIMIT 1 \gset
CREATE TABLE tap_unguarded (id int PRIMARY KEY);
SELECT storlab.bench_start('select-only', 1, 1, '6 s') AS guarded_run \gset
SELECT ok(pg_temp.started(:guarded_run), 'a run has started');
CREATE TEMP TABLE guard_before AS
  SELECT (SELECT places FROM pgbench_places) AS places, (SELECT count(*) FROM storlab.relocations) AS moves;
SELECT throws_ok($$SELECT storlab.move('pgbench_accounts', 'lab_ram')$$, '55006', NULL,
                 'move() of a table the run uses is refused (55006)');
SELECT throws_like($$SELECT storlab.move('pgbench_accounts', 'lab_ram')$$,
                   format('cannot move table public.pgbench_accounts: storlab job %s (bench, running, role %s) uses it%%',
                          :guarded_run, current_user),
                   'naming the relation, the job, its kind and its role');
SELECT throws_ok($$SELECT storlab.move('pgbench_accounts_pkey', 'lab_ram')$$, '55006', NULL,
                 'so is a move of one of its indexes');
SELECT throws_ok($$SELECT storlab.apply_layout('lab_ram', 'lab_ram')$$, '55006', NULL,
                 'and apply_layout() of the schema the run uses, whole');
SELECT throws_ok(format('SELECT storlab.undo_batch(%s)', :branches_batch), '55006', NULL, 'and undo_batch()');
SELECT throws_ok(format($$SELECT storlab.restore_layout(%L)$$, (SELECT t FROM before_run)), '55006', NULL,
                 'and restore_layout()');
SELECT throws_ok($$SELECT storlab.move_indexes_online('pgbench_accounts', 'lab_ram')$$, '55006', NULL,
                 'and move_indexes_online() of its table');
SELECT is((SELECT places FROM pgbench_places), (SELECT places FROM guard_before), 'nothing of pgbench''s moved');
SELECT is((SELECT count(*) FROM storlab.relocations), (SELECT moves FROM guard_before), 'and no move was recorded');
SELECT is((SELECT count(*) FROM storlab.move('tap_unguarded', 'lab_ram')), 2::bigint,
          'a relation no job uses still moves during the run');
SELECT is((SELECT count(*) FROM storlab.move('pgbench_accounts', 'lab_ram', dry_run => true)), 2::bigint,
          'and a dry run of a used one is still described (it moves nothing)');
CALL storlab.wait(:guarded_run);
SELECT is((SELECT invalid FROM storlab.bench_runs WHERE id = :guarded_run), NULL, 'the run is valid');
SELECT is((SELECT count(*) FROM storlab.undo_batch(:tellers_batch)), 2::bigint, 'once it is over, moves go through again');
SELECT is((SELECT count(*) FROM storlab.undo_batch(:branches_batch)), 2::bigint, 'each of them');
DROP TABLE tap_unguarded;

-- A move made outside storlab during a run (a plain ALTER TABLE) is found
-- at its end: the run is stored invalid, and says so.
SELECT storlab.bench_start('select-only', 1, 1, '3 s') AS moved_run \gset
SELECT ok(pg_temp.started(:moved_run), 'a second run has started');
ALTER TABLE pgbench_branches SET TABLESPACE lab_disk;
CALL storlab.wait(:moved_run);
SELECT alike((SELECT invalid FROM storlab.bench_runs WHERE id = :moved_run),
             '%pgbench_branches was moved from % to lab_disk while it ran%',
             'a table moved by hand during a plain run makes the run invalid');
SELECT alike((SELECT detail->>'run_invalid' FROM storlab.jobs WHERE id = :moved_run),
             '%pgbench_branches was moved%', 'and its job says so in storlab.jobs');
ALTER TABLE pgbench_branches SET TABLESPACE pg_default;

SELECT * FROM finish();
