--
-- PostgreSQL 18's asynchronous I/O, per tablespace. (On 15 and 17 the
-- probe is refused with 0A000: expected/read_path_1.out; errors are shown
-- terse, their message only, which is the same on every major.)
--
\set VERBOSITY terse
-- storlab.tablespaces() shows the effective_io_concurrency reads in each
-- tablespace are prefetched at (the tablespace's own, else the server's),
-- and the server's io_method, io_workers (18) and io_combine_limit (17 and
-- later): NULL where this major has no such setting.
SELECT s.tablespace,
       s.effective_io_concurrency IS NOT DISTINCT FROM CASE WHEN s.kind = 'tablespace' THEN coalesce(
         (SELECT o.option_value::int FROM pg_tablespace t, pg_options_to_table(t.spcoptions) o
           WHERE t.spcname = s.tablespace AND o.option_name = 'effective_io_concurrency'),
         current_setting('effective_io_concurrency')::int) END AS eic_as_set,
       s.io_method IS NOT DISTINCT FROM current_setting('io_method', true) AS io_method_shown,
       s.io_workers::text IS NOT DISTINCT FROM current_setting('io_workers', true) AS io_workers_shown,
       s.io_combine_limit IS NOT DISTINCT FROM current_setting('io_combine_limit', true) AS io_combine_limit_shown
  FROM storlab.tablespaces() s WHERE s.tablespace IN ('lab_ram', 'pg_default', 'pg_wal') ORDER BY s.tablespace;

-- storlab.probe_read_path(tablespace, effective_io_concurrency,
-- table_size, repetitions, label) times PostgreSQL's own read path: a
-- scratch table in the tablespace (seven rows a page), then at each value,
-- each repetition, a cold sequential scan and a cold bitmap heap scan of 2 %
-- of its rows (one page in eight or so, scattered). Cold: the table's and
-- its index's pages are evicted from shared buffers and dropped from the
-- page cache before every scan. Each scan is a row of storlab.probes:
-- suite 'read_path', engine 'postgres', the io_method and the value it ran
-- at; ops are the blocks read from outside shared buffers.
SELECT workload, effective_io_concurrency, io_method = current_setting('io_method') AS io_method_recorded,
       ops > 0 AS read_blocks, file_size >= 4 * 1024 * 1024 AS table_as_asked, suite, engine,
       env -> 'scan' ->> 'rows_found' AS rows_found, env -> 'aio' ->> 'io_method' = io_method AS settings_stored
  FROM storlab.probe_read_path('lab_ram', '{1,16}', 4 * 1024 * 1024, 1, label => 'regress')
 ORDER BY id;
-- Nothing is left of the scratch table, and the session's own settings
-- are as they were.
SELECT count(*) AS scratch_tables FROM pg_class WHERE relname LIKE 'read\_path\_%';
SELECT current_setting('enable_seqscan') AS enable_seqscan;

-- A tablespace with its own effective_io_concurrency (which a session's
-- setting cannot override): each value is set on the tablespace inside the
-- probe's transaction only, and its own set back before it ends.
ALTER TABLESPACE lab_ram SET (effective_io_concurrency = 7);
SELECT workload, effective_io_concurrency, env -> 'scan' ->> 'effective_io_concurrency_via' AS via
  FROM storlab.probe_read_path('lab_ram', '{2}', 1024 * 1024, 1) ORDER BY id;
SELECT spcoptions FROM pg_tablespace WHERE spcname = 'lab_ram';
ALTER TABLESPACE lab_ram RESET (effective_io_concurrency);

-- recommend() on 18 has an io_method row. io_method takes a restart, so
-- one server measures one method at a time, and a value is decided on two
-- scans or more: with each value scanned once, it asks for repetitions.
SELECT topic, target, advice, statement FROM storlab.recommend() WHERE topic = 'io_method';

-- Bad input: a clear error and its SQLSTATE, and nothing stored.
\set ECHO none
\i sql/lib/helpers.sql
\set ECHO all
SELECT count(*) AS probes_before FROM storlab.probes \gset
SELECT call, pg_temp.error_of(call) AS error FROM (VALUES
  ($$storlab.probe_read_path(NULL)$$),
  ($$storlab.probe_read_path('no_such_tablespace')$$),
  ($$storlab.probe_read_path('pg_wal')$$),
  ($$storlab.probe_read_path('pg_global')$$),
  ($$storlab.probe_read_path('lab_ram', '{}')$$),
  ($$storlab.probe_read_path('lab_ram', '{1,NULL}')$$),
  ($$storlab.probe_read_path('lab_ram', '{1001}')$$),
  ($$storlab.probe_read_path('lab_ram', table_size => 1000)$$),
  ($$storlab.probe_read_path('lab_ram', repetitions => 0)$$)
) AS v(call);
SELECT count(*) - :probes_before AS new_probes FROM storlab.probes;
