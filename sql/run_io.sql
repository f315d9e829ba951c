--
-- What a run measured beneath PostgreSQL. PostgreSQL counts a page-cache
-- hit as a read, so a run's own figures cannot tell the storage from the
-- page cache; the block devices' counters can. Every run (of an experiment
-- or of bench_start) stores the devices beneath the tablespaces it used and
-- what their counters moved by (bench_runs.device_io), the memory the
-- server could cache pgbench's data in (memory_bytes, memory_source), and
-- the rows pgbench's tables updated and HOT updated (run_n_tup_upd,
-- run_n_tup_hot_upd).
--
CREATE EXTENSION IF NOT EXISTS storlab;

-- One real 1-second run, tables on lab_ram (tmpfs), indexes on lab_disk,
-- whose filesystem pg_wal shares: one device for both, and lab_ram on none.
SELECT storlab.bench_init(scale => 1, tablespace => 'lab_ram', index_tablespace => 'lab_disk') AS init_job \gset
CALL storlab.wait(:init_job);
CALL storlab.bench('tpcb-like', clients => 1, jobs => 1, duration => '1 s') \gset
SELECT d->'tablespaces' AS tablespaces, d->>'dev' ~ '^[0-9]+:[0-9]+$' AS has_a_device_number,
       (d->>'writes')::int8 > 0 AS wrote, (d->>'write_bytes')::int8 >= 512 * (d->>'writes')::int8 AS bytes_in_sectors,
       (d->>'io_ticks_ms')::int8 <= (r.device_io->>'elapsed_ms')::int8 AS busy_within_the_run
  FROM storlab.bench_runs r, jsonb_array_elements(r.device_io->'devices') d
 WHERE r.id = :run_id;
SELECT device_io->'no_device' AS no_device, (device_io->>'elapsed_ms')::int8 >= 1000 AS elapsed_ms_at_least_1000
  FROM storlab.bench_runs WHERE id = :run_id;
-- tpcb-like updates three rows a transaction (pgbench_accounts, _tellers,
-- _branches): every one of them counted, since the run's counters are read
-- once pgbench's sessions have exited and added theirs
SELECT run_n_tup_upd = 3 * transactions AS three_updates_per_transaction,
       run_n_tup_hot_upd BETWEEN 0 AND run_n_tup_upd AS hot_among_them,
       memory_bytes > 0 AS memory_known, memory_source IN ('memory limit', 'MemTotal') AS memory_source_known
  FROM storlab.bench_runs WHERE id = :run_id;

-- An experiment's reports, on stored runs whose figures are known. These
-- rows stand for an experiment that ran tpcb-like at 8 clients, 10 s runs
-- (2 repetitions), its layouts "disk" (tables and indexes on lab_disk,
-- whose disk pg_wal shares) and "ram" (both on lab_ram, tmpfs): 15 MB of
-- pgbench data under a 4 GB memory limit, and no checkpoint in any run.
INSERT INTO storlab.job_records (id, kind, status, args) OVERRIDING SYSTEM VALUE
VALUES (9301, 'experiment', 'done',
  '{"kind": "experiment", "name": "in memory", "layouts": [
      {"name": "disk", "placement": {"tables": "lab_disk", "indexes": "lab_disk", "temp": null, "settings": []}},
      {"name": "ram", "placement": {"tables": "lab_ram", "indexes": "lab_ram", "temp": null, "settings": []}}],
    "script": "tpcb-like", "clients": [8], "jobs": 2, "duration_s": 10, "repetitions": 2, "warmup_s": 0,
    "scale": 1, "fillfactors": [100], "order": "alternating", "lock_timeout_ms": 5000, "run": {}}');
INSERT INTO storlab.experiment_records (id, name, steps_total, system_identifier, hostname)
VALUES (9301, 'in memory', 6, 0, 'regress');
INSERT INTO storlab.bench_runs (id, job_id, experiment_id, experiment_layout, fillfactor, repetition, warmup,
                                script, clients, jobs, duration_s, tps, transactions, server_wal_bytes,
                                server_checkpoints, run_n_tup_upd, run_n_tup_hot_upd, layout, settings,
                                memory_bytes, memory_source, device_io, system_identifier, hostname)
SELECT 9300 + row_number() OVER (), 9301, 9301, layout, 100, rep, false, 'tpcb-like', 8, 2, 10,
       tx / 10.0, tx, 600 * tx, 0, 3 * tx, hot,
       '[{"relation": "pgbench_accounts", "logical_bytes": 13631488},
         {"relation": "pgbench_accounts_pkey", "logical_bytes": 2097152}]',
       '{"checkpoint_timeout": "5min", "max_wal_size": "1GB"}',
       4294967296, 'memory limit',
       jsonb_build_object('elapsed_ms', 10000,
         'devices', jsonb_build_array(jsonb_build_object(
             'device', 'vda', 'dev', '254:0',
             'tablespaces', CASE layout WHEN 'disk' THEN '["lab_disk", "pg_wal"]' ELSE '["pg_wal"]' END::jsonb,
             'reads', reads, 'read_bytes', 8192 * reads, 'read_ms', reads / 10,
             'writes', tx, 'write_bytes', 8192 * tx, 'write_ms', tx / 20, 'flushes', tx / 2,
             'io_ticks_ms', tx / 5, 'time_in_queue_ms', tx / 4)),
         'no_device', CASE layout WHEN 'ram' THEN '[{"tablespace": "lab_ram", "fs_type": "tmpfs"}]' ELSE '[]' END::jsonb),
       0, 'regress'
  FROM (VALUES ('disk', 1, 10000, 20, 27000), ('ram', 1, 12000, 0, 33000),
               ('ram', 2, 12400, 0, 34100), ('disk', 2, 10400, 10, 28000)
       ) AS v(layout, rep, tx, reads, hot);

-- storlab.experiment_devices(experiment_id): each cell's block devices,
-- one row per device with the tablespaces on it (a device two tablespaces
-- share is counted once), means per run of the runs the report pools, per
-- transaction, bytes, flushes, the time the device was busy and its
-- requests' time in the queue (ms), and busy as a share of the runs' time.
-- A tablespace on no block device is a row without a device or figures.
-- Here lab_disk's reads: (20 + 10) / 2 runs = 15 a run, 30 / 20400
-- transactions = 0.0015 a transaction.
SELECT layout, clients, device, tablespaces, runs, reads, writes, round(reads_per_tx::numeric, 4) AS reads_per_tx,
       round(writes_per_tx::numeric, 4) AS writes_per_tx, read_bytes, flushes, busy_ms, queue_ms, busy_pct
  FROM storlab.experiment_devices(9301);

-- experiment_report() adds, per cell: the HOT ratio of pgbench's updates
-- (disk: 55000 / 61200 = 0.899), the checkpoints begun per run, the
-- devices' reads per transaction, and caveats. Each run wrote (it updated
-- pgbench's tables) and none contained a checkpoint: the runs did not pay
-- for writing their dirty pages back. pgbench's data, 15 MB, fits in the
-- 4 GB the server could cache it in: with 0.0015 device reads per
-- transaction, the TPS are the page cache's, not the storage's.
SELECT layout, runs, round(hot_ratio::numeric, 3) AS hot_ratio, checkpoints_per_run,
       round(device_reads_per_tx::numeric, 4) AS device_reads_per_tx, unnest(caveats) AS caveat
  FROM storlab.experiment_report(9301);

-- A storage-bound experiment has no such caveat: pgbench's data four times
-- the memory limit, and a checkpoint in each run (a 10-minute run is
-- longer than checkpoint_timeout). Its columns before the new ones are
-- where they were.
INSERT INTO storlab.job_records (id, kind, status, args) OVERRIDING SYSTEM VALUE
VALUES (9302, 'experiment', 'done',
  '{"kind": "experiment", "name": "storage-bound", "layouts": [
      {"name": "disk", "placement": {"tables": "lab_disk", "indexes": "lab_disk", "temp": null, "settings": []}}],
    "script": "tpcb-like", "clients": [8], "jobs": 2, "duration_s": 600, "repetitions": 2, "warmup_s": 0,
    "scale": 1, "fillfactors": [100], "order": "alternating", "lock_timeout_ms": 5000, "run": {}}');
INSERT INTO storlab.experiment_records (id, name, steps_total, system_identifier, hostname)
VALUES (9302, 'storage-bound', 3, 0, 'regress');
INSERT INTO storlab.bench_runs (id, job_id, experiment_id, experiment_layout, fillfactor, repetition, warmup,
                                script, clients, jobs, duration_s, tps, transactions, server_wal_bytes,
                                server_checkpoints, run_n_tup_upd, run_n_tup_hot_upd, layout, settings,
                                memory_bytes, memory_source, device_io, system_identifier, hostname)
SELECT 9310 + rep, 9302, 9302, 'disk', 100, rep, false, 'tpcb-like', 8, 2, 600, 200, 120000, 72000000,
       1, 360000, 300000, '[{"relation": "pgbench_accounts", "logical_bytes": 17179869184}]',
       '{"checkpoint_timeout": "5min", "max_wal_size": "1GB"}', 4294967296, 'memory limit',
       '{"elapsed_ms": 600000, "devices": [{"device": "vda", "dev": "254:0", "tablespaces": ["lab_disk", "pg_wal"],
         "reads": 240000, "read_bytes": 1966080000, "read_ms": 2400000, "writes": 300000, "write_bytes": 2457600000,
         "write_ms": 900000, "flushes": 120000, "io_ticks_ms": 590000, "time_in_queue_ms": 3300000}], "no_device": []}',
       0, 'regress'
  FROM generate_series(1, 2) rep;
SELECT layout, runs, tps_mean, round(hot_ratio::numeric, 3) AS hot_ratio, checkpoints_per_run,
       device_reads_per_tx, caveats
  FROM storlab.experiment_report(9302);
SELECT device, tablespaces, reads, round(busy_pct::numeric, 1) AS busy_pct FROM storlab.experiment_devices(9302);

-- Runs stored before 0.12.0 have no device figures: no rows, NULL
-- figures, never an error. An experiment that does not exist is named as
-- such, as by the other readers.
UPDATE storlab.bench_runs SET device_io = NULL, run_n_tup_upd = NULL, run_n_tup_hot_upd = NULL,
                              memory_bytes = NULL, memory_source = NULL
 WHERE experiment_id = 9302;
SELECT count(*) AS rows FROM storlab.experiment_devices(9302);
SELECT layout, runs, hot_ratio, checkpoints_per_run, device_reads_per_tx, caveats
  FROM storlab.experiment_report(9302);
SELECT * FROM storlab.experiment_devices(424242);
SELECT * FROM storlab.experiment_devices(NULL);

DELETE FROM storlab.job_records WHERE id IN (9301, 9302);
