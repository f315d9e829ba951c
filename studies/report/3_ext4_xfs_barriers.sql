-- Study 3's report, from its newest experiments and commit probes.
SELECT public.study_experiment('study 3: write barriers, the whole volume') AS big,
       public.study_experiment('study 3: write barriers, the whole volume, data in memory') AS small \gset
CREATE TEMP VIEW commits AS
SELECT tablespace, iops, lat_p50_us, lat_p99_us FROM storlab.probes
 WHERE label = 'study 3 commit' AND started_at >= (SELECT max(started_at) FROM public.study_runs WHERE study = 3);
SELECT tablespace, count(*) AS probes, round(avg(iops)) AS commits_per_s, round(avg(lat_p50_us)) AS p50_us,
       round(avg(lat_p99_us)) AS p99_us
  FROM commits GROUP BY tablespace ORDER BY tablespace;
SELECT e.which, r.layout, r.runs, round(r.tps_mean) AS tps, round(r.tps_ci95_low) || '..' || round(r.tps_ci95_high) AS tps_ci95,
       round(r.improvement_pct::numeric, 1) AS "vs_barriers-off_%", round(r.p_value::numeric, 4) AS p,
       round(r.checkpoints_per_run::numeric, 1) AS ckpt_per_run, round(r.device_reads_per_tx::numeric, 2) AS dev_reads_per_tx
  FROM (VALUES ('data 4 x memory', :big), ('data in memory', :small)) e(which, id)
  CROSS JOIN LATERAL storlab.experiment_report(e.id) r;
-- what experiment_report warns of, cell by cell
SELECT e.which, r.layout, c AS caveat
  FROM (VALUES ('data 4 x memory', :big), ('data in memory', :small)) e(which, id)
  CROSS JOIN LATERAL storlab.experiment_report(e.id) r, unnest(r.caveats) c;
-- the checkpoints each layout's measured runs held, by the server log
SELECT 'data 4 x memory' AS which, * FROM public.study_log_checkpoints(:big, :'server_log')
UNION ALL SELECT 'data in memory', * FROM public.study_log_checkpoints(:small, :'server_log');
SELECT public.study_record(3, 'barriers on vs off, data 4 x memory',
         'pgbench on ext4 and XFS, the whole volume with and without barriers',
         format('scale %s (4 x memory), 8 clients, 40 s; tables, indexes and WAL on lab_ext4 vs lab_ext4_nobarrier, one drive each', :scale),
         'TPS', 'down by as much as ~60 %', -60, 0,
         public.study_tps(:big, 'barriers-off'), public.study_tps(:big, 'barriers-on'),
         NULL, format('a barrier costs nothing measurable on this lab''s drives: the WAL probe commits %s a second with barriers and %s without (each commit''s write takes the drive''s budget, its flush none: the drive passes it to the VM''s disk as an fdatasync)',
                      (SELECT round(avg(iops)) FROM commits WHERE tablespace = 'lab_ext4'),
                      (SELECT round(avg(iops)) FROM commits WHERE tablespace = 'lab_ext4_nobarrier')));
SELECT public.study_record(3, 'barriers on vs off, data in memory',
         'pgbench on ext4 and XFS, the whole volume with and without barriers',
         'scale 5 (in memory), 8 clients, 20 s; the same two volumes',
         'TPS', 'down by as much as ~60 %', -60, 0,
         public.study_tps(:small, 'barriers-off'), public.study_tps(:small, 'barriers-on'),
         NULL, format('a barrier costs nothing measurable on this lab''s drives: the WAL probe commits %s a second with barriers and %s without (each commit''s write takes the drive''s budget, its flush none: the drive passes it to the VM''s disk as an fdatasync)',
                      (SELECT round(avg(iops)) FROM commits WHERE tablespace = 'lab_ext4'),
                      (SELECT round(avg(iops)) FROM commits WHERE tablespace = 'lab_ext4_nobarrier')));
SELECT public.study_record(3, 'a commit''s cost: barriers on vs off (the WAL probe)',
         'every commit''s fsync waits for the disk''s cache flush',
         '8 kB WAL-like writes with fdatasync, 1 worker, 5 s: lab_ext4 vs lab_ext4_nobarrier',
         'commits/s', '(the mechanism, no figure)', NULL, NULL,
         (SELECT array_agg(iops) FROM commits WHERE tablespace = 'lab_ext4_nobarrier'),
         (SELECT array_agg(iops) FROM commits WHERE tablespace = 'lab_ext4'),
         'not comparable', 'what a flush costs on this lab''s drives: the drive passes it to its image as an fdatasync of the VM''s disk, with no budget of its own');
SELECT comparison, seed, "lab, 95 % interval", runs, p, verdict, why FROM public.study_table WHERE study = 3 ORDER BY comparison;
