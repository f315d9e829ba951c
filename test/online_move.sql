-- Online table moves: what is refused at the call, with which SQLSTATE,
-- and that a refused call starts no job and writes no row. The moves
-- themselves (under pgbench's writes, cancelled in each phase) are
-- test/online_move.sh; here nothing commits, so no job ever runs.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(23);
SET LOCAL client_min_messages = warning;

CREATE TABLE tap_on (id int PRIMARY KEY, v text);
INSERT INTO tap_on SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
CREATE INDEX tap_on_v ON tap_on (v);

-- without pg_repack in the database
SELECT CASE WHEN EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_repack') THEN
  skip('pg_repack is installed in this database already', 2)
ELSE collect_tap(
  throws_ok($$SELECT * FROM storlab.move('tap_on', 'lab_disk', online => true)$$, '55000',
            'pg_repack is not installed in this database: an online move runs it',
            'without the pg_repack extension: 55000, saying so'),
  is((SELECT count(*) FROM storlab.jobs WHERE kind = 'move_online' AND status = 'queued'), 0::bigint,
     'and no job was started')) END;
CREATE EXTENSION IF NOT EXISTS pg_repack;

-- arguments
SELECT throws_ok($$SELECT * FROM storlab.move('tap_on', 'lab_disk', online => NULL)$$, '22004',
                 'online must not be NULL', 'online => NULL: 22004');
SELECT alike((SELECT note FROM storlab.move('tap_on', 'lab_disk', lock_timeout => '200 ms', dry_run => true, online => true)
                WHERE kind = 'table'),
             '%its exclusive lock (to install its trigger, to swap, to drop) is queued 200 ms at most each time, then the job stops it (55P03)%',
             'a lock_timeout under pg_repack''s longest attempt (1 s) is how long its exclusive lock may be queued');
SELECT throws_ok($$SELECT * FROM storlab.move('tap_on_v', 'lab_disk', online => true)$$, '22023', NULL,
                 'an index alone: 22023 (move_indexes_online moves indexes online)');
SELECT throws_ok($$SELECT * FROM storlab.move('tap_on', 'no_such_ts', online => true)$$, '42704', NULL,
                 'a tablespace that does not exist: 42704');

-- tables pg_repack cannot move
CREATE TABLE tap_on_nokey (id int, v text);
SELECT throws_ok($$SELECT * FROM storlab.move('tap_on_nokey', 'lab_disk', online => true)$$, '55000', NULL,
                 'no primary key and no unique index on NOT NULL columns: 55000');
CREATE TABLE tap_on_nullable (id int UNIQUE, v text);
SELECT throws_ok($$SELECT * FROM storlab.move('tap_on_nullable', 'lab_disk', online => true)$$, '55000', NULL,
                 'a unique index on a column that may be NULL is no key for pg_repack: 55000');
CREATE TABLE tap_on_notnull (id int NOT NULL UNIQUE, v text);
SELECT lives_ok($$SELECT * FROM storlab.move('tap_on_notnull', 'lab_disk', dry_run => true, online => true)$$,
                'a unique index on a NOT NULL column is one');
CREATE UNLOGGED TABLE tap_on_unlogged (id int PRIMARY KEY);
SELECT throws_ok($$SELECT * FROM storlab.move('tap_on_unlogged', 'lab_disk', online => true)$$, '22023', NULL,
                 'an unlogged table: 22023');
CREATE TEMP TABLE tap_on_temp (id int PRIMARY KEY);
SELECT throws_ok($$SELECT * FROM storlab.move('tap_on_temp', 'lab_disk', online => true)$$, '22023', NULL,
                 'a temporary table: 22023');
CREATE MATERIALIZED VIEW tap_on_mv AS SELECT 1 AS x;
SELECT throws_ok($$SELECT * FROM storlab.move('tap_on_mv', 'lab_disk', online => true)$$, '22023', NULL,
                 'a materialized view: 22023');

-- a full volume: the copy does not fit with storlab.min_free_bytes to spare
-- (lab_xfs is a small loop-mounted image; root only)
SET LOCAL storlab.min_free_bytes = 2147483647;
SELECT CASE WHEN EXISTS (SELECT FROM pg_tablespace WHERE spcname = 'lab_xfs') THEN
  throws_ok($$SELECT * FROM storlab.move('tap_on', 'lab_xfs', online => true)$$, '53100', NULL,
            'a target without room for the copy: 53100, before any job starts')
ELSE skip('the lab was made without root: no small filesystem', 1) END;
RESET storlab.min_free_bytes;

-- roles: the owner only, CREATE on the target, and on pg_repack 1.4 a superuser
CREATE ROLE tap_on_stranger;
GRANT USAGE ON SCHEMA storlab TO tap_on_stranger;
GRANT EXECUTE ON FUNCTION storlab.move(regclass, name, boolean, interval, boolean, boolean) TO tap_on_stranger;
GRANT CREATE ON TABLESPACE lab_disk TO tap_on_stranger;
SET LOCAL ROLE tap_on_stranger;
SELECT throws_ok($$SELECT * FROM storlab.move('tap_on', 'lab_disk', online => true)$$, '42501',
                 'must be owner of table public.tap_on', 'a role that does not own the table: 42501');
RESET ROLE;
CREATE ROLE tap_on_owner;
GRANT USAGE ON SCHEMA storlab TO tap_on_owner;
GRANT EXECUTE ON FUNCTION storlab.move(regclass, name, boolean, interval, boolean, boolean) TO tap_on_owner;
ALTER TABLE tap_on OWNER TO tap_on_owner;
SET LOCAL ROLE tap_on_owner;
SELECT throws_ok($$SELECT * FROM storlab.move('tap_on', 'lab_disk', online => true)$$, '42501',
                 'permission denied for tablespace lab_disk',
                 'the owner without CREATE on the target: 42501');
RESET ROLE;
GRANT CREATE ON TABLESPACE lab_disk TO tap_on_owner;
SELECT CASE WHEN (SELECT extversion FROM pg_extension WHERE extname = 'pg_repack') < '1.5' THEN
  collect_tap(
    set_eq($$SELECT 1$$, $$SELECT 1$$, '(pg_repack ' || (SELECT extversion FROM pg_extension WHERE extname = 'pg_repack') || ')'),
    throws_ok($$SET LOCAL ROLE tap_on_owner; SELECT * FROM storlab.move('tap_on', 'lab_disk', dry_run => true, online => true)$$,
              '42501', NULL, 'pg_repack 1.4 runs for superusers only: its table''s owner is refused, 42501'))
ELSE collect_tap(
    set_eq($$SELECT 1$$, $$SELECT 1$$, '(pg_repack ' || (SELECT extversion FROM pg_extension WHERE extname = 'pg_repack') || ')'),
    lives_ok($$SET LOCAL ROLE tap_on_owner; SELECT * FROM storlab.move('tap_on', 'lab_disk', dry_run => true, online => true)$$,
             'pg_repack 1.5 lets the table''s owner move it')) END;
RESET ROLE;
ALTER TABLE tap_on OWNER TO CURRENT_USER;

-- the same table twice: a job of this transaction, queued until it
-- commits, already moves it
SELECT lives_ok($$SELECT * FROM storlab.move('tap_on', 'lab_disk', online => true)$$,
                'an online move starts a job (queued until this transaction commits, which it never does)');
SELECT is((SELECT kind || ' ' || status FROM storlab.jobs WHERE kind = 'move_online' ORDER BY id DESC LIMIT 1),
          'move_online queued', 'the job is there');
SELECT throws_ok($$SELECT * FROM storlab.move('tap_on', 'lab_ram', online => true)$$, '55006', NULL,
                 'a second online move of the same table: 55006, naming the first job');
SELECT throws_ok($$SELECT * FROM storlab.move('tap_on_v', 'lab_ram')$$, '55006', NULL,
                 'a move without online of one of its indexes meanwhile: 55006 (the swap would throw it away)');
SELECT throws_ok($$SELECT storlab.move_indexes_online('tap_on', 'lab_ram')$$, '55006', NULL,
                 'and an online move of its indexes: 55006');
SELECT is((SELECT count(*) FROM storlab.relocations WHERE relation = 'tap_on'::regclass), 0::bigint,
          'nothing is recorded before the job has moved anything');

SELECT * FROM finish();
ROLLBACK;
