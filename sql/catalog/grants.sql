-- Privileges. Functions that write files, move relations or run programs are
-- not executable by PUBLIC; read-only reports are granted to pg_monitor.
-- The schema itself is usable by everyone so that a refused call names the
-- function it refuses, rather than the schema.
GRANT USAGE ON SCHEMA storlab TO PUBLIC;

REVOKE ALL ON FUNCTION storlab.tablespaces() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.tablespaces() TO pg_monitor;

-- Probes write scratch files: superusers only, unless a DBA grants them
-- (EXECUTE on the functions plus INSERT, SELECT on storlab.probes).
REVOKE ALL ON FUNCTION storlab.probe(name, text, integer, interval, integer, bigint, boolean, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.fsync_cost(name, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.profile(name, interval, integer[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.compare_tablespaces(interval, interval) FROM PUBLIC;

-- Stored results are read-only reports.
GRANT SELECT ON storlab.probes TO pg_monitor;

-- Relocation moves relations (as their owner could by hand): not for PUBLIC.
REVOKE ALL ON FUNCTION storlab.move(regclass, name, boolean, interval, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.apply_layout(name, name, name, interval, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.restore_layout(timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION storlab.layout(name) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.layout(name) TO pg_monitor;
GRANT SELECT ON storlab.relocations TO pg_monitor;
