-- Study 5: 8 kB random I/O on RAID 5, RAID 10 and RAID 6.
-- The seed: 8 kB random reads and writes on RAID 5 and RAID 10 arrays built
-- from the same disks. RAID 5 read 10-15 % more and wrote 60-65 % less:
-- every small write to RAID 5 reads and rewrites its stripe's parity.
-- Lab: btrfs RAID 5, RAID 10 and RAID 6 (nodatacow) on 4 drives each, every
-- drive one budget of 200 I/Os a second for reads and writes
-- (scripts/lab-drives.sh), so a read-modify-write's reads cost what a
-- disk's would. O_DIRECT, 8 kB, 8 workers, 10 s per probe on a 1 GiB file
-- (larger than btrfs's raid56 stripe cache, 1,024 stripes: 192 MiB of data
-- at 4 drives, so small writes do read), five repetitions in alternating
-- order. An IOPS budget has no seek distance: the seed's read gain cannot
-- show here (the report says so).
-- needs: lab_btrfs_raid5 lab_btrfs_raid10 lab_btrfs_raid6
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\ir lib/verdict.sql
-- this run of the study: the report reads the probes labelled since then
INSERT INTO public.study_runs (study) VALUES (5);
DO $$
DECLARE
  levels text[] := '{raid5,raid10,raid6}';
  rep int; i int; w text;
BEGIN
  FOR rep IN 1..5 LOOP
    FOR i IN 1..3 LOOP
      -- A B C, C B A, ...: drift falls on every level alike
      FOREACH w IN ARRAY '{randwrite,randread}'::text[] LOOP
        PERFORM storlab.probe('lab_btrfs_' || levels[CASE WHEN rep % 2 = 1 THEN i ELSE 4 - i END], w, 8192, '10 s', 8,
                              1024 * 1024 * 1024, label => 'study 5');
        COMMIT;
      END LOOP;
    END LOOP;
  END LOOP;
END $$;
\ir report/5_raid_iops.sql
