-- Study 1's report, from its newest experiment.
SELECT public.study_experiment('study 1: WAL and indexes on RAID 1 beside RAID 6, one pool') AS experiment_id \gset
SELECT layout, wal, runs, round(tps_mean) AS tps, round(tps_ci95_low) || '..' || round(tps_ci95_high) AS tps_ci95,
       round(improvement_pct::numeric, 1) AS "vs_all-raid6_%", round(p_value::numeric, 4) AS p,
       round(checkpoints_per_run::numeric, 1) AS ckpt_per_run, round(device_reads_per_tx::numeric, 2) AS dev_reads_per_tx
  FROM storlab.experiment_report(:experiment_id);
-- Where the I/O went, per device of the pool (both volumes share them).
SELECT layout, device, tablespaces, round(reads_per_tx::numeric, 2) AS reads_per_tx,
       round(writes_per_tx::numeric, 2) AS writes_per_tx, round(busy_pct::numeric) AS "busy_%"
  FROM storlab.experiment_devices(:experiment_id) ORDER BY layout, device;
-- Each run's TPS in order: the drift over the experiment, if any.
SELECT experiment_layout AS layout, string_agg(round(tps)::text, ' ' ORDER BY started_at) AS tps_in_order
  FROM storlab.bench_runs WHERE experiment_id = :experiment_id AND NOT warmup GROUP BY 1;
-- what experiment_report warns of, cell by cell
SELECT r.layout, r.fillfactor, c AS caveat FROM storlab.experiment_report(:experiment_id) r, unnest(r.caveats) c;
-- the checkpoints each layout's measured runs held, by the server log
SELECT * FROM public.study_log_checkpoints(:experiment_id, :'server_log');
SELECT public.study_record(1, 'WAL to RAID 1 vs all on RAID 6',
         'scale 5000, 32 clients, 120 s; RAID 6 and RAID 1 volumes of one 16-drive pool',
         format('scale %s (4 x memory), 32 clients, 40 s; btrfs raid6 and raid1 on two slices of the same 4 drives', :scale),
         'TPS', 'about +15 %', 10, 20,
         public.study_tps(:experiment_id, 'all-raid6'), public.study_tps(:experiment_id, 'wal-raid1'));
SELECT public.study_record(1, 'WAL and indexes to RAID 1 vs all on RAID 6',
         'scale 5000, 32 clients, 120 s; RAID 6 and RAID 1 volumes of one 16-drive pool',
         format('scale %s (4 x memory), 32 clients, 40 s; btrfs raid6 and raid1 on two slices of the same 4 drives', :scale),
         'TPS', 'more than +20 %', 20, 40,
         public.study_tps(:experiment_id, 'all-raid6'), public.study_tps(:experiment_id, 'wal+idx-raid1'));
-- the seed's second step on its own: from +15 % to more than +20 %, a
-- further gain of more than about 4 % (1.20 / 1.15)
SELECT public.study_record(1, 'the step: WAL and indexes vs WAL only on RAID 1',
         'the same pool; the seed''s two figures, more than +20 % against about +15 %',
         'the same experiment''s two layouts',
         'TPS', 'a further gain, more than about +4 %', 4, 15,
         public.study_tps(:experiment_id, 'wal-raid1'), public.study_tps(:experiment_id, 'wal+idx-raid1'));
SELECT comparison, seed, "lab, 95 % interval", runs, p, verdict, why FROM public.study_table WHERE study = 1 ORDER BY comparison;
