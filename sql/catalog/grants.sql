-- Run last, after every function and procedure exists (procedures.sql).

-- Privileges. Functions that write files, move relations or run programs are
-- not executable by PUBLIC; read-only reports are granted to pg_monitor.
-- The schema itself is usable by everyone so that a refused call names the
-- function it refuses, rather than the schema.
GRANT USAGE ON SCHEMA storlab TO PUBLIC;

REVOKE ALL ON FUNCTION storlab.tablespaces() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.tablespaces() TO pg_monitor;

-- Probes write scratch files: superusers only, unless a DBA grants them
-- (EXECUTE on the functions plus INSERT, SELECT on storlab.probes).
REVOKE ALL ON FUNCTION storlab.probe(name, text, integer, interval, integer, bigint, boolean, text, text, integer, text, real, integer) FROM PUBLIC;
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
REVOKE ALL ON FUNCTION storlab.experiment_devices(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.experiment_devices(bigint) TO pg_monitor;

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
