-- storlab 0.7.0 -> 0.8.0: PostgreSQL 15, 17 and 18 from one source.
-- One section per capability; each says what changed and why.

-- ---- A run stores its pg_stat_io differences (PostgreSQL 16 and later) ----
-- The counters a run already stored (server_*, db_*) keep their names and
-- meaning on every major; each major's library reads them from the views
-- it has. pg_stat_io's rows are new, and NULL on 15.
ALTER TABLE storlab.bench_runs
  ADD COLUMN server_io jsonb;
