-- Study 1: RAID 6 and RAID 1, and where WAL and indexes go.
-- The original: pgbench at scale 5000 (much larger than RAM), 32 clients,
-- 120 s runs, on a server with a RAID 6 array and a RAID 1 pair; its three
-- key placements were each run three times. Moving WAL from the RAID 6 to
-- the RAID 1 gave about +15 % TPS; WAL and indexes on the RAID 1, more than
-- +20 %.
-- Lab: tables on lab_btrfs_raid6 (4 devices), the RAID 1 is
-- lab_btrfs_raid1 (2 devices), every device of the same disk class;
-- pgbench's data four times the lab's memory limit (:scale); 8 clients;
-- five repetitions of 20 s runs (5 s warm-up) in alternating order.
-- pg_wal cannot move while the server runs: the experiment stops before
-- each run whose layout wants it elsewhere, and `scripts/lab drive` moves
-- it (server stopped) and resumes the experiment, until it is done.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CALL storlab.experiment('study 1: WAL and indexes on RAID 1 beside RAID 6',
  '[{"name": "all-raid6",     "tables": "lab_btrfs_raid6", "indexes": "lab_btrfs_raid6", "wal": "lab_btrfs_raid6"},
    {"name": "wal-raid1",     "tables": "lab_btrfs_raid6", "indexes": "lab_btrfs_raid6", "wal": "lab_btrfs_raid1"},
    {"name": "wal+idx-raid1", "tables": "lab_btrfs_raid6", "indexes": "lab_btrfs_raid1", "wal": "lab_btrfs_raid1"}]',
  clients => '{8}', jobs => 2, duration => '20 s', repetitions => 5, warmup => '5 s', scale => :scale) \gset
-- (\! takes its line as it is: the id reaches the shell through the environment)
\setenv EXPERIMENT_ID :experiment_id
\! scripts/lab drive $EXPERIMENT_ID
\! scripts/lab wal pg_default
\connect
SELECT layout, wal, runs, round(tps_mean) AS tps, round(tps_ci95_low) || '..' || round(tps_ci95_high) AS tps_ci95,
       round(lat_p95_ms::numeric, 1) AS p95_ms, round(improvement_pct::numeric, 1) AS "vs_all-raid6_%",
       round(p_value::numeric, 4) AS p, significant AS sig, bar
  FROM storlab.experiment_report(:experiment_id);
-- Beside the original's figures.
SELECT r.layout, o.original AS "original_%", round(r.improvement_pct::numeric, 1) AS "lab_%",
       round(r.p_value::numeric, 4) AS p, r.significant AS sig,
       r.improvement_pct > 0 AS same_direction, round((r.improvement_pct / o.mid)::numeric, 2) AS size_ratio
  FROM storlab.experiment_report(:experiment_id) r
  JOIN (VALUES ('wal-raid1', 'about +15', 15.0), ('wal+idx-raid1', 'more than +20', 20.0)) o(layout, original, mid)
    ON o.layout = r.layout;
