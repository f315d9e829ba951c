-- A job's worker runs its job however soon after the creating transaction's
-- commit it looks: jobs started one after another, each committed at once
-- as a script's autocommit statements are, all run. (The worker asks after
-- its creator with pg_xact_status, which says committed as soon as the
-- commit log does, a moment before the commit reaches other sessions'
-- snapshots: a worker that read the job's row in that moment found none,
-- took the job for rolled back and exited, and the job stayed queued, with
-- CALL storlab.wait waiting for it.)
CREATE EXTENSION IF NOT EXISTS pgtap;
SET client_min_messages = warning;
SELECT plan(2);

CREATE TEMP TABLE job_runs (id bigint, status text);
DO $$
DECLARE
  j bigint;
  s text;
BEGIN
  FOR i IN 1 .. 30 LOOP
    j := storlab.bench_init(scale => 1);
    COMMIT;
    -- (up to 20 s; pgbench -i at scale 1 takes well under one)
    FOR k IN 1 .. 200 LOOP
      SELECT r.status INTO s FROM storlab.job_records r WHERE r.id = j;
      EXIT WHEN s IN ('done', 'failed', 'cancelled');
      PERFORM pg_sleep(0.1);
      COMMIT;
    END LOOP;
    INSERT INTO job_runs VALUES (j, s);
    IF s NOT IN ('done', 'failed', 'cancelled') THEN
      -- stuck: out of the way of the next one
      PERFORM storlab.cancel(j);
    END IF;
    COMMIT;
  END LOOP;
END $$;
SELECT is((SELECT count(*) FROM job_runs WHERE status = 'done'), 30::bigint,
          '30 jobs started one after another, each committed at once: all ran');
SELECT is((SELECT string_agg(format('job %s %s', id, status), ', ' ORDER BY id) FROM job_runs WHERE status <> 'done'), NULL,
          'none stayed queued');

SELECT * FROM finish();
