-- Privileges. Functions that write files, move relations or run programs are
-- not executable by PUBLIC; read-only reports are granted to pg_monitor.
-- The schema itself is usable by everyone so that a refused call names the
-- function it refuses, rather than the schema.
GRANT USAGE ON SCHEMA storlab TO PUBLIC;

REVOKE ALL ON FUNCTION storlab.tablespaces() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.tablespaces() TO pg_monitor;
