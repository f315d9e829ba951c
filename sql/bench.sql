--
-- Benchmarks as jobs: pgbench runs in a background worker that holds no
-- snapshot while it runs; every run is stored with its latency percentiles,
-- the server's own counters over the run and the layout it ran on.
--
CREATE EXTENSION IF NOT EXISTS storlab;

-- The scripts: pgbench's builtins and storlab's own, each saying which
-- storage path it stresses.
SELECT name, source, length(description) > 20 AS described, script IS NOT NULL AS has_text
  FROM storlab.scripts() ORDER BY source, name;

-- Without pgbench's tables a run explains what to do.
SELECT storlab.bench_start();

-- storlab.bench_init() creates them (pgbench -i) as a job and returns its id;
-- CALL storlab.wait() waits for it, committing as it polls.
SELECT storlab.bench_init(scale => 1, fillfactor => 90) AS init_job \gset
CALL storlab.wait(:init_job);
SELECT kind, status, error, args->>'scale' AS scale, args->>'fillfactor' AS fillfactor
  FROM storlab.jobs WHERE id = :init_job;
SELECT relname, reloptions FROM pg_class
 WHERE relname IN ('pgbench_accounts', 'pgbench_branches', 'storlab_bench_append') ORDER BY relname;
-- The job's detail keeps how long each step of pgbench -i took.
SELECT detail->'init_total_s' IS NOT NULL AS timed,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(detail->'init_steps_s') k) AS steps
  FROM storlab.jobs WHERE id = :init_job;

-- CALL storlab.bench() starts a run and waits for it; it returns the run's id.
CALL storlab.bench('select-only', clients => 2, jobs => 1, duration => '3 s', label => 'regress') \gset
SELECT script, clients, jobs, duration_s, scale, fillfactor, label,
       transactions > 0 AS measured, tps > 0 AS has_tps,
       lat_p50_ms <= lat_p99_ms AND lat_p99_ms <= lat_max_ms AS percentiles_ordered,
       length(histogram) > 0 AS has_histogram,
       server_wal_bytes >= 0 AND server_checkpoints >= 0 AND db_blks_hit > 0 AS server_and_db_deltas,
       db_blks_read_by_tablespace ? 'pg_default' AND run_blks_read_by_tablespace ? 'pg_default' AS reads_by_tablespace,
       lat_stddev_ms > 0 AS has_stddev,
       layout @> '[{"relation": "pgbench_accounts", "tablespace": "pg_default"}]' AS layout_recorded,
       settings ? 'synchronous_commit' AS settings_recorded,
       pgbench_version LIKE 'pgbench (PostgreSQL) ' || current_setting('server_version_num')::int / 10000 || '.%' AS pgbench_of_server,
       finished_at > started_at AS timed
  FROM storlab.bench_runs WHERE id = :run_id;
-- One row per second of the run; the first and last are partial (pgbench
-- did not run for the whole second) and marked so.
SELECT count(*) FILTER (WHERE NOT partial) BETWEEN 1 AND 3 AS whole_seconds,
       bool_and(tps > 0) FILTER (WHERE NOT partial) AS all_busy,
       count(*) FILTER (WHERE partial) <= 2 AS at_most_two_partial,
       bool_and(NOT partial) FILTER (WHERE t_s > (SELECT min(t_s) FROM storlab.bench_progress WHERE run_id = :run_id)
                                      AND t_s < (SELECT max(t_s) FROM storlab.bench_progress WHERE run_id = :run_id)) AS inner_seconds_whole
  FROM storlab.bench_progress WHERE run_id = :run_id;
SELECT kind, status, error FROM storlab.jobs WHERE id = :run_id;
-- storlab.run_latency(run_ids, percentiles) reads the stored histogram back,
-- merged over several runs when given several (repetitions of one layout).
-- Here one run: its p50 and p99 are the ones stored with it (to the
-- histogram's precision), over the transactions pgbench logged.
SELECT percentile, abs(lat_ms - CASE percentile WHEN 50 THEN r.lat_p50_ms ELSE r.lat_p99_ms END) < 0.01 AS as_stored,
       samples > 0 AS logged
  FROM storlab.bench_runs r, storlab.run_latency(ARRAY[r.id], '{50,99}')
 WHERE r.id = :run_id ORDER BY percentile;

-- A run whose tables live elsewhere records that layout.
SELECT storlab.bench_init(scale => 1, tablespace => 'lab_ram', index_tablespace => 'lab_disk') AS init_job \gset
CALL storlab.wait(:init_job);
CALL storlab.bench('update-hot', clients => 2, jobs => 2, duration => '2 s',
                   options => '{"protocol": "prepared", "checkpoint_before": false}') \gset
SELECT l->>'relation' AS relation, l->>'tablespace' AS tablespace
  FROM storlab.bench_runs r, jsonb_array_elements(r.layout) l
 WHERE r.id = :run_id AND l->>'relation' IN ('pgbench_accounts', 'pgbench_accounts_pkey')
 ORDER BY 1;
SELECT script, options->>'protocol' AS protocol, transactions > 0 AS measured FROM storlab.bench_runs WHERE id = :run_id;
-- Partitioned pgbench_accounts: the partitions carry the fillfactor, and the
-- run records theirs (the partitioned parent has none).
SELECT storlab.bench_init(scale => 1, fillfactor => 50, partitions => 2) AS init_job \gset
CALL storlab.wait(:init_job);
CALL storlab.bench('select-only', 1, 1, '1 s', options => '{"checkpoint_before": false}') \gset
SELECT fillfactor, scale FROM storlab.bench_runs WHERE id = :run_id;
SELECT storlab.bench_init(scale => 1, tablespace => 'lab_ram', index_tablespace => 'lab_disk') AS init_job \gset
CALL storlab.wait(:init_job);
-- With progress_interval, pgbench's own progress lines are kept in the
-- job's detail (the stored per-second rows come from its transaction log).
CALL storlab.bench('select-only', 1, 1, '2 s', options => '{"progress_interval": 1, "checkpoint_before": false}') \gset
SELECT jsonb_array_length(detail->'pgbench_progress') BETWEEN 1 AND 2 AS progress_kept,
       detail->'pgbench_progress'->0 ?& ARRAY['t_s', 'tps', 'lat_avg_ms', 'lat_stddev_ms'] AS fields
  FROM storlab.jobs WHERE id = :run_id;

-- Bad input: a clear error and its SQLSTATE; no job is created.
-- pg_temp.error_of(call): what a call raises, as 'SQLSTATE: message' (sql/lib/helpers.sql)
\set ECHO none
\i sql/lib/helpers.sql
\set ECHO all
SELECT count(*) AS jobs_before FROM storlab.jobs \gset
SELECT call, pg_temp.error_of(call) AS error FROM (VALUES
  ($$storlab.bench_start('no-such-script')$$),
  ($$storlab.bench_start(clients => 0)$$),
  ($$storlab.bench_start(clients => 2, jobs => 3)$$),
  ($$storlab.bench_start(duration => '0.5 s')$$),
  ($$storlab.bench_start(duration => '2 hours')$$),
  ($$storlab.bench_start(duration => '1.5 s')$$),
  ($$storlab.bench_start(options => '{"turbo": true}')$$),
  ($$storlab.bench_start(options => '{"protocol": "fast"}')$$),
  ($$storlab.bench_start(options => '{"sampling_rate": 2}')$$),
  ($$storlab.bench_init(scale => 0)$$),
  ($$storlab.bench_init(fillfactor => 5)$$),
  ($$storlab.bench_init(partitions => -1)$$),
  ($$storlab.bench_init(tablespace => 'no_such_tablespace')$$),
  ($$storlab.bench_init(index_tablespace => 'pg_global')$$),
  ($$storlab.move_indexes_online('pgbench_accounts', 'no_such_tablespace')$$),
  ($$storlab.move_indexes_online('pg_class', 'lab_ram')$$),
  ($$storlab.move_indexes_online('pgbench_accounts_pkey', 'lab_ram')$$),
  ($$storlab.run_latency('{-1}')$$),
  ($$storlab.run_latency('{}')$$)
) AS v(call);
-- storlab.conninfo may only say how to reach this server, never another one.
SET storlab.conninfo = 'host=127.0.0.1 dbname=elsewhere';
SELECT pg_temp.error_of($$storlab.bench_start('select-only', 1, 1, '1 s')$$) AS error;
RESET storlab.conninfo;
SELECT count(*) - :jobs_before AS jobs_created FROM storlab.jobs;
SELECT storlab.cancel(999999) AS cancelled_a_missing_job;

-- storlab.move_indexes_online(): a table's indexes rebuilt in another
-- tablespace with REINDEX ... CONCURRENTLY, as a job, so writes go on.
SELECT storlab.move_indexes_online('pgbench_accounts', 'lab_ram') AS move_job \gset
CALL storlab.wait(:move_job);
SELECT relation_name, from_tablespace, to_tablespace, statement, label
  FROM storlab.relocations WHERE label = 'move_indexes_online' ORDER BY id;
CALL storlab.wait(999999);

-- Benchmarks run programs and load the server: not for PUBLIC.
SELECT has_function_privilege('public', 'storlab.bench_start(text, integer, integer, interval, text, jsonb)', 'EXECUTE') AS public_starts,
       has_table_privilege('pg_monitor', 'storlab.bench_runs', 'SELECT') AS monitor_reads_runs;
