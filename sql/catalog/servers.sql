-- storlab.server_identities: the system identifiers this database's
-- storlab has run under. Every stored row carries the system_identifier of
-- the server that wrote it, and "this server's rows" (what undo_batch and
-- restore_layout may undo, the probes compare_tablespaces reuses, the server
-- a baseline was taken on) are those of any identifier listed here, or of
-- the server's own. pg_upgrade gives a cluster a new system identifier but
-- copies this table: the server's earlier identifiers stay listed, and its
-- history stays its own across majors. pg_dump does not carry the table
-- (it is no configuration table), so a restore onto another server starts
-- its own list: the rows it restores stay another server's.
CREATE TABLE storlab.server_identities (
    system_identifier bigint      PRIMARY KEY,
    first_seen        timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE storlab.server_identities IS 'The system identifiers this database''s storlab has run under: the server''s own, and those it had before a pg_upgrade (copied by pg_upgrade, never by pg_dump)';
INSERT INTO storlab.server_identities (system_identifier)
  SELECT system_identifier FROM pg_catalog.pg_control_system();

-- Every statement that stores rows lists the identifier it runs under (a
-- cluster made by pg_upgrade gets its own listed at its first write).
CREATE FUNCTION storlab.remember_server() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  INSERT INTO storlab.server_identities (system_identifier)
    SELECT system_identifier FROM pg_catalog.pg_control_system()
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION storlab.remember_server() FROM PUBLIC;
CREATE TRIGGER remember_server AFTER INSERT ON storlab.probes
  FOR EACH STATEMENT EXECUTE FUNCTION storlab.remember_server();
CREATE TRIGGER remember_server AFTER INSERT ON storlab.relocations
  FOR EACH STATEMENT EXECUTE FUNCTION storlab.remember_server();
CREATE TRIGGER remember_server AFTER INSERT ON storlab.baselines
  FOR EACH STATEMENT EXECUTE FUNCTION storlab.remember_server();
CREATE TRIGGER remember_server AFTER INSERT ON storlab.bench_runs
  FOR EACH STATEMENT EXECUTE FUNCTION storlab.remember_server();
