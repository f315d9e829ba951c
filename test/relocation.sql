-- Relocation: physical sizes on the lab's storage, lock timeouts, hostile names.
-- Parts of this file must commit (CHECKPOINT, CREATE TABLESPACE), so it
-- first removes what an interrupted earlier run may have left.
DROP TABLE IF EXISTS tap_squeezy, tap_busy, "Tap ""Odd"" Table";
DROP TABLESPACE IF EXISTS "tap ""odd""; DROP TABLE tap_busy; --";
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT plan(10);

-- A compressing filesystem holds less than the logical size: heap pages full
-- of repetitive text (too short for PostgreSQL's own TOAST compression) on
-- the lab's btrfs, mounted compress=zstd. Root only.
SELECT CASE WHEN EXISTS (SELECT FROM pg_tablespace WHERE spcname = 'lab_btrfs') THEN
  collect_tap(
    lives_ok($$CREATE TABLE tap_squeezy (id int, filler text) TABLESPACE lab_btrfs$$, 'a table on btrfs'),
    lives_ok($$INSERT INTO tap_squeezy SELECT g, repeat('storlab ', 40) FROM generate_series(1, 200000) g$$, 'compressible rows'))
ELSE skip('the lab was made without root: no btrfs', 2) END;
-- the rows must reach the disk (and btrfs's compression) before we look
COMMIT;
CHECKPOINT;
BEGIN;
SELECT CASE WHEN EXISTS (SELECT FROM pg_tablespace WHERE spcname = 'lab_btrfs') THEN
  cmp_ok((SELECT allocated_bytes::numeric / logical_bytes FROM storlab.layout('public') WHERE relation = 'tap_squeezy'::regclass),
         '<', 0.5::numeric, 'on btrfs with zstd, allocated_bytes is under half of logical_bytes')
ELSE skip('the lab was made without root: no btrfs', 1) END;
SELECT cmp_ok((SELECT allocated_bytes::numeric / logical_bytes FROM storlab.layout('storlab') WHERE relation = 'storlab.probes'::regclass),
              '>=', 0.9::numeric, 'on an ordinary filesystem, allocated_bytes is about the logical size')
  WHERE EXISTS (SELECT FROM storlab.layout('storlab') WHERE relation = 'storlab.probes'::regclass AND logical_bytes > 0)
UNION ALL SELECT pass('storlab.probes is empty here') WHERE NOT EXISTS
  (SELECT FROM storlab.layout('storlab') WHERE relation = 'storlab.probes'::regclass AND logical_bytes > 0);

-- lock_timeout: a move against a table another session holds fails with
-- 55P03 after about lock_timeout, naming the relation and the holder's pid.
CREATE TABLE tap_busy (id int);
COMMIT;
SELECT dblink_connect('holder', format('host=%s port=%s dbname=%s', current_setting('unix_socket_directories'),
       current_setting('port'), current_database()));
SELECT dblink_exec('holder', 'BEGIN');
SELECT * FROM dblink('holder', 'SELECT count(*) FROM tap_busy') AS r(n bigint);
BEGIN;
CREATE TEMP TABLE holder AS SELECT pid FROM dblink('holder', 'SELECT pg_backend_pid()') AS r(pid int);
CREATE TEMP TABLE clock AS SELECT clock_timestamp() AS t;
CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE m text; d text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ': ' || m || ' / ' || d;
END $$;
CREATE TEMP TABLE outcome AS
  SELECT pg_temp.error_of($$SELECT * FROM storlab.move('tap_busy', 'lab_ram', lock_timeout => '700 ms')$$) AS e;
SELECT alike((SELECT e FROM outcome), '55P03: could not lock table public.tap_busy within lock_timeout (700 ms)%',
            'the move fails with 55P03 and names the relation');
SELECT alike((SELECT e FROM outcome), '%' || (SELECT pid FROM holder) || '%', 'and the pid of the blocking backend');
SELECT ok(extract(epoch FROM clock_timestamp() - (SELECT t FROM clock)) BETWEEN 0.65 AND 2.0, 'it gave up after about lock_timeout');
SELECT dblink_exec('holder', 'COMMIT');
SELECT dblink_disconnect('holder');

-- Hostile names, tablespace included: quoted everywhere, never executed.
COMMIT;
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE "tap ""odd""; DROP TABLE tap_busy; --" LOCATION '';
BEGIN;
CREATE TABLE "Tap ""Odd"" Table" (id int PRIMARY KEY);
SELECT is((SELECT count(*) FROM storlab.move('"Tap ""Odd"" Table"', 'tap "odd"; DROP TABLE tap_busy; --')), 2::bigint,
          'a table and its index move into a tablespace with a hostile name');
SELECT is((SELECT tablespace::text FROM storlab.layout('public') WHERE relation = '"Tap ""Odd"" Table"'::regclass),
          'tap "odd"; DROP TABLE tap_busy; --', 'and layout() says so');
SELECT has_table('tap_busy', 'nothing in the names was executed');
DROP TABLE "Tap ""Odd"" Table";
COMMIT;
DROP TABLESPACE "tap ""odd""; DROP TABLE tap_busy; --";
DROP TABLE tap_busy;
DROP TABLE IF EXISTS tap_squeezy;
BEGIN;
SELECT * FROM finish();
ROLLBACK;
