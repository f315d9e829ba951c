-- The procedures that wait or measure (storlab.prune is in prune.sql):
-- each COMMITs between its steps, so that the caller never holds one
-- snapshot for the length of a benchmark or a measurement. Their
-- privileges are in grants.sql, with every function's.
--
-- A procedure that COMMITs cannot carry a SET search_path clause, so every
-- type, function and operator in these is schema-qualified: the caller's
-- search_path decides nothing here either.

-- Waits for a job by polling, committing between polls so that the caller
-- never holds one snapshot for the length of a benchmark. Raises the job's
-- error if it failed (with the job's SQLSTATE); cancels the job if the caller is cancelled
-- (statement_timeout, pg_cancel_backend). `timeout` stops waiting, not the job.
CREATE PROCEDURE storlab.wait(job_id bigint, timeout interval DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  s pg_catalog.text;
  e pg_catalog.text;
  c pg_catalog.text;
  deadline pg_catalog.timestamptz := pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) timeout;
BEGIN
  IF job_id IS NULL THEN
    RAISE EXCEPTION 'job_id must not be NULL' USING ERRCODE = '22004';
  END IF;
  LOOP
    BEGIN
      SELECT j.status, j.error, j.sqlstate INTO s, e, c FROM storlab.job_status(job_id) j;
      EXIT WHEN s IS NULL
             OR s OPERATOR(pg_catalog.=) ANY (ARRAY['done', 'failed', 'cancelled']::pg_catalog.text[]);
      PERFORM pg_catalog.pg_sleep(0.25);
    EXCEPTION WHEN query_canceled THEN
      -- this transaction rolls back, and a cancel() with it: stop the job
      -- now, if it is the caller's to stop (cancel()'s rule). Another
      -- role's job is left alone: the waiting ends, and the error is the
      -- cancel, never the refusal to stop someone else's job.
      BEGIN
        PERFORM storlab.stop_now(job_id);
      EXCEPTION WHEN insufficient_privilege THEN
        NULL;
      END;
      RAISE;
    END;
    COMMIT;
    IF deadline IS NOT NULL AND pg_catalog.clock_timestamp() OPERATOR(pg_catalog.>) deadline THEN
      RAISE EXCEPTION 'storlab job % is still % after %', job_id, s, timeout
        USING ERRCODE = '57014', HINT = 'The job goes on; wait again, or stop it with storlab.cancel().';
    END IF;
  END LOOP;
  IF s IS NULL THEN
    RAISE EXCEPTION 'storlab job % does not exist', job_id USING ERRCODE = '42704';
  ELSIF s OPERATOR(pg_catalog.=) 'failed' THEN
    -- with the job's own SQLSTATE (a lock timeout is 55P03 here too);
    -- a failure outside PostgreSQL (pgbench's exit) is 38000
    RAISE EXCEPTION USING MESSAGE = pg_catalog.format('storlab job %s failed: %s', job_id, e),
                          ERRCODE = CASE WHEN c IS NULL THEN '38000' ELSE c END;
  ELSIF s OPERATOR(pg_catalog.=) 'cancelled' THEN
    RAISE EXCEPTION 'storlab job % was cancelled', job_id USING ERRCODE = '57014';
  END IF;
END $$;

-- storlab.bench_start() and wait: a benchmark run from a CALL, returning its id.
CREATE PROCEDURE storlab.bench(script text DEFAULT 'tpcb-like', clients integer DEFAULT 8, jobs integer DEFAULT 2,
                               duration interval DEFAULT '60 seconds', label text DEFAULT NULL,
                               options jsonb DEFAULT '{}', INOUT run_id bigint DEFAULT NULL)
LANGUAGE plpgsql AS $$
BEGIN
  run_id := storlab.bench_start(script, clients, jobs, duration, label, options);
  COMMIT;  -- the worker can see the job only once it is committed
  CALL storlab.wait(run_id);
END $$;

-- storlab.experiment_start() and wait: a whole experiment from a CALL,
-- returning its id (its report: storlab.experiment_report(id)). An
-- experiment that stops where its next run needs pg_wal elsewhere
-- (storlab.experiments.wal_needed) returns its id too, with a NOTICE that
-- says what to do: a script reads wal_needed, moves pg_wal while the
-- server is stopped, and calls experiment_resume() and wait(). One that
-- finished says its caveats in NOTICEs (the job's detail keeps them: a
-- writing workload whose runs contained no checkpoint, pgbench's data
-- small enough for the server's memory).
CREATE PROCEDURE storlab.experiment(name text, layouts jsonb, script text DEFAULT 'tpcb-like',
                                    clients integer[] DEFAULT '{8}', jobs integer DEFAULT 2,
                                    duration interval DEFAULT '60 seconds', repetitions integer DEFAULT 3,
                                    warmup interval DEFAULT '10 seconds', scale integer DEFAULT 10,
                                    fillfactors integer[] DEFAULT '{100}', options jsonb DEFAULT '{}',
                                    INOUT experiment_id bigint DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  needed pg_catalog.name;
  why pg_catalog.text;
  caveat pg_catalog.text;
BEGIN
  experiment_id := storlab.experiment_start(name, layouts, script, clients, jobs, duration, repetitions,
                                            warmup, scale, fillfactors, options);
  COMMIT;  -- the worker can see the job only once it is committed
  CALL storlab.wait(experiment_id);
  SELECT e.wal_needed, e.current_action INTO needed, why FROM storlab.experiments e
   WHERE e.id OPERATOR(pg_catalog.=) experiment_id;
  IF needed IS NOT NULL THEN
    RAISE NOTICE 'storlab: experiment % stopped: %', experiment_id, why
      USING HINT = pg_catalog.format('storlab.experiments.wal_needed is %s until it is resumed.', needed);
  ELSE
    FOR caveat IN SELECT c.value FROM storlab.jobs j
                   CROSS JOIN LATERAL pg_catalog.jsonb_array_elements_text(j.detail OPERATOR(pg_catalog.->) 'caveats') c
                  WHERE j.id OPERATOR(pg_catalog.=) experiment_id
    LOOP
      RAISE NOTICE 'storlab: experiment %: %', experiment_id, caveat;
    END LOOP;
  END IF;
END $$;

-- compare_tablespaces()'s measuring as a procedure that keeps what it
-- measured: each volume without a complete suite call younger than max_age
-- is measured in a transaction of its own and committed, so a cancel
-- (statement_timeout, pg_cancel_backend) keeps every volume it finished;
-- compare_tablespaces() then ranks them. The volumes go one after another
-- (not round after round across them, as one compare_tablespaces() call
-- does). Returns the suite call's uuid (storlab.probes.suite_call).
CREATE PROCEDURE storlab.measure_tablespaces(max_age interval DEFAULT '1 day', duration interval DEFAULT '2 seconds',
                                             precision_pct real DEFAULT 5, min_repetitions integer DEFAULT 2,
                                             max_repetitions integer DEFAULT 4, INOUT suite_call uuid DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  v pg_catalog.name;
  n pg_catalog.int8;
  done pg_catalog.int4 := 0;
BEGIN
  IF suite_call IS NULL THEN
    suite_call := pg_catalog.gen_random_uuid();
  END IF;
  FOR v IN SELECT c.tablespace
             FROM storlab.compare_tablespaces(max_age, duration, precision_pct, min_repetitions, max_repetitions, false) c
            WHERE c.same_volume_as IS NULL AND c.repetitions OPERATOR(pg_catalog.=) 0
  LOOP
    n := storlab.measure_volume(v, suite_call, max_age, duration, precision_pct, min_repetitions, max_repetitions);
    COMMIT;
    IF n OPERATOR(pg_catalog.>) 0 THEN
      done := done OPERATOR(pg_catalog.+) 1;
      RAISE NOTICE 'storlab: the volume of % measured and committed (% probes)', v, n;
    END IF;
  END LOOP;
  RAISE NOTICE 'storlab: % volume(s) measured; storlab.compare_tablespaces() ranks them', done;
END $$;
