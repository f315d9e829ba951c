-- Study 3: write barriers on and off.
-- The original: pgbench on ext4 and XFS with write barriers on and off
-- (barrier=0 / nobarrier): with barriers on, TPS fell by as much as about
-- 60 %, because every commit's fsync waited for the disk's cache flush.
-- Lab: what a barrier changes is the cost of a flush, and PostgreSQL waits
-- for one at every commit (pg_wal). pgbench's tables and indexes sit on
-- lab_btrfs_raid10 in both layouts; pg_wal on lab_ext4 (barriers on, the
-- default) or on lab_ext4_nobarrier (barrier=0), two identical images of
-- the same disk class; data four times the lab's memory limit (:scale),
-- 8 clients, four repetitions of 20 s runs (5 s warm-up) in alternating
-- order. A barrier reaches the disk here: the loop device passes a flush to
-- its image file as an fsync of the VM's disk. (XFS dropped its nobarrier
-- option in Linux 4.19: only ext4 can be measured both ways.)
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CALL storlab.experiment('study 3: write barriers under pg_wal',
  '[{"name": "barriers-off", "tables": "lab_btrfs_raid10", "indexes": "lab_btrfs_raid10", "wal": "lab_ext4_nobarrier"},
    {"name": "barriers-on",  "tables": "lab_btrfs_raid10", "indexes": "lab_btrfs_raid10", "wal": "lab_ext4"}]',
  clients => '{8}', jobs => 2, duration => '20 s', repetitions => 4, warmup => '5 s', scale => :scale) \gset
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
-- What a commit's flush costs on the two filesystems: the WAL-like probe.
SELECT tablespace, round(iops) AS commits_per_s, round(lat_p50_us) AS p50_us, round(lat_p99_us) AS p99_us
  FROM (SELECT (storlab.probe(t, 'wal', 8192, '3 s')).* FROM unnest('{lab_ext4,lab_ext4_nobarrier}'::text[]) t) p
 ORDER BY tablespace;

-- The same two WAL places with a commit-bound workload: pgbench's data at
-- scale 5 (75 MB) fits in the lab's cache, so every transaction waits on its
-- commit's flush, as in a database whose working set is in memory.
CALL storlab.experiment('study 3: write barriers under pg_wal, data in memory',
  '[{"name": "barriers-off", "tables": "lab_btrfs_raid10", "indexes": "lab_btrfs_raid10", "wal": "lab_ext4_nobarrier"},
    {"name": "barriers-on",  "tables": "lab_btrfs_raid10", "indexes": "lab_btrfs_raid10", "wal": "lab_ext4"}]',
  clients => '{8}', jobs => 2, duration => '20 s', repetitions => 4, warmup => '5 s', scale => 5) \gset
\setenv EXPERIMENT_ID :experiment_id
\! scripts/lab drive $EXPERIMENT_ID
\! scripts/lab wal pg_default
\connect
SELECT layout, wal, runs, round(tps_mean) AS tps, round(tps_ci95_low) || '..' || round(tps_ci95_high) AS tps_ci95,
       round(lat_p95_ms::numeric, 1) AS p95_ms, round(improvement_pct::numeric, 1) AS "vs_barriers-off_%",
       round(p_value::numeric, 4) AS p, significant AS sig,
       round((improvement_pct / -60)::numeric, 2) AS size_ratio_to_original, bar
  FROM storlab.experiment_report(:experiment_id);
