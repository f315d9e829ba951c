-- Study 2: ext4's journal modes.
-- data=ordered (the default: lab_ext4), data=journal (data written twice,
-- to the journal then in place: lab_ext4_journal) and data=writeback
-- (metadata only: lab_ext4_writeback). 8 kB random and sequential I/O at
-- 1, 4 and 8 workers per mode. data=journal accepts O_DIRECT and quietly
-- does buffered I/O; storlab's probes there say so and are stored with
-- direct = false: their reads are the page cache's.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TEMP TABLE study2 AS
SELECT * FROM storlab.profile('lab_ext4', '1 s', '{1,4,8}')
UNION ALL SELECT * FROM storlab.profile('lab_ext4_journal', '1 s', '{1,4,8}')
UNION ALL SELECT * FROM storlab.profile('lab_ext4_writeback', '1 s', '{1,4,8}');
SELECT replace(tablespace, 'lab_ext4', 'ext4') AS mode, workers, bool_and(direct) FILTER (WHERE workload = 'randread') AS o_direct,
       round(max(iops) FILTER (WHERE workload = 'randread')) AS randread_iops,
       round(max(iops) FILTER (WHERE workload = 'randwrite')) AS randwrite_iops,
       round(max(lat_p99_us) FILTER (WHERE workload = 'randwrite')) AS randwrite_p99_us,
       round(max(mib_s) FILTER (WHERE workload = 'seqwrite')::numeric, 1) AS seqwrite_mib_s,
       round(max(mib_s) FILTER (WHERE workload = 'seqread')::numeric, 1) AS seqread_mib_s,
       round(max(lat_p50_us) FILTER (WHERE workload = 'wal')) AS wal_commit_p50_us
  FROM study2 GROUP BY tablespace, workers ORDER BY tablespace, workers;
