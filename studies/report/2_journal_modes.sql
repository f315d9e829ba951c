-- Study 2's report, from the probes its newest run stored.
CREATE TEMP VIEW study2 AS
SELECT CASE p.tablespace WHEN 'lab_ext4' THEN 'ordered' ELSE substr(p.tablespace, 10) END AS mode,
       p.label AS test, p.mib_s, p.sync_s, p.lat_p50_us, p.lat_p99_us
  FROM storlab.probes p
 WHERE p.label IN ('study 2 iozone -e', 'study 2 fsync each')
   AND p.started_at >= (SELECT max(started_at) FROM public.study_runs WHERE study = 2);

-- Each mode and test: MB/s (for iozone -e, the writes and the final fsync
-- together), its 95 % interval, and for iozone -e the seconds the fsync took.
SELECT test, mode, count(*) AS probes, round(avg(mib_s)::numeric, 2) AS mib_s,
       round(s.ci95_low_b::numeric, 2) || '..' || round(s.ci95_high_b::numeric, 2) AS mib_s_ci95,
       round(avg(sync_s)::numeric, 2) AS sync_s, round(avg(lat_p99_us)::numeric / 1000, 2) AS write_p99_ms
  FROM study2 x
  CROSS JOIN LATERAL (SELECT array_agg(mib_s) AS v FROM study2 r WHERE r.mode = x.mode AND r.test = x.test) a
  CROSS JOIN LATERAL storlab.compare_samples(a.v, a.v) s
 GROUP BY test, mode, s.ci95_low_b, s.ci95_high_b
 ORDER BY test, array_position('{journal,ordered,writeback,nojournal}'::text[], mode);

SELECT public.study_record(2, format('%s vs ordered, iozone -e', o.mode),
         'ext3, iozone 8 kB random writes, flush included (-e), 1 process',
         format('ext4 %s vs ordered, one drive each; 8 kB random writes, buffered, 1 worker, one fsync after the last (sync_every => 0), 256 MiB', o.mode),
         'MB/s', o.seed, o.pct, o.pct,
         (SELECT array_agg(mib_s) FROM study2 WHERE mode = 'ordered' AND test = 'study 2 iozone -e'),
         (SELECT array_agg(mib_s) FROM study2 WHERE mode = o.mode AND test = 'study 2 iozone -e'),
         CASE WHEN o.mode = 'writeback' THEN 'not comparable' END,
         CASE WHEN o.mode = 'writeback' THEN
           'ext3''s ordered mode wrote a file''s data out before each journal commit, which writeback skipped: that is the gap the seed measured; ext4''s ordered mode (delayed allocation) no longer does so for overwrites, and ext3''s does not exist on this kernel'
              WHEN o.mode = 'journal' THEN
           format('ordered wrote %s pages of 8 kB a second, about its drive''s budget of 200 I/Os: the lab''s dirty-page limit (16 MB, for the pgbench studies) starts writeback while the writes run, so pages leave in random order at the drive''s random rate, and data=journal adds only its journal''s sequential copy; the seed''s page cache held the file until its one flush, written in order, where a second copy of every page costs in proportion',
                  (SELECT round(avg(mib_s) * 128) FROM study2 WHERE mode = 'ordered' AND test = 'study 2 iozone -e')) END)
  FROM (VALUES ('journal', '49 vs 143 MB/s: -65.7 %', -65.7), ('writeback', '169 vs 143 MB/s: +18.2 %', 18.2),
               ('nojournal', '178 vs 143 MB/s: +24.5 %', 24.5)) o(mode, seed, pct);
SELECT public.study_record(2, format('%s vs ordered, fsync after each write (a second test)', o.mode),
         'ext3, iozone 8 kB random writes, flush included (-e), 1 process',
         format('ext4 %s vs ordered; 8 kB random writes, buffered, 1 worker, an fsync after every write, 16 MiB', o.mode),
         'MB/s', o.seed, o.pct, o.pct,
         (SELECT array_agg(mib_s) FROM study2 WHERE mode = 'ordered' AND test = 'study 2 fsync each'),
         (SELECT array_agg(mib_s) FROM study2 WHERE mode = o.mode AND test = 'study 2 fsync each'),
         'not comparable', 'a commit-latency test, not iozone -e''s: the seed measured buffered throughput with one flush per file; shown as what a commit costs per mode')
  FROM (VALUES ('journal', '49 vs 143 MB/s: -65.7 %', -65.7), ('writeback', '169 vs 143 MB/s: +18.2 %', 18.2),
               ('nojournal', '178 vs 143 MB/s: +24.5 %', 24.5)) o(mode, seed, pct);
SELECT comparison, seed, "lab, 95 % interval", runs, p, verdict, why FROM public.study_table WHERE study = 2 ORDER BY comparison;
