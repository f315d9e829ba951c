-- Study 3: write barriers on and off, the whole volume.
-- The seed: pgbench on ext4 and XFS volumes mounted with and without write
-- barriers (barrier=0 / nobarrier): with barriers on, TPS fell by as much as
-- about 60 %, because every commit's fsync waited for the disk's cache flush.
-- Lab: tables, indexes and pg_wal all on lab_ext4 (barriers on, the
-- default) or all on lab_ext4_nobarrier (barrier=0), two drives of the same
-- class, 200 I/Os a second each for reads and writes together; data four
-- times the lab's memory limit (:scale); 8 clients; five repetitions of 40 s
-- runs after 10 s of warm-up (every run contains a checkpoint), in
-- alternating order. Then the same with the data in memory (scale 5), where
-- every transaction waits on its commit. (XFS dropped nobarrier in Linux
-- 4.19: only ext4 can be measured both ways.) A barrier reaches the drive as
-- a flush, which the drive's daemon passes to its image as an fdatasync of
-- the VM's disk: what a flush costs there, not a 2010 disk's cache flush,
-- is what the lab can show; the WAL probe at the end measures it.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\ir lib/verdict.sql
CALL storlab.experiment('study 3: write barriers, the whole volume',
  '[{"name": "barriers-off", "tables": "lab_ext4_nobarrier", "indexes": "lab_ext4_nobarrier", "wal": "lab_ext4_nobarrier"},
    {"name": "barriers-on",  "tables": "lab_ext4",           "indexes": "lab_ext4",           "wal": "lab_ext4"}]',
  clients => '{8}', jobs => 2, duration => '40 s', repetitions => 5, warmup => '10 s', scale => :scale) \gset
\setenv EXPERIMENT_ID :experiment_id
\! scripts/lab drive $EXPERIMENT_ID
\! scripts/lab wal pg_default
\connect
CALL storlab.experiment('study 3: write barriers, the whole volume, data in memory',
  '[{"name": "barriers-off", "tables": "lab_ext4_nobarrier", "indexes": "lab_ext4_nobarrier", "wal": "lab_ext4_nobarrier"},
    {"name": "barriers-on",  "tables": "lab_ext4",           "indexes": "lab_ext4",           "wal": "lab_ext4"}]',
  clients => '{8}', jobs => 2, duration => '20 s', repetitions => 5, warmup => '5 s', scale => 5) \gset
\setenv EXPERIMENT_ID :experiment_id
\! scripts/lab drive $EXPERIMENT_ID
\! scripts/lab wal pg_default
\connect
-- What a commit's flush costs on the two filesystems: the WAL-like probe.
INSERT INTO public.study_runs (study) VALUES (3);
DO $$
DECLARE rep int; t text;
BEGIN
  FOR rep IN 1..5 LOOP
    FOREACH t IN ARRAY CASE WHEN rep % 2 = 1 THEN '{lab_ext4,lab_ext4_nobarrier}'::text[] ELSE '{lab_ext4_nobarrier,lab_ext4}' END LOOP
      PERFORM storlab.probe(t, 'wal', 8192, '5 s', label => 'study 3 commit');
      COMMIT;
    END LOOP;
  END LOOP;
END $$;
\ir report/3_ext4_xfs_barriers.sql
