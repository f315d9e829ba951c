-- Study 3: write barriers on and off.
-- The original: pgbench on ext4 and XFS with write barriers on and off
-- (barrier=0 / nobarrier): with barriers on, TPS fell by as much as about
-- 60 %, because every commit's fsync waited for the disk's cache flush.
-- Lab: two identical ext4 images of the same disk class, lab_ext4 (barriers
-- on, the default) and lab_ext4_nobarrier (barrier=0); tables, indexes and
-- pg_wal all on one or the other; data four times the lab's memory limit
-- (:scale), 8 clients, three repetitions of 20 s runs (5 s warm-up) in
-- alternating order. A barrier reaches the disk here: the loop device passes
-- a flush to its image file as an fsync of the VM's disk.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CALL storlab.experiment('study 3: write barriers',
  '[{"name": "barriers-on",  "tables": "lab_ext4",           "indexes": "lab_ext4",           "wal": "lab_ext4"},
    {"name": "barriers-off", "tables": "lab_ext4_nobarrier", "indexes": "lab_ext4_nobarrier", "wal": "lab_ext4_nobarrier"}]',
  clients => '{8}', jobs => 2, duration => '20 s', repetitions => 3, warmup => '5 s', scale => :scale,
  options => '{"baseline": "barriers-off"}') \gset
-- (\! takes its line as it is: the id reaches the shell through the environment)
\setenv EXPERIMENT_ID :experiment_id
\! scripts/lab drive $EXPERIMENT_ID
\! scripts/lab wal pg_default
\connect
SELECT layout, wal, runs, round(tps_mean) AS tps, round(tps_ci95_low) || '..' || round(tps_ci95_high) AS tps_ci95,
       round(lat_p95_ms::numeric, 1) AS p95_ms, round(improvement_pct::numeric, 1) AS "vs_barriers-off_%",
       round(p_value::numeric, 4) AS p, significant AS sig, bar
  FROM storlab.experiment_report(:experiment_id);
-- Beside the original's figure.
SELECT layout, 'down by as much as ~60' AS "original_%", round(improvement_pct::numeric, 1) AS "lab_%",
       round(p_value::numeric, 4) AS p, significant AS sig, improvement_pct < 0 AS same_direction,
       round((improvement_pct / -60)::numeric, 2) AS size_ratio
  FROM storlab.experiment_report(:experiment_id) WHERE layout = 'barriers-on';
-- What each flush costs on these two filesystems: the WAL-like probe.
SELECT tablespace, workload, round(iops) AS commits_per_s, round(lat_p50_us) AS p50_us, round(lat_p99_us) AS p99_us
  FROM (SELECT (storlab.probe(t, 'wal', 8192, '3 s')).* FROM unnest('{lab_ext4,lab_ext4_nobarrier}'::text[]) t) p
 ORDER BY tablespace;
