--
-- Retention: CALL storlab.prune(older_than) deletes stored results older
-- than that age, a batch per transaction, and returns what it deleted per
-- table. It keeps what other results still need: a baseline's probes, an
-- experiment that is not finished (or is waiting to be resumed), and
-- every queued or running job. An experiment goes whole or not at all.
--
CREATE EXTENSION IF NOT EXISTS storlab;

-- Results from 2020, as storlab's functions would have stored them: four
-- probes (copies of one measured now), two of them a baseline's ...
SET client_min_messages = warning;
SELECT (storlab.probe('lab_ram', 'randread', duration => '100 ms', file_size => 1048576, direct => false)).id AS probe_id \gset
RESET client_min_messages;
INSERT INTO storlab.probes (tablespace, location, workload, block_size, workers, direct, sync_method, file_size,
                            duration_s, ops, bytes, iops, mib_s, histogram, env, label, system_identifier,
                            hostname, started_at, suite)
SELECT tablespace, location, workload, block_size, workers, direct, sync_method, file_size, duration_s, ops, bytes,
       iops, mib_s, histogram, env, 'prune demo', system_identifier, hostname,
       timestamptz '2020-01-01 12:00' + n * interval '1 day', 'standard'
  FROM storlab.probes, generate_series(1, 4) n
 WHERE id = :probe_id;
INSERT INTO storlab.baselines (label, tablespaces, duration_s, repetitions, system_identifier, hostname, taken_at)
SELECT 'prune demo', '{lab_ram}', 0.1, 2, system_identifier, 'regress', '2020-01-03'
  FROM pg_control_system()
RETURNING id AS baseline_id \gset
INSERT INTO storlab.baseline_probes (baseline_id, probe_id, repetition)
SELECT :baseline_id, id, row_number() OVER (ORDER BY id)
  FROM storlab.probes WHERE label = 'prune demo' AND started_at < '2020-01-04';

-- ... five jobs: a benchmark run with its progress rows; an experiment
-- (a warm-up and two measured runs, their progress rows, its sizes); an
-- experiment that stopped where its next run needs pg_wal elsewhere
-- (wal_needed: waiting for experiment_resume); a failed bench_init; and a
-- benchmark queued in 2020 whose run finished yesterday ...
INSERT INTO storlab.job_records (id, kind, status, args, created_at, started_at, finished_at) OVERRIDING SYSTEM VALUE
VALUES (9401, 'bench', 'done', '{}', '2020-02-01 10:00', '2020-02-01 10:00', '2020-02-01 10:01'),
       (9402, 'experiment', 'done', '{}', '2020-03-01 10:00', '2020-03-01 10:00', '2020-03-01 11:00'),
       (9403, 'experiment', 'done', '{}', '2020-03-05 10:00', '2020-03-05 10:00', '2020-03-05 10:30'),
       (9404, 'bench_init', 'failed', '{}', '2020-04-01 10:00', '2020-04-01 10:00', '2020-04-01 10:00'),
       (9405, 'bench', 'done', '{}', '2020-05-01 10:00', now() - interval '1 day', now() - interval '1 day');
INSERT INTO storlab.experiment_records (id, name, steps_total, current_step, system_identifier, hostname, wal_needed)
VALUES (9402, 'prune demo', 4, 4, 0, 'regress', NULL),
       (9403, 'prune demo, stopped for WAL', 6, 2, 0, 'regress', 'lab_disk');
INSERT INTO storlab.experiment_sizes (experiment_id, fillfactor, layout, relation_name, kind, tablespace,
                                      logical_bytes, allocated_bytes)
VALUES (9402, 100, 'base', 'pgbench_accounts', 'table', 'lab_disk', 13565952, 13565952),
       (9402, 100, 'base', 'pgbench_accounts_pkey', 'index', 'lab_disk', 2260992, 2260992);
INSERT INTO storlab.bench_runs (id, job_id, experiment_id, experiment_layout, repetition, warmup, script, clients,
                                jobs, duration_s, tps, system_identifier, hostname, started_at, finished_at)
VALUES (9401, 9401, NULL, NULL, NULL, false, 'tpcb-like', 8, 2, 60, 1000, 0, 'regress', '2020-02-01 10:00', '2020-02-01 10:01'),
       (9411, 9402, 9402, 'base', 1, true, 'tpcb-like', 8, 2, 10, 990, 0, 'regress', '2020-03-01 10:10', '2020-03-01 10:11'),
       (9412, 9402, 9402, 'base', 1, false, 'tpcb-like', 8, 2, 60, 1010, 0, 'regress', '2020-03-01 10:11', '2020-03-01 10:12'),
       (9413, 9402, 9402, 'base', 2, false, 'tpcb-like', 8, 2, 60, 1020, 0, 'regress', '2020-03-01 10:13', '2020-03-01 10:14'),
       (9421, 9403, 9403, 'base', 1, false, 'tpcb-like', 8, 2, 60, 1030, 0, 'regress', '2020-03-05 10:10', '2020-03-05 10:11'),
       (9451, 9405, NULL, NULL, NULL, false, 'tpcb-like', 8, 2, 60, 1040, 0, 'regress', now() - interval '1 day', now() - interval '1 day');
INSERT INTO storlab.bench_progress (run_id, t_s, tps)
SELECT r, t, 1000 FROM unnest('{9401,9412,9413,9421,9451}'::bigint[]) r, generate_series(1, 3) t;

-- ... and two relocation batches of one table: moved to lab_disk in 2020
-- (batch 900001), and back to pg_default by a move done now (900002).
CREATE SCHEMA prune_demo;
CREATE TABLE prune_demo.t (id int PRIMARY KEY);
SELECT count(*) AS moved FROM storlab.move('prune_demo.t', 'lab_disk', with_indexes => false);
SELECT count(*) AS moved FROM storlab.move('prune_demo.t', 'pg_default', with_indexes => false);
UPDATE storlab.relocations
   SET batch_id = CASE to_tablespace WHEN 'lab_disk' THEN 900001 ELSE 900002 END,
       moved_at = CASE to_tablespace WHEN 'lab_disk' THEN timestamptz '2020-06-01' ELSE moved_at END
 WHERE relation = 'prune_demo.t'::regclass;

-- What the demo holds, per table:
CREATE TEMP VIEW demo AS
SELECT (SELECT count(*) FROM storlab.probes WHERE label = 'prune demo') AS probes,
       (SELECT count(*) FROM storlab.job_records WHERE id BETWEEN 9401 AND 9405) AS jobs,
       (SELECT count(*) FROM storlab.bench_runs WHERE job_id BETWEEN 9401 AND 9405) AS bench_runs,
       (SELECT count(*) FROM storlab.bench_progress p JOIN storlab.bench_runs r ON r.id = p.run_id
         WHERE r.job_id BETWEEN 9401 AND 9405) AS bench_progress,
       (SELECT count(*) FROM storlab.experiment_records WHERE id BETWEEN 9401 AND 9405) AS experiments,
       (SELECT count(*) FROM storlab.experiment_sizes WHERE experiment_id BETWEEN 9401 AND 9405) AS experiment_sizes,
       (SELECT count(*) FROM storlab.relocations WHERE batch_id IN (900001, 900002)) AS relocations;
SELECT * FROM demo;

-- A dry run counts what a prune would delete, and deletes nothing. It is
-- the only form that may run inside a transaction block.
BEGIN;
CALL storlab.prune('365 days', dry_run => true);
COMMIT;
SELECT * FROM demo;

-- The prune: results older than a year. It returns what it deleted per
-- table: the two probes no baseline refers to; the benchmark job with its
-- run and progress rows; the experiment with its row, sizes, three runs
-- (the warm-up too) and their progress rows, all in one transaction; the
-- failed bench_init; the 2020 relocation batch.
CALL storlab.prune('365 days');
SELECT * FROM demo;
-- What is left: the experiment waiting for pg_wal to move, and the job
-- whose run finished yesterday (a job's age is that of its last activity:
-- finished_at, else started_at, else created_at).
SELECT id, kind, status FROM storlab.jobs WHERE id BETWEEN 9401 AND 9405 ORDER BY id;
SELECT e.id, e.name, e.wal_needed, count(r.id) AS runs
  FROM storlab.experiments e LEFT JOIN storlab.bench_runs r ON r.experiment_id = e.id
 WHERE e.id BETWEEN 9401 AND 9405 GROUP BY e.id, e.name, e.wal_needed;
-- The baseline keeps both its probes, however old:
SELECT b.label, count(*) AS probes, min(p.started_at) AS oldest
  FROM storlab.baselines b JOIN storlab.baseline_probes l ON l.baseline_id = b.id
  JOIN storlab.probes p ON p.id = l.probe_id
 WHERE b.label = 'prune demo' GROUP BY b.label;
-- and they cannot be deleted by hand under it (no cascade any more):
\set VERBOSITY terse
DELETE FROM storlab.probes WHERE label = 'prune demo';
\set VERBOSITY default

-- Every prune is logged in storlab.prunes, with its cutoff (now() minus
-- older_than, the horizon) and what it deleted; a dry run is not.
SELECT pruned_by, older_than, finished_at IS NOT NULL AS finished, probes, jobs, bench_runs, bench_progress,
       experiments, experiment_sizes, relocations, relocation_batches_upto
  FROM storlab.prunes ORDER BY id;
-- Pruning again finds nothing more to delete.
CALL storlab.prune('365 days');

-- The relocation history has a horizon now: undo_batch of a batch the
-- prune deleted, and restore_layout to a time before the cutoff, are
-- refused (22023) with the horizon named, rather than undoing part of the
-- history. (The horizon, the prune's cutoff, is shown as <horizon> here.)
SELECT cutoff::text AS horizon FROM storlab.prunes ORDER BY id LIMIT 1 \gset
CREATE FUNCTION pg_temp.refusal(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  st text;
  msg text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
  RETURN st || ': ' || replace(msg, current_setting('prune_demo.horizon'), '<horizon>');
END $$;
SELECT set_config('prune_demo.horizon', :'horizon', false) IS NOT NULL AS horizon_known;
SELECT pg_temp.refusal('SELECT * FROM storlab.undo_batch(900001)');
SELECT pg_temp.refusal($$SELECT * FROM storlab.restore_layout('2020-01-01')$$);
-- A batch after the horizon is undone as before:
SELECT relation_name, from_tablespace, to_tablespace, undoes_batch FROM storlab.undo_batch(900002);

-- Bad ages are refused before anything is deleted (22023), and so is a
-- prune inside a transaction block, which could not commit between
-- batches (25001).
CALL storlab.prune(NULL);
CALL storlab.prune('0 days');
CALL storlab.prune('-30 days');
BEGIN;
CALL storlab.prune('365 days');
ROLLBACK;
-- Only a superuser or storlab's owner may prune, whatever was granted (42501).
CREATE ROLE prune_demo_dba;
GRANT EXECUTE ON PROCEDURE storlab.prune(interval, boolean, bigint, bigint, bigint, bigint, bigint, bigint, bigint)
  TO prune_demo_dba;
GRANT EXECUTE ON FUNCTION storlab.prune_cutoff(interval, boolean) TO prune_demo_dba;
GRANT DELETE ON storlab.probes TO prune_demo_dba;
SET ROLE prune_demo_dba;
CALL storlab.prune('1 day');
RESET ROLE;
SELECT * FROM demo;

-- The demo's rows go, and its prunes' log (and horizon) with them.
DELETE FROM storlab.baselines WHERE label = 'prune demo';
DELETE FROM storlab.probes WHERE label = 'prune demo';
DELETE FROM storlab.job_records WHERE id BETWEEN 9401 AND 9405;
DELETE FROM storlab.relocations WHERE relation = 'prune_demo.t'::regclass;
DELETE FROM storlab.prunes;
DROP SCHEMA prune_demo CASCADE;
DROP OWNED BY prune_demo_dba;
DROP ROLE prune_demo_dba;
