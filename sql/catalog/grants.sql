-- Run last, after every function exists: the waiting procedures, then privileges.

-- Waits for a job by polling, committing between polls so that the caller
-- never holds one snapshot for the length of a benchmark. Raises the job's
-- error if it failed (with the job's SQLSTATE); cancels the job if the caller is cancelled
-- (statement_timeout, pg_cancel_backend). `timeout` stops waiting, not the job.
--
-- A procedure that COMMITs cannot carry a SET search_path clause, so every
-- type, function and operator in these two is schema-qualified: the
-- caller's search_path decides nothing here either.
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
-- server is stopped, and calls experiment_resume() and wait().
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

-- Privileges. Functions that write files, move relations or run programs are
-- not executable by PUBLIC; read-only reports are granted to pg_monitor.
-- The schema itself is usable by everyone so that a refused call names the
-- function it refuses, rather than the schema.
GRANT USAGE ON SCHEMA storlab TO PUBLIC;

REVOKE ALL ON FUNCTION storlab.tablespaces() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.tablespaces() TO pg_monitor;

-- Probes write scratch files: superusers only, unless a DBA grants them
-- (EXECUTE on the functions plus INSERT, SELECT on storlab.probes).
REVOKE ALL ON FUNCTION storlab.probe(name, text, integer, interval, integer, bigint, boolean, text, text, integer, text, real) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.fsync_cost(name, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.profile(name, interval, integer[], integer[], real, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.compare_tablespaces(interval, interval, real, integer, integer, boolean) FROM PUBLIC;
-- measure => false ranks the stored figures only; measuring takes EXECUTE
-- on storlab.profile() too (ops::compare), as measuring by hand does
GRANT EXECUTE ON FUNCTION storlab.compare_tablespaces(interval, interval, real, integer, integer, boolean) TO pg_monitor;
-- measure_volume, the procedure's step, is executable by PUBLIC: whoever
-- may CALL the procedure may take its steps, and each step checks what
-- measuring by hand takes (EXECUTE on storlab.profile(), CREATE on the
-- volume's tablespace: 42501) before it measures anything. (Granted, not
-- left to the default, so that an updated install has the same ACL.)
GRANT EXECUTE ON FUNCTION storlab.measure_volume(name, uuid, interval, interval, real, integer, integer) TO PUBLIC;
REVOKE ALL ON PROCEDURE storlab.measure_tablespaces(interval, interval, real, integer, integer, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.probe_read_path(name, integer[], bigint, integer, text) FROM PUBLIC;

-- Stored results are read-only reports.
GRANT SELECT ON storlab.probes TO pg_monitor;

-- Checks probe (and baselines store): not for PUBLIC, as probes; the
-- baselines are read-only reports.
REVOKE ALL ON FUNCTION storlab.check(name, text, text, text, double precision, interval, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.baseline(text, name[], interval, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.regressions(text, name[], double precision, interval, integer, text) FROM PUBLIC;
GRANT SELECT ON storlab.baselines, storlab.baseline_probes TO pg_monitor;
-- A role's own probes and baselines (sql/catalog/own_rows.sql): readable by
-- the role that measured them, whatever its other grants; dropping a
-- baseline is for the role that took it (or one that may DELETE from
-- storlab.baselines), and not for PUBLIC, as taking one is not.
GRANT SELECT ON storlab.own_probes, storlab.own_baselines TO PUBLIC;
REVOKE ALL ON FUNCTION storlab.drop_baseline(text) FROM PUBLIC;

-- Relocation moves relations (as their owner could by hand): not for PUBLIC.
REVOKE ALL ON FUNCTION storlab.move(regclass, name, boolean, interval, boolean, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.apply_layout(name, name, name, interval, boolean, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.restore_layout(timestamptz, interval, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.undo_batch(bigint, interval, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.layout(name) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.layout(name) TO pg_monitor;
GRANT SELECT ON storlab.relocations TO pg_monitor;

-- Benchmarks run programs and load the server: not for PUBLIC.
REVOKE ALL ON FUNCTION storlab.bench_init(integer, integer, name, name, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.bench_start(text, integer, integer, interval, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.cancel(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.stop_now(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.move_indexes_online(regclass, name) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.job_status(bigint) FROM PUBLIC;
REVOKE ALL ON PROCEDURE storlab.wait(bigint, interval) FROM PUBLIC;
REVOKE ALL ON PROCEDURE storlab.bench(text, integer, integer, interval, text, jsonb, bigint) FROM PUBLIC;
GRANT SELECT ON storlab.jobs, storlab.job_records, storlab.bench_runs, storlab.bench_progress TO pg_monitor;

-- Experiments run benchmarks and move relations: not for PUBLIC; their
-- report reads stored runs, as the caller.
REVOKE ALL ON FUNCTION storlab.experiment_start(text, jsonb, text, integer[], integer, interval, integer, interval,
                                                integer, integer[], jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.experiment_resume(bigint) FROM PUBLIC;
REVOKE ALL ON PROCEDURE storlab.experiment(text, jsonb, text, integer[], integer, interval, integer, interval,
                                           integer, integer[], jsonb, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.experiment_report(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.experiment_report(bigint) TO pg_monitor;
REVOKE ALL ON FUNCTION storlab.experiment_io(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.experiment_io(bigint) TO pg_monitor;

-- Charts and advice read stored results, as a query by hand would.
REVOKE ALL ON FUNCTION storlab.chart_svg(text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.chart_svg(text, bigint, text) TO pg_monitor;
REVOKE ALL ON FUNCTION storlab.recommend() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.recommend() TO pg_monitor;
GRANT SELECT ON storlab.experiments, storlab.experiment_records, storlab.experiment_sizes TO pg_monitor;

-- Pruning deletes stored results: CALL storlab.prune() (sql/catalog/prune.sql)
-- checks its caller through prune_cutoff, which deletes nothing itself:
-- anyone may call it, so that a role granted EXECUTE on prune is told
-- storlab's own 42501 (who may prune) rather than PostgreSQL's
-- "permission denied for function prune_cutoff", an internal name. (The
-- REVOKE first, as 0.8.0 had it: an updated install gets the same ACL.)
REVOKE ALL ON FUNCTION storlab.prune_cutoff(interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.prune_cutoff(interval, boolean) TO PUBLIC;

-- Merged percentiles of stored histograms: read-only reports, as the caller.
REVOKE ALL ON FUNCTION storlab.probe_latency(bigint[], double precision[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.run_latency(bigint[], double precision[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.probe_latency(bigint[], double precision[]) TO pg_monitor;
GRANT EXECUTE ON FUNCTION storlab.run_latency(bigint[], double precision[]) TO pg_monitor;

-- The fleet (sql/catalog/fleet.sql): its readers are reports, for
-- pg_monitor; splitting a conninfo shows its password, for no one else.
REVOKE ALL ON FUNCTION storlab.compare_fleet(text[], interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.compare_fleet(text[], interval) TO pg_monitor;
REVOKE ALL ON FUNCTION storlab.compare_servers(text, text, text[], interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.compare_servers(text, text, text[], interval) TO pg_monitor;
REVOKE ALL ON FUNCTION storlab.fleet_conninfo_options(text) FROM PUBLIC;
