-- Relocation: physical sizes on the lab's storage, lock timeouts, hostile names.
-- Parts of this file must commit (CHECKPOINT, CREATE TABLESPACE), so it
-- first removes what an interrupted earlier run may have left.
SELECT EXISTS (SELECT FROM pg_prepared_xacts WHERE gid = 'tap_holder') AS left_prepared \gset
\if :left_prepared
ROLLBACK PREPARED 'tap_holder';
\endif
DROP TABLE IF EXISTS tap_squeezy, tap_busy, "Tap ""Odd"" Table", tap_orphan, tap_toasty;
DROP TABLE IF EXISTS tap_lost, tap_lineage, tap_excl, tap_walmove, tap_walnoise, tap_rebuilt;
DROP TABLESPACE IF EXISTS tap_gone;
DROP TABLESPACE IF EXISTS tap_lost_ts;
DROP TABLESPACE IF EXISTS "tap ""odd""; DROP TABLE tap_busy; --";
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT plan(67);

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

-- Behind an ACCESS EXCLUSIVE holder, every wait is bounded: the plan reads
-- the catalog and the files without a lock, so a dry run answers at once and
-- a move gives up after lock_timeout (it once waited for the holder).
SELECT dblink_exec('holder', 'BEGIN');
SELECT dblink_exec('holder', 'LOCK TABLE tap_busy IN ACCESS EXCLUSIVE MODE');
UPDATE clock SET t = clock_timestamp();
SELECT is((SELECT count(*) FROM storlab.move('tap_busy', 'lab_ram', dry_run => true)), 1::bigint, 'a dry run plans the move');
SELECT cmp_ok(extract(epoch FROM clock_timestamp() - (SELECT t FROM clock))::numeric, '<', 0.5,
              'without waiting for the session that holds the table');
UPDATE clock SET t = clock_timestamp();
SELECT throws_ok($$SELECT * FROM storlab.move('tap_busy', 'lab_ram', lock_timeout => '1 s')$$, '55P03', NULL,
                 'a move behind ACCESS EXCLUSIVE fails with 55P03');
SELECT cmp_ok(extract(epoch FROM clock_timestamp() - (SELECT t FROM clock))::numeric, '<', 1.6,
              'after about lock_timeout, not after the holder lets go');
SELECT dblink_exec('holder', 'ROLLBACK');
SELECT dblink_disconnect('holder');
COMMIT;

-- The plan is read again under the lock: a second, identical move that
-- waited behind the first records nothing (the table is already there), and
-- a move that waited behind a move elsewhere records where the table really
-- came from.
DROP TABLE IF EXISTS tap_twice, tap_stale;
CREATE TABLE tap_twice (id int, v text);
INSERT INTO tap_twice SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
CREATE TABLE tap_stale (id int);
SELECT clock_timestamp() AS before_races \gset
SELECT dblink_connect('first', format('host=%s port=%s dbname=%s', current_setting('unix_socket_directories'),
       current_setting('port'), current_database()));
SELECT dblink_connect('second', format('host=%s port=%s dbname=%s', current_setting('unix_socket_directories'),
       current_setting('port'), current_database()));
SELECT dblink_exec('first', 'BEGIN');
SELECT * FROM dblink('first', $$SELECT count(*) FROM storlab.move('tap_twice', 'lab_ram')$$) AS r(n bigint);
SELECT dblink_send_query('second', $$SELECT count(*) FROM storlab.move('tap_twice', 'lab_ram', lock_timeout => '20 s')$$);
SELECT pg_sleep(0.5);
SELECT dblink_exec('first', 'COMMIT');
SELECT is((SELECT n FROM dblink_get_result('second') AS r(n bigint)), 0::bigint,
          'the second of two identical moves finds the table moved and moves nothing');
SELECT * FROM dblink_get_result('second') AS r(n bigint);
SELECT is((SELECT count(*) FROM storlab.relocations WHERE relation_name = 'public.tap_twice' AND moved_at > :'before_races'),
          1::bigint, 'and history records one move, not two');

SELECT dblink_exec('first', 'BEGIN');
SELECT * FROM dblink('first', $$SELECT count(*) FROM storlab.move('tap_stale', 'lab_disk')$$) AS r(n bigint);
SELECT dblink_send_query('second', $$SELECT count(*) FROM storlab.move('tap_stale', 'lab_ram', lock_timeout => '20 s')$$);
SELECT pg_sleep(0.5);
SELECT dblink_exec('first', 'COMMIT');
SELECT is((SELECT n FROM dblink_get_result('second') AS r(n bigint)), 1::bigint, 'a move that waited behind another one moves');
SELECT * FROM dblink_get_result('second') AS r(n bigint);
SELECT is((SELECT from_tablespace::text FROM storlab.relocations WHERE relation_name = 'public.tap_stale'
             AND to_tablespace = 'lab_ram' AND moved_at > :'before_races'),
          'lab_disk', 'from where the table really was when it was copied');
SELECT dblink_disconnect('first');
SELECT dblink_disconnect('second');
DROP TABLE tap_twice, tap_stale;
BEGIN;

-- A move must fit: the copy plus storlab.min_free_bytes is checked against
-- the target's free space before anything is locked (a move that ran the
-- target out of space would fail mid-copy, and every other writer there
-- with it), and the dry run says what the target keeps. The 1 GB xfs
-- volume with a 2 GB reserve: nothing fits.
BEGIN;
CREATE TABLE tap_fits (id int PRIMARY KEY, filler text);
INSERT INTO tap_fits SELECT g, repeat('x', 100) FROM generate_series(1, 10000) g;
CREATE TEMP TABLE has_xfs AS SELECT EXISTS (SELECT FROM pg_tablespace WHERE spcname = 'lab_xfs') AS yes;
SET storlab.min_free_bytes = 2147483647;
SELECT CASE WHEN (SELECT yes FROM has_xfs) THEN
  throws_ok($$SELECT * FROM storlab.move('tap_fits', 'lab_xfs')$$, '53100', NULL,
            'a move that does not fit the target with storlab.min_free_bytes to spare: 53100, before any lock')
ELSE skip('the lab was made without root: no xfs', 1) END;
SELECT CASE WHEN (SELECT yes FROM has_xfs) THEN
  throws_like($$SELECT * FROM storlab.move('tap_fits', 'lab_xfs')$$,
              'not enough free space in tablespace lab_xfs to move table public.tap_fits (%)',
              'naming the tablespace, the relation and its size')
ELSE skip('the lab was made without root: no xfs', 1) END;
SELECT is((SELECT string_agg(DISTINCT tablespace::text, ',') FROM storlab.layout('public')
            WHERE relation IN ('tap_fits'::regclass, 'tap_fits_pkey'::regclass)), 'pg_default', 'nothing moved');
SELECT CASE WHEN (SELECT yes FROM has_xfs) THEN
  alike((SELECT string_agg(note, E'\n' ORDER BY relation_name) FROM storlab.move('tap_fits', 'lab_xfs', dry_run => true)),
        '%; lab_xfs has % free now, % after this call: does not fit (storlab.min_free_bytes keeps 2.0 GB free)',
        'the dry run says the move would not fit, and why')
ELSE skip('the lab was made without root: no xfs', 1) END;
RESET storlab.min_free_bytes;
SELECT CASE WHEN (SELECT yes FROM has_xfs) THEN
  alike((SELECT note FROM storlab.move('tap_fits', 'lab_xfs', dry_run => true) WHERE relation_name = 'public.tap_fits_pkey'),
        'holds ACCESS EXCLUSIVE on public.tap_fits_pkey % lab_xfs has % free now, % after this call',
        'with the reserve at its default, the dry run shows the free space left once the table and its index are copied')
ELSE skip('the lab was made without root: no xfs', 1) END;
ROLLBACK;

-- restore_layout() by a role that is no superuser restores what it may
-- move (its own relations) and says what it leaves: a relation of another
-- role, moved in the same period, no longer makes it fail whole.
BEGIN;
SELECT clock_timestamp() AS t0 \gset
CREATE TABLE tap_theirs (id int PRIMARY KEY);
SELECT count(*) FROM storlab.move('tap_theirs', 'lab_ram');
-- and one moved out of a tablespace the role may not create in: its
-- privileges there do not matter for a relation it would not move anyway
CREATE TABLE tap_elsewhere (id int) TABLESPACE lab_disk;
SELECT count(*) FROM storlab.move('tap_elsewhere', 'pg_default');
CREATE ROLE tap_restorer;
CREATE SCHEMA tap_restorer AUTHORIZATION tap_restorer;
GRANT CREATE ON TABLESPACE lab_ram TO tap_restorer;
GRANT EXECUTE ON FUNCTION storlab.move, storlab.restore_layout TO tap_restorer;
SET ROLE tap_restorer;
CREATE TABLE tap_restorer.mine (id int PRIMARY KEY);
SELECT count(*) FROM storlab.move('tap_restorer.mine', 'lab_ram');
SELECT is((SELECT string_agg(relation_name || ' -> ' || to_tablespace, ', ' ORDER BY relation_name)
             FROM storlab.restore_layout(:'t0')),
          'tap_restorer.mine -> pg_default, tap_restorer.mine_pkey -> pg_default',
          'a role restores its own moves');
RESET ROLE;
SELECT is((SELECT string_agg(relation::regclass || ' in ' || tablespace, ', ' ORDER BY relation::regclass::text)
             FROM storlab.layout() WHERE relation::regclass::text IN ('tap_theirs', 'tap_theirs_pkey', 'tap_restorer.mine')),
          'tap_restorer.mine in pg_default, tap_theirs in lab_ram, tap_theirs_pkey in lab_ram',
          'and leaves the superuser''s table where it is');
SELECT is((SELECT count(*) FROM storlab.restore_layout(:'t0')), 3::bigint,
          'which the superuser then restores, with the table moved out of lab_disk');
ROLLBACK;

-- Undo is per call. restore_layout(at) restores whole batches only: from
-- the moved_at of a batch's first row (its rows carry their own clock
-- times), the whole batch goes back, never only its later rows. And
-- undo_batch(id) undoes one call.
BEGIN;
CREATE TABLE tap_batch (id int PRIMARY KEY, v int);
CREATE INDEX tap_batch_v ON tap_batch (v);
SELECT count(*) FROM storlab.move('tap_batch', 'lab_ram');
SELECT max(batch_id) AS b1 FROM storlab.relocations \gset
SELECT min(moved_at) AS b1_start FROM storlab.relocations WHERE batch_id = :b1 \gset
SELECT cmp_ok((SELECT count(DISTINCT moved_at) FROM storlab.relocations WHERE batch_id = :b1), '>', 1::bigint,
              'the rows of one call carry different times');
SELECT is((SELECT count(*) FROM storlab.restore_layout(:'b1_start')), 3::bigint,
          'restore_layout from a batch''s first moved_at restores the whole batch: the table and both indexes');
SELECT is((SELECT string_agg(DISTINCT tablespace::text, ',') FROM storlab.layout('public')
            WHERE relation::text IN ('tap_batch', 'tap_batch_pkey', 'tap_batch_v')), 'pg_default', 'all back in pg_default');
SELECT count(*) FROM storlab.move('tap_batch', 'lab_disk');
SELECT max(batch_id) AS b2 FROM storlab.relocations \gset
SELECT is((SELECT string_agg(relation_name || ': ' || from_tablespace || ' -> ' || to_tablespace, ', ' ORDER BY relation_name)
             FROM storlab.undo_batch(:b2)),
          'public.tap_batch: lab_disk -> pg_default, public.tap_batch_pkey: lab_disk -> pg_default, public.tap_batch_v: lab_disk -> pg_default',
          'undo_batch(id) undoes that one call');
SELECT count(*) FROM storlab.move('tap_batch', 'lab_ram');
SELECT max(batch_id) AS b3 FROM storlab.relocations \gset
SELECT count(*) FROM storlab.move('tap_batch_v', 'lab_disk');
SELECT throws_ok(format('SELECT * FROM storlab.undo_batch(%s)', :b3), '55000', NULL,
                 'a batch whose relations were moved again since is refused (55000): undo the later one first');
SELECT is((SELECT tablespace::text FROM storlab.layout('public') WHERE relation = 'tap_batch'::regclass), 'lab_ram',
          'and nothing of it moved');
-- as the hint says: the later batch undone first, then this one: the later
-- batch and its undo cancel out
SELECT max(batch_id) AS b4 FROM storlab.relocations \gset
SELECT count(*) FROM storlab.undo_batch(:b4);
SELECT is((SELECT string_agg(relation_name || ': ' || from_tablespace || ' -> ' || to_tablespace, ', ' ORDER BY relation_name)
             FROM storlab.undo_batch(:b3)),
          'public.tap_batch: lab_ram -> pg_default, public.tap_batch_pkey: lab_ram -> pg_default, public.tap_batch_v: lab_ram -> pg_default',
          'after undoing the later batch, the earlier one is undone too (the later one and its undo cancel out)');
SELECT is((SELECT count(*) FROM storlab.relocations WHERE undoes_batch = :b3), 3::bigint,
          'each row of an undo names the batch it undoes');
SELECT throws_ok('SELECT * FROM storlab.undo_batch(-1)', '42704', 'relocation batch -1 does not exist on this server',
                 'an unknown batch: 42704');
SELECT throws_ok('SELECT * FROM storlab.undo_batch(NULL)', '22004', 'batch_id must not be NULL', 'a NULL batch: 22004');
ROLLBACK;

-- A relation whose old tablespace was dropped since cannot go back there:
-- restore_layout refuses before moving anything, naming both (42704).
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE tap_gone LOCATION '';
CREATE TABLE tap_orphan (id int) TABLESPACE tap_gone;
CREATE TABLE tap_bystander (id int);
SELECT clock_timestamp() AS t_orphan \gset
SELECT count(*) FROM storlab.move('tap_bystander', 'lab_ram');
SELECT count(*) FROM storlab.move('tap_orphan', 'lab_ram');
DROP TABLESPACE tap_gone;
BEGIN;
SELECT throws_ok(format('SELECT * FROM storlab.restore_layout(%L)', :'t_orphan'), '42704',
                 'cannot restore public.tap_orphan: tablespace "tap_gone", where it was, does not exist any more',
                 'restore_layout to a dropped tablespace: 42704 naming the relation and the tablespace');
SELECT is((SELECT tablespace::text FROM storlab.layout('public') WHERE relation = 'tap_bystander'::regclass), 'lab_ram',
          'before anything moved');
ROLLBACK;
DROP TABLE tap_orphan, tap_bystander;

-- What holds a lock is named, whatever it is. A session reading only the
-- TOAST table holds a lock there (the ALTER would wait on it, inside
-- PostgreSQL, with a bare "canceling statement due to lock timeout"):
-- storlab takes that lock itself and names it. A prepared transaction has
-- no backend: it is named by gid, owner and when it was prepared.
CREATE TABLE tap_toasty (id int PRIMARY KEY, doc text);
INSERT INTO tap_toasty SELECT 1, string_agg(md5(g::text), '') FROM generate_series(1, 2000) g;
SELECT format('pg_toast.%I', (SELECT relname FROM pg_class WHERE oid = (SELECT reltoastrelid FROM pg_class
                                                                       WHERE oid = 'tap_toasty'::regclass))) AS toast \gset
SELECT dblink_connect('toast_reader', format('host=%s port=%s dbname=%s', split_part(current_setting('unix_socket_directories'), ',', 1),
                                             current_setting('port'), current_database()));
SELECT dblink_exec('toast_reader', 'BEGIN');
SELECT * FROM dblink('toast_reader', format('SELECT count(*) FROM %s', :'toast')) AS r(n bigint);
BEGIN;
SELECT throws_ok($$SELECT * FROM storlab.move('tap_toasty', 'lab_ram', lock_timeout => '200 ms')$$, '55P03',
                 format('could not lock the TOAST table of table public.tap_toasty within lock_timeout (200 ms): another session is using it'),
                 'a lock held on the TOAST table alone: 55P03 naming the TOAST table of which table');
ROLLBACK;
SELECT dblink_exec('toast_reader', 'ROLLBACK');
SELECT dblink_exec('toast_reader', 'BEGIN');
SELECT dblink_exec('toast_reader', 'LOCK TABLE tap_toasty IN ACCESS SHARE MODE');
SELECT dblink_exec('toast_reader', $$PREPARE TRANSACTION 'tap_holder'$$);
SELECT dblink_disconnect('toast_reader');
BEGIN;
CREATE FUNCTION pg_temp.detail_of(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE d text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
  RETURN d;
END $f$;
SELECT alike(pg_temp.detail_of($$SELECT * FROM storlab.move('tap_toasty', 'lab_ram', lock_timeout => '200 ms')$$),
             'Held by: prepared transaction ''tap_holder'' (owner %, prepared at %). Nothing was moved.',
             'a lock held by a prepared transaction names it: gid, owner, when prepared');
ROLLBACK;
ROLLBACK PREPARED 'tap_holder';
BEGIN;
SELECT is((SELECT count(*) FROM storlab.move('tap_toasty', 'lab_ram', lock_timeout => '2 s')), 2::bigint,
          'once both let go, the table moves');
SELECT is((SELECT t.spcname::text FROM pg_class c JOIN pg_tablespace t ON t.oid = c.reltablespace
            WHERE c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = 'tap_toasty'::regclass)), 'lab_ram',
          'its TOAST table with it');
ROLLBACK;
DROP TABLE tap_toasty;

-- What the plan says: each lock is held until the call's transaction ends,
-- not only for its own copy; a partitioned parent copies nothing but
-- blocks every query on its tree meanwhile; moving a logged relation onto
-- storage a reboot empties (tmpfs) says so.
BEGIN;
CREATE TABLE tap_tree (id int, at date) PARTITION BY RANGE (at);
CREATE TABLE tap_tree_1 PARTITION OF tap_tree FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
CREATE TABLE tap_tree_2 PARTITION OF tap_tree FOR VALUES FROM ('2026-02-01') TO ('2026-03-01');
CREATE TEMP TABLE plan AS SELECT * FROM storlab.move('tap_tree', 'lab_ram', dry_run => true);
SELECT alike((SELECT note FROM plan WHERE relation_name = 'public.tap_tree'),
             'copies nothing (sets the tablespace of future partitions of public.tap_tree), but holds ACCESS EXCLUSIVE on it until the call''s transaction ends (the call copies % in all): every query on public.tap_tree and its partitions waits%',
             'the partitioned parent''s row: it copies nothing, yet blocks every query on the tree for the whole call');
SELECT alike((SELECT note FROM plan WHERE relation_name = 'public.tap_tree_1'),
             'holds ACCESS EXCLUSIVE on public.tap_tree_1 from its copy of % until the call''s transaction ends (the call copies % in all)%',
             'a partition''s lock lasts until the call ends, not only for its own copy');
SELECT alike((SELECT note FROM plan WHERE relation_name = 'public.tap_tree_1'),
             '%; lab_ram is volatile storage (tmpfs%): a reboot loses this logged relation''s files%',
             'and moving a logged relation onto tmpfs says a reboot loses it');
ROLLBACK;

-- Sizes are never a silent 0: a temporary table's files are found (their
-- names carry the backend), and a relation whose files are gone has NULL
-- sizes and a WARNING.
BEGIN;
CREATE TEMP TABLE tap_temp AS SELECT g AS id FROM generate_series(1, 10000) g;
SELECT cmp_ok((SELECT logical_bytes FROM storlab.layout(pg_my_temp_schema()::regnamespace::name)
                WHERE relation = 'tap_temp'::regclass), '>=', pg_relation_size('tap_temp'),
              'a temporary table''s size is found (its file is t<backend>_<relfilenode>)');
SELECT is((SELECT count(*) FROM storlab.layout() WHERE relation = 'tap_temp'::regclass), 1::bigint,
          'layout() of every schema lists the caller''s own temporary tables');
SELECT throws_ok($$SELECT * FROM storlab.layout('no_such_schema')$$, '3F000', 'schema "no_such_schema" does not exist',
                 'an unknown schema is an error (3F000), not an empty answer');
ROLLBACK;
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE tap_lost_ts LOCATION '';
CREATE TABLE tap_lost (id int) TABLESPACE tap_lost_ts;
INSERT INTO tap_lost SELECT generate_series(1, 1000);
CHECKPOINT;
SELECT format('rm -f %s/%s', current_setting('data_directory'), pg_relation_filepath('tap_lost')) AS rm \gset
COPY (SELECT 1) TO PROGRAM :'rm';
BEGIN;
SELECT is((SELECT (logical_bytes, allocated_bytes)::text FROM storlab.layout('public') WHERE relation = 'tap_lost'::regclass),
          '(,)', 'a relation whose file is gone: layout() gives NULL sizes, not 0');
SELECT is((SELECT bytes FROM storlab.move('tap_lost', 'lab_ram', dry_run => true)), NULL,
          'and so does the dry run''s bytes to copy');
SELECT alike((SELECT note FROM storlab.move('tap_lost', 'lab_ram', dry_run => true)),
             'its files cannot be found: the size to copy is unknown, and ALTER ... SET TABLESPACE would fail%',
             'and its note says the size is unknown, not "0 bytes"');
ROLLBACK;
SET client_min_messages = error;
DROP TABLE tap_lost;
DROP TABLESPACE tap_lost_ts;
RESET client_min_messages;

-- wal_bytes is the WAL the move itself wrote (this backend's own), not the
-- server's: another session writing meanwhile does not count.
CREATE TABLE tap_walmove AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 300000) g;
CREATE TABLE tap_walnoise (id int, v text);
SELECT dblink_connect('noise', format('host=%s port=%s dbname=%s', split_part(current_setting('unix_socket_directories'), ',', 1),
                                      current_setting('port'), current_database()));
SELECT dblink_send_query('noise', $$INSERT INTO tap_walnoise SELECT g, md5(g::text) FROM generate_series(1, 3000000) g$$);
SELECT pg_sleep(0.3);
BEGIN;
CREATE TEMP TABLE walmove AS SELECT * FROM storlab.move('tap_walmove', 'lab_disk');
SELECT cmp_ok((SELECT wal_bytes::numeric FROM walmove), '<', (SELECT bytes * 1.1 + 65536 FROM walmove),
              'a move records the WAL it wrote (about its copy), not what another session wrote meanwhile');
ROLLBACK;
SELECT * FROM dblink_get_result('noise') AS r(x text);
SELECT dblink_disconnect('noise');
DROP TABLE tap_walmove, tap_walnoise;

-- History follows an index through storlab's online rebuild, which gives
-- it a new oid (REINDEX CONCURRENTLY): moved by move(), then online,
-- restore_layout brings it back to where it was before both.
CREATE TABLE tap_lineage (id int PRIMARY KEY, v int);
CREATE INDEX tap_lineage_v ON tap_lineage (v);
SELECT clock_timestamp() AS t_lineage \gset
SELECT 'tap_lineage_v'::regclass::oid AS v_oid \gset
SELECT count(*) FROM storlab.move('tap_lineage_v', 'lab_disk');
SELECT storlab.move_indexes_online('tap_lineage', 'lab_ram') AS lineage_job \gset
CALL storlab.wait(:lineage_job);
BEGIN;
SELECT isnt('tap_lineage_v'::regclass::oid, :'v_oid'::oid, 'the online move rebuilt the index under a new oid');
SELECT is((SELECT previous_relation FROM storlab.relocations WHERE batch_id = (SELECT max(batch_id) FROM storlab.relocations)
              AND relation_name = 'public.tap_lineage_v'), :'v_oid'::oid,
          'its history row names the oid it had before');
SELECT is((SELECT string_agg(relation_name || ': ' || from_tablespace || ' -> ' || to_tablespace, ', ' ORDER BY relation_name)
             FROM storlab.restore_layout(:'t_lineage')),
          'public.tap_lineage_pkey: lab_ram -> pg_default, public.tap_lineage_v: lab_ram -> pg_default',
          'restore_layout brings both indexes back to where they were before both moves');
ROLLBACK;
DROP TABLE tap_lineage;

-- A REINDEX CONCURRENTLY by hand of a moved index gives it a new oid under
-- the same name, on the same table, with the same definition: undo_batch
-- and restore_layout follow it and take it back with the rest of its
-- batch, whole. Another index under that name (dropped and created again
-- differently) is not the moved one, which was dropped: said in a NOTICE,
-- and left where it is. A row of a release that recorded no table and
-- definition cannot tell the two apart: the whole undo is refused, naming
-- the index.
CREATE TABLE tap_rebuilt (id int PRIMARY KEY, v int);
CREATE INDEX tap_rebuilt_v ON tap_rebuilt (v);
SELECT clock_timestamp() AS t_rebuilt \gset
SELECT count(*) FROM storlab.move('tap_rebuilt', 'lab_disk');
SELECT max(batch_id) AS b_rebuilt FROM storlab.relocations \gset
SELECT 'tap_rebuilt_v'::regclass::oid AS rebuilt_v_oid \gset
REINDEX INDEX CONCURRENTLY tap_rebuilt_v;
BEGIN;
SELECT isnt('tap_rebuilt_v'::regclass::oid, :'rebuilt_v_oid'::oid, 'a REINDEX CONCURRENTLY by hand gave the moved index a new oid');
SELECT is((SELECT string_agg(relation_name || ': ' || from_tablespace || ' -> ' || to_tablespace, ', ' ORDER BY relation_name)
             FROM storlab.undo_batch(:b_rebuilt)),
          'public.tap_rebuilt: lab_disk -> pg_default, public.tap_rebuilt_pkey: lab_disk -> pg_default, public.tap_rebuilt_v: lab_disk -> pg_default',
          'undo_batch follows the rebuilt index (same name, table and definition): the whole batch goes back');
SELECT is((SELECT string_agg(relation::regclass || ' in ' || tablespace, ', ' ORDER BY relation::regclass::text)
             FROM storlab.layout('public') WHERE relation::regclass::text LIKE 'tap_rebuilt%'),
          'tap_rebuilt in pg_default, tap_rebuilt_pkey in pg_default, tap_rebuilt_v in pg_default',
          'and each is back where the batch took it from');
ROLLBACK;
BEGIN;
SELECT is((SELECT string_agg(relation_name || ': ' || from_tablespace || ' -> ' || to_tablespace, ', ' ORDER BY relation_name)
             FROM storlab.restore_layout(:'t_rebuilt')),
          'public.tap_rebuilt: lab_disk -> pg_default, public.tap_rebuilt_pkey: lab_disk -> pg_default, public.tap_rebuilt_v: lab_disk -> pg_default',
          'so does restore_layout');
ROLLBACK;
BEGIN;
-- as a release before 0.9.0 recorded the move
UPDATE storlab.relocations SET index_table = NULL, index_definition = NULL
 WHERE batch_id = :b_rebuilt AND relation_name = 'public.tap_rebuilt_v';
SELECT throws_like(format('SELECT * FROM storlab.undo_batch(%s)', :b_rebuilt),
                   'cannot restore index public.tap_rebuilt_v: an index of that name is there under another oid, and its move was recorded before storlab 0.9.0%',
                   'a row without the index''s table and definition: the whole undo is refused (55000), naming the index');
SELECT is((SELECT string_agg(relation::regclass || ' in ' || tablespace, ', ' ORDER BY relation::regclass::text)
             FROM storlab.layout('public') WHERE relation::regclass::text LIKE 'tap_rebuilt%'),
          'tap_rebuilt in lab_disk, tap_rebuilt_pkey in lab_disk, tap_rebuilt_v in lab_disk',
          'and nothing moved');
ROLLBACK;
DROP INDEX tap_rebuilt_v;
CREATE INDEX tap_rebuilt_v ON tap_rebuilt (v, id) TABLESPACE lab_disk;
BEGIN;
SELECT is((SELECT string_agg(relation_name || ': ' || from_tablespace || ' -> ' || to_tablespace, ', ' ORDER BY relation_name)
             FROM storlab.undo_batch(:b_rebuilt)),
          'public.tap_rebuilt: lab_disk -> pg_default, public.tap_rebuilt_pkey: lab_disk -> pg_default',
          'another index under the moved one''s name (another definition) is not followed: the moved one was dropped');
SELECT is((SELECT tablespace::text FROM storlab.layout('public') WHERE relation = 'tap_rebuilt_v'::regclass), 'lab_disk',
          'and that other index stays where it is');
ROLLBACK;
DROP TABLE tap_rebuilt;

-- What REINDEX CONCURRENTLY cannot do is refused or said at the call,
-- before anything runs: a temporary table (the job is another session),
-- an index that backs an exclusion constraint.
CREATE TEMP TABLE tap_tmp (id int PRIMARY KEY);
SELECT throws_ok($$SELECT storlab.move_indexes_online('tap_tmp', 'lab_ram')$$, '22023',
                 format('%I.tap_tmp is a temporary table: only the session that made it can rebuild its indexes, and the online move runs in a session of its own',
                        pg_my_temp_schema()::regnamespace::text),
                 'a temporary table: 22023 at the call');
DROP TABLE tap_tmp;
CREATE TABLE tap_excl (during int4range, EXCLUDE USING gist (during WITH &&));
SELECT throws_like($$SELECT storlab.move_indexes_online('tap_excl', 'lab_ram')$$,
                   'nothing of public.tap_excl can move online: public.tap_excl_during_excl backs an exclusion constraint%',
                   'a table whose only index backs an exclusion constraint: 22023 naming it');
ALTER TABLE tap_excl ADD COLUMN id int PRIMARY KEY;
SELECT storlab.move_indexes_online('tap_excl', 'lab_ram') AS excl_job \gset
CALL storlab.wait(:excl_job);
SELECT is((SELECT string_agg(relation::regclass || ' in ' || tablespace, ', ' ORDER BY relation::regclass::text)
             FROM storlab.layout('public') WHERE relation::regclass::text LIKE 'tap_excl_%'),
          'tap_excl_during_excl in pg_default, tap_excl_pkey in lab_ram',
          'with another index, the others move online and the exclusion index stays (a NOTICE at the call says why)');
SELECT is((SELECT status FROM storlab.jobs WHERE id = :excl_job), 'done', 'and the job finishes, nothing half-done');
DROP TABLE tap_excl;

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
