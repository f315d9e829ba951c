-- A fleet in one database. Every server has an identity (its node); a
-- collector database gathers the results of many servers through
-- postgres_fdw, PostgreSQL's own federation: it pulls over an ordinary
-- connection and leaves no replication slot or retained WAL on the servers
-- it reads (which would disturb the storage being measured). See
-- docs/fleet.md.

------------------------------------------------------------------------
-- 1. This server's identity, on every server.
--
-- system_identifier alone does not tell servers apart: a physical replica
-- or a pg_basebackup clone has its origin's. A node is one database of one
-- cluster in one place: (system identifier, host name, data directory,
-- database oid). A clone, a copy on another host, a moved data directory, a
-- copy made with CREATE DATABASE ... TEMPLATE or a pg_upgrade (a new system
-- identifier) is a new node, with a new node_id, at its first use. The
-- table is no configuration table: pg_dump does not carry it, so a restore
-- starts with a node of its own, while the rows it restores keep the
-- node_id of the server that measured them.
CREATE TABLE storlab.nodes (
    node_id           uuid        PRIMARY KEY DEFAULT pg_catalog.gen_random_uuid(),
    system_identifier bigint      NOT NULL,
    hostname          text        NOT NULL,
    data_directory    text        NOT NULL,
    database_oid      oid         NOT NULL,
    first_seen        timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    UNIQUE (system_identifier, hostname, data_directory, database_oid)
);
COMMENT ON TABLE storlab.nodes IS 'The nodes this database''s storlab has run on: a node is one database of one cluster in one place (system identifier, host, data directory, database oid); storlab.node_id() names the current one. Not carried by pg_dump: a restore or a clone gets a node of its own';

-- Every result row names the node that measured it.
ALTER TABLE storlab.probes ALTER COLUMN node_id SET DEFAULT storlab.node_id();
ALTER TABLE storlab.baselines ALTER COLUMN node_id SET DEFAULT storlab.node_id();
ALTER TABLE storlab.bench_runs ALTER COLUMN node_id SET DEFAULT storlab.node_id();
ALTER TABLE storlab.experiment_records ALTER COLUMN node_id SET DEFAULT storlab.node_id();

-- What a collector reads of this server first: one row.
-- reads_all_stats: whether the role reading it sees every session's
-- transaction start (pg_read_all_stats, in pg_monitor), which a
-- collector's sync needs to know how far it has read; in_recovery: a
-- standby, whose sessions do not show its primary's (fleet_connect).
CREATE VIEW storlab.node AS
SELECT n.*, pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE') AS reads_all_stats,
       pg_catalog.pg_is_in_recovery() AS in_recovery
  FROM storlab.node_info() n;
COMMENT ON VIEW storlab.node IS 'This server as a fleet collector sees it: its node_id (on a standby, the node derived from its place that names its own unstored measurements), system identifier, host name, PostgreSQL and storlab versions, whether the role reading it has pg_read_all_stats, and whether it is a standby';

-- The node a row whose node_id is NULL (written before 0.8.0, or read from
-- a server older than 0.8.0) is counted under: one per system identifier
-- and database (each database's storlab numbers its rows itself; a clone's
-- database keeps its origin's name, so the rows it inherited are its
-- origin's).
CREATE FUNCTION storlab.fleet_legacy_node(system_identifier bigint, database text) RETURNS uuid
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN pg_catalog.md5('storlab system ' OPERATOR(pg_catalog.||) system_identifier::pg_catalog.text
                        OPERATOR(pg_catalog.||) ' database ' OPERATOR(pg_catalog.||) database)::pg_catalog.uuid;
COMMENT ON FUNCTION storlab.fleet_legacy_node(bigint, text) IS 'The node a result row without a node_id (from before storlab 0.8.0) is counted under: one per system identifier and database';

------------------------------------------------------------------------
-- 2. A collector: the servers it reads, and their rows.

-- One row per server of the fleet. Its foreign server and its schema of
-- foreign tables are both named storlab_fleet_<name>; the credentials are
-- in the foreign server's user mapping (for storlab's owner), never here.
CREATE TABLE storlab.fleet_members (
    name              text        PRIMARY KEY,
    conninfo          text        NOT NULL,   -- as given, without its secrets (password, sslpassword)
    added_at          timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    node_id           uuid,       -- its node at the last contact (NULL: storlab older than 0.8.0 there)
    system_identifier bigint,
    hostname          text,
    server_version    text,
    storlab_version   text,       -- the version its foreign tables were imported for
    last_attempt      timestamptz,
    last_sync         timestamptz,  -- the end of the last sync that succeeded
    last_error        text,         -- why the last attempt failed; NULL once one succeeds
    horizon_seen      timestamptz,  -- the start of the oldest transaction open on it at the last contact (its clock): the next sync's horizon
    standby           boolean NOT NULL DEFAULT false  -- a hot standby at the last contact: nothing of its own is stored there, storlab.fleet_measure() measures it
);
COMMENT ON TABLE storlab.fleet_members IS 'The servers this collector reads (storlab.fleet_add); read them through storlab.fleet_servers';

-- How far each table of each server is copied: every row with an id above
-- last_id, or stamped at or after horizon, is read again at the next sync
-- (and copied only if new or changed). The horizon is the member's clock:
-- the start of its oldest transaction open before the last sync's snapshot
-- (seen at the contact before it), whose rows that sync could not see yet.
CREATE TABLE storlab.fleet_marks (
    server     text   NOT NULL REFERENCES storlab.fleet_members (name) ON DELETE CASCADE,
    table_name text   NOT NULL,
    last_id    bigint NOT NULL DEFAULT 0,
    horizon    timestamptz,
    PRIMARY KEY (server, table_name)
);

-- Which server each node's rows are shown under: a member's own node
-- (seen in its storlab.node, or for a member older than 0.8.0 the legacy
-- node of its system identifier and database) is its own; a node only seen
-- on rows (a clone's origin, a server before a pg_upgrade) belongs to the
-- first member that delivered it, until a member names it as its own. An
-- own node's place (its row of the member's storlab.nodes) says which
-- database it is: the same database after a reinstall of storlab is a new
-- node in the same place, and the same server.
CREATE TABLE storlab.fleet_nodes (
    node_id           uuid        PRIMARY KEY,
    server            text        NOT NULL,
    own               boolean     NOT NULL DEFAULT false,  -- the member's storlab.node said so
    first_seen        timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    system_identifier bigint,     -- its place, for an own node of storlab 0.8.0 or later
    hostname          text,
    data_directory    text,
    database_oid      oid
);

-- The copies: each the columns of this version's table (or view), the
-- member it is shown under, and when it was copied. Keyed by (node_id, id):
-- ids repeat across servers, never within a node. A later version that
-- adds a column to one of the four adds it to its copy too (fleet_copy
-- reads the columns both sides have).
CREATE TABLE storlab.fleet_probes (LIKE storlab.probes);
CREATE TABLE storlab.fleet_baselines (LIKE storlab.baselines);
CREATE TABLE storlab.fleet_baseline_probes (LIKE storlab.baseline_probes);
CREATE TABLE storlab.fleet_bench_runs (LIKE storlab.bench_runs);
CREATE TABLE storlab.fleet_experiments (LIKE storlab.experiments);
ALTER TABLE storlab.fleet_baseline_probes ADD COLUMN node_id uuid;
ALTER TABLE storlab.fleet_probes
  ALTER COLUMN node_id SET NOT NULL,
  ADD COLUMN server text NOT NULL,
  ADD COLUMN synced_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  ADD PRIMARY KEY (node_id, id);
ALTER TABLE storlab.fleet_baselines
  ALTER COLUMN node_id SET NOT NULL,
  ADD COLUMN server text NOT NULL,
  ADD COLUMN synced_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  ADD PRIMARY KEY (node_id, id);
ALTER TABLE storlab.fleet_baseline_probes
  ALTER COLUMN node_id SET NOT NULL,
  ADD COLUMN server text NOT NULL,
  ADD COLUMN synced_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  ADD PRIMARY KEY (node_id, baseline_id, probe_id);
ALTER TABLE storlab.fleet_bench_runs
  ALTER COLUMN node_id SET NOT NULL,
  ADD COLUMN server text NOT NULL,
  ADD COLUMN synced_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  ADD PRIMARY KEY (node_id, id);
ALTER TABLE storlab.fleet_experiments
  ALTER COLUMN id SET NOT NULL,
  ALTER COLUMN node_id SET NOT NULL,
  ADD COLUMN server text NOT NULL,
  ADD COLUMN synced_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  ADD PRIMARY KEY (node_id, id);
-- A run or experiment copied unfinished is read again at every sync until
-- it is finished; one its server no longer has (pruned there, or gone with
-- a reinstall) before its end was copied will never finish here: gone_at
-- says when a sync found it gone, and it is no longer waited for.
ALTER TABLE storlab.fleet_bench_runs ADD COLUMN gone_at timestamptz;
ALTER TABLE storlab.fleet_experiments ADD COLUMN gone_at timestamptz;
-- A copied baseline keeps its probes: a probe it refers to cannot be
-- deleted under it (no cascade: a DELETE by hand fails, as on the servers
-- themselves), and its links go with it. (Deferred: a sync copies a
-- baseline's links before the baseline, in one transaction.)
ALTER TABLE storlab.fleet_baseline_probes
  ADD CONSTRAINT fleet_baseline_probes_probe_fkey FOREIGN KEY (node_id, probe_id)
      REFERENCES storlab.fleet_probes (node_id, id),
  ADD CONSTRAINT fleet_baseline_probes_baseline_fkey FOREIGN KEY (node_id, baseline_id)
      REFERENCES storlab.fleet_baselines (node_id, id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;
CREATE INDEX fleet_baseline_probes_probe ON storlab.fleet_baseline_probes (node_id, probe_id);
-- the newest standard-suite figure of each server, tablespace and
-- workload (chart_svg('fleet'), a walk of core/src/newest.rs), and a
-- server's rows
CREATE INDEX fleet_probes_suite ON storlab.fleet_probes (server, tablespace, workload, started_at DESC)
  WHERE suite = 'standard' AND ops > 0 AND workers = 1 AND iodepth = 1;
CREATE INDEX fleet_probes_server ON storlab.fleet_probes (server);
CREATE INDEX fleet_baselines_label ON storlab.fleet_baselines (server, label);
CREATE INDEX fleet_bench_runs_server ON storlab.fleet_bench_runs (server, script);
CREATE INDEX fleet_experiments_server ON storlab.fleet_experiments (server);

COMMENT ON TABLE storlab.fleet_probes IS 'Probes copied from the fleet''s servers (storlab.fleet_sync): storlab.probes'' columns, the server they are shown under, and when they were copied';
COMMENT ON TABLE storlab.fleet_baselines IS 'Baselines copied from the fleet''s servers; regressions(label, server => ...) checks this server against one';
COMMENT ON TABLE storlab.fleet_baseline_probes IS 'The probes of each copied baseline (their rows are in storlab.fleet_probes, same node_id)';
COMMENT ON TABLE storlab.fleet_bench_runs IS 'Bench runs copied from the fleet''s servers: storlab.bench_runs'' columns and the server';
COMMENT ON TABLE storlab.fleet_experiments IS 'Experiments copied from the fleet''s servers: storlab.experiments'' columns and the server';

-- The collector's rows are the user's data too.
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_members', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_marks', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_nodes', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_probes', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_baselines', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_baseline_probes', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_bench_runs', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_experiments', '');

CREATE VIEW storlab.fleet_servers AS
SELECT m.name, m.node_id, m.system_identifier, m.hostname, m.server_version, m.storlab_version,
       m.conninfo, m.added_at, m.last_attempt, m.last_sync, m.last_error,
       (SELECT pg_catalog.count(*) FROM storlab.fleet_probes p WHERE p.server = m.name) AS probes,
       (SELECT pg_catalog.count(*) FROM storlab.fleet_baselines b WHERE b.server = m.name) AS baselines,
       (SELECT pg_catalog.count(*) FROM storlab.fleet_bench_runs r WHERE r.server = m.name) AS bench_runs,
       (SELECT pg_catalog.count(*) FROM storlab.fleet_experiments e WHERE e.server = m.name) AS experiments,
       m.standby
  FROM storlab.fleet_members m;
COMMENT ON VIEW storlab.fleet_servers IS 'The fleet''s servers: identity, versions, the last sync and its error, how many of each result this collector holds, and whether it is a hot standby (measured by storlab.fleet_measure)';

-- The ids of the figures storlab.fleet_measure() brings from a standby,
-- which stores none and numbers them per session: the collector numbers
-- them itself (its own sequence, under the standby's own node).
CREATE SEQUENCE storlab.fleet_measured_ids;
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_measured_ids', '');

------------------------------------------------------------------------
-- 3. Adding, reading and removing servers.

-- The schema (and foreign server) of a member.
CREATE FUNCTION storlab.fleet_schema(server text) RETURNS name
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN ('storlab_fleet_' OPERATOR(pg_catalog.||) server)::pg_catalog.name;

-- The database a member's foreign server reads.
CREATE FUNCTION storlab.fleet_database(server text) RETURNS text
  LANGUAGE sql STABLE STRICT SET search_path = pg_catalog, pg_temp
  RETURN (SELECT o.option_value FROM pg_foreign_server s, pg_options_to_table(s.srvoptions) o
           WHERE s.srvname = storlab.fleet_schema(server) AND o.option_name = 'dbname');

-- How a row of a member's foreign table `remote` (aliased r) names its
-- node: its node_id, or for rows from before 0.8.0 (and every row of an
-- older member) the legacy node of its system identifier and `database`.
CREATE FUNCTION storlab.fleet_node_expr(remote regclass, database text) RETURNS text
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
  RETURN CASE WHEN EXISTS (SELECT FROM pg_attribute a
                            WHERE a.attrelid = remote AND a.attname = 'node_id' AND NOT a.attisdropped)
              THEN format('coalesce(r.node_id, storlab.fleet_legacy_node(r.system_identifier, %L))', database)
              ELSE format('storlab.fleet_legacy_node(r.system_identifier, %L)', database) END;

-- Connects to a member and (re)imports its foreign tables when its storlab
-- version changed: the catalog views every server has (its extensions, its
-- sessions, its settings), then storlab's tables as that version has them.
-- Refuses a server without storlab (42704), whose storlab the collector
-- cannot read (0A000), or that is another member's server (42710). Returns
-- the horizon this sync copies from, read before its snapshot. Runs as
-- storlab's owner, whose user mapping holds the credentials.
CREATE FUNCTION storlab.fleet_connect(server text) RETURNS timestamptz
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  sch name := storlab.fleet_schema(server);
  mine text := (SELECT extversion FROM pg_extension WHERE extname = 'storlab');
  dbname text := storlab.fleet_database(server);
  member record;
  theirs text;
  seen timestamptz;
  horizon timestamptz;
  n record;
  place record;
  identity uuid;
  t name;
  other text;
  unseen boolean;
  prepared boolean;
  version text;
BEGIN
  -- nothing is done on a hot standby or in a read-only transaction (25006)
  PERFORM storlab.check_writable('connect to a fleet server');
  SELECT NULL::bigint AS system_identifier, NULL::text AS hostname, NULL::text AS data_directory, NULL::oid AS database_oid INTO place;
  IF pg_catalog.to_regclass(format('%I.remote_extension', sch)) IS NULL THEN
    EXECUTE format('CREATE FOREIGN TABLE %I.remote_extension (extname name, extversion text) SERVER %I OPTIONS (schema_name %L, table_name %L)',
                   sch, sch, 'pg_catalog', 'pg_extension');
    EXECUTE format('CREATE FOREIGN TABLE %I.remote_activity (datname name, xact_start timestamptz, query text) SERVER %I OPTIONS (schema_name %L, table_name %L)',
                   sch, sch, 'pg_catalog', 'pg_stat_activity');
    EXECUTE format('CREATE FOREIGN TABLE %I.remote_prepared (database name, prepared timestamptz) SERVER %I OPTIONS (schema_name %L, table_name %L)',
                   sch, sch, 'pg_catalog', 'pg_prepared_xacts');
    EXECUTE format('CREATE FOREIGN TABLE %I.remote_settings (name text, setting text) SERVER %I OPTIONS (schema_name %L, table_name %L)',
                   sch, sch, 'pg_catalog', 'pg_settings');
  END IF;
  -- (storlab.nodes, read only where the member has it: 0.8.0 and later)
  IF pg_catalog.to_regclass(format('%I.remote_nodes', sch)) IS NULL THEN
    EXECUTE format('CREATE FOREIGN TABLE %I.remote_nodes (node_id uuid, system_identifier bigint, hostname text, data_directory text, database_oid oid) SERVER %I OPTIONS (schema_name %L, table_name %L)',
                   sch, sch, 'storlab', 'nodes');
  END IF;
  SELECT m.node_id, m.horizon_seen INTO member FROM storlab.fleet_members m WHERE m.name = server;
  -- The sync's horizon is read before its snapshot: it is the one the last
  -- contact saw (committed with it, before this transaction began). A
  -- transaction open on the member now either was open then, and started
  -- no earlier than that horizon, or began after that contact; either way
  -- its rows are stamped at or after it, and the next sync reads them. (The
  -- look at the sessions below comes after this sync's snapshot: a
  -- transaction that commits in between is in neither, so that look can
  -- only serve the next sync.)
  seen := member.horizon_seen;
  -- The first query on the member connects, and begins the member's
  -- transaction (REPEATABLE READ: every table read in one snapshot). The
  -- start of the oldest transaction open in the database then (ours among
  -- them) is what this contact sees, the next sync's horizon.
  -- (Needs pg_read_all_stats there, in pg_monitor: other roles' sessions
  -- show no xact_start without it; checked below.)
  EXECUTE format('SELECT min(xact_start), bool_or(query = %L) FROM %I.remote_activity WHERE datname = $1',
                 '<insufficient privilege>', sch)
    INTO horizon, unseen USING dbname;
  -- A prepared transaction (two-phase commit) is in no session: its rows
  -- may be stamped before any horizon read now. While one is there, the
  -- horizon does not move on (NULL: fleet_copy keeps the last one, and what
  -- this contact saw is not kept), and on a first sync every row stays to
  -- be read again until it is gone.
  EXECUTE format('SELECT EXISTS (SELECT FROM %I.remote_prepared WHERE database = $1)', sch) INTO prepared USING dbname;
  IF prepared THEN
    horizon := NULL;
  ELSE
    UPDATE storlab.fleet_members m SET horizon_seen = horizon WHERE m.name = server;
    -- (none seen yet, as after an update from 0.8.0: the last one stays)
    horizon := CASE WHEN seen IS NOT NULL THEN least(seen, horizon) END;
  END IF;
  EXECUTE format('SELECT (SELECT extversion FROM %I.remote_extension WHERE extname = %L)', sch, 'storlab') INTO theirs;
  IF theirs IS NULL THEN
    RAISE EXCEPTION 'fleet server "%" has no storlab extension in database "%"', server, dbname
      USING ERRCODE = '42704',
            HINT = 'Install it there (CREATE EXTENSION storlab), or point the server at the database that has it.';
  END IF;
  PERFORM storlab.fleet_check_version(theirs, mine);
  IF theirs IS DISTINCT FROM (SELECT m.storlab_version FROM storlab.fleet_members m WHERE m.name = server) THEN
    FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
              WHERE s.nspname = sch AND c.relkind = 'f'
                AND c.relname NOT IN ('remote_extension', 'remote_activity', 'remote_prepared', 'remote_settings', 'remote_nodes') LOOP
      EXECUTE format('DROP FOREIGN TABLE %I.%I', sch, t);
    END LOOP;
    -- (a table that version lacks is simply not imported)
    EXECUTE format('IMPORT FOREIGN SCHEMA storlab LIMIT TO (node, probes, baselines, baseline_probes, bench_runs, experiments) FROM SERVER %I INTO %I',
                   sch, sch);
  END IF;
  IF pg_catalog.to_regclass(format('%I.node', sch)) IS NOT NULL THEN
    EXECUTE format('SELECT node_id, system_identifier, hostname, reads_all_stats, in_recovery FROM %I.node', sch) INTO n;
    unseen := NOT n.reads_all_stats;
    IF n.in_recovery THEN
      -- A hot standby: its tables are its primary's (copy them from the
      -- primary, whose sessions show the open transactions a sync must
      -- wait for), and its own measurements are returned unstored, under
      -- a node of its own place (storlab.fleet_measure() brings them). No
      -- horizon is read or kept: nothing of it is copied.
      IF n.node_id IS NULL THEN
        RAISE EXCEPTION 'fleet server "%" is a standby on storlab older than 0.9.0, which names no node of its own there: add its primary', server
          USING ERRCODE = '55000',
                HINT = 'Update storlab on the primary (ALTER EXTENSION storlab UPDATE, with this release installed on both): the standby follows.';
      END IF;
      unseen := false;
      horizon := NULL;
    END IF;
  ELSIF pg_catalog.to_regclass(format('%I.probes', sch)) IS NOT NULL THEN
    -- storlab older than 0.8.0 there: no node; its system identifier and
    -- host name as its newest probe stored them
    EXECUTE format('SELECT NULL::uuid AS node_id, system_identifier, hostname, false AS in_recovery FROM %I.probes ORDER BY id DESC LIMIT 1', sch)
      INTO n;
  ELSE
    SELECT NULL::uuid AS node_id, NULL::bigint AS system_identifier, NULL::text AS hostname, false AS in_recovery INTO n;
  END IF;
  -- Without pg_read_all_stats the horizon would pass over other roles'
  -- open transactions, and their results would never be copied: refused.
  -- (A server older than 0.8.0 has no storlab.node to say so: there it is
  -- refused when another session's transaction start is hidden.)
  IF unseen THEN
    RAISE EXCEPTION 'the role fleet server "%" is read as cannot see every session there: it needs pg_read_all_stats', server
      USING ERRCODE = '42501',
            DETAIL = 'A sync reads the start of the oldest transaction open in the database, so that the next sync copies what it was writing.',
            HINT = 'On that server: GRANT pg_monitor TO the role of the user mapping (it includes pg_read_all_stats and SELECT on storlab''s tables).';
  END IF;
  IF n.node_id IS NOT NULL AND NOT coalesce(n.in_recovery, false) THEN
    -- its place (storlab.nodes: pg_monitor reads it; without the grant the
    -- place stays unknown, and a reinstall there counts as another server)
    BEGIN
      EXECUTE format('SELECT system_identifier, hostname, data_directory, database_oid FROM %I.remote_nodes WHERE node_id = $1', sch)
        INTO place USING n.node_id;
    EXCEPTION WHEN insufficient_privilege THEN
      NULL;
    END;
  END IF;
  -- A server is one member: the same database under a second name would
  -- take the first one's rows (a member's own node is shown under it), and
  -- fleet_remove(keep_results => false) of either would delete them for
  -- good. The same server is the same node, the same place (storlab
  -- installed again there: a new node), or, for a server older than 0.8.0
  -- (no node), the same system identifier and database: the legacy node
  -- its rows are counted under.
  identity := coalesce(n.node_id, storlab.fleet_legacy_node(n.system_identifier, dbname));
  SELECT m.name INTO other FROM storlab.fleet_members m
   WHERE m.name <> fleet_connect.server
     AND (m.node_id = n.node_id
          OR (m.node_id IS NULL AND n.node_id IS NULL AND storlab.fleet_legacy_node(m.system_identifier, storlab.fleet_database(m.name)) = identity
              AND (m.added_at, m.name) < (SELECT a.added_at, a.name FROM storlab.fleet_members a WHERE a.name = fleet_connect.server))
          OR EXISTS (SELECT FROM storlab.fleet_nodes f
                      WHERE f.node_id = m.node_id AND f.own AND place.data_directory IS NOT NULL
                        AND (f.system_identifier, f.hostname, f.data_directory, f.database_oid)
                            = (place.system_identifier, place.hostname, place.data_directory, place.database_oid)));
  IF FOUND THEN
    RAISE EXCEPTION 'fleet server "%" is %, which fleet server "%" is already', server,
                    CASE WHEN n.node_id IS NULL THEN format('database %s of system %s', dbname, n.system_identifier)
                         ELSE format('node %s', n.node_id) END, other
      USING ERRCODE = '42710',
            HINT = 'A server is read under one name: storlab.fleet_remove() the other first (its results can be kept).';
  END IF;
  EXECUTE format('SELECT setting FROM %I.remote_settings WHERE name = %L', sch, 'server_version') INTO version;
  -- Its node changed (storlab installed again there, a pg_upgrade): the
  -- new install numbers its rows from 1 again, so every table is read
  -- again from the start (a row copied before is left alone).
  IF member.node_id IS DISTINCT FROM n.node_id AND member.node_id IS NOT NULL THEN
    DELETE FROM storlab.fleet_marks m WHERE m.server = fleet_connect.server;
  END IF;
  UPDATE storlab.fleet_members m
     SET storlab_version = theirs, node_id = n.node_id, server_version = version,
         standby = coalesce(n.in_recovery, false),
         system_identifier = coalesce(n.system_identifier, m.system_identifier),
         hostname = coalesce(n.hostname, m.hostname)
   WHERE m.name = server;
  IF identity IS NOT NULL THEN
    -- its own node is shown under it, whoever delivered that node's rows first
    INSERT INTO storlab.fleet_nodes AS f (node_id, server, own, system_identifier, hostname, data_directory, database_oid)
      VALUES (identity, server, true, place.system_identifier, place.hostname, place.data_directory, place.database_oid)
      ON CONFLICT (node_id) DO UPDATE
        SET server = EXCLUDED.server, own = true,
            system_identifier = coalesce(EXCLUDED.system_identifier, f.system_identifier), hostname = coalesce(EXCLUDED.hostname, f.hostname),
            data_directory = coalesce(EXCLUDED.data_directory, f.data_directory), database_oid = coalesce(EXCLUDED.database_oid, f.database_oid)
       WHERE f.server IS DISTINCT FROM EXCLUDED.server OR NOT f.own
          OR (f.data_directory IS NULL AND EXCLUDED.data_directory IS NOT NULL);
    IF FOUND THEN
      UPDATE storlab.fleet_probes SET server = fleet_connect.server WHERE node_id = identity AND fleet_probes.server <> fleet_connect.server;
      UPDATE storlab.fleet_baselines SET server = fleet_connect.server WHERE node_id = identity AND fleet_baselines.server <> fleet_connect.server;
      UPDATE storlab.fleet_baseline_probes SET server = fleet_connect.server WHERE node_id = identity AND fleet_baseline_probes.server <> fleet_connect.server;
      UPDATE storlab.fleet_bench_runs SET server = fleet_connect.server WHERE node_id = identity AND fleet_bench_runs.server <> fleet_connect.server;
      UPDATE storlab.fleet_experiments SET server = fleet_connect.server WHERE node_id = identity AND fleet_experiments.server <> fleet_connect.server;
    END IF;
  END IF;
  RETURN horizon;
END $$;
REVOKE ALL ON FUNCTION storlab.fleet_connect(text) FROM PUBLIC;

-- Copies one table of a member (its foreign table in the member's schema)
-- into the collector's copy: rows with an id above the mark, or stamped at
-- or after the last horizon, and for rows that change (runs, experiments)
-- those not finished in the copy (and, when the member no longer has one of
-- those, marks it gone). A new row is inserted; a changed one
-- updated, but only by the member it is shown under (a clone holds its
-- origin's rows as they were when it was made: a run unfinished then must
-- not overwrite the origin's finished one); an unchanged one left alone.
-- Returns how many rows were copied,
-- or NULL when the member's storlab has no such table. Only the columns
-- both sides have are read: a member on an older storlab has fewer, and the
-- rest stay NULL. baseline_probes follow their baselines (call it before
-- 'baselines', whose mark it reads).
CREATE FUNCTION storlab.fleet_copy(server text, source text, horizon timestamptz) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  sch name := storlab.fleet_schema(server);
  target name := ('fleet_' OPERATOR(pg_catalog.||) source)::name;
  remote regclass;
  stamps text[] := CASE source WHEN 'probes' THEN '{started_at}'
                               WHEN 'baselines' THEN '{taken_at}'
                               WHEN 'bench_runs' THEN '{started_at,finished_at}'
                               WHEN 'experiments' THEN '{created_at,finished_at}' END;
  changing boolean := source IN ('bench_runs', 'experiments');
  cols text[];
  node_expr text;
  mark record;
  top bigint;
  copied bigint;
  unfinished bigint[];
  present text[];
BEGIN
  remote := pg_catalog.to_regclass(format('%I.%I', sch, source));
  IF remote IS NULL THEN
    RETURN NULL;
  END IF;
  SELECT array_agg(l.attname::text ORDER BY l.attnum) INTO cols
    FROM pg_attribute l
    JOIN pg_attribute r ON r.attrelid = remote AND r.attname = l.attname AND r.attnum > 0 AND NOT r.attisdropped
   WHERE l.attrelid = format('storlab.%I', target)::regclass AND l.attnum > 0 AND NOT l.attisdropped
     AND l.attname NOT IN ('node_id', 'server', 'synced_at');
  node_expr := storlab.fleet_node_expr(remote, storlab.fleet_database(server));

  IF source = 'baseline_probes' THEN
    -- the probes of the baselines copied by this sync (their node is the
    -- baseline's); read with the baselines' mark before it moves on
    node_expr := storlab.fleet_node_expr(pg_catalog.to_regclass(format('%I.baselines', sch)),
                                         storlab.fleet_database(server));
    SELECT m.last_id, m.horizon AS since INTO mark FROM storlab.fleet_marks m
     WHERE m.server = fleet_copy.server AND m.table_name = 'baselines';
    EXECUTE format($q$
      WITH ins AS (
        INSERT INTO storlab.fleet_baseline_probes AS t (baseline_id, probe_id, repetition, node_id, server)
        SELECT bp.baseline_id, bp.probe_id, bp.repetition, r.node_id,
               coalesce((SELECT f.server FROM storlab.fleet_nodes f WHERE f.node_id = r.node_id), $3)
          FROM %1$I.baseline_probes bp
          JOIN (SELECT r.id, %2$s AS node_id FROM %1$I.baselines r WHERE r.id > $1 OR r.taken_at >= $2) r
            ON r.id = bp.baseline_id
        ON CONFLICT DO NOTHING
        RETURNING 1)
      SELECT count(*) FROM ins$q$, sch, node_expr)
      INTO copied USING coalesce(mark.last_id, 0), mark.since, server;
    RETURN copied;
  END IF;

  INSERT INTO storlab.fleet_marks AS m (server, table_name) VALUES (fleet_copy.server, source)
    ON CONFLICT DO NOTHING;
  SELECT m.last_id, m.horizon AS since INTO mark FROM storlab.fleet_marks m
   WHERE m.server = fleet_copy.server AND m.table_name = source FOR UPDATE;
  EXECUTE format('SELECT max(id) FROM %I.%I', sch, source) INTO top;
  IF changing THEN
    EXECUTE format('SELECT array_agg(t.id) FROM storlab.%I t WHERE t.server = $1 AND t.finished_at IS NULL AND t.gone_at IS NULL', target)
      INTO unfinished USING server;
  END IF;
  EXECUTE format($q$
    WITH r AS (
      SELECT %9$s, %2$s AS node_id FROM %3$I.%4$I r
       WHERE r.id > $1 %5$s %6$s),
    ins AS (
      INSERT INTO storlab.%7$I AS t (%1$s, node_id, server)
      SELECT %1$s, r.node_id, coalesce((SELECT f.server FROM storlab.fleet_nodes f WHERE f.node_id = r.node_id), $3)
        FROM r
      ON CONFLICT (node_id, id) DO %8$s
      RETURNING t.node_id, t.server),
    nodes AS (
      INSERT INTO storlab.fleet_nodes (node_id, server)
      SELECT DISTINCT ins.node_id, ins.server FROM ins
      ON CONFLICT DO NOTHING)
    SELECT count(*) FROM ins$q$,
    (SELECT string_agg(format('%I', c), ', ') FROM unnest(cols) c),
    node_expr, sch, source,
    (SELECT string_agg(format('OR r.%I >= $2', s), ' ') FROM unnest(stamps) s),
    CASE WHEN changing THEN 'OR r.id = ANY ($4)' ELSE '' END,
    target,
    CASE WHEN changing
         THEN format('UPDATE SET (%s, synced_at) = ROW(%s, pg_catalog.clock_timestamp()) WHERE t.server = $3 AND (%s) IS DISTINCT FROM (%s)',
                     (SELECT string_agg(format('%I', c), ', ') FROM unnest(cols) c),
                     (SELECT string_agg(format('EXCLUDED.%I', c), ', ') FROM unnest(cols) c),
                     (SELECT string_agg(format('t.%I', c), ', ') FROM unnest(cols) c),
                     (SELECT string_agg(format('EXCLUDED.%I', c), ', ') FROM unnest(cols) c))
         ELSE 'NOTHING' END,
    (SELECT string_agg(format('r.%I', c), ', ') FROM unnest(cols) c))
    INTO copied USING coalesce(mark.last_id, 0), mark.since, server, coalesce(unfinished, '{}');
  IF unfinished IS NOT NULL THEN
    -- Those of the unfinished copies the server no longer has (the same
    -- node's row of that id), pruned there or gone with a reinstall before
    -- their end was copied, will never finish: marked gone, no longer read.
    EXECUTE format('SELECT array_agg(%s::text || %L || r.id::text) FROM %I.%I r WHERE r.id = ANY ($1)', node_expr, ' ', sch, source)
      INTO present USING unfinished;
    EXECUTE format('UPDATE storlab.%I t SET gone_at = pg_catalog.clock_timestamp()
                     WHERE t.server = $1 AND t.id = ANY ($2) AND t.finished_at IS NULL AND t.gone_at IS NULL
                       AND NOT (t.node_id::text || %L || t.id::text = ANY ($3))', target, ' ')
      USING server, unfinished, coalesce(present, '{}');
  END IF;
  -- (a NULL horizon: a prepared transaction is open there; the last one
  -- stays, and without one every row is read again until it is gone)
  UPDATE storlab.fleet_marks m
     SET last_id = greatest(m.last_id, coalesce(top, 0)),
         horizon = coalesce(fleet_copy.horizon, m.horizon, '-infinity')
   WHERE m.server = fleet_copy.server AND m.table_name = source;
  RETURN copied;
END $$;
REVOKE ALL ON FUNCTION storlab.fleet_copy(text, text, timestamptz) FROM PUBLIC;

-- Copies the new and changed results of one member, or of all of them.
-- Each member is copied whole or not at all (a subtransaction): one that is
-- down, refuses the connection or fails half-way gives one row with its
-- error, and the others go on. A cancel or statement_timeout stops the
-- whole call, and nothing of it stays.
CREATE FUNCTION storlab.fleet_sync(name text DEFAULT NULL)
RETURNS TABLE (server text, table_name text, rows_copied bigint, error text)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  member text;
  horizon timestamptz;
  tables text[];
  counts bigint[];
  t text;
  n bigint;
  msg text;
  detail text;
  state text;
BEGIN
  -- nothing is done on a hot standby or in a read-only transaction (25006)
  PERFORM storlab.check_writable('sync the fleet');
  IF fleet_sync.name IS NOT NULL
     AND NOT EXISTS (SELECT FROM storlab.fleet_members f WHERE f.name = fleet_sync.name) THEN
    RAISE EXCEPTION 'fleet server "%" does not exist', fleet_sync.name
      USING ERRCODE = '42704', HINT = 'storlab.fleet_servers lists the fleet; storlab.fleet_add() adds a server.';
  END IF;
  FOR member IN SELECT f.name FROM storlab.fleet_members f
                 WHERE fleet_sync.name IS NULL OR f.name = fleet_sync.name ORDER BY f.name LOOP
    tables := '{}';
    counts := '{}';
    UPDATE storlab.fleet_members f SET last_attempt = pg_catalog.clock_timestamp() WHERE f.name = member;
    BEGIN
      horizon := storlab.fleet_connect(member);
      IF (SELECT f.standby FROM storlab.fleet_members f WHERE f.name = member) THEN
        -- its tables are its primary's: copied from the primary
        RAISE NOTICE 'storlab: fleet server "%" is a hot standby: it stores nothing of its own (its tables are its primary''s); storlab.fleet_measure(%) measures its storage', member, pg_catalog.quote_literal(member);
      END IF;
      FOREACH t IN ARRAY CASE WHEN (SELECT f.standby FROM storlab.fleet_members f WHERE f.name = member) THEN '{}'::text[]
                              ELSE ARRAY['probes', 'baseline_probes', 'baselines', 'bench_runs', 'experiments'] END LOOP
        n := storlab.fleet_copy(member, t, horizon);
        IF n IS NOT NULL THEN
          tables := tables || t;
          counts := counts || n;
        END IF;
      END LOOP;
      UPDATE storlab.fleet_members f SET last_sync = pg_catalog.clock_timestamp(), last_error = NULL
       WHERE f.name = member;
    EXCEPTION WHEN OTHERS THEN
      -- (a cancel is no OTHERS: it ends the whole call)
      GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL, state = RETURNED_SQLSTATE;
      msg := msg || coalesce(': ' || nullif(detail, ''), '') || ' (SQLSTATE ' || state || ')';
      UPDATE storlab.fleet_members f SET last_error = msg WHERE f.name = member;
      server := member;
      table_name := NULL;
      rows_copied := 0;
      error := msg;
      RETURN NEXT;
      CONTINUE;
    END;
    FOR i IN 1 .. pg_catalog.cardinality(tables) LOOP
      server := member;
      table_name := tables[i];
      rows_copied := counts[i];
      error := NULL;
      RETURN NEXT;
    END LOOP;
  END LOOP;
END $$;
REVOKE ALL ON FUNCTION storlab.fleet_sync(text) FROM PUBLIC;
COMMENT ON FUNCTION storlab.fleet_sync(text) IS 'Copies the new and changed results of one fleet server, or of all: a row per server and table, or one row with the error of a server that could not be read';

-- Superusers only: a fleet server is a foreign server with a user mapping
-- that holds the credentials to reach it.
CREATE FUNCTION storlab.fleet_check_superuser(what text) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF NOT coalesce((SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user), false) THEN
    RAISE EXCEPTION 'only a superuser may % storlab''s fleet', what
      USING ERRCODE = '42501',
            DETAIL = 'A fleet server is a foreign server of postgres_fdw, with a user mapping that holds the credentials to reach it.';
  END IF;
END $$;
-- (anyone may run it: it only says whether the caller may, so that a role
-- granted EXECUTE on fleet_add is told why not)

-- Runs the one statement that carries a member's credentials, the user
-- mapping's CREATE (action 'create', with these options) or ALTER ('add',
-- 'set' or 'drop' these options), out of pg_stat_statements' sight (its
-- entries are read by every pg_monitor member; with
-- pg_stat_statements.track = all it keeps nested statements too, with
-- their text), and raises its error again without the statement, which
-- PL/pgSQL would otherwise quote. Superusers only, as fleet_add and
-- fleet_set_password.
CREATE FUNCTION storlab.fleet_user_mapping(server text, action text, keys text[], vals text[]) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp SET pg_stat_statements.track_utility = off AS $$
DECLARE
  owner name := (SELECT r.rolname FROM pg_extension e JOIN pg_roles r ON r.oid = e.extowner WHERE e.extname = 'storlab');
  options text;
  msg text;
  detail text;
  hint text;
  state text;
BEGIN
  -- nothing is done on a hot standby or in a read-only transaction (25006)
  PERFORM storlab.check_writable('change a fleet server''s user mapping');
  IF server IS NULL OR action IS NULL OR keys IS NULL OR (vals IS NULL AND action <> 'drop') THEN
    RAISE EXCEPTION 'server, action, keys and vals must not be NULL' USING ERRCODE = '22004';
  END IF;
  PERFORM storlab.fleet_check_superuser('change the credentials of');
  IF action NOT IN ('create', 'add', 'set', 'drop') THEN
    RAISE EXCEPTION 'action must be create, add, set or drop' USING ERRCODE = '22023';
  END IF;
  IF action <> 'drop' AND cardinality(keys) <> cardinality(vals) THEN
    RAISE EXCEPTION 'keys and vals must be as many' USING ERRCODE = '22023';
  END IF;
  IF EXISTS (SELECT FROM unnest(keys) k WHERE k IS NULL OR k !~ '^[a-z_]{1,63}$') THEN
    RAISE EXCEPTION 'an option of a user mapping is a lower-case libpq keyword' USING ERRCODE = '22023';
  END IF;
  IF action <> 'create' AND cardinality(keys) = 0 THEN
    RAISE EXCEPTION 'no option to %', action USING ERRCODE = '22023';
  END IF;
  SELECT string_agg(CASE action WHEN 'create' THEN format('%I %L', k, v)
                                WHEN 'drop' THEN format('DROP %I', k)
                                ELSE format('%s %I %L', upper(action), k, v) END, ', ' ORDER BY i)
    INTO options
    FROM unnest(keys, CASE WHEN action = 'drop' THEN NULL ELSE vals END) WITH ORDINALITY AS o(k, v, i);
  IF action <> 'drop' AND EXISTS (SELECT FROM unnest(vals) v WHERE v IS NULL) THEN
    RAISE EXCEPTION 'a value of a user mapping''s option must not be NULL' USING ERRCODE = '22004';
  END IF;
  BEGIN
    IF action = 'create' THEN
      EXECUTE format('CREATE USER MAPPING FOR %I SERVER %I', owner, storlab.fleet_schema(server))
              || coalesce(' OPTIONS (' || options || ')', '');
    ELSE
      EXECUTE format('ALTER USER MAPPING FOR %I SERVER %I OPTIONS (%s)', owner, storlab.fleet_schema(server), options);
    END IF;
  EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT, state = RETURNED_SQLSTATE;
    -- (an empty DETAIL or HINT would print as an empty line)
    IF detail = '' AND hint = '' THEN
      RAISE EXCEPTION USING MESSAGE = msg, ERRCODE = state;
    ELSIF hint = '' THEN
      RAISE EXCEPTION USING MESSAGE = msg, DETAIL = detail, ERRCODE = state;
    ELSIF detail = '' THEN
      RAISE EXCEPTION USING MESSAGE = msg, HINT = hint, ERRCODE = state;
    END IF;
    RAISE EXCEPTION USING MESSAGE = msg, DETAIL = detail, HINT = hint, ERRCODE = state;
  END;
END $$;
REVOKE ALL ON FUNCTION storlab.fleet_user_mapping(text, text, text[], text[]) FROM PUBLIC;

-- Adds a server to the fleet: a foreign server and a user mapping (for
-- storlab's owner, who syncs), a schema of foreign tables, and a first
-- contact, so that a server that cannot be reached, or has no storlab, or
-- one this collector cannot read, is refused now with nothing left behind.
-- Returns the server's node_id (NULL for storlab older than 0.8.0 there).
CREATE FUNCTION storlab.fleet_add(name text, conninfo text) RETURNS uuid
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  sch name;
  owner name := (SELECT r.rolname FROM pg_extension e JOIN pg_roles r ON r.oid = e.extowner WHERE e.extname = 'storlab');
  kept uuid[];
  kept_any boolean;
  node uuid;
  identity uuid;
  server_options text;
  mapping_keys text[];
  mapping_vals text[];
  msg text;
  detail text;
  hint text;
  state text;
BEGIN
  -- nothing is done on a hot standby or in a read-only transaction (25006)
  PERFORM storlab.check_writable('add a server to the fleet');
  IF fleet_add.name IS NULL OR fleet_add.conninfo IS NULL THEN
    RAISE EXCEPTION 'name and conninfo must not be NULL' USING ERRCODE = '22004';
  END IF;
  PERFORM storlab.fleet_check_superuser('add a server to');
  PERFORM storlab.fleet_check_name(fleet_add.name);
  IF EXISTS (SELECT FROM storlab.fleet_members m WHERE m.name = fleet_add.name) THEN
    RAISE EXCEPTION 'fleet server "%" already exists', fleet_add.name
      USING ERRCODE = '42710', HINT = 'storlab.fleet_remove() removes it; its results can be kept.';
  END IF;
  IF NOT EXISTS (SELECT FROM pg_extension e WHERE e.extname = 'postgres_fdw') THEN
    RAISE EXCEPTION 'storlab''s fleet reads its servers through postgres_fdw, which is not installed in this database'
      USING ERRCODE = '55000', HINT = 'CREATE EXTENSION postgres_fdw;';
  END IF;
  sch := storlab.fleet_schema(fleet_add.name);
  IF EXISTS (SELECT FROM pg_foreign_server s WHERE s.srvname = sch)
     OR EXISTS (SELECT FROM pg_namespace n WHERE n.nspname = sch) THEN
    RAISE EXCEPTION 'a foreign server or schema named % already exists', sch
      USING ERRCODE = '42710', HINT = 'storlab names a fleet server''s foreign server and schema storlab_fleet_<name>: choose another name, or drop them.';
  END IF;
  -- (refused here, in a statement short enough to read in the error's context)
  PERFORM storlab.fleet_conninfo_shown(fleet_add.conninfo);
  SELECT string_agg(format('%I %L', o.keyword, o.value), ', ') FILTER (WHERE o.context = 'server'),
         coalesce(array_agg(o.keyword) FILTER (WHERE o.context = 'mapping'), '{}'),
         coalesce(array_agg(o.value) FILTER (WHERE o.context = 'mapping'), '{}')
    INTO server_options, mapping_keys, mapping_vals
    FROM storlab.fleet_conninfo_options(fleet_add.conninfo) o;
  BEGIN
    EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER postgres_fdw OPTIONS (%s)', sch, server_options);
  EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT, state = RETURNED_SQLSTATE;
    -- postgres_fdw names an option it does not know, and such a word may
    -- be a part of a password typed with an unquoted space: not repeated
    IF state = 'HV00D' THEN
      msg := 'the conninfo has an option neither libpq nor postgres_fdw knows (a value with spaces needs single quotes, as in password=''a b'')';
    END IF;
    -- (an empty DETAIL or HINT would print as an empty line)
    IF detail = '' AND hint = '' THEN
      RAISE EXCEPTION USING MESSAGE = msg, ERRCODE = state;
    ELSIF hint = '' THEN
      RAISE EXCEPTION USING MESSAGE = msg, DETAIL = detail, ERRCODE = state;
    ELSIF detail = '' THEN
      RAISE EXCEPTION USING MESSAGE = msg, HINT = hint, ERRCODE = state;
    END IF;
    RAISE EXCEPTION USING MESSAGE = msg, DETAIL = detail, HINT = hint, ERRCODE = state;
  END;
  PERFORM storlab.fleet_user_mapping(fleet_add.name, 'create', mapping_keys, mapping_vals);
  EXECUTE format('CREATE SCHEMA %I AUTHORIZATION %I', sch, owner);
  -- the nodes of results kept under this name (fleet_remove's default)
  kept := ARRAY(SELECT f.node_id FROM storlab.fleet_nodes f WHERE f.server = fleet_add.name AND f.own);
  kept_any := EXISTS (SELECT FROM storlab.fleet_nodes f WHERE f.server = fleet_add.name);
  INSERT INTO storlab.fleet_members (name, conninfo)
    VALUES (fleet_add.name, storlab.fleet_conninfo_shown(fleet_add.conninfo));
  PERFORM storlab.fleet_connect(fleet_add.name);
  SELECT m.node_id, coalesce(m.node_id, storlab.fleet_legacy_node(m.system_identifier, storlab.fleet_database(m.name)))
    INTO node, identity FROM storlab.fleet_members m WHERE m.name = fleet_add.name;
  -- The name's kept results go on under it only for the same server: those
  -- of another one would be mixed with this one's in every comparison. The
  -- same server: one of the kept nodes, or a node in the place of one (the
  -- same database with storlab installed again).
  IF kept_any AND NOT coalesce(identity = ANY (kept), false)
     AND NOT EXISTS (SELECT FROM storlab.fleet_nodes k, storlab.fleet_nodes f
                      WHERE k.node_id = ANY (kept) AND f.node_id = identity AND k.data_directory IS NOT NULL
                        AND (k.system_identifier, k.hostname, k.data_directory, k.database_oid)
                            = (f.system_identifier, f.hostname, f.data_directory, f.database_oid)) THEN
    RAISE EXCEPTION 'the results kept under fleet server name "%" are another server''s', fleet_add.name
      USING ERRCODE = '42710',
            DETAIL = format('This server is node %s; the kept results are of node %s.', coalesce(node::text, 'NULL (storlab older than 0.8.0)'),
                            coalesce(array_to_string(kept, ', '), 'unknown')),
            HINT = format('Choose another name, or delete them first: SELECT storlab.fleet_remove(%L, keep_results => false);', fleet_add.name);
  END IF;
  RETURN node;
END $$;
REVOKE ALL ON FUNCTION storlab.fleet_add(text, text) FROM PUBLIC;
COMMENT ON FUNCTION storlab.fleet_add(text, text) IS 'Adds a server to this collector''s fleet (superusers): a postgres_fdw foreign server, a user mapping and a schema storlab_fleet_<name>; returns the server''s node_id';

-- Removes a server from the fleet: its foreign server, user mapping and
-- schema; its copied results stay (under its name) unless keep_results is
-- false.
CREATE FUNCTION storlab.fleet_remove(name text, keep_results boolean DEFAULT true) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  sch name;
  owner name := (SELECT r.rolname FROM pg_extension e JOIN pg_roles r ON r.oid = e.extowner WHERE e.extname = 'storlab');
  member boolean;
  t name;
  msg text;
  detail text;
BEGIN
  -- nothing is done on a hot standby or in a read-only transaction (25006)
  PERFORM storlab.check_writable('remove a fleet server');
  IF fleet_remove.name IS NULL OR keep_results IS NULL THEN
    RAISE EXCEPTION 'name and keep_results must not be NULL' USING ERRCODE = '22004';
  END IF;
  PERFORM storlab.fleet_check_superuser('remove a server from');
  member := EXISTS (SELECT FROM storlab.fleet_members m WHERE m.name = fleet_remove.name);
  -- a server removed before, whose results were kept: keep_results => false
  -- deletes them
  IF NOT member AND (keep_results OR NOT EXISTS (SELECT FROM storlab.fleet_nodes f WHERE f.server = fleet_remove.name)) THEN
    RAISE EXCEPTION 'fleet server "%" does not exist', fleet_remove.name
      USING ERRCODE = '42704', HINT = 'storlab.fleet_servers lists the fleet.';
  END IF;
  sch := storlab.fleet_schema(fleet_remove.name);
  IF member THEN
    -- What fleet_add made, and only that: an object of someone else's that
    -- depends on it (a view on a foreign table, a table put in the schema,
    -- another role's user mapping) stops the removal, named.
    BEGIN
      FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = sch AND c.relkind = 'f' LOOP
        EXECUTE format('DROP FOREIGN TABLE %I.%I', sch, t);
      END LOOP;
      EXECUTE format('DROP SCHEMA IF EXISTS %I', sch);
      EXECUTE format('DROP USER MAPPING IF EXISTS FOR %I SERVER %I', owner, sch);
      EXECUTE format('DROP SERVER IF EXISTS %I', sch);
    EXCEPTION WHEN dependent_objects_still_exist THEN
      GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
      RAISE EXCEPTION 'fleet server "%" is not removed: %', fleet_remove.name, msg
        USING ERRCODE = '2BP01', DETAIL = coalesce(nullif(detail, ''), 'Something of someone else''s depends on it.'),
              HINT = format('storlab drops only what fleet_add made (foreign server, user mapping and schema %s): drop or move those objects first.', sch);
    END;
  END IF;
  IF NOT keep_results THEN
    DELETE FROM storlab.fleet_baseline_probes t WHERE t.server = fleet_remove.name;
    DELETE FROM storlab.fleet_baselines t WHERE t.server = fleet_remove.name;
    DELETE FROM storlab.fleet_probes t WHERE t.server = fleet_remove.name;
    DELETE FROM storlab.fleet_bench_runs t WHERE t.server = fleet_remove.name;
    DELETE FROM storlab.fleet_experiments t WHERE t.server = fleet_remove.name;
    DELETE FROM storlab.fleet_nodes t WHERE t.server = fleet_remove.name;
  END IF;
  DELETE FROM storlab.fleet_members m WHERE m.name = fleet_remove.name;
END $$;
REVOKE ALL ON FUNCTION storlab.fleet_remove(text, boolean) FROM PUBLIC;
COMMENT ON FUNCTION storlab.fleet_remove(text, boolean) IS 'Removes a server from the fleet (superusers): its foreign server, mapping and schema; its copied results stay unless keep_results is false';

-- Sets the password of a member's user mapping (NULL: removes it, for a
-- passfile to be read instead): the one statement that carries it runs out
-- of pg_stat_statements' sight (fleet_user_mapping), where an ALTER USER
-- MAPPING typed by hand is kept with its text. Superusers only.
CREATE FUNCTION storlab.fleet_set_password(name text, password text) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  owner name := (SELECT r.rolname FROM pg_extension e JOIN pg_roles r ON r.oid = e.extowner WHERE e.extname = 'storlab');
  has boolean;
BEGIN
  -- nothing is done on a hot standby or in a read-only transaction (25006)
  PERFORM storlab.check_writable('change a fleet server''s password');
  IF fleet_set_password.name IS NULL THEN
    RAISE EXCEPTION 'name must not be NULL' USING ERRCODE = '22004';
  END IF;
  PERFORM storlab.fleet_check_superuser('change the credentials of');
  IF NOT EXISTS (SELECT FROM storlab.fleet_members m WHERE m.name = fleet_set_password.name) THEN
    RAISE EXCEPTION 'fleet server "%" does not exist', fleet_set_password.name
      USING ERRCODE = '42704', HINT = 'storlab.fleet_servers lists the fleet.';
  END IF;
  has := EXISTS (SELECT FROM pg_user_mappings u, unnest(u.umoptions) o
                  WHERE u.srvname = storlab.fleet_schema(fleet_set_password.name) AND u.usename = owner AND o LIKE 'password=%');
  IF password IS NOT NULL THEN
    PERFORM storlab.fleet_user_mapping(fleet_set_password.name, CASE WHEN has THEN 'set' ELSE 'add' END, '{password}', ARRAY[password]);
  ELSIF has THEN
    PERFORM storlab.fleet_user_mapping(fleet_set_password.name, 'drop', '{password}', NULL);
  END IF;
END $$;
REVOKE ALL ON FUNCTION storlab.fleet_set_password(text, text) FROM PUBLIC;
COMMENT ON FUNCTION storlab.fleet_set_password(text, text) IS 'Sets (or with NULL removes) the password storlab''s user mapping of a fleet server holds (superusers), without leaving it in pg_stat_statements';

-- The collector's retention: deletes the copies older than older_than, in
-- one transaction, and keeps what a copied baseline uses. What goes:
-- - probes that started before the cutoff, except those a copied baseline
--   refers to (storlab.fleet_baseline_probes): a baseline keeps every probe
--   it compares with, however old;
-- - experiments that are finished (or gone from their server) and whose
--   last activity is before the cutoff, whole, with their runs; one stopped
--   to have pg_wal moved (wal_needed) waits for experiment_resume() there
--   and stays;
-- - single runs, finished or gone, whose last activity is before the
--   cutoff.
-- Copies not finished yet (still read again by every sync) and baselines
-- stay (delete a baseline by hand: its links go with it, then its probes
-- age as any other). Checks, as storlab.prune's: an age that is positive
-- (22023), a caller who is a superuser or storlab's owner (42501); runs as
-- its caller, deleting nothing its caller could not delete by hand. With
-- dry_run, deletes nothing and counts what it would delete.
CREATE FUNCTION storlab.fleet_prune(older_than interval, dry_run boolean DEFAULT false,
                                    OUT probes bigint, OUT bench_runs bigint, OUT experiments bigint)
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  cut timestamptz;
  x_nodes uuid[];
  x_ids bigint[];
  run_nodes uuid[];
  run_ids bigint[];
  probe_nodes uuid[];
  probe_ids bigint[];
BEGIN
  IF fleet_prune.dry_run IS NULL THEN
    RAISE EXCEPTION 'dry_run must not be NULL' USING ERRCODE = '22004';
  END IF;
  IF NOT fleet_prune.dry_run THEN
    -- a dry run only counts: it works on a hot standby too
    PERFORM storlab.check_writable('prune the fleet''s copies');
  END IF;
  -- (the checks of storlab.prune; this one commits nothing, so it may run
  -- in a transaction block)
  cut := storlab.prune_cutoff(older_than, true);
  -- What goes is chosen first, and deleted only when not a dry run: a
  -- statement that deletes is refused in a read-only transaction (and on a
  -- standby) even when it deletes nothing.
  -- experiments (whole) and single runs: finished or gone, and older
  SELECT coalesce(pg_catalog.array_agg(e.node_id), '{}'), coalesce(pg_catalog.array_agg(e.id), '{}')
    INTO x_nodes, x_ids
    FROM storlab.fleet_experiments e
   WHERE (e.finished_at IS NOT NULL OR e.gone_at IS NOT NULL)
     AND coalesce(e.finished_at, e.started_at, e.created_at, e.synced_at) < cut
     AND (e.wal_needed IS NULL OR e.gone_at IS NOT NULL);
  SELECT coalesce(pg_catalog.array_agg(r.node_id), '{}'), coalesce(pg_catalog.array_agg(r.id), '{}')
    INTO run_nodes, run_ids
    FROM storlab.fleet_bench_runs r
   WHERE EXISTS (SELECT FROM ROWS FROM (pg_catalog.unnest(x_nodes), pg_catalog.unnest(x_ids)) x(node_id, id) WHERE x.node_id = r.node_id AND x.id = r.experiment_id)
      OR (NOT EXISTS (SELECT FROM storlab.fleet_experiments e WHERE e.node_id = r.node_id AND e.id = r.experiment_id)
          AND (r.finished_at IS NOT NULL OR r.gone_at IS NOT NULL)
          AND coalesce(r.finished_at, r.started_at, r.synced_at) < cut);
  -- probes no copied baseline uses
  SELECT coalesce(pg_catalog.array_agg(p.node_id), '{}'), coalesce(pg_catalog.array_agg(p.id), '{}')
    INTO probe_nodes, probe_ids
    FROM storlab.fleet_probes p
   WHERE p.started_at < cut
     AND NOT EXISTS (SELECT FROM storlab.fleet_baseline_probes b WHERE b.node_id = p.node_id AND b.probe_id = p.id);
  bench_runs := pg_catalog.cardinality(run_ids);
  experiments := pg_catalog.cardinality(x_ids);
  probes := pg_catalog.cardinality(probe_ids);
  IF NOT dry_run THEN
    DELETE FROM storlab.fleet_bench_runs r USING ROWS FROM (pg_catalog.unnest(run_nodes), pg_catalog.unnest(run_ids)) k(node_id, id)
     WHERE r.node_id = k.node_id AND r.id = k.id;
    DELETE FROM storlab.fleet_experiments e USING ROWS FROM (pg_catalog.unnest(x_nodes), pg_catalog.unnest(x_ids)) k(node_id, id)
     WHERE e.node_id = k.node_id AND e.id = k.id;
    DELETE FROM storlab.fleet_probes d USING ROWS FROM (pg_catalog.unnest(probe_nodes), pg_catalog.unnest(probe_ids)) k(node_id, id)
     WHERE d.node_id = k.node_id AND d.id = k.id;
  END IF;
END $$;
REVOKE ALL ON FUNCTION storlab.fleet_prune(interval, boolean) FROM PUBLIC;
COMMENT ON FUNCTION storlab.fleet_prune(interval, boolean) IS 'Deletes this collector''s copies older than older_than (superusers and storlab''s owner): probes no copied baseline uses, finished runs and experiments (whole); counts them with dry_run';

-- A hot standby's own storage, measured now: the standard suite (profile)
-- on its tablespaces (NULL: every one and pg_wal), run there through dblink
-- (the pull model of pg_profile: a standby can store nothing, so the
-- collector asks it and keeps what it answers), stored here under the
-- standby's own node (replicas share their primary's system identifier;
-- a standby's node is derived from its host, data directory and database)
-- and numbered by the collector. compare_fleet() and compare_servers() then
-- read them as any server's copies. The standby's statement runs as long as
-- the suite does: its max_standby_streaming_delay must let it
-- (docs/fleet.md). Superusers and storlab's owner, whose user mapping
-- reaches the server.
CREATE FUNCTION storlab.fleet_measure(name text, tablespaces name[] DEFAULT NULL,
                                      duration interval DEFAULT '2 seconds')
RETURNS SETOF storlab.fleet_probes
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  sch name;
  link name;
  node uuid;
  ts name;
  remote text;
BEGIN
  IF fleet_measure.name IS NULL OR fleet_measure.duration IS NULL THEN
    RAISE EXCEPTION '% must not be NULL', CASE WHEN fleet_measure.name IS NULL THEN 'name' ELSE 'duration' END
      USING ERRCODE = '22004';
  END IF;
  IF fleet_measure.tablespaces IS NOT NULL
     AND (pg_catalog.cardinality(fleet_measure.tablespaces) = 0 OR pg_catalog.array_position(fleet_measure.tablespaces, NULL) IS NOT NULL) THEN
    RAISE EXCEPTION 'tablespaces must name at least one tablespace and no NULL, or be NULL for every one'
      USING ERRCODE = '22023';
  END IF;
  -- nothing is done on a hot standby or in a read-only transaction (25006)
  PERFORM storlab.check_writable('store a fleet server''s figures');
  IF NOT EXISTS (SELECT FROM storlab.fleet_members f WHERE f.name = fleet_measure.name) THEN
    RAISE EXCEPTION 'fleet server "%" does not exist', fleet_measure.name
      USING ERRCODE = '42704', HINT = 'storlab.fleet_servers lists the fleet; storlab.fleet_add() adds a server, a standby too.';
  END IF;
  SELECT n.nspname INTO link FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'dblink';
  IF link IS NULL THEN
    RAISE EXCEPTION 'storlab.fleet_measure() needs the dblink extension in this database'
      USING ERRCODE = '55000',
            DETAIL = 'It runs the suite on the standby over a connection of its own (postgres_fdw reads tables only).',
            HINT = 'CREATE EXTENSION dblink;';
  END IF;
  -- who it is now (its node, and that it is still a standby)
  PERFORM storlab.fleet_connect(fleet_measure.name);
  SELECT f.node_id INTO node FROM storlab.fleet_members f WHERE f.name = fleet_measure.name AND f.standby;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'fleet server "%" is not a hot standby: its figures are stored there', fleet_measure.name
      USING ERRCODE = '55000',
            HINT = 'Measure it there (storlab.profile(), compare_tablespaces()); storlab.fleet_sync() copies the results.';
  END IF;
  IF node IS NULL THEN
    RAISE EXCEPTION 'fleet server "%" names no node of its own: its storlab is older than 0.9.0', fleet_measure.name
      USING ERRCODE = '0A000', HINT = 'Update storlab on its primary (ALTER EXTENSION storlab UPDATE); the standby follows.';
  END IF;
  sch := storlab.fleet_schema(fleet_measure.name);
  FOREACH ts IN ARRAY coalesce(fleet_measure.tablespaces, ARRAY[NULL]::name[]) LOOP
    remote := pg_catalog.format('SELECT pg_catalog.row_to_json(p)::pg_catalog.text FROM storlab.profile(%L::pg_catalog.name, %L::pg_catalog.interval) p',
                                ts, fleet_measure.duration);
    -- the foreign server's connection (its options, storlab's owner's user
    -- mapping), the probes' rows as json, each numbered here (once a row:
    -- the row's expansion in the outer query would call nextval per column)
    RETURN QUERY EXECUTE pg_catalog.format(
      'INSERT INTO storlab.fleet_probes
       SELECT p.*
         FROM (SELECT d.j, pg_catalog.nextval(''storlab.fleet_measured_ids'') AS id
                 FROM %I.dblink(%L, %L) AS d(j pg_catalog.text)) r,
              LATERAL pg_catalog.jsonb_populate_record(NULL::storlab.fleet_probes,
                r.j::pg_catalog.jsonb OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object(
                  ''id'', r.id, ''node_id'', $1, ''server'', $2, ''synced_at'', pg_catalog.clock_timestamp())) p
       RETURNING *', link, sch, remote)
      USING node, fleet_measure.name;
  END LOOP;
  UPDATE storlab.fleet_members f SET last_sync = pg_catalog.clock_timestamp(), last_error = NULL
   WHERE f.name = fleet_measure.name;
END $$;
REVOKE ALL ON FUNCTION storlab.fleet_measure(text, name[], interval) FROM PUBLIC;
COMMENT ON FUNCTION storlab.fleet_measure(text, name[], interval) IS 'Measures a hot standby of the fleet now (the standard suite on its tablespaces, through dblink) and keeps its figures in this collector under the standby''s own node';

-- This database's node, minted now (CREATE EXTENSION, or the update that
-- brings nodes), so that the rows it writes next name it at once.
SELECT storlab.node_id() IS NOT NULL AS minted;

-- Reading: the fleet's results for pg_monitor, as storlab's own are.
GRANT SELECT ON storlab.node, storlab.nodes, storlab.fleet_servers, storlab.fleet_members, storlab.fleet_nodes,
                storlab.fleet_probes, storlab.fleet_baselines, storlab.fleet_baseline_probes,
                storlab.fleet_bench_runs, storlab.fleet_experiments TO pg_monitor;
