-- Study 3: ext4 against XFS, write barriers on and off.
-- Barriers (cache flushes) make fsync durable; barrier=0 skips them. XFS
-- dropped its nobarrier option in Linux 4.19, so only ext4 is measured
-- both ways. First the probes of every tablespace (compare_tablespaces),
-- then tpcb-like with all of pgbench's relations on each.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT tablespace, fs_type, round(randread_p99_us) AS randread_p99_us, round(randwrite_p99_us) AS randwrite_p99_us,
       round(wal_commit_p50_us) AS commit_p50_us, round(wal_commit_p99_us) AS commit_p99_us,
       round(seqwrite_mib_s::numeric, 1) AS seqwrite_mib_s, volatile
  FROM storlab.compare_tablespaces(duration => '1 s')
 WHERE tablespace IN ('lab_ext4', 'lab_ext4_nobarrier', 'lab_xfs')
 ORDER BY tablespace;
-- pgbench's commits fsync the WAL, which stays in pg_wal on the lab's local
-- disk whatever the layout: the barrier setting reaches these runs through
-- the data files' writes and checkpoints only (the commit columns above
-- show what it does to an fsync itself).
CALL storlab.experiment('study 3: ext4 vs xfs, barriers',
  '[{"name": "ext4",           "tables": "lab_ext4",           "indexes": "lab_ext4"},
    {"name": "ext4-nobarrier", "tables": "lab_ext4_nobarrier", "indexes": "lab_ext4_nobarrier"},
    {"name": "xfs",            "tables": "lab_xfs",            "indexes": "lab_xfs"}]',
  clients => '{4}', jobs => 2, duration => '8 s', repetitions => 3, warmup => '2 s', scale => 5) \gset
SELECT layout, runs, round(tps_mean) AS tps, round(tps_ci95_low) || '..' || round(tps_ci95_high) AS tps_ci95,
       round(lat_p95_ms::numeric, 2) AS p95_ms, round(improvement_pct::numeric, 1) AS "vs_ext4_%",
       round(p_value::numeric, 3) AS p, significant AS sig, bar
  FROM storlab.experiment_report(:experiment_id);
