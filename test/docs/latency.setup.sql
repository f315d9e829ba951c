-- docs/latency.md: three standard suites on lab_disk, whose random reads
-- the page reads back (short fixed probes: the page shows their shape).
SELECT count(*) FROM storlab.profile('lab_disk', '0.2 s', precision_pct => NULL);
SELECT count(*) FROM storlab.profile('lab_disk', '0.2 s', precision_pct => NULL);
SELECT count(*) FROM storlab.profile('lab_disk', '0.2 s', precision_pct => NULL);
