-- storlab 0.7.0 -> 0.8.0: PostgreSQL 15, 17 and 18 from one source.
-- One section per capability; each says what changed and why.

-- ---- A run stores its pg_stat_io differences (PostgreSQL 16 and later) ----
-- The counters a run already stored (server_*, db_*) keep their names and
-- meaning on every major; each major's library reads them from the views
-- it has. pg_stat_io's rows are new, and NULL on 15.
ALTER TABLE storlab.bench_runs
  ADD COLUMN server_io jsonb;

-- ---- undo_batch of an earlier batch after undoing a later one ----
-- A row written by undo_batch(N) names N, so that a later batch and its
-- undo cancel out when an earlier batch is undone (0.7.0 refused it: the
-- undo counted as a move since). 0.7.0 wrote that only into the label,
-- which storlab itself set: it is read from there.
ALTER TABLE storlab.relocations
  ADD COLUMN undoes_batch bigint;
UPDATE storlab.relocations
   SET undoes_batch = pg_catalog.substring(label, '^undo of batch ([0-9]+)$')::bigint
 WHERE label ~ '^undo of batch [0-9]+$';

-- ---- PostgreSQL 18 names NOT NULL constraints ----
-- storlab.job_records was storlab.jobs before 0.2.0: on 18 its NOT NULL
-- constraints keep the old table's names (jobs_id_not_null, ...), where a
-- fresh install's are named for job_records. Renamed, so that an updated
-- install has a fresh install's objects on every major (before 18 there
-- are no such constraints, and nothing to rename).
DO $$
DECLARE
  c record;
BEGIN
  FOR c IN SELECT n.conname FROM pg_catalog.pg_constraint n
            WHERE n.conrelid = 'storlab.job_records'::pg_catalog.regclass
              AND n.contype = 'n' AND n.conname LIKE 'jobs\_%\_not\_null'
  LOOP
    EXECUTE pg_catalog.format('ALTER TABLE storlab.job_records RENAME CONSTRAINT %I TO %I',
                              c.conname, 'job_records' || pg_catalog.substr(c.conname, 5));
  END LOOP;
END
$$;
