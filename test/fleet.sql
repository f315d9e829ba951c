-- The fleet: a collector (this database) reads other servers' results
-- through postgres_fdw. Here the servers are two databases of the lab of
-- their own. Only a superuser adds or removes a server, whatever EXECUTE
-- was granted; a password given in a conninfo is never shown; NULLs and bad
-- names are refused before anything is made; a sync is whole per server
-- (a cancel undoes the whole call, nothing half-copied); two syncs at once
-- copy each row once; a caller's search_path decides nothing.
--
-- It makes its databases, roles and fleet servers, and removes them at its
-- end (and at its start, what an interrupted run left).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS postgres_fdw;
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
DROP VIEW IF EXISTS public.tap_fleet_view;
DO $$ BEGIN
  -- members, and the results kept of removed ones
  PERFORM storlab.fleet_remove(n, keep_results => false)
     FROM (SELECT name FROM storlab.fleet_members UNION SELECT server FROM storlab.fleet_nodes) s(n) WHERE n LIKE 'tap\_%';
END $$;
DO $$ BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'tap_fleet_reader') THEN
    EXECUTE 'DROP OWNED BY tap_fleet_reader CASCADE';
    DROP ROLE tap_fleet_reader;
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'tap_fleet_nobody') THEN
    EXECUTE 'DROP OWNED BY tap_fleet_nobody CASCADE';
    DROP ROLE tap_fleet_nobody;
  END IF;

END $$;
DROP SCHEMA IF EXISTS tap_fleet_evil CASCADE;
DROP DATABASE IF EXISTS storlab_tap_fleet_a WITH (FORCE);
DROP DATABASE IF EXISTS storlab_tap_fleet_b WITH (FORCE);
DROP DATABASE IF EXISTS storlab_tap_fleet_c WITH (FORCE);
DROP DATABASE IF EXISTS storlab_tap_fleet_d WITH (FORCE);
DROP ROLE IF EXISTS tap_fleet_remote;
RESET client_min_messages;
SELECT plan(78);
\ir lib/probe_helpers.sql

SELECT split_part(current_setting('unix_socket_directories'), ',', 1) AS sock, current_setting('port') AS port \gset
SELECT format('host=%s port=%s dbname=%s user=%s', :'sock', :'port', current_database(), current_user) AS here \gset
CREATE DATABASE storlab_tap_fleet_a;
CREATE DATABASE storlab_tap_fleet_b;
SELECT format('host=%s port=%s dbname=storlab_tap_fleet_a', :'sock', :'port') AS conn_a \gset
SELECT format('host=%s port=%s dbname=storlab_tap_fleet_b', :'sock', :'port') AS conn_b \gset
SELECT dblink_connect('a', :'conn_a');
SELECT dblink_connect('b', :'conn_b');
SELECT dblink_exec(c, 'SET client_min_messages = warning') FROM unnest(ARRAY['a', 'b']) c;
SELECT dblink_exec(c, 'CREATE EXTENSION storlab') FROM unnest(ARRAY['a', 'b']) c;
-- on each: a baseline (the standard suite twice, on lab_ram), and five
-- more probes on a, three on b
SELECT dblink_exec(c, $$SET storlab.suite_file_size = '4MB'$$) FROM unnest(ARRAY['a', 'b']) c;
SELECT count(*) FROM unnest(ARRAY['a', 'b']) c, LATERAL dblink(c, $$SELECT storlab.baseline('tap', '{lab_ram}', '50 ms', 2)$$) AS t(id bigint);
SELECT count(*) FROM dblink('a', $$SELECT (storlab.probe('lab_ram', 'randread', duration => '50 ms', file_size => 1048576, direct => false)).id
                                   FROM generate_series(1, 5)$$) AS t(id bigint);
SELECT count(*) FROM dblink('b', $$SELECT (storlab.probe('lab_ram', 'randread', duration => '50 ms', file_size => 1048576, direct => false)).id
                                   FROM generate_series(1, 3)$$) AS t(id bigint);

-- 1. Identity: each database's storlab is a node of its own, and its rows name it.
SELECT isnt((SELECT n FROM dblink('a', 'SELECT node_id FROM storlab.node') AS t(n uuid)),
            (SELECT n FROM dblink('b', 'SELECT node_id FROM storlab.node') AS t(n uuid)),
            'two databases are two nodes');
SELECT is((SELECT n FROM dblink('a', 'SELECT count(*) FROM storlab.probes WHERE node_id = (SELECT node_id FROM storlab.node)') AS t(n bigint)),
          17::bigint, 'every probe names the node that measured it');
SELECT is(storlab.node_id(), storlab.node_id(), 'node_id() is stable within a database');
SELECT is((SELECT count(*) FROM storlab.nodes), 1::bigint, 'one node per database and place');

-- 2. Bad input, refused before anything is made.
SELECT throws_ok($$SELECT storlab.fleet_add(NULL, 'dbname=x')$$, '22004', NULL, 'fleet_add with a NULL name: 22004');
SELECT throws_ok($$SELECT storlab.fleet_add('tap_x', NULL)$$, '22004', NULL, 'fleet_add with a NULL conninfo: 22004');
SELECT throws_ok($$SELECT storlab.fleet_add('Tap X', 'dbname=x')$$, '22023', NULL, 'a name that is no lower-case identifier: 22023');
SELECT throws_ok($$SELECT storlab.fleet_add('tap_x', 'host=h')$$, '22023', NULL, 'a conninfo without dbname: 22023');
SELECT throws_ok($$SELECT storlab.fleet_add('tap_x', 'postgresql://u:pw@h/db')$$, '22023', NULL, 'a URI: 22023');
SELECT throws_ok($$SELECT storlab.fleet_add('tap_x', 'dbname=x replication=database')$$, '22023', NULL, 'a replication connection: 22023');
SELECT throws_ok($$SELECT storlab.fleet_remove(NULL)$$, '22004', NULL, 'fleet_remove with a NULL name: 22004');
SELECT throws_ok($$SELECT storlab.fleet_remove('tap_nosuch')$$, '42704', NULL, 'fleet_remove of an unknown server: 42704');
SELECT throws_ok($$SELECT * FROM storlab.fleet_sync('tap_nosuch')$$, '42704', NULL, 'fleet_sync of an unknown server: 42704');
SELECT throws_ok($$SELECT * FROM storlab.compare_servers(NULL, 'x')$$, '22004', NULL, 'compare_servers with a NULL server: 22004');
SELECT throws_ok($$SELECT * FROM storlab.compare_fleet(servers => '{}')$$, '22023', NULL, 'compare_fleet of no server: 22023');
SELECT throws_ok($$SELECT * FROM storlab.compare_fleet(servers => ARRAY[NULL])$$, '22023', NULL, 'compare_fleet of a NULL server: 22023');

-- 3. A password is never shown: not by the servers' view, not in the
-- error of a server that cannot be reached (port 1), not in its context.
CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE m text; d text; h text; c text; s text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT, c = PG_EXCEPTION_CONTEXT, s = RETURNED_SQLSTATE;
  -- storlab's part of the context: the last lines are this function's own
  -- EXECUTE of the call, whose text has the password the caller typed
  c := regexp_replace(c, E'\nSQL statement "SELECT storlab\\.fleet_add\\(.*$', '', 's');
  RETURN s || ' ' || concat_ws(' | ', m, d, h, c);
END $$;
SELECT format('host=%s port=1 dbname=x user=collector password=s3cret-canary', :'sock') AS unreachable \gset
SELECT pg_temp.error_of(format('SELECT storlab.fleet_add(%L, %L)', 'tap_down', :'unreachable')) AS down_error \gset
SELECT alike(:'down_error'::text, '08001 %', 'a server that cannot be reached: 08001');
SELECT unalike(:'down_error'::text, '%s3cret%', 'its error, detail and context do not show the password');
SELECT is((SELECT count(*) FROM pg_foreign_server WHERE srvname = 'storlab_fleet_tap_down')
          + (SELECT count(*) FROM pg_namespace WHERE nspname = 'storlab_fleet_tap_down')
          + (SELECT count(*) FROM storlab.fleet_members WHERE name = 'tap_down'), 0::bigint,
          'and it leaves no foreign server, schema or member behind');
SELECT is(pg_temp.error_of(format('SELECT storlab.fleet_add(%L, %L)', 'tap_bad', 'dbname=x password=s3cret-canary nonsense'))
            ~ 's3cret', false, 'a malformed conninfo''s error does not show the password either');
-- a password with an unquoted space, or pasted without password=: the
-- error names the item, never a part of it (nor does the server log, which
-- keeps the same message)
SELECT pg_temp.error_of(format('SELECT storlab.fleet_add(%L, %L)', 'tap_bad', 'dbname=x password=s3cret canary')) AS spaced \gset
SELECT alike(:'spaced'::text, '22023 %item 3%', 'a password with an unquoted space: 22023 naming the item');
SELECT unalike(:'spaced'::text, '%canary%', 'and no part of the password');
SELECT pg_temp.error_of(format('SELECT storlab.fleet_add(%L, %L)', 'tap_bad', 'dbname=x user=u s3cret-canary')) AS pasted \gset
SELECT alike(:'pasted'::text, '22023 %item 3%', 'a password pasted without password=: 22023 naming the item');
SELECT unalike(:'pasted'::text, '%canary%', 'and not the password');
-- (a word after the space that reads as a key: postgres_fdw's own error)
SELECT pg_temp.error_of(format('SELECT storlab.fleet_add(%L, %L)', 'tap_bad',
                               format('host=%s port=%s dbname=x password=s3cret canary=x', :'sock', :'port'))) AS keyed \gset
SELECT alike(:'keyed'::text, 'HV00D %', 'a part of a password read as an unknown key: postgres_fdw''s HV00D');
SELECT unalike(:'keyed'::text, '%canary%', 'which names no part of it');

-- 4. Adding and syncing (the password of a mapping is kept, never shown:
-- not even to pg_stat_statements, tracking every statement, nested ones too).
SET pg_stat_statements.track = 'all';
SELECT pg_stat_statements_reset() IS NOT NULL AS reset;
SELECT ok(storlab.fleet_add('tap_a', :'conn_a' || ' password=s3cret-canary') IS NOT NULL, 'fleet_add returns the server''s node_id');
SELECT is((SELECT count(*) FROM pg_stat_statements WHERE query ~ 's3cret'), 0::bigint,
          'no statement pg_stat_statements tracked holds the password (fleet_add''s own CREATE USER MAPPING among them)');
-- a password changed later, the way docs/fleet.md shows
SELECT storlab.fleet_set_password('tap_a', 'n3w-canary');
SELECT is((SELECT count(*) FROM pg_stat_statements WHERE query ~ 'n3w-canary'), 0::bigint,
          'nor after fleet_set_password()');
SELECT is((SELECT count(*) FROM pg_user_mappings WHERE srvname = 'storlab_fleet_tap_a' AND 'password=n3w-canary' = ANY (umoptions)), 1::bigint,
          'which set the user mapping''s password');
RESET pg_stat_statements.track;
SELECT ok(storlab.fleet_add('tap_b', :'conn_b') IS NOT NULL, 'a second server');
SELECT is((SELECT count(*) FROM storlab.fleet_servers WHERE name LIKE 'tap\_%' AND conninfo ~ 's3cret'), 0::bigint,
          'fleet_servers shows the conninfo without its password');
SELECT throws_ok(format('SELECT storlab.fleet_add(%L, %L)', 'tap_a', :'conn_a'), '42710', NULL, 'a name already in the fleet: 42710');
SELECT is((SELECT array_agg(server || ':' || table_name || ':' || rows_copied ORDER BY server, table_name)
             FROM storlab.fleet_sync() WHERE server LIKE 'tap\_%' AND table_name = 'probes'),
          ARRAY['tap_a:probes:17', 'tap_b:probes:15'], 'a sync copies each server''s probes');
SELECT is((SELECT sum(rows_copied) FROM storlab.fleet_sync() WHERE server LIKE 'tap\_%'), 0::numeric,
          'a second sync copies nothing');

-- 5. Only a superuser adds or removes servers, whatever was granted; a
-- reader (pg_monitor) reads the copies and compares, but sees no password.
CREATE ROLE tap_fleet_reader IN ROLE pg_monitor;
CREATE ROLE tap_fleet_nobody;
CREATE ROLE tap_fleet_remote LOGIN;
GRANT EXECUTE ON FUNCTION storlab.fleet_add(text, text), storlab.fleet_remove(text, boolean) TO tap_fleet_reader;
SET ROLE tap_fleet_reader;
SELECT throws_ok(format('SELECT storlab.fleet_add(%L, %L)', 'tap_c', :'conn_a'), '42501', NULL,
                 'a role granted EXECUTE on fleet_add still may not add a server: 42501');
SELECT throws_ok($$SELECT storlab.fleet_remove('tap_a')$$, '42501', NULL, 'nor remove one: 42501');
SELECT throws_ok($$SELECT * FROM storlab.fleet_sync()$$, '42501', NULL, 'fleet_sync is not granted to pg_monitor: 42501');
SELECT is((SELECT count(*) FROM storlab.compare_fleet(ARRAY['tap_a', 'tap_b'])), 2::bigint,
          'pg_monitor compares the fleet');
SELECT is((SELECT count(*) FROM pg_user_mappings WHERE srvname LIKE 'storlab_fleet_tap%' AND umoptions IS NOT NULL), 0::bigint,
          'and sees no user mapping''s options');
RESET ROLE;
SET ROLE tap_fleet_nobody;
SELECT throws_ok($$SELECT * FROM storlab.compare_fleet()$$, '42501', NULL, 'a role without pg_monitor may not compare: 42501');
SELECT throws_ok($$SELECT count(*) FROM storlab.fleet_probes$$, '42501', NULL, 'nor read the copies: 42501');
RESET ROLE;

-- 6. A caller's search_path decides nothing: shadows of format() and
-- md5() in a schema first on the path do not run.
CREATE SCHEMA tap_fleet_evil;
CREATE FUNCTION tap_fleet_evil.format(text, text) RETURNS text LANGUAGE sql AS $$ SELECT 'evil'::text $$;
CREATE FUNCTION tap_fleet_evil.format(text, name, name) RETURNS text LANGUAGE sql AS $$ SELECT 'evil'::text $$;
CREATE FUNCTION tap_fleet_evil.md5(text) RETURNS text LANGUAGE sql AS $$ SELECT 'evil'::text $$;
SELECT count(*) FROM dblink('a', $$SELECT (storlab.probe('lab_ram', 'randread', duration => '50 ms', file_size => 1048576, direct => false)).id$$) AS t(id bigint);
SET search_path = tap_fleet_evil, public, pg_catalog;
SELECT is((SELECT sum(rows_copied) FROM storlab.fleet_sync('tap_a') WHERE error IS NULL), 1::numeric,
          'under a hostile search_path a sync copies the new probe, and only it');
RESET search_path;

-- 7. A cancel undoes the whole call: a sync that waits for a lock on the
-- server (its probes locked by another session) is stopped by its
-- statement_timeout, and copies nothing.
SELECT count(*) FROM dblink('b', $$SELECT (storlab.probe('lab_ram', 'randread', duration => '50 ms', file_size => 1048576, direct => false)).id$$) AS t(id bigint);
SELECT dblink_connect('holder', :'conn_b');
SELECT dblink_exec('holder', 'BEGIN');
SELECT dblink_exec('holder', 'LOCK storlab.probes IN ACCESS EXCLUSIVE MODE');
SELECT count(*) AS b_before FROM storlab.fleet_probes WHERE server = 'tap_b' \gset
SELECT pg_temp.tick();
SET statement_timeout = '2 s';
SELECT is(pg_temp.sqlstate_of($$SELECT * FROM storlab.fleet_sync('tap_b')$$), '57014',
          'a sync held up by the server is cancelled by its statement_timeout (57014)');
RESET statement_timeout;
SELECT cmp_ok(pg_temp.since_tick(), '<', 10::numeric, 'promptly');
SELECT is((SELECT count(*) FROM storlab.fleet_probes WHERE server = 'tap_b'), :'b_before'::bigint, 'and copies nothing');

-- 8. Two syncs at once: one waits for the other, and each row is copied once.
SELECT dblink_connect('other', :'here');
SELECT dblink_send_query('other', $$SELECT coalesce(sum(rows_copied), 0) FROM storlab.fleet_sync('tap_b')$$);
SELECT pg_sleep(0.5);
SELECT dblink_connect('mine', :'here');
SELECT dblink_send_query('mine', $$SELECT coalesce(sum(rows_copied), 0) FROM storlab.fleet_sync('tap_b')$$);
SELECT pg_sleep(0.5);
SELECT dblink_exec('holder', 'ROLLBACK');
SELECT (SELECT n FROM dblink_get_result('other') AS r(n numeric)) + (SELECT n FROM dblink_get_result('mine') AS r(n numeric)) AS both_copied \gset
SELECT is(:'both_copied'::numeric, 1::numeric, 'two syncs at once copy the new probe once between them');
SELECT is((SELECT count(*) FROM storlab.fleet_probes WHERE server = 'tap_b'), :'b_before'::bigint + 1, 'and it is there once');
SELECT dblink_disconnect(c) FROM unnest(ARRAY['holder', 'other', 'mine']) c;

-- 9. A server whose storlab is newer than the collector's is refused
-- (0A000): the collector would not know what its new columns mean. (The
-- version is set by hand in the catalog, then put back.)
SELECT v AS a_version FROM dblink('a', $$SELECT extversion FROM pg_extension WHERE extname = 'storlab'$$) AS t(v text) \gset
SELECT dblink_exec('a', $$UPDATE pg_extension SET extversion = '0.99.0' WHERE extname = 'storlab'$$);
SELECT alike((SELECT error FROM storlab.fleet_sync('tap_a')), '%newer than this collector%(SQLSTATE 0A000)',
             'a server on a newer storlab gives an error row: 0A000, update the collector first');
SELECT dblink_exec('a', $$UPDATE pg_extension SET extversion = '0.4.0' WHERE extname = 'storlab'$$);
SELECT alike((SELECT error FROM storlab.fleet_sync('tap_a')), '%older than 0.5.0%(SQLSTATE 0A000)',
             'one older than 0.5.0 too');
SELECT dblink_exec('a', format('UPDATE pg_extension SET extversion = %L WHERE extname = %L', :'a_version', 'storlab'));

-- 10. A server is read as a role that sees every session there
-- (pg_read_all_stats): one that can read storlab's tables but not that is
-- refused, or its syncs could pass over other roles' results for good.
SELECT dblink_exec('a', 'GRANT SELECT ON storlab.node, storlab.probes, storlab.baselines, storlab.baseline_probes,
                              storlab.bench_runs, storlab.experiments TO tap_fleet_remote');
SELECT pg_temp.error_of(format('SELECT storlab.fleet_add(%L, %L)', 'tap_c', :'conn_a' || ' user=tap_fleet_remote')) AS blind \gset
SELECT alike(:'blind'::text, '42501 the role fleet server "tap_c" is read as cannot see every session there: it needs pg_read_all_stats%',
             'a server read as a role without pg_read_all_stats is refused: 42501');
SELECT dblink_exec('a', 'REVOKE ALL ON storlab.node, storlab.probes, storlab.baselines, storlab.baseline_probes,
                              storlab.bench_runs, storlab.experiments FROM tap_fleet_remote');

-- 11. fleet_remove drops only what fleet_add made: a view of the DBA's on
-- a server's foreign table stops it (2BP01), and nothing is dropped.
CREATE VIEW public.tap_fleet_view AS SELECT id FROM storlab_fleet_tap_a.probes;
SELECT throws_ok($$SELECT storlab.fleet_remove('tap_a')$$, '2BP01', NULL,
                 'fleet_remove of a server a view depends on is refused: 2BP01');
SELECT is((SELECT count(*) FROM storlab.fleet_members WHERE name = 'tap_a')
          + (SELECT count(*) FROM pg_foreign_server WHERE srvname = 'storlab_fleet_tap_a'), 2::bigint,
          'and nothing is dropped');
DROP VIEW public.tap_fleet_view;

-- 12. A server that cannot be reached any more gives an error row, the
-- others sync, and its last_error says why.
SELECT dblink_disconnect(c) FROM unnest(ARRAY['a', 'b']) c;
DROP DATABASE storlab_tap_fleet_b WITH (FORCE);
SELECT is((SELECT count(*) FROM storlab.fleet_sync() WHERE server = 'tap_b' AND error IS NOT NULL AND table_name IS NULL), 1::bigint,
          'a server gone gives one row with its error');
SELECT is((SELECT count(*) FROM storlab.fleet_sync() WHERE server = 'tap_a' AND error IS NULL), 5::bigint,
          'while the others sync');
SELECT ok((SELECT last_error FROM storlab.fleet_servers WHERE name = 'tap_b') ~ 'storlab_tap_fleet_b', 'fleet_servers says why');

-- 13. A copy of a database made with CREATE DATABASE ... TEMPLATE is a
-- node of its own.
SELECT postgres_fdw_disconnect_all() IS NOT NULL AS disconnected;
CREATE DATABASE storlab_tap_fleet_c TEMPLATE storlab_tap_fleet_a;
SELECT dblink_connect('c', format('host=%s port=%s dbname=storlab_tap_fleet_c', :'sock', :'port'));
SELECT isnt((SELECT n FROM dblink('c', 'SELECT node_id FROM storlab.node') AS t(n uuid)),
            (SELECT node_id FROM storlab.fleet_members WHERE name = 'tap_a'),
            'a copy made with CREATE DATABASE ... TEMPLATE is a node of its own');
SELECT dblink_disconnect('c');
DROP DATABASE storlab_tap_fleet_c WITH (FORCE);

-- 14. Nothing missed: a transaction that commits between a sync's snapshot
-- of the server and its look at the server's sessions. The look is made
-- slow here (tap_a's sessions read through a view that takes an advisory
-- lock, then waits 2 s), and a writer that began before the sync commits
-- once that lock is taken: inside the window for sure. Its row is not in
-- the snapshot, its session is gone by the look, and another row committed
-- before the snapshot has a higher id.
SELECT dblink_connect('a', :'conn_a');
SELECT dblink_exec('a', 'SET client_min_messages = warning');
SELECT dblink_exec('a', 'CREATE SCHEMA tap_slow');
SELECT dblink_exec('a', $$CREATE FUNCTION tap_slow.activity() RETURNS SETOF pg_catalog.pg_stat_activity LANGUAGE plpgsql
                          AS 'BEGIN
                                PERFORM pg_catalog.pg_advisory_lock(4242);
                                PERFORM pg_catalog.pg_sleep(2);
                                PERFORM pg_catalog.pg_advisory_unlock(4242);
                                RETURN QUERY SELECT * FROM pg_catalog.pg_stat_activity;
                              END'$$);
-- (pg_locks is read anew each time, unlike pg_stat_activity)
SELECT dblink_exec('a', $$CREATE FUNCTION tap_slow.await_look() RETURNS void LANGUAGE plpgsql
                          AS 'BEGIN
                                FOR i IN 1 .. 3000 LOOP
                                  EXIT WHEN EXISTS (SELECT FROM pg_catalog.pg_locks
                                                     WHERE locktype = ''advisory'' AND objid = 4242 AND granted
                                                       AND pid <> pg_catalog.pg_backend_pid());
                                  PERFORM pg_catalog.pg_sleep(0.01);
                                END LOOP;
                              END'$$);
SELECT dblink_exec('a', 'CREATE VIEW tap_slow.pg_stat_activity AS SELECT * FROM tap_slow.activity()');
ALTER FOREIGN TABLE storlab_fleet_tap_a.remote_activity OPTIONS (SET schema_name 'tap_slow');
SELECT is((SELECT count(error) FROM storlab.fleet_sync('tap_a')), 0::bigint, 'a sync through the slow look');
-- a probe row as a writer stores it (a copy of the first, stamped now)
SELECT format('INSERT INTO storlab.probes (%1$s, started_at) SELECT %1$s, clock_timestamp() FROM storlab.probes ORDER BY id LIMIT 1 RETURNING id',
              string_agg(quote_ident(attname), ', ' ORDER BY attnum)) AS copy_probe
  FROM pg_attribute WHERE attrelid = 'storlab.probes'::regclass AND attnum > 0 AND NOT attisdropped
   AND attname NOT IN ('id', 'started_at') \gset
SELECT dblink_connect('w', :'conn_a');
SELECT dblink_exec('w', 'BEGIN');
SELECT id AS w_id FROM dblink('w', :'copy_probe') AS t(id bigint) \gset
SELECT id AS v_id FROM dblink('a', :'copy_probe') AS t(id bigint) \gset
-- the writer commits once the sync's slow look has begun: after its
-- snapshot, before the look itself
SELECT dblink_send_query('w', 'SELECT tap_slow.await_look(); COMMIT');
SELECT is((SELECT array_agg(rows_copied) FROM storlab.fleet_sync('tap_a') WHERE table_name = 'probes'), '{1}'::bigint[],
          'the sync copies the row committed before it, not the one committed during it');
SELECT * FROM dblink_get_result('w') AS t(v text);
SELECT is((SELECT v FROM dblink_get_result('w') AS t(v text)), 'COMMIT', 'the writer committed during that sync');
SELECT count(*) FROM dblink_get_result('w') AS t(v text);
SELECT dblink_disconnect('w');
SELECT is((SELECT count(error) FROM storlab.fleet_sync('tap_a')), 0::bigint, 'the next sync');
SELECT is((SELECT count(*) FROM storlab.fleet_probes WHERE server = 'tap_a' AND id IN (:w_id, :v_id)), 2::bigint,
          'copies the row committed during the one before: nothing is missed');
ALTER FOREIGN TABLE storlab_fleet_tap_a.remote_activity OPTIONS (SET schema_name 'pg_catalog');
SELECT dblink_exec('a', 'DROP SCHEMA tap_slow CASCADE');

-- 15. A reinstall is a new install: DROP EXTENSION and CREATE EXTENSION in
-- one session give that session the new install's node, and the rows it
-- writes name it. (A collector's cached session to a server of another
-- cluster: test/fleet_clusters.sh; here, in one cluster, the collector's
-- sessions are closed by the reinstall's catalog invalidations.)
CREATE DATABASE storlab_tap_fleet_d;
SELECT format('host=%s port=%s dbname=storlab_tap_fleet_d', :'sock', :'port') AS conn_d \gset
SELECT dblink_connect('d', :'conn_d');
SELECT dblink_exec('d', 'SET client_min_messages = warning');
SELECT dblink_exec('d', 'CREATE EXTENSION storlab');
SELECT dblink_exec('d', $$SET storlab.suite_file_size = '4MB'$$);
SELECT count(*) FROM dblink('d', $$SELECT storlab.baseline('tap', '{lab_ram}', '50 ms', 2)$$) AS t(id bigint);
SELECT n AS d_node FROM dblink('d', 'SELECT storlab.node_id()') AS t(n uuid) \gset
SELECT ok(storlab.fleet_add('tap_d', :'conn_d') = :'d_node', 'a server whose storlab will be installed again');
SELECT is((SELECT count(error) FROM storlab.fleet_sync('tap_d')), 0::bigint, 'synced once');
SELECT dblink_exec('d', 'DROP EXTENSION storlab');
SELECT dblink_exec('d', 'CREATE EXTENSION storlab');
SELECT is((SELECT n FROM dblink('d', 'SELECT storlab.node_id() IN (SELECT node_id FROM storlab.nodes)') AS t(n boolean)), true,
          'the session that reinstalled it names a node of the new install, not the one it read before');
SELECT n AS d_node2 FROM dblink(:'conn_d', 'SELECT storlab.node_id()') AS t(n uuid) \gset
SELECT isnt(:'d_node2'::uuid, :'d_node'::uuid, 'the new install has a new node');
SELECT is((SELECT n FROM dblink('d', $$SELECT node_id FROM storlab.probe('lab_ram', 'randread', duration => '50 ms', file_size => 1048576, direct => false)$$)
             AS t(n uuid)), :'d_node2'::uuid, 'and so does a probe it stores');
SELECT is((SELECT count(error) FROM storlab.fleet_sync('tap_d')), 0::bigint, 'a sync after the reinstall');
SELECT is((SELECT node_id FROM storlab.fleet_members WHERE name = 'tap_d'), :'d_node2'::uuid,
          'reads the new node');
SELECT is((SELECT count(*) FROM storlab.fleet_probes WHERE server = 'tap_d' AND node_id = :'d_node2'), 1::bigint,
          'and copies the new install''s probe (ids start again at 1: kept apart by the node)');

-- 16. The same database after a reinstall is the same server: removed with
-- its results kept, installed again, it is added again under its name.
SELECT storlab.fleet_remove('tap_d');
SELECT dblink_exec('d', 'DROP EXTENSION storlab');
SELECT dblink_exec('d', 'CREATE EXTENSION storlab');
SELECT n AS d_node3 FROM dblink('d', 'SELECT storlab.node_id()') AS t(n uuid) \gset
SELECT lives_ok(format('SELECT storlab.fleet_add(%L, %L)', 'tap_d', :'conn_d'),
                'the same database after a reinstall is added again under the name its results were kept under');
SELECT is((SELECT count(DISTINCT node_id) FROM storlab.fleet_probes WHERE server = 'tap_d'), 2::bigint,
          'which keeps them, both installs'' nodes');

-- 17. A run copied while it ran, then finished and pruned on its server, is
-- no run the collector waits for any more.
SELECT dblink_disconnect('d');
SELECT dblink_connect('d', :'conn_d');
SELECT dblink_exec('d', 'SET client_min_messages = warning');
SELECT id AS init FROM dblink('d', 'SELECT storlab.bench_init(scale => 1)') AS t(id bigint) \gset
SELECT dblink_exec('d', format('CALL storlab.wait(%s, timeout => ''2 min'')', :init));
SELECT id AS run FROM dblink('d', $$SELECT storlab.bench_start('select-only', 1, 1, '3 s')$$) AS t(id bigint) \gset
DO $$ BEGIN
  FOR i IN 1 .. 300 LOOP
    EXIT WHEN (SELECT s FROM dblink('d', 'SELECT count(*) FROM storlab.bench_runs WHERE started_at IS NOT NULL AND finished_at IS NULL') AS t(s bigint)) > 0;
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT is((SELECT count(error) FROM storlab.fleet_sync('tap_d')), 0::bigint, 'a sync while it runs');
SELECT is((SELECT count(*) FROM storlab.fleet_bench_runs WHERE server = 'tap_d' AND id = :run AND finished_at IS NULL), 1::bigint,
          'copies it unfinished');
SELECT dblink_exec('d', format('CALL storlab.wait(%s, timeout => ''2 min'')', :run));
SELECT pg_sleep(1.1);
SELECT jobs FROM dblink('d', $$CALL storlab.prune('1 second')$$)
    AS t(probes bigint, jobs bigint, bench_runs bigint, bench_progress bigint, experiments bigint, experiment_sizes bigint, relocations bigint);
SELECT is((SELECT count(*) FROM dblink('d', 'SELECT id FROM storlab.bench_runs') AS t(id bigint)), 0::bigint, 'pruned on its server');
SELECT is((SELECT count(error) FROM storlab.fleet_sync('tap_d')), 0::bigint, 'the next sync');
SELECT is((SELECT to_jsonb(r) ->> 'gone_at' IS NOT NULL FROM storlab.fleet_bench_runs r WHERE server = 'tap_d' AND id = :run), true,
          'marks the copy gone from its server: it is no longer read as running');
SELECT dblink_disconnect('d');

-- 18. Removed, with or without its results.
SELECT storlab.fleet_remove('tap_b');
SELECT storlab.fleet_remove('tap_a', keep_results => false);
SELECT storlab.fleet_remove('tap_d', keep_results => false);
SELECT is((SELECT count(*) FROM storlab.fleet_probes WHERE server = 'tap_b') > 0
          AND (SELECT count(*) FROM storlab.fleet_probes WHERE server = 'tap_a') = 0, true,
          'a removed server''s copies stay unless keep_results is false');

SELECT * FROM finish();
SET client_min_messages = warning;
SELECT storlab.fleet_remove('tap_b', keep_results => false);
DROP SCHEMA tap_fleet_evil CASCADE;
DROP OWNED BY tap_fleet_reader CASCADE;
DROP ROLE tap_fleet_reader;
DROP ROLE tap_fleet_nobody;
DROP DATABASE storlab_tap_fleet_a WITH (FORCE);
DROP DATABASE storlab_tap_fleet_d WITH (FORCE);
DROP ROLE tap_fleet_remote;
