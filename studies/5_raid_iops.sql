-- Study 5: 8 kB random read and write IOPS and latency per RAID level.
-- btrfs over one image (lab_btrfs), two striped (raid0), two mirrored
-- (raid1) and four with double parity (raid6), at 1 and 4 workers.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TEMP TABLE study5 AS
SELECT * FROM storlab.profile('lab_btrfs', '1 s', '{1,4}')
UNION ALL SELECT * FROM storlab.profile('lab_btrfs_raid0', '1 s', '{1,4}')
UNION ALL SELECT * FROM storlab.profile('lab_btrfs_raid1', '1 s', '{1,4}')
UNION ALL SELECT * FROM storlab.profile('lab_btrfs_raid6', '1 s', '{1,4}');
SELECT tablespace, workers,
       round(max(iops) FILTER (WHERE workload = 'randread')) AS randread_iops,
       round(max(lat_p50_us) FILTER (WHERE workload = 'randread')) AS randread_p50_us,
       round(max(lat_p99_us) FILTER (WHERE workload = 'randread')) AS randread_p99_us,
       round(max(iops) FILTER (WHERE workload = 'randwrite')) AS randwrite_iops,
       round(max(lat_p50_us) FILTER (WHERE workload = 'randwrite')) AS randwrite_p50_us,
       round(max(lat_p99_us) FILTER (WHERE workload = 'randwrite')) AS randwrite_p99_us
  FROM study5 GROUP BY tablespace, workers ORDER BY tablespace, workers;
