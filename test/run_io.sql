-- What a run measured beneath PostgreSQL: one real experiment of 1 s runs
-- with its tables and indexes on a loop device (lab_ext4) or on tmpfs
-- (lab_ram); the devices each run recorded (bench_runs.device_io), the
-- rows pgbench updated and HOT updated, experiment_devices(), and the
-- caveats a 1-second, in-memory, writing experiment must carry: no
-- checkpoint in its runs, and data that fits in the server's memory.
-- No BEGIN: the job's worker sees only what is committed.
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(26);

SET client_min_messages = warning;
CALL storlab.experiment('devices', '[{"name": "ext4", "tables": "lab_ext4", "indexes": "lab_ext4"},
                                      {"name": "ram", "tables": "lab_ram", "indexes": "lab_ram"}]',
  clients => '{1}', jobs => 1, duration => '1 s', repetitions => 1, warmup => '0', scale => 1);
RESET client_min_messages;
SELECT id AS exp FROM storlab.experiments WHERE name = 'devices' ORDER BY id DESC LIMIT 1 \gset
SELECT id AS ext4_run FROM storlab.bench_runs
 WHERE experiment_id = :exp AND experiment_layout = 'ext4' AND NOT warmup \gset
SELECT id AS ram_run FROM storlab.bench_runs
 WHERE experiment_id = :exp AND experiment_layout = 'ram' AND NOT warmup \gset
SELECT is((SELECT status FROM storlab.experiments WHERE id = :exp), 'done', 'the experiment ran');

-- lab_ext4's run: its loop device (major 7), with counters that add up
CREATE TEMP VIEW devices AS
SELECT r.id AS run, (r.device_io->>'elapsed_ms')::int8 AS elapsed_ms, d.value AS d,
       ARRAY(SELECT jsonb_array_elements_text(d.value->'tablespaces')) AS tablespaces
  FROM storlab.bench_runs r, jsonb_array_elements(r.device_io->'devices') d
 WHERE r.experiment_id = :exp;
SELECT is((SELECT count(*)::int FROM devices WHERE run = :ext4_run AND 'lab_ext4' = ANY (tablespaces)), 1,
          'the lab_ext4 run records one device under lab_ext4');
SELECT ok((SELECT d->>'dev' LIKE '7:%' AND d->>'device' LIKE 'loop%' FROM devices
            WHERE run = :ext4_run AND 'lab_ext4' = ANY (tablespaces)),
          'a loop device, by number and name');
SELECT ok((SELECT bool_and(jsonb_typeof(d->k) = 'number' AND (d->>k)::int8 >= 0)
             FROM devices, unnest(ARRAY['reads', 'read_bytes', 'read_ms', 'writes', 'write_bytes', 'write_ms',
                                        'flushes', 'io_ticks_ms', 'time_in_queue_ms']) k
            WHERE run = :ext4_run AND 'lab_ext4' = ANY (tablespaces)),
          'every counter of it is a number, none negative');
SELECT ok((SELECT (d->>'read_bytes')::int8 >= 512 * (d->>'reads')::int8
              AND (d->>'write_bytes')::int8 >= 512 * (d->>'writes')::int8
              AND (d->>'read_bytes')::int8 % 512 = 0 AND (d->>'write_bytes')::int8 % 512 = 0
              AND (d->>'io_ticks_ms')::int8 <= elapsed_ms
             FROM devices WHERE run = :ext4_run AND 'lab_ext4' = ANY (tablespaces)),
          'bytes in whole sectors, at least one per I/O; busy no longer than the run');
SELECT cmp_ok((SELECT elapsed_ms FROM devices WHERE run = :ext4_run LIMIT 1), '>=', 1000::int8,
              'the counters were read around the whole 1 s run');
SELECT ok((SELECT (d->>'writes')::int8 > 0 FROM devices WHERE run = :ext4_run AND 'pg_wal' = ANY (tablespaces)),
          'pg_wal''s device took the run''s commits');
SELECT is((SELECT count(*)::int FROM devices d1 JOIN devices d2 ON d1.run = d2.run AND d1.d->>'dev' = d2.d->>'dev'
            WHERE d1.run = :ext4_run), (SELECT count(*)::int FROM devices WHERE run = :ext4_run),
          'each device once in a run');

-- lab_ram's run: tmpfs, no device
SELECT is((SELECT device_io->'no_device' FROM storlab.bench_runs WHERE id = :ram_run),
          '[{"tablespace": "lab_ram", "fs_type": "tmpfs"}]'::jsonb, 'the lab_ram run records lab_ram on no device');
SELECT is((SELECT count(*)::int FROM devices WHERE run = :ram_run AND 'lab_ram' = ANY (tablespaces)), 0,
          'and under no device');
SELECT ok((SELECT 'pg_wal' = ANY (tablespaces) FROM devices WHERE run = :ram_run LIMIT 1),
          'its one device is pg_wal''s');

-- rows updated, HOT updated; the memory the server could cache the data in
SELECT is((SELECT count(*)::int FROM storlab.bench_runs
            WHERE experiment_id = :exp AND run_n_tup_upd = 3 * transactions), 2,
          'tpcb-like: three rows updated a transaction, every one counted');
SELECT ok((SELECT bool_and(run_n_tup_hot_upd BETWEEN 1 AND run_n_tup_upd) FROM storlab.bench_runs WHERE experiment_id = :exp),
          'and HOT updates among them');
SELECT ok((SELECT bool_and(memory_bytes > 0 AND memory_source IN ('memory limit', 'MemTotal'))
             FROM storlab.bench_runs WHERE experiment_id = :exp),
          'each run records the memory the server could cache in, and where that came from');

-- experiment_devices(): one row per device of each cell, tmpfs a row without a device
SELECT is((SELECT count(*)::int FROM storlab.experiment_devices(:exp)
            WHERE layout = 'ext4' AND device LIKE 'loop%' AND tablespaces = '{lab_ext4}' AND runs = 1
              AND reads IS NOT NULL AND reads_per_tx IS NOT NULL AND busy_pct BETWEEN 0 AND 100), 1,
          'experiment_devices: lab_ext4''s loop device in its cell');
SELECT is((SELECT count(*)::int FROM storlab.experiment_devices(:exp)
            WHERE layout = 'ram' AND device IS NULL AND tablespaces = '{lab_ram}' AND reads IS NULL), 1,
          'experiment_devices: lab_ram on no device, without figures');

-- experiment_report(): the new columns, and the caveats of a 1 s in-memory writing experiment
SELECT is((SELECT array_agg(checkpoints_per_run ORDER BY layout) FROM storlab.experiment_report(:exp)),
          '{0,0}'::float8[], 'no checkpoint began in a 1 s run after a CHECKPOINT');
SELECT ok((SELECT bool_and(hot_ratio > 0 AND hot_ratio <= 1 AND device_reads_per_tx >= 0)
             FROM storlab.experiment_report(:exp)), 'each cell has its HOT ratio and device reads per transaction');
SELECT is((SELECT count(*)::int FROM storlab.experiment_report(:exp)
            WHERE caveats[1] LIKE 'a writing workload, and none of its 1 measured run (1 s each) contained a checkpoint: neither checkpoint_timeout (%) nor max_wal_size (%) was reached within a run, %'),
          2, 'each cell warns: a writing workload without a checkpoint');
SELECT is((SELECT count(*)::int FROM storlab.experiment_report(:exp)
            WHERE caveats[2] ~ '^pgbench''s data \([0-9.]+ MB\) fits in the server''s memory \([0-9.]+ [MGT]B, (MemTotal|its memory group''s limit)\): the runs may have measured the page cache, not the storage; device reads per transaction: [0-9.]+$'),
          2, 'each cell warns: the data fits in the server''s memory, with its device reads per transaction');
SELECT is((SELECT jsonb_array_length(detail->'caveats') FROM storlab.jobs WHERE id = :exp), 2,
          'the job keeps both, each once for the experiment, for CALL storlab.experiment to say');
SELECT is((SELECT current_action FROM storlab.experiments WHERE id = :exp),
          format('done: 2 measured runs in the report, 2 measured in this session; storlab.experiment_report(%s) compares them', :exp),
          'its last words are as they were: the caveats are the report''s and the NOTICEs''');

-- a NULL or unknown experiment: the SQLSTATEs of the other readers
SELECT throws_ok('SELECT * FROM storlab.experiment_devices(NULL)', '22004', NULL, 'a NULL id: 22004');
SELECT throws_ok('SELECT * FROM storlab.experiment_devices(-1)', '42704', 'there is no experiment with id -1',
                 'an unknown one: 42704');
SELECT throws_ok('SELECT * FROM storlab.experiment_report(NULL)', '22004', NULL, 'as experiment_report: 22004');
SELECT throws_ok('SELECT * FROM storlab.experiment_io(-1)', '42704', NULL, 'and experiment_io: 42704');

DELETE FROM storlab.job_records WHERE id = :exp;
SELECT * FROM finish();
