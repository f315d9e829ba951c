-- Benchmark jobs: cancel paths leave no pgbench behind, a run outlives the
-- session that started it, a dead worker's job is marked failed.
-- No BEGIN: jobs are seen by their worker only once committed, and
-- CALL storlab.wait commits as it polls.
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT plan(13);

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
  COPY procs FROM PROGRAM 'pgrep -c -x pgbench || true';
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

-- A job left 'running' by a worker that is gone (a crash, a restart) is
-- marked failed the next time anyone looks.
INSERT INTO storlab.jobs (kind, status, args, worker_pid) VALUES ('bench', 'running', '{}', 2147483000) RETURNING id AS ghost \gset
SELECT is((SELECT status FROM storlab.job_status(:ghost)), 'failed', 'a job whose worker is gone is marked failed');
DELETE FROM storlab.jobs WHERE id = :ghost;

SELECT * FROM finish();
