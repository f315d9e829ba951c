-- probe_read_path (PostgreSQL 18): cold scans, privileges, settings left as
-- they were, cancel, two sessions, a full volume. On 15 and 17 every call is
-- refused with 0A000 and the rest is skipped.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT plan(15);

\ir lib/probe_helpers.sql
CREATE FUNCTION pg_temp.scratch_tables() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM pg_class WHERE relname LIKE 'read\_path\_%'
$$;

SELECT current_setting('server_version_num')::int >= 180000 AS aio \gset
\if :aio

-- Cold: every scan reads its blocks from outside shared buffers, the
-- sequential scan all of the table's.
CREATE TEMP TABLE cold AS
  SELECT * FROM storlab.probe_read_path('lab_disk', '{1,32}', 8 * 1024 * 1024, 2);
SELECT is((SELECT count(*) FROM cold), 8::bigint, 'two values, two repetitions, two scans: eight rows');
SELECT ok((SELECT bool_and(ops >= file_size / 8192) FROM cold WHERE workload = 'seqscan'),
          'a cold sequential scan reads every page of the table from outside shared buffers');
SELECT ok((SELECT bool_and(ops > 0 AND ops < file_size / 8192 / 2) FROM cold WHERE workload = 'bitmapscan'),
          'a cold bitmap heap scan reads its scattered pages, a small share of them');
SELECT is((SELECT array_agg(effective_io_concurrency ORDER BY id) FROM cold WHERE workload = 'seqscan'),
          '{1,32,32,1}', 'the values are rotated between repetitions');

-- The caller's session keeps its own settings.
SET LOCAL effective_io_concurrency = 5;
SET LOCAL enable_bitmapscan = off;
SELECT count(*) FROM storlab.probe_read_path('lab_ram', '{1,2}', 1048576, 1);
SELECT is(current_setting('effective_io_concurrency') || ' ' || current_setting('enable_bitmapscan'), '5 off',
          'the session''s effective_io_concurrency and plan settings are as they were');

-- Privileges: what CREATE TABLE ... TABLESPACE needs, and, where the
-- tablespace sets its own effective_io_concurrency, its ownership.
CREATE ROLE tap_rp_granted;
GRANT EXECUTE ON FUNCTION storlab.probe_read_path(name, integer[], bigint, integer, text) TO tap_rp_granted;
GRANT INSERT, SELECT ON storlab.probes TO tap_rp_granted;
SET LOCAL ROLE tap_rp_granted;
SELECT throws_ok($$SELECT storlab.probe_read_path('lab_ram', '{1}', 1048576, 1)$$, '42501', NULL,
                 'without CREATE on the tablespace: 42501');
RESET ROLE;
GRANT CREATE ON TABLESPACE lab_ram TO tap_rp_granted;
SET LOCAL ROLE tap_rp_granted;
SELECT is((SELECT count(*) FROM storlab.probe_read_path('lab_ram', '{1}', 1048576, 1)), 2::bigint,
          'with CREATE on it, a granted role probes');
RESET ROLE;
ALTER TABLESPACE lab_ram SET (effective_io_concurrency = 7);
SET LOCAL ROLE tap_rp_granted;
SELECT throws_ok($$SELECT storlab.probe_read_path('lab_ram', '{1}', 1048576, 1)$$, '42501', NULL,
                 'a tablespace with its own value: only its owner may probe others (42501)');
RESET ROLE;
SELECT is((SELECT spcoptions FROM pg_tablespace WHERE spcname = 'lab_ram'), '{effective_io_concurrency=7}',
          'and the tablespace keeps its own value');

-- statement_timeout stops it promptly, during the table's making and
-- during the scans, and nothing is left: no table, no probe row, the
-- tablespace's own value.
SELECT count(*) AS probes_before FROM storlab.probes \gset
SELECT pg_temp.tick();
SET LOCAL statement_timeout = '400ms';
SELECT is(pg_temp.sqlstate_of($$SELECT storlab.probe_read_path('lab_ram', '{1,16,64}', 2 * 1024 * 1024 * 1024::bigint, 20)$$),
          '57014', 'statement_timeout cancels a read-path probe (57014)');
SET LOCAL statement_timeout = 0;
SELECT cmp_ok(pg_temp.since_tick(), '<', 2.0, 'it stopped within 2 s');
SELECT is(pg_temp.scratch_tables() || ' ' || ((SELECT count(*) FROM storlab.probes) - :probes_before) || ' ' ||
          (SELECT spcoptions::text FROM pg_tablespace WHERE spcname = 'lab_ram'),
          '0 0 {effective_io_concurrency=7}', 'nothing is left of it, and the tablespace''s value is its own');
ALTER TABLESPACE lab_ram RESET (effective_io_concurrency);

-- Two sessions: probes of one volume never overlap, read-path or not; a
-- second waits no longer than lock_timeout.
SELECT dblink_connect('neighbour', format('host=%s port=%s dbname=%s user=%s',
       current_setting('unix_socket_directories'), current_setting('port'), current_database(), current_user));
SELECT dblink_send_query('neighbour',
       $$SELECT count(*) FROM storlab.probe_read_path('lab_ram', '{1,16}', 64 * 1024 * 1024, 3)$$);
SELECT pg_sleep(0.3);
SET LOCAL lock_timeout = '200ms';
SELECT throws_ok($$SELECT storlab.probe_read_path('lab_ram', '{1}', 1048576, 1)$$, '55P03', NULL,
                 'a read-path probe of a volume another probe is using waits no longer than lock_timeout');
SET LOCAL lock_timeout = 0;
SELECT is((SELECT n FROM dblink_get_result('neighbour') AS r(n bigint)), 12::bigint, 'and the other finishes its scans');
SELECT dblink_disconnect('neighbour');

-- A table larger than the volume's free space (the lab's 1 GB ext4 image)
-- is refused before anything is written.
SELECT throws_ok(format($$SELECT storlab.probe_read_path('lab_ext4', '{1}', %s, 1)$$,
                        (SELECT free_bytes + 1024 * 1024 FROM storlab.tablespaces() WHERE tablespace = 'lab_ext4')),
                 '53100', NULL, 'a table that does not fit: 53100, nothing written');

\else

SELECT throws_ok($$SELECT storlab.probe_read_path('lab_ram')$$, '0A000', NULL,
                 'before PostgreSQL 18 the read-path probe is refused (0A000)');
SELECT skip('the read-path probe needs PostgreSQL 18', 14);

\endif

SELECT * FROM finish();
ROLLBACK;
