-- Study 2: ext3's journal modes, measured as iozone measured them.
-- The original: iozone, 8 kB records, flushes included (-e), 1, 4 and 8
-- processes. Random writes: data=journal 49 MB/s, ordered 143, writeback
-- 169, ext2 (no journal) 178.
-- Lab: ext4 in the same four modes (lab_ext4_journal, lab_ext4 = ordered,
-- lab_ext4_writeback, lab_ext4_nojournal for ext2), each on one image
-- throttled to the same disk class. Each 8 kB random write is followed by
-- fsync(), buffered (data=journal cannot do O_DIRECT, and iozone did not
-- use it either): every figure is the device's, never the page cache's.
-- 1, 4 and 8 workers, 3 s per probe, three repetitions in alternating order.
-- needs: lab_ext4 lab_ext4_journal lab_ext4_writeback lab_ext4_nojournal
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TEMP TABLE study2 (mode text, workers int, rep int, mib_s float8, lat_p50_us float8, lat_p99_us float8);
DO $$
DECLARE
  modes text[] := '{nojournal,ordered,writeback,journal}';
  rep int; i int; m text; ts text; n int; p storlab.probes;
BEGIN
  FOR rep IN 1..3 LOOP
    FOR i IN 1..4 LOOP
      m := modes[CASE WHEN rep % 2 = 1 THEN i ELSE 5 - i END];
      ts := CASE m WHEN 'ordered' THEN 'lab_ext4' ELSE 'lab_ext4_' || m END;
      FOREACH n IN ARRAY '{1,4,8}'::int[] LOOP
        p := storlab.probe(ts, 'randwrite', 8192, '3 s', n, 16 * 1024 * 1024,
                           direct => false, sync_method => 'fsync', label => 'study 2');
        INSERT INTO study2 VALUES (m, n, rep, p.mib_s, p.lat_p50_us, p.lat_p99_us);
      END LOOP;
    END LOOP;
  END LOOP;
END $$;

-- Random writes per mode and workers: mean MB/s of the three repetitions,
-- its 95 % interval, and the change against ordered (Welch's p).
SELECT mode, workers, round(s.mean_b::numeric, 2) AS mib_s,
       round(s.ci95_low_b::numeric, 2) || '..' || round(s.ci95_high_b::numeric, 2) AS mib_s_ci95,
       round(avg(lat_p50_us)) AS p50_us, round(avg(lat_p99_us)) AS p99_us,
       round(s.change_pct::numeric, 1) AS "vs_ordered_%", round(s.p_value::numeric, 4) AS p, s.significant AS sig
  FROM study2 x
  CROSS JOIN LATERAL storlab.compare_samples(
       (SELECT array_agg(mib_s) FROM study2 r WHERE r.mode = 'ordered' AND r.workers = x.workers),
       (SELECT array_agg(mib_s) FROM study2 r WHERE r.mode = x.mode AND r.workers = x.workers)) s
 GROUP BY mode, workers, s.mean_b, s.ci95_low_b, s.ci95_high_b, s.change_pct, s.p_value, s.significant
 ORDER BY workers, array_position('{journal,ordered,writeback,nojournal}'::text[], mode);

-- The original's figures against ordered, beside the lab's at 8 workers.
SELECT o.mode, o.mib_s AS original_mib_s, round(100.0 * o.mib_s / 143 - 100, 1) AS "original_vs_ordered_%",
       round(s.change_pct::numeric, 1) AS "lab_vs_ordered_%", round(s.p_value::numeric, 4) AS p,
       sign(o.mib_s - 143) = sign(s.change_pct::numeric) AS same_direction
  FROM (VALUES ('journal', 49), ('ordered', 143), ('writeback', 169), ('nojournal', 178)) o(mode, mib_s)
  CROSS JOIN LATERAL storlab.compare_samples(
       (SELECT array_agg(mib_s) FROM study2 r WHERE r.mode = 'ordered' AND r.workers = 8),
       (SELECT array_agg(mib_s) FROM study2 r WHERE r.mode = o.mode AND r.workers = 8)) s
 ORDER BY o.mib_s;
