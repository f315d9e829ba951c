-- Study 4's report, from its newest experiment.
SELECT public.study_experiment('study 4: fillfactor on a compressing device and its uncompressed twin') AS experiment_id \gset
SELECT layout, fillfactor AS ff, runs, round(tps_mean) AS tps, round(tps_ci95_low) || '..' || round(tps_ci95_high) AS tps_ci95,
       round(ff_improvement_pct::numeric, 1) AS "vs_ff100_%", round(ff_p_value::numeric, 4) AS p,
       round(hot_ratio::numeric, 2) AS hot_ratio, round(wal_bytes_per_tx::numeric) AS wal_per_tx,
       round(checkpoints_per_run::numeric, 1) AS ckpt_per_run,
       pg_size_pretty(logical_bytes) AS logical, pg_size_pretty(stored_bytes) AS stored
  FROM storlab.experiment_report(:experiment_id) ORDER BY layout, fillfactor DESC;
-- what experiment_report warns of, cell by cell
SELECT r.layout, r.fillfactor, c AS caveat FROM storlab.experiment_report(:experiment_id) r, unnest(r.caveats) c;
-- the checkpoints each layout's measured runs held, by the server log
SELECT * FROM public.study_log_checkpoints(:experiment_id, :'server_log');
SELECT public.study_record(4, format('fillfactor %s vs 100, TPS on the compressing device', o.ff),
         'scale 10000, 128 clients, a compressing SSD',
         format('scale %s (4 x memory), 32 clients, 35 s; ext4 on zram (lz4) at an SSD class', :scale),
         'TPS', o.seed, o.pct, o.pct,
         public.study_tps(:experiment_id, 'zram-lz4', 100), public.study_tps(:experiment_id, 'zram-lz4', o.ff))
  FROM (VALUES (70, '+38 %', 38), (50, '+46 %', 46)) o(ff, seed, pct);
SELECT public.study_record(4, format('fillfactor %s vs 100, TPS on the uncompressed twin', o.ff),
         '(the seed had no uncompressed twin)',
         format('scale %s (4 x memory), 32 clients, 35 s; ext4 on an image at the same SSD class', :scale),
         'TPS', '(none)', NULL, NULL,
         public.study_tps(:experiment_id, 'ssd', 100), public.study_tps(:experiment_id, 'ssd', o.ff),
         'not comparable', 'the gain fillfactor gives without compression: what the compressing device adds is the difference')
  FROM (VALUES (70), (50)) o(ff);
-- device space as the seed measured it: stored bytes against fillfactor 100
SELECT r.fillfactor AS ff, o.space AS "seed_space_%",
       round((100.0 * r.stored_bytes / b.stored_bytes - 100)::numeric, 1) AS "lab_stored_%",
       round((100.0 * r.logical_bytes / b.logical_bytes - 100)::numeric, 1) AS "lab_logical_%"
  FROM storlab.experiment_report(:experiment_id) r
  JOIN storlab.experiment_report(:experiment_id) b ON b.layout = r.layout AND b.fillfactor = 100
  JOIN (VALUES (70, '+8'), (50, '+20')) o(ff, space) ON o.ff = r.fillfactor
 WHERE r.layout = 'zram-lz4' ORDER BY r.fillfactor DESC;
SELECT comparison, seed, "lab, 95 % interval", runs, p, verdict, why FROM public.study_table WHERE study = 4 ORDER BY comparison;
