--
-- Advice: storlab.recommend() turns what is stored (probes, experiments)
-- into the settings and placements to apply, each with its statement, the
-- gain to expect and the evidence (ids and figures).
--
CREATE EXTENSION IF NOT EXISTS storlab;

-- Everything until the ROLLBACK below is this test's own: the figures it
-- stores, and the probes earlier tests stored set aside (lab_disk's
-- queued ones among them, so that lab_disk stands for a tablespace
-- profiled before queued probes existed; a baseline's probes cannot be
-- deleted under it, so its links go first).
BEGIN;
DELETE FROM storlab.baseline_probes;
DELETE FROM storlab.probes;

-- Probes with known figures, newer than any other (rows as the standard
-- suite stores them): pg_default reads sequentially at 800 MiB/s (9.77 us
-- a page: the unit of every cost); lab_disk reads 8 kB at random in 100 us
-- on average and sequentially at 640 MiB/s, its read IOPS grow up to 4
-- workers; its commits are far faster than pg_wal's; lab_ram is RAM.
CREATE TEMP TABLE known (tablespace name, workload text, workers int, mean_us float8, p50_us float8, p99_us float8,
                         iops float8, mib_s float8, fs text);
INSERT INTO known VALUES
  ('pg_default', 'seqread',  1, NULL,  NULL,  NULL,   6400, 800,   'ext4'),
  ('pg_default', 'seqwrite', 1, NULL,  NULL,  NULL,   4000, 500,   'ext4'),
  ('pg_default', 'randread', 1, 60,    55,    100,   16000, 125,   'ext4'),
  ('lab_disk',   'randread', 1, 100,   90,    150,   10000, 78,    'ext4'),
  ('lab_disk',   'randread', 2, 105,   95,    160,   19000, 148,   'ext4'),
  ('lab_disk',   'randread', 4, 130,  120,    200,   30000, 234,   'ext4'),
  ('lab_disk',   'randread', 8, 250,  240,    400,   31000, 242,   'ext4'),
  ('lab_disk',   'seqread',  1, NULL,  NULL,  NULL,   5120, 640,   'ext4'),
  ('lab_disk',   'wal',      1, 1,     1,     1,    900000, 7000,  'ext4'),
  ('pg_wal',     'wal',      1, 160,   150,   300,    6000, 47,    'ext4'),
  ('lab_ram',    'seqread',  1, NULL,  NULL,  NULL, 100000, 12000, 'tmpfs'),
  ('lab_ram',    'seqwrite', 1, NULL,  NULL,  NULL,  80000, 10000, 'tmpfs'),
  ('lab_ram',    'wal',      1, 0.5,   0.5,   0.9, 2000000, 15000, 'tmpfs');
INSERT INTO storlab.probes (tablespace, location, workload, block_size, workers, direct, sync_method, file_size,
                            duration_s, ops, bytes, iops, mib_s, lat_mean_us, lat_p50_us, lat_p99_us, histogram, env,
                            label, system_identifier, hostname, started_at, suite)
SELECT tablespace, '/srv/' || tablespace, workload, CASE WHEN workload LIKE 'seq%' THEN 131072 ELSE 8192 END, workers,
       workload <> 'wal', CASE WHEN workload = 'wal' THEN 'fdatasync' ELSE 'none' END, 67108864,
       1, iops, (mib_s * 1048576)::bigint, iops, mib_s, mean_us, p50_us, p99_us, '\x',
       jsonb_build_object('fs_type', fs, 'device', CASE WHEN fs = 'tmpfs' THEN 'tmpfs' ELSE '/dev/vdb' END,
                          'mount_point', '/srv/' || tablespace),
       'recommend regress', 0, 'regress', now() + interval '1 day', 'standard'
  FROM known;
-- Each tablespace's figures were measured twice more before, within a few
-- percent (means unchanged): advice prices and tests only repeated figures,
-- at least three of each.
INSERT INTO storlab.probes (tablespace, location, workload, block_size, workers, direct, sync_method, file_size,
                            duration_s, ops, bytes, iops, mib_s, lat_mean_us, lat_p50_us, lat_p99_us, histogram, env,
                            label, system_identifier, hostname, started_at, suite)
SELECT tablespace, location, workload, block_size, workers, direct, sync_method, file_size,
       duration_s, ops, bytes, iops, mib_s * (1 + 0.02 * (r - 1.5)), lat_mean_us * (1 + 0.02 * (r - 1.5)),
       lat_p50_us, lat_p99_us, histogram, env, 'recommend regress, repeated', system_identifier, hostname,
       started_at - r * interval '1 hour', suite
  FROM storlab.probes, generate_series(1, 2) AS r
 WHERE label = 'recommend regress' AND workers = 1
   AND ((tablespace IN ('pg_default', 'lab_ram') AND workload IN ('seqread', 'seqwrite'))
        OR (tablespace IN ('pg_default', 'lab_disk') AND workload IN ('randread', 'seqread')
            AND NOT (tablespace = 'pg_default' AND workload = 'seqread')));
-- pg_default was swept by one profile() call, three times over, one reader
-- keeping 1, 2, 8 and 32 reads in flight (psync at 1, io_uring deeper):
-- about 16 000, 30 000, 48 000 and 55 000 IOPS, each within 1 %.
INSERT INTO storlab.probes (tablespace, location, workload, block_size, workers, iodepth, engine, direct, sync_method,
                            file_size, duration_s, ops, bytes, iops, mib_s, lat_mean_us, lat_p50_us, lat_p99_us,
                            histogram, env, label, system_identifier, hostname, started_at, suite, suite_call)
SELECT tablespace, location, workload, block_size, workers, d.depth, CASE WHEN d.depth = 1 THEN 'psync' ELSE 'io_uring' END,
       direct, sync_method, file_size, duration_s, ops, bytes, d.iops * (1 + 0.01 * (r - 2)), mib_s,
       lat_mean_us * (1 + 0.01 * (r - 2)), lat_p50_us, lat_p99_us, histogram, env, 'profile', system_identifier, hostname,
       started_at - interval '3 hours' + r * interval '1 minute', suite, 'a0000000-0000-4000-8000-000000000040'
  FROM storlab.probes, (VALUES (1, 16000.0), (2, 30000.0), (8, 48000.0), (32, 55000.0)) AS d(depth, iops),
       generate_series(1, 3) AS r
 WHERE label = 'recommend regress' AND tablespace = 'pg_default' AND workload = 'randread' AND workers = 1
   AND started_at > now() + interval '12 hours';

-- An experiment with known runs: indexes on lab_ram beat the baseline's
-- lab_disk significantly, and fillfactor 70 beat 100 at the cost of 40 %
-- more space.
INSERT INTO storlab.job_records (id, kind, status, args) OVERRIDING SYSTEM VALUE
VALUES (9003, 'experiment', 'done',
  '{"kind": "experiment", "name": "advice figures", "layouts": [
      {"name": "base", "placement": {"tables": "lab_disk", "indexes": "lab_disk", "temp": null, "settings": []}},
      {"name": "fast", "placement": {"tables": "lab_disk", "indexes": "lab_ram", "temp": null, "settings": []}}],
    "script": "tpcb-like", "clients": [8], "jobs": 2, "duration_s": 10, "repetitions": 3, "warmup_s": 2,
    "scale": 1, "fillfactors": [100, 70], "order": "alternating", "lock_timeout_ms": 5000, "run": {}}');
INSERT INTO storlab.experiment_records (id, name, steps_total, system_identifier, hostname)
VALUES (9003, 'advice figures', 20, 0, 'regress');
INSERT INTO storlab.bench_runs (id, job_id, experiment_id, experiment_layout, fillfactor, repetition, warmup,
                                script, clients, jobs, duration_s, tps, transactions, system_identifier, hostname)
SELECT 9300 + row_number() OVER (), 9003, 9003, layout, ff, rep, false, 'tpcb-like', 8, 2, 10, tps, tps * 10, 0, 'regress'
  FROM (VALUES ('base', 100, 1, 100.0), ('base', 100, 2, 110.0), ('base', 100, 3, 105.0),
               ('fast', 100, 1, 140.0), ('fast', 100, 2, 150.0), ('fast', 100, 3, 145.0),
               ('base',  70, 1, 120.0), ('base',  70, 2, 125.0), ('base',  70, 3, 130.0),
               ('fast',  70, 1, 150.0), ('fast',  70, 2, 155.0), ('fast',  70, 3, 160.0)) AS v(layout, ff, rep, tps);
INSERT INTO storlab.experiment_sizes (experiment_id, fillfactor, layout, relation_name, kind, tablespace,
                                      logical_bytes, allocated_bytes, stored_bytes)
VALUES (9003, 100, 'base', 'pgbench_accounts', 'table', 'lab_disk', 1000, 1000, NULL),
       (9003, 70, 'base', 'pgbench_accounts', 'table', 'lab_disk', 1400, 1400, NULL);

-- Costs, per tablespace, from three probes or more of each figure (the
-- means of their repetitions). seq_page_cost is the tablespace's
-- sequential page over pg_default's: lab_disk 12.21 / 9.77 = 1.25.
-- random_page_cost is its mean random read over pg_default's sequential
-- page, times the share of reads that miss the cache (this database's,
-- from pg_stat_database), and never below seq_page_cost: checked here
-- against that formula. The evidence cites the probes of each figure with
-- its 95 % interval.
SELECT r.target, regexp_replace(r.statement, 'random_page_cost = [0-9.]+', 'random_page_cost = (as below)') AS statement,
       substring(r.statement FROM 'random_page_cost = ([0-9.]+)')::numeric
         = greatest(round((k.mean_us / 9.765625 * (r.evidence ->> 'miss_ratio')::float8)::numeric, 2), k.seq_page_cost)
         AS random_cost_as_the_formula_says,
       jsonb_array_length(r.evidence -> 'randread_mean_us' -> 'probes') AS random_probes,
       jsonb_array_length(r.evidence -> 'seqread_mib_s' -> 'probes') AS sequential_probes,
       (r.evidence -> 'randread_mean_us' ->> 'ci95_pct')::float8 < 25 AS random_interval_given
  FROM storlab.recommend() r
  JOIN (VALUES ('lab_disk', 100, 1.25), ('pg_default', 60, 1.0)) AS k(target, mean_us, seq_page_cost) ON k.target = r.target
 WHERE r.topic = 'costs' ORDER BY r.target;

-- Each figure is said with its interval and its count of probes.
SELECT substring(advice FROM '8 kB random reads take [^)]*\)') AS random_reads,
       substring(advice FROM 'a sequential page [^)]*\)') AS sequential_page
  FROM storlab.recommend() WHERE topic = 'costs' AND target = 'lab_disk';

-- effective_io_concurrency comes from one sweep (one profile() call) with
-- repetitions: the smallest depth whose IOPS is not significantly below
-- four fifths of the best depth's (Welch, one-sided). pg_default: four
-- fifths of 55 000 is 44 000; depth 8 (48 000) is not below it, depth 2
-- (30 000) significantly is. lab_disk, a folder on pg_default's
-- filesystem in the lab, is the same volume: pg_default's sweep is its
-- sweep too (its own rows of several workers are no profile() call).
-- (The call's time, which changes from run to run, is masked.)
SELECT target, substring(statement FROM 'effective_io_concurrency = [0-9]+') AS setting,
       coalesce(substring(why FROM 'effective_io_concurrency = [0-9]+: .*'),
                substring(why FROM 'for effective_io_concurrency, .*')) AS why
  FROM (SELECT target, statement, regexp_replace(advice, 'profile\(\) of [^,)]+', 'profile() of (its time)') AS why
          FROM storlab.recommend() WHERE topic = 'costs' AND target IN ('pg_default', 'lab_disk')) r
 ORDER BY target;

-- A sweep with fewer than three probes at a depth decides nothing: the
-- advice says so and gives the call that measures it with repetitions.
SAVEPOINT one_sweep;
DELETE FROM storlab.probes WHERE label = 'profile' AND iodepth = 8 AND iops > 48000;
SELECT substring(statement FROM 'effective_io_concurrency') AS setting,
       substring(regexp_replace(advice, 'profile\(\) of [^,)]+', 'profile() of (its time)')
                 FROM 'effective_io_concurrency is left as it is: .*') AS why
  FROM storlab.recommend() WHERE topic = 'costs' AND target = 'pg_default';
ROLLBACK TO SAVEPOINT one_sweep;

-- Fewer than three probes of a figure price nothing: the row names what
-- is missing and the statement measures it (lab_ram, whose random reads
-- were never measured, among them).
SAVEPOINT few;
DELETE FROM storlab.probes WHERE tablespace = 'lab_disk' AND workload = 'randread' AND workers = 1
   AND started_at < now() + interval '1 day';
SELECT target, advice, statement LIKE 'SELECT p.* FROM pg_catalog.unnest(ARRAY[''lab_disk'', ''lab_ram'']::name[])%' AS measures_them
  FROM storlab.recommend() WHERE topic = 'costs' AND advice LIKE 'cannot price%';
ROLLBACK TO SAVEPOINT few;

-- WAL: pg_wal commits in 300 us p99, lab_disk's volume in 1 us: move it
-- (offline, so no statement).
SELECT target, advice LIKE 'pg_wal (on /srv/pg_wal) commits in 300 us p99; the volume of tablespace lab_disk (/srv/lab_disk) in 1 us.%' AS says_where_and_how,
       statement, expected_gain
  FROM storlab.recommend() WHERE topic = 'wal';

-- No volume is proposed for pg_wal that it is on already: with lab_disk's
-- figures stored as if it lived on pg_wal's volume, lab_disk is not
-- proposed (another tablespace may be, from the figures earlier tests
-- stored).
SAVEPOINT same_volume;
UPDATE storlab.probes SET env = env || '{"mount_point": "/srv/pg_wal"}'
 WHERE label = 'recommend regress' AND tablespace = 'lab_disk';
SELECT bool_and(target IS DISTINCT FROM 'lab_disk') AS lab_disk_not_proposed
  FROM storlab.recommend() WHERE topic = 'wal';
ROLLBACK TO SAVEPOINT same_volume;

-- Indexes: backed by the experiment; temp files: by probes (the fastest
-- sequential I/O, RAM allowed: temp files need not survive a reboot),
-- three of each tablespace, significantly faster on lab_ram (Welch's test).
SELECT topic, target, statement, expected_gain, evidence ->> 'experiment' AS experiment
  FROM storlab.recommend() WHERE topic IN ('indexes', 'temp') ORDER BY topic;

-- Indexes from probes alone (the experiment's runs set aside, pgbench's
-- indexes where pgbench -i puts them): a tablespace on the same
-- filesystem or device as the one they are on is the same storage, not a
-- place to move them to, however much better its figures (lab_disk, a
-- folder on pg_default's filesystem: 63 us p99 against 75).
SAVEPOINT probes_only;
DELETE FROM storlab.bench_runs WHERE experiment_id = 9003;
ALTER INDEX IF EXISTS public.pgbench_accounts_pkey SET TABLESPACE pg_default;
UPDATE storlab.probes SET lat_p99_us = CASE tablespace WHEN 'lab_disk' THEN 63 ELSE 75 END,
                          env = env || '{"mount_point": "/srv/pg_default"}'
 WHERE tablespace IN ('pg_default', 'lab_disk') AND workload = 'randread' AND iodepth = 1;
SELECT target, advice, statement FROM storlab.recommend() WHERE topic = 'indexes';
-- On another volume (lab_xfs, another device), one probe is not enough to
-- tell a difference from noise: the advice says so, and how to measure
-- more.
INSERT INTO storlab.probes (tablespace, location, workload, block_size, workers, direct, sync_method, file_size,
                            duration_s, ops, bytes, iops, mib_s, lat_mean_us, lat_p50_us, lat_p99_us, histogram, env,
                            label, system_identifier, hostname, started_at, suite)
SELECT 'lab_xfs', '/srv/lab_xfs', workload, block_size, workers, direct, sync_method, file_size,
       duration_s, ops, bytes, iops, mib_s, lat_mean_us, lat_p50_us, 63, histogram,
       env || '{"device": "/dev/vdc", "mount_point": "/srv/lab_xfs", "fs_type": "xfs"}',
       label, system_identifier, hostname, started_at, suite
  FROM storlab.probes
 WHERE label = 'recommend regress' AND tablespace = 'pg_default' AND workload = 'randread' AND iodepth = 1;
SELECT target, advice, statement, evidence -> 'current_figures' AS pg_default_p99, evidence -> 'figures' AS lab_xfs_p99
  FROM storlab.recommend() WHERE topic = 'indexes';
-- Two more probes of each, as that statement stores them: 63, 62, 64 us
-- against 75, 77, 73 us differ significantly, and the indexes move.
INSERT INTO storlab.probes (tablespace, location, workload, block_size, workers, direct, sync_method, file_size,
                            duration_s, ops, bytes, iops, mib_s, lat_mean_us, lat_p50_us, lat_p99_us, histogram, env,
                            label, system_identifier, hostname, started_at, suite)
SELECT tablespace, location, workload, block_size, workers, direct, sync_method, file_size,
       duration_s, ops, bytes, iops, mib_s, lat_mean_us, lat_p50_us, lat_p99_us + d, histogram, env,
       label, system_identifier, hostname, started_at - d * interval '1 minute', NULL
  FROM storlab.probes, (VALUES (-1), (1)) AS r(s),
       LATERAL (SELECT CASE WHEN tablespace = 'lab_xfs' THEN s ELSE 2 * s END AS d) AS delta
 WHERE label = 'recommend regress' AND tablespace IN ('pg_default', 'lab_xfs') AND workload = 'randread' AND iodepth = 1;
SELECT target, statement, expected_gain, evidence -> 'current_figures' AS pg_default_p99, evidence -> 'figures' AS lab_xfs_p99
  FROM storlab.recommend() WHERE topic = 'indexes';
ROLLBACK TO SAVEPOINT probes_only;

-- Fillfactor: 70 beat 100 significantly (Welch's test on the baseline
-- layout's runs), at 40 % more space.
SELECT target, expected_gain, evidence ->> 'experiment' AS experiment
  FROM storlab.recommend() WHERE topic = 'fillfactor';

ROLLBACK;

-- Where nothing is stored, each topic says what to measure first, and the
-- call that measures it.
SELECT topic, advice, statement FROM storlab.recommend() WHERE topic = 'fillfactor';
