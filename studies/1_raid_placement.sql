-- Study 1: data and index placement on RAID 1 vs RAID 6.
-- The classic question: with a RAID 6 array for capacity and a RAID 1 pair
-- for speed, where do tables and indexes go? Five placements of pgbench's
-- relations, tpcb-like, each measured three times in alternating order.
-- Lab: lab_btrfs_raid6 (4 images, data raid6) and lab_btrfs_raid1 (2
-- images), lab_btrfs_raid0 (2 images) as the no-redundancy reference.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CALL storlab.experiment('study 1: placement on RAID 1 and RAID 6',
  '[{"name": "all-raid6",               "tables": "lab_btrfs_raid6", "indexes": "lab_btrfs_raid6"},
    {"name": "tables-raid6-idx-raid1",  "tables": "lab_btrfs_raid6", "indexes": "lab_btrfs_raid1"},
    {"name": "tables-raid1-idx-raid6",  "tables": "lab_btrfs_raid1", "indexes": "lab_btrfs_raid6"},
    {"name": "all-raid1",               "tables": "lab_btrfs_raid1", "indexes": "lab_btrfs_raid1"},
    {"name": "all-raid0",               "tables": "lab_btrfs_raid0", "indexes": "lab_btrfs_raid0"}]',
  clients => '{4}', jobs => 2, duration => '8 s', repetitions => 3, warmup => '2 s', scale => 5) \gset
SELECT layout, runs, round(tps_mean) AS tps, round(tps_ci95_low) || '..' || round(tps_ci95_high) AS tps_ci95,
       round(lat_p95_ms::numeric, 2) AS p95_ms, round(improvement_pct::numeric, 1) AS "vs_all-raid6_%",
       round(p_value::numeric, 3) AS p, significant AS sig, round(wal_bytes_per_tx) AS wal_b_tx, bar
  FROM storlab.experiment_report(:experiment_id);
