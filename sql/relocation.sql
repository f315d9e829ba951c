--
-- Relocation: see where every relation lives and what it holds on disk, move
-- tables and indexes between tablespaces in one all-or-nothing call, undo.
--
CREATE EXTENSION IF NOT EXISTS storlab;
CREATE SCHEMA shop;
CREATE TABLE shop.orders (
    id      bigint PRIMARY KEY,
    placed  date NOT NULL,
    notes   text            -- long notes go to the TOAST table
);
CREATE INDEX orders_placed ON shop.orders (placed);
INSERT INTO shop.orders
SELECT g, date '2026-01-01' + g % 300, CASE WHEN g % 100 = 0 THEN repeat(md5(g::text), 200) END
  FROM generate_series(1, 5000) g;
CREATE MATERIALIZED VIEW shop.daily AS SELECT placed, count(*) FROM shop.orders GROUP BY placed;
CREATE INDEX daily_placed ON shop.daily (placed);

-- storlab.layout(schema): every table, index, TOAST table and index,
-- materialized view, partitioned table and index, where it lives (pg_default
-- spelled out) and its size: logical, and allocated on the filesystem.
SELECT relation, kind, parent, tablespace, logical_bytes > 0 AS has_data
  FROM storlab.layout('shop')
 WHERE kind NOT LIKE 'toast%'
 ORDER BY relation::text;
-- (TOAST names carry oids, so they are not shown)
SELECT kind, parent::text LIKE 'pg_toast.%' AS parent_is_toast, tablespace
  FROM storlab.layout('shop') WHERE kind LIKE 'toast%' ORDER BY kind;
-- logical_bytes counts every fork of the relation itself (TOAST has rows of its own)
SELECT relation,
       logical_bytes = (SELECT sum(pg_relation_size(relation, fork)) FROM unnest('{main,fsm,vm,init}'::text[]) fork) AS all_forks
  FROM storlab.layout('shop') WHERE kind IN ('table', 'index') ORDER BY relation::text;

-- A dry run returns the plan and changes nothing: one row per relation, with
-- the statement, the bytes to copy, and what the statement does to others.
SELECT relation_name, kind, from_tablespace, to_tablespace, bytes > 0 AS copies_data, statement,
       note LIKE 'holds ACCESS EXCLUSIVE on % from its copy of % until the call''s transaction ends %' AS warns_about_the_lock
  FROM storlab.move('shop.orders', 'lab_ram', dry_run => true);
SELECT count(*) AS relocations_recorded FROM storlab.relocations;
-- bytes is what the statement copies: the relation's files with every fork,
-- and for a table its TOAST table and index too (pg_table_size's sum),
-- read from disk without taking a lock, so a dry run never waits.
SELECT relation_name, bytes = pg_table_size(relation) AS bytes_as_pg_table_size
  FROM storlab.move('shop.orders', 'lab_ram', dry_run => true) ORDER BY relation_name;
-- Moving an index blocks more than the queries that use it: while it is
-- locked, every query planned on its table waits (the planner locks all of
-- a table's indexes) and so does every writer (writes update them all).
-- A call is one transaction: each lock, taken when its relation's turn
-- comes, lasts until the whole call ends. The note also says when the
-- target is storage a reboot empties, and what it keeps free once the call
-- copied.
SELECT regexp_replace(regexp_replace(regexp_replace(note, 'copy of [0-9.]+ \S+ until', 'copy of (its size) until'),
                                     'copies [0-9.]+ \S+ in all', 'copies (its size) in all'),
                      'has [0-9.]+ \S+ free now, [0-9.]+ \S+ after', 'has (free) free now, (free less the copy) after') AS note
  FROM storlab.move('shop.orders_placed', 'lab_ram', dry_run => true);

-- storlab.move(relation, tablespace): the table (its TOAST table goes along)
-- and its indexes, in one transaction, each recorded in storlab.relocations.
SELECT relation_name, kind, from_tablespace, to_tablespace, statement,
       duration_s >= 0 AND lock_wait_s >= 0 AND wal_bytes >= 0 AS timed, moved_by = current_user AS by_me
  FROM storlab.move('shop.orders', 'lab_ram');
SELECT CASE WHEN kind LIKE 'toast%' THEN '(TOAST of shop.orders)' ELSE relation::text END AS relation, kind, tablespace
  FROM storlab.layout('shop') WHERE relation::text LIKE 'shop.orders%' OR kind LIKE 'toast%' ORDER BY kind, 1;
-- Relations already in the target are skipped, not rewritten.
SELECT count(*) AS moved_again FROM storlab.move('shop.orders', 'lab_ram');
-- Without its indexes; and an index on its own.
SELECT relation_name, to_tablespace FROM storlab.move('shop.orders', 'lab_disk', with_indexes => false);
SELECT relation_name, to_tablespace FROM storlab.move('shop.orders_placed', 'lab_disk');
-- A materialized view moves with its indexes.
SELECT relation_name, kind, to_tablespace FROM storlab.move('shop.daily', 'lab_ram') ORDER BY id;

-- storlab.apply_layout(tables, indexes, schema): "data here, indexes there"
-- for a whole schema in one call. NULL leaves that part where it is.
SELECT relation_name, kind, from_tablespace, to_tablespace
  FROM storlab.apply_layout('lab_disk', 'lab_ram', 'shop') ORDER BY id;
SELECT kind, tablespace, count(*) FROM storlab.layout('shop') GROUP BY kind, tablespace ORDER BY kind, tablespace;
SELECT count(*) AS moved FROM storlab.apply_layout(NULL, 'lab_ram', 'shop');

-- Partitioned tables: every partition with its indexes, and the parent's
-- default for future partitions.
CREATE TABLE shop.events (at timestamptz NOT NULL, what text) PARTITION BY RANGE (at);
CREATE TABLE shop.events_2026_01 PARTITION OF shop.events FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
CREATE TABLE shop.events_2026_02 PARTITION OF shop.events FOR VALUES FROM ('2026-02-01') TO ('2026-03-01');
CREATE INDEX events_at ON shop.events (at);
SELECT relation_name, kind, to_tablespace, note LIKE 'copies nothing %' AS default_only
  FROM storlab.move('shop.events', 'lab_ram') ORDER BY id;
CREATE TABLE shop.events_2026_03 PARTITION OF shop.events FOR VALUES FROM ('2026-03-01') TO ('2026-04-01');
-- A foreign table in a partition tree has no storage here: a move leaves it
-- where it is and says so.
CREATE EXTENSION IF NOT EXISTS postgres_fdw;
CREATE SERVER regress_elsewhere FOREIGN DATA WRAPPER postgres_fdw OPTIONS (dbname 'nowhere');
CREATE FOREIGN TABLE shop.events_archive PARTITION OF shop.events FOR VALUES FROM ('2020-01-01') TO ('2021-01-01')
  SERVER regress_elsewhere;
SELECT relation_name, kind FROM storlab.move('shop.events', 'lab_disk', dry_run => true) ORDER BY relation_name;
DROP FOREIGN TABLE shop.events_archive;
DROP SERVER regress_elsewhere;
SELECT relation, tablespace FROM storlab.layout('shop') WHERE relation::text LIKE 'shop.events%' ORDER BY relation::text;

-- storlab.restore_layout(at): every relation storlab moved since `at` goes
-- back to where it was at `at`.
SELECT min(moved_at) - interval '1 microsecond' AS before_all_moves FROM storlab.relocations \gset
SELECT count(*) > 0 AS restored FROM storlab.restore_layout(:'before_all_moves');
-- Everything is back in pg_default, shop.events_2026_03 too (with its index
-- and TOAST): created after the move, in the parent's new default, it goes
-- back with its parent, named in a NOTICE.
SELECT tablespace, count(*), string_agg(relation::text, ', ' ORDER BY relation::text) FILTER (WHERE kind NOT LIKE 'toast%') AS relations
  FROM storlab.layout('shop') GROUP BY tablespace ORDER BY tablespace;
SELECT DISTINCT label LIKE 'restore_layout since %' AS labelled FROM storlab.relocations WHERE label IS NOT NULL;

-- restore_layout moves a relation back only while it is still the one that
-- was moved: same oid, name and kind. Oids are reused after a DROP, so a
-- relation dropped since is skipped, and so is one whose oid now names
-- something else (here: renamed), each with a NOTICE.
CREATE TABLE shop.kept (id int);
CREATE TABLE shop.dropped (id int);
CREATE TABLE shop.renamed (id int);
SELECT pg_catalog.clock_timestamp() AS before_second_moves \gset
SELECT relation_name FROM storlab.move('shop.kept', 'lab_ram') UNION ALL
SELECT relation_name FROM storlab.move('shop.dropped', 'lab_ram') UNION ALL
SELECT relation_name FROM storlab.move('shop.renamed', 'lab_ram');
DROP TABLE shop.dropped;
ALTER TABLE shop.renamed RENAME TO now_called_this;
SELECT relation_name, from_tablespace, to_tablespace FROM storlab.restore_layout(:'before_second_moves', lock_timeout => '1 s');
SELECT relation, tablespace FROM storlab.layout('shop') WHERE relation::text IN ('shop.kept', 'shop.now_called_this') ORDER BY 1;

-- Names that need quoting work everywhere, and nothing a name contains runs.
CREATE SCHEMA "Odd Schema";
CREATE TABLE "Odd Schema"."Tab; DROP TABLE shop.orders; --" (id int PRIMARY KEY, "Grüße" text);
CREATE INDEX "idx ""quoted""" ON "Odd Schema"."Tab; DROP TABLE shop.orders; --" ("Grüße");
SELECT relation_name, statement FROM storlab.move('"Odd Schema"."Tab; DROP TABLE shop.orders; --"', 'lab_ram') ORDER BY id;
SELECT count(*) AS orders_still_there FROM shop.orders;
SELECT relation_name FROM storlab.apply_layout('lab_disk', NULL, 'Odd Schema');

-- All or nothing: when any step fails, no relation moved and nothing is recorded.
SELECT count(*) AS relocations_before FROM storlab.relocations \gset
CREATE ROLE regress_reloc_owner;
CREATE TABLE shop.not_mine (id int);
ALTER TABLE shop.not_mine OWNER TO regress_reloc_owner;
GRANT CREATE ON TABLESPACE lab_ram TO regress_reloc_owner;
GRANT USAGE ON SCHEMA shop, storlab TO regress_reloc_owner;
GRANT EXECUTE ON FUNCTION storlab.apply_layout(name, name, name, interval, boolean, boolean),
                          storlab.move(regclass, name, boolean, interval, boolean, boolean) TO regress_reloc_owner;
SET ROLE regress_reloc_owner;
-- shop.orders belongs to someone else: the whole call fails before moving anything
SELECT * FROM storlab.apply_layout('lab_ram', NULL, 'shop');
RESET ROLE;
SELECT count(*) - :relocations_before AS recorded, (SELECT tablespace FROM storlab.layout('shop') WHERE relation = 'shop.not_mine'::regclass) AS not_mine_stays
  FROM storlab.relocations;

-- Bad input: a clear error and its SQLSTATE.
-- pg_temp.error_of(call): what a call raises, as 'SQLSTATE: message' (sql/lib/helpers.sql)
\set ECHO none
\i sql/lib/helpers.sql
\set ECHO all
CREATE VIEW shop.v AS SELECT 1 AS x;
CREATE SEQUENCE shop.s;
SELECT call, pg_temp.error_of(call) AS error FROM (VALUES
  ($$storlab.move('shop.orders', 'no_such_tablespace')$$),
  ($$storlab.move('shop.orders', 'pg_global')$$),
  ($$storlab.move('pg_class', 'lab_ram')$$),
  ($$storlab.move('shop.v', 'lab_ram')$$),
  ($$storlab.move('shop.s', 'lab_ram')$$),
  ($$storlab.move((SELECT reltoastrelid::regclass FROM pg_class WHERE oid = 'shop.orders'::regclass), 'lab_ram')$$),
  ($$storlab.move('shop.orders', NULL)$$),
  ($$storlab.move('shop.orders', 'lab_ram', lock_timeout => '0')$$),
  ($$storlab.apply_layout(NULL, NULL, 'shop')$$),
  ($$storlab.apply_layout('lab_ram', NULL, 'no_such_schema')$$),
  ($$storlab.apply_layout('lab_ram', NULL, 'pg_catalog')$$)
) AS v(call);
SET ROLE regress_reloc_owner;
-- storlab moves what its caller could move by hand, nothing more
SELECT pg_temp.error_of($$storlab.move('shop.orders', 'lab_ram')$$) AS error;
-- its own table it may move, with nothing granted but EXECUTE (and CREATE on the tablespace)
SELECT relation_name, to_tablespace, moved_by FROM storlab.move('shop.not_mine', 'lab_ram');
RESET ROLE;
REVOKE CREATE ON TABLESPACE lab_ram FROM regress_reloc_owner;
SET ROLE regress_reloc_owner;
SELECT pg_temp.error_of($$storlab.apply_layout('lab_ram', NULL, 'shop')$$) AS error;
RESET ROLE;

-- layout() is a read-only report for pg_monitor; moving is not for PUBLIC.
SELECT has_function_privilege('pg_monitor', 'storlab.layout(name)', 'EXECUTE') AS monitor_reads_layout,
       has_function_privilege('public', 'storlab.move(regclass, name, boolean, interval, boolean, boolean)', 'EXECUTE') AS public_moves;

-- A partitioned table moved, then a partition added: its default puts the
-- new partition, and the index partition its parent index makes, in the
-- move's target. restore_layout and undo_batch take the tree back whole:
-- what was created there since goes back with the parent, named in a
-- NOTICE. A partition that was in the target before the move (the move
-- left it: it was there already) stays, and the NOTICE says so.
CREATE SCHEMA parts;
CREATE TABLE parts.events (id int, at date, PRIMARY KEY (id, at)) PARTITION BY RANGE (at);
CREATE TABLE parts.events_2026_01 PARTITION OF parts.events FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
CREATE TABLE parts.events_2025 PARTITION OF parts.events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01') TABLESPACE lab_disk;
SELECT clock_timestamp() AS before_parts \gset
SELECT relation_name, kind, from_tablespace, to_tablespace FROM storlab.move('parts.events', 'lab_disk') ORDER BY relation_name;
CREATE TABLE parts.events_2026_02 PARTITION OF parts.events FOR VALUES FROM ('2026-02-01') TO ('2026-03-01');
SELECT relation, kind, tablespace FROM storlab.layout('parts') WHERE kind NOT LIKE 'toast%' ORDER BY relation::text;
SELECT relation_name, kind, from_tablespace, to_tablespace FROM storlab.restore_layout(:'before_parts') ORDER BY relation_name;
SELECT relation, kind, tablespace FROM storlab.layout('parts') WHERE kind NOT LIKE 'toast%' ORDER BY relation::text;
-- the same with undo_batch
SELECT count(*) AS moved FROM storlab.move('parts.events', 'lab_disk');
SELECT max(batch_id) AS parts_batch FROM storlab.relocations \gset
CREATE TABLE parts.events_2026_03 PARTITION OF parts.events FOR VALUES FROM ('2026-03-01') TO ('2026-04-01');
SELECT relation_name, kind, from_tablespace, to_tablespace FROM storlab.undo_batch(:parts_batch) ORDER BY relation_name;
SELECT relation, kind, tablespace FROM storlab.layout('parts') WHERE kind NOT LIKE 'toast%' ORDER BY relation::text;

DROP SCHEMA shop, "Odd Schema", parts CASCADE;
DROP OWNED BY regress_reloc_owner;
DROP ROLE regress_reloc_owner;
