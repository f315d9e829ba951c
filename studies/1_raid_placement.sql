-- Study 1: WAL and indexes to a RAID 1 volume beside a RAID 6 volume, both
-- carved from one pool of drives.
-- The seed: pgbench at scale 5000 (far larger than RAM), 32 clients, 120 s
-- runs; both the RAID 6 and the RAID 1 volume were created on one Dynamic
-- Disk Pool of 16 drives, so moving WAL changes the write cost WAL pays
-- (mirror against double parity), not the spindles it has. WAL to the
-- RAID 1: about +15 % TPS; WAL and indexes there: more than +20 %, so the
-- step from WAL only to WAL and indexes is a further, smaller gain.
-- Lab: lab_pool_raid6 and lab_pool_raid1, btrfs raid6 and raid1 over two
-- slices of the same 4 drives (200 I/Os a second each, one budget shared by
-- both volumes); pgbench's data four times the lab's memory limit (:scale);
-- 32 clients; five repetitions of 40 s runs after 10 s of warm-up, longer
-- than checkpoint_timeout (30 s), so every run contains a checkpoint; the
-- layouts in alternating order. pg_wal cannot move while the server runs:
-- scripts/lab drive moves it (server stopped) between runs.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\ir lib/verdict.sql
CALL storlab.experiment('study 1: WAL and indexes on RAID 1 beside RAID 6, one pool',
  '[{"name": "all-raid6",     "tables": "lab_pool_raid6", "indexes": "lab_pool_raid6", "wal": "lab_pool_raid6"},
    {"name": "wal-raid1",     "tables": "lab_pool_raid6", "indexes": "lab_pool_raid6", "wal": "lab_pool_raid1"},
    {"name": "wal+idx-raid1", "tables": "lab_pool_raid6", "indexes": "lab_pool_raid1", "wal": "lab_pool_raid1"}]',
  clients => '{32}', jobs => 2, duration => '40 s', repetitions => 5, warmup => '10 s', scale => :scale) \gset
-- (\! takes its line as it is: the id reaches the shell through the environment)
\setenv EXPERIMENT_ID :experiment_id
\! scripts/lab drive $EXPERIMENT_ID
\! scripts/lab wal pg_default
\connect
\ir report/1_raid_placement.sql
