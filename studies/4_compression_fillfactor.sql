-- Study 4: compression and fillfactor.
-- A compressing SSD stores the empty space a lower fillfactor leaves in
-- every page for almost nothing: fillfactor 70 grows the tables by about
-- 40 % but the stored bytes by much less, while HOT updates get room.
-- lab_zram (ext4 on a zram device, lz4: the block device compresses, as
-- such an SSD does), lab_btrfs (compress=zstd: the filesystem compresses)
-- and lab_ext4 (no compression) at fillfactor 100, 70 and 50.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CALL storlab.experiment('study 4: compression and fillfactor',
  '[{"name": "ext4", "tables": "lab_ext4",  "indexes": "lab_ext4"},
    {"name": "btrfs-zstd", "tables": "lab_btrfs", "indexes": "lab_btrfs"},
    {"name": "zram-lz4",   "tables": "lab_zram",  "indexes": "lab_zram"}]',
  clients => '{4}', jobs => 2, duration => '6 s', repetitions => 2, warmup => '2 s', scale => 5,
  fillfactors => '{100,70,50}') \gset
SELECT layout, fillfactor AS ff, round(tps_mean) AS tps, round(improvement_pct::numeric, 1) AS "vs_ext4_%",
       round(p_value::numeric, 2) AS p,
       pg_size_pretty(logical_bytes) AS logical, pg_size_pretty(allocated_bytes) AS allocated,
       pg_size_pretty(stored_bytes) AS stored,
       round(100.0 * stored_bytes / nullif(logical_bytes, 0)) AS "stored_%", bar
  FROM storlab.experiment_report(:experiment_id);
