--
-- A fleet in one database: a collector (this database) copies the results
-- of other servers through postgres_fdw, PostgreSQL's own federation, and
-- compares them side by side. Here the two "servers" are two databases of
-- this cluster reached through its own socket: each database's storlab is
-- a node of its own, as two machines would be.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS storlab;
CREATE EXTENSION IF NOT EXISTS postgres_fdw;
SELECT current_setting('unix_socket_directories') AS sock, current_setting('port') AS port \gset
DROP DATABASE IF EXISTS storlab_regress_old;
DROP DATABASE IF EXISTS storlab_regress_new;
CREATE DATABASE storlab_regress_old;
CREATE DATABASE storlab_regress_new;

-- On each server, results of its own: a baseline (the standard suite on
-- lab_ram, twice) on the old one, the same suite twice on the new one.
\c storlab_regress_old
SET client_min_messages = warning;
SET storlab.suite_file_size = '8MB';
CREATE EXTENSION storlab;
SELECT storlab.baseline('before', ARRAY['lab_ram']::name[], '100 ms', 2) > 0 AS baseline_taken;
-- and a probe of its own, in no baseline
SELECT (storlab.probe('lab_ram', 'randread', duration => '50 ms', file_size => 1048576, direct => false)).id > 0 AS probed;
-- Every server has a node: its storlab's identity, one per cluster and
-- place (system identifier, host name, data directory). Every result row
-- names the node that measured it.
SELECT node_id IS NOT NULL AS has_node, storlab_version FROM storlab.node;
SELECT count(*) AS probes, count(*) FILTER (WHERE node_id = (SELECT node_id FROM storlab.node)) AS of_this_node
  FROM storlab.probes;
-- Connection strings are read as libpq reads them (psql, postgres_fdw's
-- own libpq): outside quotes a backslash takes the next character as it is.
SELECT context, keyword, value FROM storlab.fleet_conninfo_options($$host=db1 dbname=shop password=se\ cr\\et user='o\'brien'$$);
\c storlab_regress_new
SET client_min_messages = warning;
SET storlab.suite_file_size = '8MB';
CREATE EXTENSION storlab;
SELECT storlab.baseline('after', ARRAY['lab_ram']::name[], '100 ms', 2) > 0 AS baseline_taken;

\c storlab_regress
SET storlab.suite_file_size = '8MB';
-- Adding a server (superusers): a foreign server and a user mapping of
-- postgres_fdw, and a schema of foreign tables, all named
-- storlab_fleet_<name>. The server is reached at once: one that cannot be
-- reached, or has no storlab, is refused with nothing left behind. It
-- returns the server's node_id.
SELECT storlab.fleet_add('old', format('host=%s port=%s dbname=storlab_regress_old', :'sock', :'port')) IS NOT NULL AS added;
SELECT storlab.fleet_add('new', format('host=%s port=%s dbname=storlab_regress_new', :'sock', :'port')) IS NOT NULL AS added;
SELECT srvname, (SELECT count(*) FROM pg_user_mappings m WHERE m.srvname = s.srvname) AS mappings
  FROM pg_foreign_server s WHERE srvname LIKE 'storlab_fleet_%' ORDER BY 1;
SELECT name, node_id IS NOT NULL AS has_node, storlab_version, replace(replace(conninfo, :'sock', 'SOCK'), 'port=' || :'port', 'port=PORT') AS conninfo,
       last_sync IS NULL AS never_synced, probes
  FROM storlab.fleet_servers ORDER BY name;

-- A sync copies every server's new and changed results: a row per server
-- and table, with how many rows it copied.
SELECT server, table_name, rows_copied, error FROM storlab.fleet_sync() ORDER BY server, table_name;
-- Rows are keyed by (node_id, id): a second sync copies nothing twice.
SELECT server, sum(rows_copied) AS copied, count(error) AS errors FROM storlab.fleet_sync() GROUP BY server ORDER BY server;
SELECT name, last_sync IS NOT NULL AS synced, last_error, probes, baselines FROM storlab.fleet_servers ORDER BY name;
-- The copies are storlab's own tables with the server they came from.
SELECT server, count(*) AS probes, count(DISTINCT node_id) AS nodes FROM storlab.fleet_probes GROUP BY server ORDER BY server;
SELECT server, label, repetitions FROM storlab.fleet_baselines ORDER BY server;

-- Every server's tablespaces side by side: compare_tablespaces()' figures
-- from the copies, ranked over the whole fleet. Nothing is probed.
SELECT server, tablespace, fs_type, randread_p99_us > 0 AS has_randread, wal_commit_p99_us > 0 AS has_wal,
       volatile, probed_at IS NOT NULL AS dated
  FROM storlab.compare_fleet() ORDER BY server, tablespace;
SELECT count(*) AS rows FROM storlab.compare_fleet(servers => ARRAY['new']);

-- The old server against the new one, figure by figure: each side's mean
-- (both took the suite twice), the change and Welch's test.
SELECT tablespace, workload, metric, a_n, b_n, p_value BETWEEN 0 AND 1 AS tested,
       verdict IN ('b is better', 'b is worse', 'no significant difference') AS judged
  FROM storlab.compare_servers('old', 'new', ARRAY['randread', 'wal'])
 ORDER BY tablespace, workload, metric;

-- A baseline taken on one server, checked against this one: the
-- collector's own lab_ram is measured now against the old server's.
-- (its NOTICEs, which say whether it measured a second round, are left out)
SET client_min_messages = warning;
SELECT tablespace, workload, metric, regressed IS NOT NULL AS judged
  FROM storlab.regressions('before', server => 'old', duration => '100 ms', repetitions => 2)
 WHERE workload = 'randread' ORDER BY metric;
RESET client_min_messages;

-- The collector's retention: fleet_prune deletes the copies older than an
-- age, and keeps every probe a copied baseline refers to (here: the old
-- server's one probe outside its baseline goes).
SELECT * FROM storlab.fleet_prune('1 microsecond', dry_run => true);
SELECT * FROM storlab.fleet_prune('1 microsecond');
SELECT server, count(*) AS probes FROM storlab.fleet_probes GROUP BY server ORDER BY server;
-- A copied baseline's probe cannot be deleted under it by hand; and a
-- baseline whose links to its probes were deleted is refused by
-- regressions(), never compared with nothing.
\set VERBOSITY terse
DELETE FROM storlab.fleet_probes WHERE server = 'old';
DELETE FROM storlab.fleet_baseline_probes WHERE server = 'old';
SELECT count(*) FROM storlab.regressions('before', server => 'old', duration => '100 ms', repetitions => 2);
\set VERBOSITY default
SELECT * FROM storlab.fleet_prune('-1 day');

-- Bad input: each a clear error with its SQLSTATE, and nothing left behind.
-- (without the errors' context: the PL/pgSQL lines it names)
\set SHOW_CONTEXT never
SELECT storlab.fleet_add('old', format('host=%s port=%s dbname=storlab_regress_old', :'sock', :'port'));
SELECT storlab.fleet_add('Old-Array', 'dbname=x');
SELECT storlab.fleet_add('web', 'postgresql://collector:secret@db1/shop');
SELECT storlab.fleet_add('web', 'host=db1 password=secret');
-- a password with an unquoted space, or pasted without password=: the
-- error names the item, never a part of the text
SELECT storlab.fleet_add('web', 'dbname=shop password=se cret');
SELECT storlab.fleet_add('web', 'dbname=shop user=collector secret');
-- (the connection's error names the socket: only its first line here)
\set VERBOSITY terse
SELECT storlab.fleet_add('web', format('host=%s port=%s dbname=storlab_regress_nothere', :'sock', :'port'));
\set VERBOSITY default
SELECT storlab.fleet_add('web', format('host=%s port=%s dbname=postgres', :'sock', :'port'));
SELECT storlab.fleet_sync('web');
SELECT * FROM storlab.compare_servers('old', 'old');
SELECT * FROM storlab.compare_servers('old', 'web');
SELECT * FROM storlab.compare_fleet(max_age => '-1 day');
SELECT * FROM storlab.regressions('nosuch', server => 'old');
SELECT * FROM storlab.compare_servers('old', 'new', workloads => '{}');
SELECT count(*) AS leftovers FROM pg_foreign_server WHERE srvname = 'storlab_fleet_web';
\set SHOW_CONTEXT errors

-- Removing a server drops its foreign server, mapping and schema; its
-- copied results stay unless keep_results is false.
SELECT storlab.fleet_remove('new');
SELECT storlab.fleet_remove('old');
-- A removed server's kept results stay under its name: another server
-- added under that name is refused (its figures would mix with the kept
-- ones), until they are deleted; fleet_remove(keep_results => false) of a
-- removed name deletes them.
\set VERBOSITY terse
SELECT storlab.fleet_add('new', format('host=%s port=%s dbname=storlab_regress_old', :'sock', :'port'));
\set VERBOSITY default
SELECT storlab.fleet_remove('old', keep_results => false);
SELECT server, count(*) AS probes FROM storlab.fleet_probes GROUP BY server ORDER BY server;
SELECT count(*) AS members FROM storlab.fleet_servers;
SELECT count(*) AS foreign_servers FROM pg_foreign_server WHERE srvname LIKE 'storlab_fleet_%';
SELECT count(*) AS schemas FROM pg_namespace WHERE nspname LIKE 'storlab_fleet_%';
SELECT storlab.fleet_remove('new', keep_results => false);
SELECT count(*) AS copies FROM storlab.fleet_probes;
DROP DATABASE storlab_regress_old;
DROP DATABASE storlab_regress_new;
