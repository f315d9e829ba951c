-- docs/latency.md: three standard suites on lab_disk, whose random reads
-- the page reads back (short fixed probes: the page shows their shape), and
-- one at 4 workers, which probe_latency() refuses to merge with them (the
-- page shows the error with these probes' ids: 1, 7, 13 and 19).
SELECT count(*) FROM storlab.profile('lab_disk', '0.2 s', precision_pct => NULL);
SELECT count(*) FROM storlab.profile('lab_disk', '0.2 s', precision_pct => NULL);
SELECT count(*) FROM storlab.profile('lab_disk', '0.2 s', precision_pct => NULL);
SELECT count(*) FROM storlab.profile('lab_disk', '0.2 s', '{4}', precision_pct => NULL);
