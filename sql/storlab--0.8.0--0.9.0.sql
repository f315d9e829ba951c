-- storlab 0.8.0 -> 0.9.0: answers on every server (hot standbys, read-only
-- callers), online moves that give way to other sessions' DDL, and a fleet
-- that keeps every row and no secret.
-- One section per capability; each says what changed and why.

-- ---- who may prune: storlab's own answer ----
-- CALL storlab.prune() checks its caller through prune_cutoff, which deletes
-- nothing. It was not executable by PUBLIC, so a role granted EXECUTE on
-- prune (as docs/prune.md shows) was told "permission denied for function
-- prune_cutoff" instead of who may prune (42501, storlab's message).
GRANT EXECUTE ON FUNCTION storlab.prune_cutoff(interval, boolean) TO PUBLIC;

-- ---- on a hot standby, a job's status is the primary's ----
-- storlab.jobs and storlab.experiments show a job whose worker is gone as
-- failed. A standby cannot see the primary's workers, so every running job
-- showed there as failed; in recovery the replicated status stands.
CREATE OR REPLACE VIEW storlab.jobs AS
SELECT j.id, j.kind, j.status, j.args, j.database, j.role, j.worker_pid, j.created_at, j.started_at,
       j.finished_at, j.error, j.detail
  FROM storlab.job_records j
 WHERE j.status IN ('done', 'failed', 'cancelled')
UNION ALL
SELECT j.id, j.kind,
       CASE WHEN j.dead THEN 'failed' ELSE j.status END,
       j.args, j.database, j.role, j.worker_pid, j.created_at, j.started_at, j.finished_at,
       CASE WHEN j.dead
            THEN 'the job''s worker exited before finishing it (an error in the worker, a crash or a server restart: the server log says which)'
            ELSE j.error END,
       j.detail
  FROM (SELECT r.*,
               -- on a hot standby a job runs on the primary, whose workers
               -- this server cannot see: its status is the replicated one
               NOT pg_catalog.pg_is_in_recovery() AND (
               (r.status IN ('running', 'cancelling')
                AND NOT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a
                                 WHERE a.pid = r.worker_pid AND a.backend_type = 'storlab job'
                                   AND a.backend_start <= r.started_at))
               OR (r.status = 'queued' AND r.created_at < pg_catalog.statement_timestamp() - interval '2 minutes')) AS dead
          FROM storlab.job_records r
         WHERE r.status IN ('queued', 'running', 'cancelling')) j;
COMMENT ON VIEW storlab.jobs IS 'Every storlab job with its status as of now: a job whose worker is gone is failed (on a hot standby, the status replicated from the primary)';
CREATE OR REPLACE VIEW storlab.experiments AS
SELECT e.id, e.name, CASE WHEN d.dead THEN 'failed' ELSE r.status END AS status, r.args,
       e.current_step, e.steps_total,
       CASE WHEN d.dead
            -- where the relations were last observed placed: a past fact,
            -- since the worker that would observe them now is gone
            THEN format('failed at step %s of %s (%s): its worker exited before finishing it; pgbench''s relations were last placed %s (storlab.layout() shows where they are now)',
                        e.current_step + 1, e.steps_total, coalesce(e.current_action, 'starting'),
                        coalesce('as layout ' || e.layout_applied, 'by pgbench -i or a move'))
            ELSE e.current_action END AS current_action,
       r.started_at, r.finished_at,
       CASE WHEN d.dead
            THEN 'the job''s worker exited before finishing it (an error in the worker, a crash or a server restart: the server log says which)'
            ELSE r.error END AS error,
       e.system_identifier, e.hostname, e.layout_applied, r.role, e.created_at,
       CASE WHEN r.status = 'done' THEN e.wal_needed END AS wal_needed,
       e.node_id
  FROM storlab.experiment_records e
 -- each experiment's job by its id (the fence keeps it a lookup per
 -- experiment: a filter on status would otherwise read every job)
 CROSS JOIN LATERAL (SELECT * FROM storlab.job_records j WHERE j.id = e.id OFFSET 0) r
 -- (on a hot standby the job runs on the primary, whose workers this
 -- server cannot see: its status is the replicated one)
 CROSS JOIN LATERAL (
   SELECT NOT pg_catalog.pg_is_in_recovery() AND (
          (r.status IN ('running', 'cancelling')
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a
                            WHERE a.pid = r.worker_pid AND a.backend_type = 'storlab job'
                              AND a.backend_start <= r.started_at))
       OR (r.status = 'queued' AND r.created_at < pg_catalog.statement_timestamp() - interval '2 minutes')) AS dead) d;
COMMENT ON VIEW storlab.experiments IS 'Every storlab experiment: its status, progress and where its relations were left';

-- ---- on a hot standby, or in a read-only transaction ----
-- The refusal every path that writes makes there (25006, before it does
-- anything), for the PL/pgSQL functions that write (the fleet's). Anyone
-- may call it: it only raises.
CREATE FUNCTION storlab."check_writable"(
	"what" TEXT /* core::option::Option<alloc::string::String> */
) RETURNS void
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'check_writable_wrapper';

-- ---- A CI role reads its own results and drops its own baselines ----
-- A role granted EXECUTE on check(), baseline() and regressions() (the CI
-- role of docs/ci.md) is given probe ids and baseline labels, and
-- baseline()'s 42710 HINT sent it to DELETE FROM storlab.baselines, which
-- it may not. Each probe and baseline now records the role that made it;
-- storlab.own_probes and storlab.own_baselines show a role its own (never
-- another role's), and storlab.drop_baseline() drops a baseline its caller
-- took. The fleet's copies (LIKE the tables in 0.8.0) do not get the
-- columns: a member's role names mean nothing on the collector (as a fresh
-- install adds them after the copies are made: sql/catalog/own_rows.sql).
ALTER TABLE storlab.probes ADD COLUMN measured_by name;  -- the role that measured it; NULL: before 0.9.0
ALTER TABLE storlab.baselines ADD COLUMN taken_by name;  -- the role that took it; NULL: before 0.9.0
COMMENT ON COLUMN storlab.probes.measured_by IS 'The role that measured it (its current_user); storlab.own_probes shows a role its own. NULL: measured before 0.9.0';
COMMENT ON COLUMN storlab.baselines.taken_by IS 'The role that took it (its current_user), which may drop it with storlab.drop_baseline(); NULL: taken before 0.9.0';

CREATE VIEW storlab.own_probes WITH (security_barrier) AS
SELECT p.id, p.tablespace, p.location, p.workload, p.block_size, p.workers, p.direct, p.sync_method,
       p.writes_per_sync, p.file_size, p.duration_s, p.ops, p.bytes, p.iops, p.mib_s, p.lat_mean_us,
       p.lat_p50_us, p.lat_p90_us, p.lat_p99_us, p.lat_p999_us, p.lat_max_us, p.histogram, p.label,
       p.system_identifier, p.hostname, p.started_at, p.suite, p.iodepth, p.engine, p.precision_pct,
       p.iops_ci95_pct, p.io_method, p.effective_io_concurrency, p.node_id, p.measured_by
  FROM storlab.probes p
 WHERE p.measured_by OPERATOR(pg_catalog.=) ANY (ARRAY(
         SELECT r.rolname FROM pg_catalog.pg_roles r WHERE pg_catalog.pg_has_role(r.oid, 'USAGE')));
COMMENT ON VIEW storlab.own_probes IS 'The probes the current role measured (storlab.probes but env), for a role without SELECT on storlab.probes: the probe_ids check() gives a CI role';

CREATE VIEW storlab.own_baselines WITH (security_barrier) AS
SELECT b.id, b.label, b.tablespaces, b.duration_s, b.repetitions, b.system_identifier, b.hostname,
       b.taken_at, b.node_id, b.taken_by,
       ARRAY(SELECT bp.probe_id FROM storlab.baseline_probes bp
              WHERE bp.baseline_id OPERATOR(pg_catalog.=) b.id ORDER BY bp.probe_id) AS probe_ids
  FROM storlab.baselines b
 WHERE b.taken_by OPERATOR(pg_catalog.=) ANY (ARRAY(
         SELECT r.rolname FROM pg_catalog.pg_roles r WHERE pg_catalog.pg_has_role(r.oid, 'USAGE')));
COMMENT ON VIEW storlab.own_baselines IS 'The baselines the current role took, with their probes (storlab.own_probes); storlab.drop_baseline(label) drops one';
GRANT SELECT ON storlab.own_probes, storlab.own_baselines TO PUBLIC;

-- storlab.drop_baseline(label): for the role that took it, or one that may
-- DELETE from storlab.baselines; not for PUBLIC, as baseline() is not.
CREATE FUNCTION storlab."drop_baseline"(
	"label" TEXT /* Option < String > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'drop_baseline_wrapper';
REVOKE ALL ON FUNCTION storlab.drop_baseline(text) FROM PUBLIC;

------------------------------------------------------------------------
-- The fleet keeps every row, one identity per server, and no secret.
--
-- - A sync's horizon is read before its snapshot: the one the last contact
--   saw (fleet_members.horizon_seen). It was read in the snapshot's own
--   query, so a transaction that committed between the snapshot and the
--   look at the sessions was in neither, and its rows were never copied.
-- - A server is one member whatever its storlab: before 0.8.0 (no node) by
--   its system identifier and database, the legacy node its rows are
--   counted under; and the same database after storlab is installed again
--   (a new node in the same place: fleet_nodes records an own node's place)
--   goes on under the name its results were kept under. A member's node
--   that changes makes the next sync read every table from the start.
-- - A run or experiment copied unfinished and gone from its server before
--   its end was copied (pruned there) is marked gone_at, no longer read
--   again as running.
-- - A copied baseline keeps its probes (foreign keys; a DELETE by hand of
--   one fails), fleet_prune() is the collector's retention, and
--   regressions(server => ...) refuses a copy without its probes.
-- - The user mapping's statements run out of pg_stat_statements' sight
--   (fleet_user_mapping), fleet_set_password() changes a password so, and
--   postgres_fdw's error for an unknown option no longer names it (a part
--   of a password typed with a space).
ALTER TABLE storlab.fleet_members ADD COLUMN horizon_seen timestamptz;
ALTER TABLE storlab.fleet_nodes
  ADD COLUMN system_identifier bigint,
  ADD COLUMN hostname text,
  ADD COLUMN data_directory text,
  ADD COLUMN database_oid oid;
ALTER TABLE storlab.fleet_bench_runs ADD COLUMN gone_at timestamptz;
ALTER TABLE storlab.fleet_experiments ADD COLUMN gone_at timestamptz;
-- Links whose probe or baseline copy was deleted by hand under 0.8.0 refer
-- to nothing (such a baseline already compared with nothing): they go, so
-- that the keys can hold.
DELETE FROM storlab.fleet_baseline_probes b
 WHERE NOT EXISTS (SELECT FROM storlab.fleet_probes p WHERE p.node_id = b.node_id AND p.id = b.probe_id)
    OR NOT EXISTS (SELECT FROM storlab.fleet_baselines l WHERE l.node_id = b.node_id AND l.id = b.baseline_id);
ALTER TABLE storlab.fleet_baseline_probes
  ADD CONSTRAINT fleet_baseline_probes_probe_fkey FOREIGN KEY (node_id, probe_id)
      REFERENCES storlab.fleet_probes (node_id, id),
  ADD CONSTRAINT fleet_baseline_probes_baseline_fkey FOREIGN KEY (node_id, baseline_id)
      REFERENCES storlab.fleet_baselines (node_id, id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;
CREATE INDEX fleet_baseline_probes_probe ON storlab.fleet_baseline_probes (node_id, probe_id);

CREATE OR REPLACE FUNCTION storlab.fleet_connect(server text) RETURNS timestamptz
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

CREATE OR REPLACE FUNCTION storlab.fleet_copy(server text, source text, horizon timestamptz) RETURNS bigint
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

CREATE OR REPLACE FUNCTION storlab.fleet_add(name text, conninfo text) RETURNS uuid
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

-- ---- the fleet's functions that write, on a hot standby ----
-- fleet_add, fleet_remove, fleet_sync, fleet_set_password, fleet_prune (not
-- a dry run) and their helpers connect, create foreign tables and user
-- mappings and copy rows: on a standby or in a read-only transaction they
-- are refused (25006, storlab.check_writable) before they do anything
-- (fleet_sync answered with a row per server and error instead).
--
-- ---- a standby's own storage reaches the collector ----
-- A hot standby may now be a fleet server: its tables are its primary's
-- (nothing is copied from it), and storlab.fleet_measure() runs the suite
-- there through dblink and keeps the figures here, under the standby's own
-- node (derived from its place: replicas share the primary's system
-- identifier), numbered by the collector (fleet_measured_ids).
ALTER TABLE storlab.fleet_members ADD COLUMN standby boolean NOT NULL DEFAULT false;
CREATE SEQUENCE storlab.fleet_measured_ids;
SELECT pg_catalog.pg_extension_config_dump('storlab.fleet_measured_ids', '');

CREATE OR REPLACE VIEW storlab.fleet_servers AS
SELECT m.name, m.node_id, m.system_identifier, m.hostname, m.server_version, m.storlab_version,
       m.conninfo, m.added_at, m.last_attempt, m.last_sync, m.last_error,
       (SELECT pg_catalog.count(*) FROM storlab.fleet_probes p WHERE p.server = m.name) AS probes,
       (SELECT pg_catalog.count(*) FROM storlab.fleet_baselines b WHERE b.server = m.name) AS baselines,
       (SELECT pg_catalog.count(*) FROM storlab.fleet_bench_runs r WHERE r.server = m.name) AS bench_runs,
       (SELECT pg_catalog.count(*) FROM storlab.fleet_experiments e WHERE e.server = m.name) AS experiments,
       m.standby
  FROM storlab.fleet_members m;
COMMENT ON VIEW storlab.fleet_servers IS 'The fleet''s servers: identity, versions, the last sync and its error, how many of each result this collector holds, and whether it is a hot standby (measured by storlab.fleet_measure)';

COMMENT ON VIEW storlab.node IS 'This server as a fleet collector sees it: its node_id (on a standby, the node derived from its place that names its own unstored measurements), system identifier, host name, PostgreSQL and storlab versions, whether the role reading it has pg_read_all_stats, and whether it is a standby';


CREATE OR REPLACE FUNCTION storlab.fleet_sync(name text DEFAULT NULL)
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



CREATE OR REPLACE FUNCTION storlab.fleet_remove(name text, keep_results boolean DEFAULT true) RETURNS void
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

-- Online moves and undo: a moved index is known again after a REINDEX
-- CONCURRENTLY by hand, which gives it a new oid under the same name.
-- storlab.relocations records an index's table and definition at the move
-- (sql/catalog/relocations.sql); undo_batch and restore_layout follow the
-- index of that name on the same table with the same definition, and refuse
-- the whole undo, naming it, for a row written before this release.
ALTER TABLE storlab.relocations ADD COLUMN index_table oid, ADD COLUMN index_definition text;
