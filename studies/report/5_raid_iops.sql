-- Study 5's report, from the probes its newest run stored (label 'study 5').
CREATE TEMP VIEW study5 AS
SELECT substr(p.tablespace, 11) AS level, p.workload, p.iops, p.lat_p50_us, p.lat_p99_us
  FROM storlab.probes p
 WHERE p.label = 'study 5' AND p.started_at >= (SELECT max(started_at) FROM public.study_runs WHERE study = 5);

-- Every level: mean of the repetitions and its 95 % interval. Latencies are
-- those of drives serving one request at a time from one budget.
SELECT level, workload, count(*) AS probes, round(avg(iops)) AS iops,
       round(s.ci95_low_b) || '..' || round(s.ci95_high_b) AS iops_ci95,
       round(avg(lat_p50_us)::numeric / 1000, 1) AS p50_ms, round(avg(lat_p99_us)::numeric / 1000, 1) AS p99_ms
  FROM study5 x
  CROSS JOIN LATERAL (SELECT array_agg(iops) AS v FROM study5 r WHERE r.level = x.level AND r.workload = x.workload) a
  CROSS JOIN LATERAL storlab.compare_samples(a.v, a.v) s
 GROUP BY level, workload, s.ci95_low_b, s.ci95_high_b
 ORDER BY workload, array_position('{raid10,raid5,raid6}'::text[], level);

SELECT public.study_record(5, 'RAID 5 vs RAID 10, 8 kB random writes',
         'RAID 5 and RAID 10 arrays of the same disks, 8 kB random writes',
         'btrfs raid5 vs raid10 on 4 drives of 200 I/Os each, one budget; 8 workers, O_DIRECT, 1 GiB file',
         'IOPS', '-60 to -65 %', -65, -60,
         (SELECT array_agg(iops) FROM study5 WHERE level = 'raid10' AND workload = 'randwrite'),
         (SELECT array_agg(iops) FROM study5 WHERE level = 'raid5' AND workload = 'randwrite'));
SELECT public.study_record(5, 'RAID 5 vs RAID 10, 8 kB random reads',
         'RAID 5 and RAID 10 arrays of the same disks, 8 kB random reads',
         'btrfs raid5 vs raid10 on 4 drives of 200 I/Os each, one budget; 8 workers, O_DIRECT, 1 GiB file',
         'IOPS', '+10 to +15 %', 10, 15,
         (SELECT array_agg(iops) FROM study5 WHERE level = 'raid10' AND workload = 'randread'),
         (SELECT array_agg(iops) FROM study5 WHERE level = 'raid5' AND workload = 'randread'),
         'not comparable',
         'the seed''s read gain comes from shorter seeks (RAID 5 spreads data over more spindles); a drive here has an I/O budget and no seek distance, so every level reads at 4 drives'' budget');
SELECT public.study_record(5, 'RAID 6 vs RAID 10, 8 kB random writes (no seed figure)',
         '(not in the seed)', 'btrfs raid6 vs raid10 on 4 drives each', 'IOPS', '(none)', NULL, NULL,
         (SELECT array_agg(iops) FROM study5 WHERE level = 'raid10' AND workload = 'randwrite'),
         (SELECT array_agg(iops) FROM study5 WHERE level = 'raid6' AND workload = 'randwrite'),
         'not comparable', 'the seed measured no RAID 6; shown for the write penalty of double parity');
SELECT comparison, seed, "lab, 95 % interval", runs, p, verdict, why FROM public.study_table WHERE study = 5 ORDER BY comparison;
