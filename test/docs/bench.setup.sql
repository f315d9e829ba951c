-- docs/bench.md: pgbench's tables (job 1, scale 1 to be quick), so that the
-- page's CALL storlab.bench is job and run 2, as the page shows.
SELECT storlab.bench_init(scale => 1) AS job \gset
CALL storlab.wait(:job);
