--
-- Online table moves: storlab.move(..., online => true) moves a table to
-- another tablespace while the application keeps writing to it, through
-- pg_repack (a log trigger, a copy, an index build, a replay of the log,
-- and a swap under a short lock), as a job that runs as the caller. Each
-- move is recorded in storlab.relocations like any other, and undone the
-- same way.
--
CREATE EXTENSION IF NOT EXISTS storlab;
-- (each call's NOTICE names its job; the job ids differ from run to run)
SET client_min_messages = warning;
CREATE SCHEMA online;
CREATE TABLE online.orders (id bigint PRIMARY KEY, placed date NOT NULL, notes text);
CREATE INDEX orders_placed ON online.orders (placed);
INSERT INTO online.orders
SELECT g, date '2026-01-01' + g % 300, repeat(md5(g::text), 3) FROM generate_series(1, 20000) g;

-- pg_repack runs the move: the extension must be in the database (the
-- error says which package holds it; VERBOSITY terse keeps that line out,
-- since it names the major)
\set VERBOSITY terse
SELECT * FROM storlab.move('online.orders', 'lab_disk', online => true);
\set VERBOSITY default
CREATE EXTENSION pg_repack;

-- A dry run returns the plan: the table through pg_repack (its indexes go
-- with it, --moveidx), the lock_timeout as pg_repack's --wait-timeout, and
-- what the move does to writers: pg_repack's exclusive lock may be queued
-- for lock_timeout, 1 s at most, each time it takes it
SELECT relation_name, kind, from_tablespace, to_tablespace, statement, online,
       note LIKE 'a dry run: nothing was started through pg_repack: writes go on; its exclusive lock (to install its trigger, to swap, to drop) is queued 1000 ms at most each time, then the job stops it (55P03)%' AS says_what_writers_see
  FROM storlab.move('online.orders', 'lab_disk', dry_run => true, online => true);

-- The move itself: the call plans and checks, a job moves. The rows it
-- returns are that plan, with the batch the job records under.
SELECT relation_name, kind, to_tablespace, batch_id IS NOT NULL AS has_batch
  FROM storlab.move('online.orders', 'lab_disk', online => true);
SELECT max(id) AS job FROM storlab.jobs WHERE kind = 'move_online' \gset
CALL storlab.wait(:job);
SELECT status, detail->>'phase' AS phase FROM storlab.jobs WHERE id = :job;
-- Recorded as it happened: online, what pg_repack copied, how long, and the
-- longest any other session waited for a lock on the table meanwhile
SELECT relation_name, kind, from_tablespace, to_tablespace, online, bytes > 0 AS copied,
       duration_s > 0 AS timed, writers_blocked_s >= 0 AS writers_measured, label
  FROM storlab.relocations
 WHERE batch_id = (SELECT (args->>'batch')::bigint FROM storlab.jobs WHERE id = :job)
 ORDER BY id;
SELECT relation, kind, tablespace FROM storlab.layout('online') WHERE kind IN ('table', 'index') ORDER BY relation::text;
-- pg_repack's objects are gone: its trigger, its log table, its copy
SELECT count(*) AS repack_objects
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'repack' AND c.relname ~ '^(log|table)_';

-- Data here, indexes there, online: pg_repack moves the table and rebuilds
-- its indexes where they are, then REINDEX CONCURRENTLY moves each index
-- (lab_ram is tmpfs: the call warns, as a move without online does)
SELECT now() AS before_layout \gset
SELECT relation_name, kind, to_tablespace, statement
  FROM storlab.apply_layout('lab_ram', 'pg_default', 'online', online => true)
 ORDER BY kind DESC, relation_name;
SELECT max(id) AS job FROM storlab.jobs WHERE kind = 'move_online' \gset
CALL storlab.wait(:job);
SELECT relation, kind, tablespace FROM storlab.layout('online') WHERE kind IN ('table', 'index') ORDER BY relation::text;

-- and back, online: restore_layout puts each relation where it was
SELECT relation_name, kind, to_tablespace
  FROM storlab.restore_layout(:'before_layout', online => true)
 ORDER BY kind DESC, relation_name;
SELECT max(id) AS job FROM storlab.jobs WHERE kind = 'move_online' \gset
CALL storlab.wait(:job);
SELECT relation, kind, tablespace FROM storlab.layout('online') WHERE kind IN ('table', 'index') ORDER BY relation::text;

-- A partitioned table: each partition moves through pg_repack, then the
-- parent records where new partitions go (a change of the catalog only)
CREATE TABLE online.events (id bigint, at date, PRIMARY KEY (id, at)) PARTITION BY RANGE (at);
CREATE TABLE online.events_2026 PARTITION OF online.events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
CREATE TABLE online.events_2027 PARTITION OF online.events FOR VALUES FROM ('2027-01-01') TO ('2028-01-01');
INSERT INTO online.events SELECT g, date '2026-06-01' + g % 400 FROM generate_series(1, 5000) g;
SELECT relation_name, kind, to_tablespace, split_part(statement, ' ', 1) AS through
  FROM storlab.move('online.events', 'lab_disk', online => true)
 ORDER BY kind, relation_name;
SELECT max(id) AS job FROM storlab.jobs WHERE kind = 'move_online' \gset
CALL storlab.wait(:job);
SELECT relation, kind, tablespace FROM storlab.layout('online') WHERE relation::text LIKE 'online.events%' ORDER BY relation::text;

-- What pg_repack cannot do is refused at the call, before any job starts:
-- a table without a primary key or a unique index on NOT NULL columns
CREATE TABLE online.nokey (id int, v text);
SELECT * FROM storlab.move('online.nokey', 'lab_disk', online => true);
-- an unlogged table, a materialized view
CREATE UNLOGGED TABLE online.scratch (id int PRIMARY KEY);
SELECT * FROM storlab.move('online.scratch', 'lab_disk', online => true);
CREATE MATERIALIZED VIEW online.daily AS SELECT placed, count(*) FROM online.orders GROUP BY placed;
SELECT * FROM storlab.move('online.daily', 'lab_disk', online => true);
-- an index alone
SELECT * FROM storlab.move('online.orders_placed', 'lab_ram', online => true);
-- NULL
SELECT * FROM storlab.move('online.orders', 'lab_ram', online => NULL);
-- a table with an invalid index (a failed CREATE INDEX CONCURRENTLY leaves one)
CREATE TABLE online.half (id int PRIMARY KEY, v int);
INSERT INTO online.half VALUES (1, 1), (2, 1);
CREATE UNIQUE INDEX CONCURRENTLY half_v ON online.half (v);
SELECT * FROM storlab.move('online.half', 'lab_disk', online => true);
SELECT count(*) AS jobs_started_by_refused_calls FROM storlab.jobs
 WHERE kind = 'move_online' AND id > :job;

DROP SCHEMA online CASCADE;
DROP EXTENSION pg_repack;
