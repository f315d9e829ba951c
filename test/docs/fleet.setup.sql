-- docs/fleet.md: two servers of a fleet (two databases of the lab, each a
-- node of its own) with results of their own: a baseline of the standard
-- suite on lab_ram and pg_default (three repetitions) and two pgbench
-- runs each; this page's database is the collector, and has both added.
\set docs_db :DBNAME
SELECT format('host=%s port=%s', split_part(current_setting('unix_socket_directories'), ',', 1),
              current_setting('port')) AS docs_here \gset
SET client_min_messages = warning;
DROP DATABASE IF EXISTS storlab_docs_fleet_old;
DROP DATABASE IF EXISTS storlab_docs_fleet_new;
CREATE DATABASE storlab_docs_fleet_old;
CREATE DATABASE storlab_docs_fleet_new;
\c storlab_docs_fleet_old
SET client_min_messages = warning;
CREATE EXTENSION storlab;
SELECT storlab.baseline('before', '{lab_ram,pg_default}', '200 ms', 3) AS baseline \gset
SELECT storlab.bench_init(scale => 1) AS job \gset
CALL storlab.wait(:job);
CALL storlab.bench('select-only', 1, 1, '2 s');
CALL storlab.bench('select-only', 1, 1, '2 s');
\c storlab_docs_fleet_new
SET client_min_messages = warning;
CREATE EXTENSION storlab;
SELECT storlab.baseline('after', '{lab_ram,pg_default}', '200 ms', 3) AS baseline \gset
SELECT storlab.bench_init(scale => 1) AS job \gset
CALL storlab.wait(:job);
CALL storlab.bench('select-only', 1, 1, '2 s');
CALL storlab.bench('select-only', 1, 1, '2 s');
\c :docs_db
SET client_min_messages = warning;
CREATE EXTENSION postgres_fdw;
SELECT storlab.fleet_add('old_array', :'docs_here' || ' dbname=storlab_docs_fleet_old') IS NOT NULL AS added;
SELECT storlab.fleet_add('new_array', :'docs_here' || ' dbname=storlab_docs_fleet_new') IS NOT NULL AS added;
RESET client_min_messages;
