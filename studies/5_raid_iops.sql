-- Study 5: 8 kB random I/O per RAID level.
-- The original: 8 kB random reads and writes on RAID 5 and RAID 10 arrays
-- built from the same disks. RAID 5 read 10-15 % more and wrote 60-65 %
-- less: every small write to RAID 5 reads and rewrites its stripe's parity.
-- Lab: btrfs RAID 0 (2 images), RAID 1 (2), RAID 5 (4), RAID 6 (4) and
-- RAID 10 (4), every image throttled to the same disk class (scripts/lab
-- status), so each level's own read and write penalty shows. O_DIRECT, 8 kB,
-- 8 workers, 3 s per probe, three repetitions in alternating order.
-- needs: lab_btrfs_raid0 lab_btrfs_raid1 lab_btrfs_raid5 lab_btrfs_raid6 lab_btrfs_raid10
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TEMP TABLE study5 (level text, rep int, workload text, iops float8, lat_p50_us float8, lat_p99_us float8);
DO $$
DECLARE
  levels text[] := '{raid0,raid1,raid5,raid6,raid10}';
  rep int; i int; lvl text; w text; p storlab.probes;
BEGIN
  FOR rep IN 1..3 LOOP
    FOR i IN 1..5 LOOP
      -- A B C D E, E D C B A, A B C D E: drift falls on every level alike
      lvl := levels[CASE WHEN rep % 2 = 1 THEN i ELSE 6 - i END];
      FOREACH w IN ARRAY '{randread,randwrite}'::text[] LOOP
        p := storlab.probe('lab_btrfs_' || lvl, w, 8192, '3 s', 8, 64 * 1024 * 1024, label => 'study 5');
        INSERT INTO study5 VALUES (lvl, rep, w, p.iops, p.lat_p50_us, p.lat_p99_us);
      END LOOP;
    END LOOP;
  END LOOP;
END $$;

-- Every level, mean of the three repetitions and its 95 % interval.
SELECT level, workload, round(s.mean_b) AS iops, round(s.ci95_low_b) || '..' || round(s.ci95_high_b) AS iops_ci95,
       round(avg(lat_p50_us)) AS p50_us, round(avg(lat_p99_us)) AS p99_us,
       round(s.change_pct::numeric, 1) AS "vs_raid10_%", round(s.p_value::numeric, 4) AS p
  FROM study5 x
  CROSS JOIN LATERAL storlab.compare_samples(
       (SELECT array_agg(iops) FROM study5 r WHERE r.level = 'raid10' AND r.workload = x.workload),
       (SELECT array_agg(iops) FROM study5 r WHERE r.level = x.level AND r.workload = x.workload)) s
 GROUP BY level, workload, s.mean_b, s.ci95_low_b, s.ci95_high_b, s.change_pct, s.p_value
 ORDER BY workload, array_position('{raid0,raid1,raid5,raid6,raid10}'::text[], level);

-- The original's comparison: RAID 5 against RAID 10.
SELECT workload, round(s.mean_a) AS raid10_iops, round(s.mean_b) AS raid5_iops,
       round(s.change_pct::numeric, 1) AS "raid5_vs_raid10_%",
       CASE workload WHEN 'randread' THEN '+10 to +15' ELSE '-60 to -65' END AS "original_%",
       round(s.p_value::numeric, 4) AS p, s.significant
  FROM (SELECT DISTINCT workload FROM study5) w
  CROSS JOIN LATERAL storlab.compare_samples(
       (SELECT array_agg(iops) FROM study5 r WHERE r.level = 'raid10' AND r.workload = w.workload),
       (SELECT array_agg(iops) FROM study5 r WHERE r.level = 'raid5' AND r.workload = w.workload)) s
 ORDER BY workload;
