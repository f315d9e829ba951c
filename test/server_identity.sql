-- A server's history stays its own across pg_upgrade, which gives the
-- cluster a new system identifier: storlab.server_identities (copied by
-- pg_upgrade, never by pg_dump) lists the identifiers the server had, and
-- rows of any of them are this server's. Here a pg_upgrade is played by
-- rows written under another identifier (42), listed or not.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(10);
SET client_min_messages = warning;

-- The node (storlab.nodes, node_id()): one minted by a transaction that
-- rolls back is gone, and the backend must not go on naming it, even after
-- reading it back before the rollback. (First in the file: the session has
-- read no node yet.)
SAVEPOINT tap_node;
DELETE FROM storlab.nodes;
SELECT storlab.node_id() IS NOT NULL AS minted;
SELECT storlab.node_id() IS NOT NULL AS read_back;
ROLLBACK TO SAVEPOINT tap_node;
SELECT storlab.node_id() AS node \gset
SELECT ok(:'node'::uuid IN (SELECT node_id FROM storlab.nodes),
          'after a rollback node_id() names a node storlab.nodes records, not the one rolled back');

SELECT is((SELECT array_agg(system_identifier) FROM storlab.server_identities
            WHERE system_identifier = (SELECT system_identifier FROM pg_control_system())),
          ARRAY[(SELECT system_identifier FROM pg_control_system())],
          'the server''s own identifier is listed');
SELECT ok(NOT EXISTS (SELECT FROM pg_extension e
                       WHERE e.extname = 'storlab' AND 'storlab.server_identities'::regclass = ANY (e.extconfig)),
          'pg_dump does not carry the list: a restore onto another server starts its own');

-- a move made under identifier 42, as if before a pg_upgrade
CREATE TABLE public.tap_si (id int);
SELECT batch_id AS batch FROM storlab.move('public.tap_si', 'lab_ram') \gset
UPDATE storlab.relocations SET system_identifier = 42 WHERE batch_id = :batch;
-- 42 not listed: another server's move (a restored dump), not undone
SELECT throws_ok(format('SELECT * FROM storlab.undo_batch(%s)', :batch), '42704', NULL,
                 'a batch of an identifier never listed is another server''s');
-- listed, as pg_upgrade leaves the list: this server's own history
INSERT INTO storlab.server_identities (system_identifier) VALUES (42);
SELECT is((SELECT string_agg(to_tablespace::text, ',') FROM storlab.undo_batch(:batch)), 'pg_default',
          'undo_batch takes back a move made under an earlier identifier of this server');
SELECT is((SELECT count(*) FROM storlab.restore_layout(now() - interval '1 hour')), 0::bigint,
          'restore_layout reads the same history (nothing left to restore)');

-- a baseline taken under 42 is this server's: no "another server" NOTICE
SET storlab.suite_file_size = '4MB';
SELECT storlab.baseline('tap si', '{lab_ram}', '50 ms', 2) AS baseline_id \gset
UPDATE storlab.baselines SET system_identifier = 42 WHERE id = :baseline_id;
UPDATE storlab.probes SET system_identifier = 42
 WHERE id IN (SELECT probe_id FROM storlab.baseline_probes WHERE baseline_id = :baseline_id);
SELECT lives_ok($$SELECT count(*) FROM storlab.regressions('tap si', duration => '50 ms', repetitions => 2)$$,
                'regressions() against a baseline taken under an earlier identifier');
-- compare_tablespaces reuses young probes of an earlier identifier
SELECT count(*) FROM storlab.compare_tablespaces('1 day', '50 ms');
UPDATE storlab.probes SET system_identifier = 42 WHERE suite = 'standard';
SELECT count(*) AS standard_before FROM storlab.probes WHERE suite = 'standard' \gset
SELECT count(*) FROM storlab.compare_tablespaces('1 day', '50 ms');
SELECT is((SELECT count(*) FROM storlab.probes WHERE suite = 'standard'), :standard_before::bigint,
          'compare_tablespaces reuses the figures measured under an earlier identifier');

-- the first write under a new identifier lists it (the trigger)
DELETE FROM storlab.server_identities WHERE system_identifier = (SELECT system_identifier FROM pg_control_system());
SELECT (storlab.probe('lab_ram', 'randread', duration => '50 ms', file_size => 1048576, direct => false)).id > 0 AS probed;
SELECT ok((SELECT system_identifier FROM pg_control_system()) IN (SELECT system_identifier FROM storlab.server_identities),
          'a write lists the identifier it runs under');
-- as a role with the grant to probe but no right to the list
CREATE ROLE tap_si_prober;
GRANT CREATE ON TABLESPACE lab_ram TO tap_si_prober;
GRANT EXECUTE ON FUNCTION storlab.probe(name, text, integer, interval, integer, bigint, boolean, text, text, integer, text, real, integer) TO tap_si_prober;
DELETE FROM storlab.server_identities WHERE system_identifier = (SELECT system_identifier FROM pg_control_system());
SET LOCAL ROLE tap_si_prober;
SELECT (storlab.probe('lab_ram', 'randread', duration => '50 ms', file_size => 1048576, direct => false)).id > 0 AS probed;
RESET ROLE;
SELECT ok((SELECT system_identifier FROM pg_control_system()) IN (SELECT system_identifier FROM storlab.server_identities),
          'a granted role''s write lists it too (the trigger runs as the extension''s owner)');

SELECT * FROM finish();
ROLLBACK;
