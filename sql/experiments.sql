--
-- Experiments: one call runs a layout x fillfactor x clients matrix of
-- pgbench runs, repeated in alternating order, and experiment_report()
-- says which layout wins, by how much, and whether the difference is real.
--
CREATE EXTENSION IF NOT EXISTS storlab;

SELECT count(*) AS jobs_before FROM storlab.job_records \gset

-- Everything is checked before anything runs or moves. layouts is a JSON
-- object from a layout's name to its placement (tables, indexes, temp,
-- settings), or an array of placements with a name each.
SELECT storlab.experiment_start('bad', '[]');
SELECT storlab.experiment_start('bad', '"lab_disk"');
SELECT storlab.experiment_start('bad', '{"a": {"table": "lab_disk"}}');
SELECT storlab.experiment_start('bad', '{"a": {"tables": "no_such_tablespace"}}');
SELECT storlab.experiment_start('bad', '{"a": {"temp": "pg_global"}}');
-- settings are given to pgbench's sessions: only what a session may change
SELECT storlab.experiment_start('bad', '{"a": {"settings": {"shared_buffers": "1GB"}}}');
SELECT storlab.experiment_start('bad', '{"a": {"settings": {"synchronous_commit": "sometimes"}}}');
SELECT storlab.experiment_start('bad', '{"a": {"settings": {"no_such_setting": "1"}}}');
SELECT storlab.experiment_start('bad', '{"a": {}}', repetitions => 0);
SELECT storlab.experiment_start('bad', '{"a": {}}', clients => '{0}');
SELECT storlab.experiment_start('bad', '{"a": {}}', fillfactors => '{100,5}');
SELECT storlab.experiment_start('bad', '{"a": {}}', duration => '0.5 s');
SELECT storlab.experiment_start('bad', '{"a": {}}', options => '{"baseline": "b"}');
SELECT storlab.experiment_start('bad', '{"a": {}}', options => '{"order": "random"}');
-- ... and nothing was left behind
SELECT count(*) - :jobs_before AS new_jobs FROM storlab.job_records;

-- The report's statistics, on stored runs whose figures are known. These
-- rows stand for an experiment that ran: layouts "base" (the baseline)
-- and "fast", 8 clients, fillfactors 100 and 70.
INSERT INTO storlab.job_records (id, kind, status, args) OVERRIDING SYSTEM VALUE
VALUES (9001, 'experiment', 'done',
  '{"kind": "experiment", "name": "known figures", "layouts": [
      {"name": "base", "placement": {"tables": "lab_disk", "indexes": "lab_disk", "temp": null, "settings": []}},
      {"name": "fast", "placement": {"tables": "lab_disk", "indexes": "lab_ram", "temp": null, "settings": []}}],
    "script": "tpcb-like", "clients": [8], "jobs": 2, "duration_s": 10, "repetitions": 3, "warmup_s": 2,
    "scale": 1, "fillfactors": [100, 70], "order": "alternating", "lock_timeout_ms": 5000, "run": {}}');
INSERT INTO storlab.experiment_records (id, name, steps_total, system_identifier, hostname)
VALUES (9001, 'known figures', 20, 0, 'regress');
INSERT INTO storlab.bench_runs (id, job_id, experiment_id, experiment_layout, fillfactor, repetition, warmup,
                                script, clients, jobs, duration_s, tps, transactions, server_wal_bytes,
                                system_identifier, hostname, invalid)
SELECT 9100 + row_number() OVER (), 9001, 9001, layout, ff, rep, warmup,
       'tpcb-like', 8, 2, 10, tps, tx, wal, 0, 'regress',
       CASE WHEN ff = 50 THEN 'at its start pgbench_accounts had fillfactor 50, the cell''s is 100' END
  FROM (VALUES ('base', 100, 1, false, 100.0, 1000, 100000),
               ('fast', 100, 1, false, 120.0, 1200, 100000),
               ('fast', 100, 2, false, 125.0, 1250, 100000),
               ('base', 100, 2, false, 110.0, 1100, 100000),
               ('base', 100, 3, false, 105.0, 1050, 100000),
               ('fast', 100, 3, false, 130.0, 1300, 100000),
               ('base', 100, 1, true,  999.0, 9990, 100000),  -- a warm-up: not in the report
               ('base',  70, 1, false, 200.0, 2000, 300000),
               ('fast',  70, 1, false, 190.0, 1900, 200000),
               ('fast',  70, 2, false, 210.0, 2100, 200000),
               ('fast',  70, 3, false, NULL,  NULL, NULL),    -- a failed run: no figures
               ('fast',  50, 3, false, 900.0, 9000, 100000)   -- its observations disagree: left out, and named
       ) AS v(layout, ff, rep, warmup, tps, tx, wal);
INSERT INTO storlab.experiment_sizes (experiment_id, fillfactor, layout, relation_name, kind, tablespace,
                                      logical_bytes, allocated_bytes, stored_bytes)
VALUES (9001, 100, 'base', 'pgbench_accounts', 'table', 'lab_disk', 1000, 1000, NULL),
       (9001, 100, 'fast', 'pgbench_accounts', 'table', 'lab_disk', 1000, 1000, NULL),
       (9001, 100, 'fast', 'pgbench_accounts_pkey', 'index', 'lab_ram', 200, 200, 200),
       (9001, 70, 'base', 'pgbench_accounts', 'table', 'lab_ram', 1400, 1400, 1400),
       (9001, 70, 'fast', 'pgbench_accounts', 'table', 'lab_ram', 1400, 1400, 1400);

-- Expected figures, computed independently with SciPy for
-- base = [100, 110, 105] and fast = [120, 125, 130] (fillfactor 100):
--   mean 105 and 125, standard deviation 5 and 5;
--   scipy.stats.t.interval(0.95, 2, loc=mean, scale=sem): base 92.5793..117.4207,
--   fast 112.5793..137.4207;
--   improvement 100 * (125 - 105) / 105 = 19.0476 %;
--   scipy.stats.ttest_ind(fast, base, equal_var=False).pvalue = 0.0080 (t 4.899, df 4).
-- At fillfactor 70 the baseline ran once: no interval, no test (NULL, not
-- invented); fast's mean 200 equals it (0 %). WAL per transaction is the
-- runs' WAL over their transactions (base at 100: 300000 / 3150 = 95.2),
-- the warm-up and the failed run left out. A stored size is known only
-- when it is known for every relation. A run whose observations disagree
-- with its cell (bench_runs.invalid: here someone set pgbench_accounts'
-- fillfactor to 50 before it ran) is left out, and a NOTICE names it.
SELECT layout, fillfactor AS ff, clients, runs,
       round(tps_mean::numeric, 4) AS mean, round(tps_stddev::numeric, 4) AS sd,
       round(tps_ci95_low::numeric, 4) AS ci_low, round(tps_ci95_high::numeric, 4) AS ci_high,
       round(improvement_pct::numeric, 4) AS "improv_%", round(p_value::numeric, 4) AS p, significant,
       round(wal_bytes_per_tx::numeric, 1) AS wal_per_tx, logical_bytes, stored_bytes, lat_p95_ms, bar
  FROM storlab.experiment_report(9001);

-- With several fillfactors, each is also compared with fillfactor 100 (or,
-- without 100, the largest of the experiment) at the same layout and
-- clients, by the same rule (Welch's test, p < 0.05); the reference's own
-- rows have NULL. fast at 70, [190, 210], against fast at 100, [120, 125,
-- 130]: 100 * (200 - 125) / 125 = 60 %, Welch t 7.206 with 1.17 degrees of
-- freedom, p 0.0653 (the t distribution's tail, integrated numerically):
-- not significant. base at 70 ran once: the change (+90.5 %), no test.
-- `wal` says where pg_wal was at the runs' start (bench_runs.observed): the
-- tablespace sharing its filesystem, else its mount point.
UPDATE storlab.bench_runs
   SET observed = jsonb_build_object('start', jsonb_build_object('wal', jsonb_build_object(
         'location', '/srv/wal', 'mount_point', '/srv', 'fs_type', 'ext4',
         'tablespace', CASE WHEN experiment_layout = 'base' THEN 'lab_disk' END)))
 WHERE experiment_id = 9001;
SELECT layout, fillfactor AS ff, clients, wal, runs, round(tps_mean::numeric, 1) AS mean,
       round(ff_improvement_pct::numeric, 4) AS "ff_improv_%", round(ff_p_value::numeric, 4) AS ff_p, ff_significant
  FROM storlab.experiment_report(9001);

-- storlab.experiment_io(experiment_id): what the server read, wrote,
-- extended and synced during the runs the report pools, from the
-- pg_stat_io differences each run stored (bench_runs.server_io, PostgreSQL
-- 16 and later; a run on 15 has none and is left out): means per run, by
-- cell and by backend type, object and context, times in ms. Here base's
-- runs at fillfactor 100 read from disk, fast's hit shared buffers; a
-- pg_stat_io row one run lacks (only the rows that moved are stored)
-- counts 0 in that run.
UPDATE storlab.bench_runs
   SET server_io = CASE WHEN experiment_layout = 'base'
     THEN jsonb_build_object('client backend/relation/normal',
            jsonb_build_object('reads', 1000 * repetition, 'read_time', 50.0 * repetition, 'hits', 9000),
                             'checkpointer/relation/normal',
            jsonb_build_object('writes', 300, 'write_time', 3.0, 'fsyncs', 12, 'fsync_time', 30.0))
     ELSE jsonb_build_object('client backend/relation/normal', jsonb_build_object('reads', 10, 'hits', 9990)) END
 WHERE experiment_id = 9001 AND fillfactor = 100;
SELECT layout, fillfactor AS ff, clients, backend_type, object, context, runs,
       reads, read_ms, writes, fsyncs, fsync_ms, hits
  FROM storlab.experiment_io(9001);

-- Runs measured under other conditions than the runs before them are not
-- pooled either. These rows stand for an experiment during which someone
-- ran ALTER DATABASE ... SET synchronous_commit = off (repetition 3: the
-- sessions of both layouts' runs recorded it in bench_runs.settings), then
-- set it back and created an index on pgbench_accounts (repetition 4:
-- bench_runs.observed lists it among pgbench's relations at the runs'
-- start). Each run is judged against the runs before it: against the
-- experiment's first pooled run (9201) for what every layout shares,
-- against its layout's first for a setting a layout declares (fast sets
-- work_mem: 64MB there and 4MB in base differ by design). So both layouts
-- keep repetitions 1 and 2 (base [100, 110], fast [120, 130]), and a NOTICE
-- names the four left out, with the reason.
INSERT INTO storlab.job_records (id, kind, status, args) OVERRIDING SYSTEM VALUE
VALUES (9002, 'experiment', 'done',
  '{"kind": "experiment", "name": "conditions changed", "layouts": [
      {"name": "base", "placement": {"tables": "lab_disk", "indexes": "lab_disk", "temp": null, "settings": []}},
      {"name": "fast", "placement": {"tables": "lab_disk", "indexes": "lab_ram", "temp": null,
                                     "settings": [["work_mem", "64MB"]]}}],
    "script": "tpcb-like", "clients": [8], "jobs": 2, "duration_s": 10, "repetitions": 4, "warmup_s": 0,
    "scale": 1, "fillfactors": [100], "order": "alternating", "lock_timeout_ms": 5000, "run": {}}');
INSERT INTO storlab.experiment_records (id, name, steps_total, system_identifier, hostname)
VALUES (9002, 'conditions changed', 11, 0, 'regress');
INSERT INTO storlab.bench_runs (id, job_id, experiment_id, experiment_layout, fillfactor, repetition, warmup,
                                script, clients, jobs, duration_s, tps, system_identifier, hostname,
                                settings, observed, server_io)
SELECT 9200 + row_number() OVER (), 9002, 9002, layout, 100, rep, false, 'tpcb-like', 8, 2, 10, tps, 0, 'regress',
       jsonb_build_object('synchronous_commit', sync, 'work_mem', CASE layout WHEN 'fast' THEN '64MB' ELSE '4MB' END,
                          'server_version', '18.1'),
       jsonb_build_object('start', rels, 'end', rels),
       '{"client backend/relation/normal": {"reads": 10}}'
  FROM (VALUES ('base', 1, 100.0, 'on', false), ('fast', 1, 120.0, 'on', false),
               ('fast', 2, 130.0, 'on', false), ('base', 2, 110.0, 'on', false),
               ('base', 3, 200.0, 'off', false), ('fast', 3, 300.0, 'off', false),
               ('fast', 4, 310.0, 'on', true), ('base', 4, 210.0, 'on', true)
       ) AS v(layout, rep, tps, sync, indexed),
       LATERAL (SELECT jsonb_build_object(
                  'tables', jsonb_build_object('pgbench_accounts', 'lab_disk', 'pgbench_history', 'lab_disk'),
                  'indexes', jsonb_build_object('pgbench_accounts_pkey', CASE layout WHEN 'fast' THEN 'lab_ram' ELSE 'lab_disk' END)
                             || CASE WHEN indexed THEN '{"pgbench_accounts_abalance_idx": "lab_disk"}' ELSE '{}' END::jsonb,
                  'fillfactor', 100) AS rels) r;
SELECT layout, runs, round(tps_mean::numeric, 1) AS mean, round(improvement_pct::numeric, 4) AS "improv_%"
  FROM storlab.experiment_report(9002);
-- experiment_io's runs are the report's
SELECT layout, runs, reads FROM storlab.experiment_io(9002);
-- merging the latency of runs measured differently is refused too (22023):
-- here two layouts' runs, whose placement and work_mem differ
\set VERBOSITY terse
SELECT * FROM storlab.run_latency('{9201, 9202}');
\set VERBOSITY default
SELECT percentile, lat_ms, samples FROM storlab.run_latency('{9201, 9204}', '{50}');
DELETE FROM storlab.job_records WHERE id = 9002;

-- An experiment that does not exist is named as such.
SELECT * FROM storlab.experiment_report(424242);
SELECT * FROM storlab.experiment_io(424242);

-- The experiment's rows go with its job.
DELETE FROM storlab.job_records WHERE id = 9001;
SELECT (SELECT count(*) FROM storlab.experiment_records) AS experiments,
       (SELECT count(*) FROM storlab.bench_runs WHERE experiment_id = 9001) AS runs,
       (SELECT count(*) FROM storlab.experiment_sizes) AS sizes;
