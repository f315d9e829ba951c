-- The bad-input matrix: every storlab function, read from the catalog (a
-- new one is covered without editing this file), called with a matrix of
-- values per argument: NULL in each position, zero, negative, huge, empty
-- and 10 kB strings, names with quotes, semicolons, spaces and non-ASCII,
-- objects that do not exist, objects of the wrong kind. Every call either
-- works or fails with a SQLSTATE docs/errors.md documents for that function
-- (its table "Errors and their SQLSTATEs"); never XX000,
-- never a crash (the postmaster's start time is unchanged), never a
-- leftover scratch file, job, relocation row or fleet server. (The three
-- procedures commit, so they cannot run in a rolled-back subtransaction;
-- they only call the functions tested here, and sql/bench.sql waits for a
-- job that does not exist.)
--
-- Each call runs in a subtransaction that is then rolled back, so a call
-- that works leaves nothing either (a job it started dies with it).
-- storlab.max_probe_duration is 1 s and storlab.suite_file_size 4 MB
-- here, so no probe measures or fills for long.
CREATE EXTENSION IF NOT EXISTS pgtap;
-- the fleet's fleet_add needs postgres_fdw to get past its first check
-- (dropped at the end when this file installed it)
SELECT NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'postgres_fdw') AS matrix_fdw \gset
CREATE EXTENSION IF NOT EXISTS postgres_fdw;
SET storlab.max_probe_duration = '1s';
SET storlab.suite_file_size = '4MB';
SET client_min_messages = warning;
SELECT plan(11);

CREATE TABLE public.matrix_t (id int PRIMARY KEY);
CREATE TEMP TABLE before AS
SELECT pg_postmaster_start_time() AS started,
       (SELECT count(*) FROM storlab.job_records) AS jobs,
       (SELECT count(*) FROM storlab.relocations) AS moves,
       (SELECT count(*) FROM storlab.probes) AS probes,
       (SELECT count(*) FROM storlab.fleet_members) + (SELECT count(*) FROM pg_foreign_server)
         + (SELECT count(*) FROM pg_user_mappings) AS fleet;

-- Values per argument type, as SQL literals; the first of each type is the
-- one an argument gets while another position is varied (when the
-- argument has no default of its own).
CREATE TEMP TABLE vals (type regtype, ord int, v text);
INSERT INTO vals VALUES
  ('name', 0, $$'lab_ram'$$), ('name', 1, 'NULL'), ('name', 2, $$''$$), ('name', 3, $$'no_such_thing'$$),
  ('name', 4, $$'pg_global'$$), ('name', 5, $$'a''b; DROP TABLE x; -- é ☃'$$), ('name', 6, $$repeat('n', 10000)$$),
  ('text', 0, $$'x'$$), ('text', 1, 'NULL'), ('text', 2, $$''$$), ('text', 3, $$'no_such_thing'$$),
  ('text', 4, $$'a''b; DROP TABLE x; -- é ☃'$$), ('text', 5, $$repeat('t', 10000)$$),
  ('integer', 0, '1'), ('integer', 1, 'NULL'), ('integer', 2, '0'), ('integer', 3, '-1'), ('integer', 4, '2147483647'),
  ('bigint', 0, '0'), ('bigint', 1, 'NULL'), ('bigint', 2, '-1'), ('bigint', 3, '9223372036854775807'),
  ('boolean', 0, 'true'), ('boolean', 1, 'NULL'), ('boolean', 2, 'false'),
  ('interval', 0, $$'20 ms'$$), ('interval', 1, 'NULL'), ('interval', 2, $$'0 s'$$), ('interval', 3, $$'-1 s'$$),
  ('interval', 4, $$'1 microsecond'$$), ('interval', 5, $$'1000 years'$$),
  ('uuid', 0, $$'00000000-0000-0000-0000-0000000000a1'$$), ('uuid', 1, 'NULL'),
  ('jsonb', 0, $$'{}'$$), ('jsonb', 1, 'NULL'), ('jsonb', 2, $$'[]'$$), ('jsonb', 3, $$'"x"'$$),
  ('jsonb', 4, $$'{"a": {"tables": "no_such_thing"}}'$$), ('jsonb', 5, $$'{"a": {"settings": {"x": [1]}}, "rate": -1}'$$),
  ('jsonb', 6, $$'{"a": {"settings": {"application_name": "x\t-c\tsynchronous_commit=off"}}}'$$),
  ('integer[]', 0, $$'{1}'$$), ('integer[]', 1, 'NULL'), ('integer[]', 2, $$'{}'$$), ('integer[]', 3, $$'{NULL}'$$),
  ('integer[]', 4, $$'{-1}'$$), ('integer[]', 5, $$'{2147483647}'$$),
  ('bigint[]', 0, $$'{0}'$$), ('bigint[]', 1, 'NULL'), ('bigint[]', 2, $$'{}'$$), ('bigint[]', 3, $$'{NULL}'$$),
  ('double precision[]', 0, $$'{50}'$$), ('double precision[]', 1, 'NULL'), ('double precision[]', 2, $$'{}'$$),
  ('double precision[]', 3, $$'{-1}'$$), ('double precision[]', 4, $$'{NaN}'$$), ('double precision[]', 5, $$'{1e308}'$$),
  ('regclass', 0, $$'public.matrix_t'$$), ('regclass', 1, 'NULL'), ('regclass', 2, $$'pg_class'$$),
  ('regclass', 3, $$'pg_toast.pg_toast_1255'$$), ('regclass', 4, $$'pg_stat_activity'$$),
  ('timestamp with time zone', 0, 'now()'), ('timestamp with time zone', 1, 'NULL'),
  ('timestamp with time zone', 2, $$'infinity'$$), ('timestamp with time zone', 3, $$'-infinity'$$),
  ('double precision', 0, '1'), ('double precision', 1, 'NULL'), ('double precision', 2, '-1'),
  ('double precision', 3, $$'NaN'$$), ('double precision', 4, $$'Infinity'$$), ('double precision', 5, '1e308'),
  ('real', 0, '5'), ('real', 1, 'NULL'), ('real', 2, '0'), ('real', 3, '-1'), ('real', 4, $$'NaN'$$),
  ('name[]', 0, $$'{lab_ram}'$$), ('name[]', 1, 'NULL'), ('name[]', 2, $$'{}'$$), ('name[]', 3, $$'{NULL}'$$),
  ('name[]', 4, $$'{no_such_thing}'$$), ('name[]', 5, $$'{pg_global}'$$),
  ('text[]', 0, $$'{x}'$$), ('text[]', 1, 'NULL'), ('text[]', 2, $$'{}'$$), ('text[]', 3, $$'{NULL}'$$),
  ('text[]', 4, $$'{no_such_thing}'$$), ('text[]', 5, $$ARRAY['a''b; DROP TABLE x; -- é ☃', repeat('t', 10000)]$$);

-- Where a function's first value of a type would fail its first check
-- (a workload 'x', a 2 s probe above the 1 s limit), every other value
-- would only be tested against that check: these arguments get a value the
-- function accepts instead (a new function needs no entry to be covered).
CREATE TEMP TABLE base (proname name, arg text, v text);
INSERT INTO base VALUES
  ('probe', 'workload', $$'randread'$$), ('probe', 'duration', $$'20 ms'$$), ('probe', 'file_size', '4194304'),
  ('fsync_cost', 'duration', $$'20 ms'$$), ('profile', 'duration', $$'20 ms'$$), ('profile', 'workers', $$'{1}'$$),
  -- (a profile of every tablespace takes seconds: one does, varying its tablespace)
  ('profile', 'tablespace', $$'lab_ram'$$),
  ('compare_tablespaces', 'duration', $$'20 ms'$$),
  ('measure_volume', 'max_age', $$'1 day'$$), ('measure_volume', 'duration', $$'20 ms'$$),
  ('measure_volume', 'min_repetitions', '2'), ('measure_volume', 'max_repetitions', '2'),
  ('bench_start', 'script', $$'select-only'$$), ('bench_start', 'duration', $$'1 s'$$),
  ('experiment_start', 'name', $$'matrix'$$), ('experiment_start', 'layouts', $$'{"a": {}}'$$),
  ('experiment_start', 'script', $$'select-only'$$), ('experiment_start', 'duration', $$'1 s'$$),
  ('experiment_start', 'warmup', $$'0 s'$$), ('chart_svg', 'kind', $$'experiment'$$),
  ('check', 'workload', $$'randread'$$), ('check', 'metric', $$'iops'$$), ('check', 'op', $$'>='$$),
  ('check', 'duration', $$'20 ms'$$), ('baseline', 'tablespaces', $$'{lab_ram}'$$), ('baseline', 'duration', $$'20 ms'$$),
  ('baseline', 'repetitions', '2'), ('regressions', 'duration', $$'20 ms'$$), ('regressions', 'repetitions', '2'),
  -- two servers, not the same one twice; a conninfo fleet_add takes, whose
  -- first contact then fails at once (08001: no server listens there)
  ('compare_servers', 'b', $$'y'$$),
  ('fleet_add', 'conninfo', $$'host=/nonexistent/matrix port=1 dbname=matrix'$$);

-- Every call: the function with one argument varied at a time, the others
-- at their base value, their default, or the type's first value.
CREATE TEMP TABLE calls AS
WITH f AS (
  SELECT p.oid, p.proname, p.pronargs, p.pronargdefaults,
         p.proargnames AS names,
         -- as text, then an array: proargtypes itself counts from 0, proargnames from 1
         string_to_array(p.proargtypes::text, ' ')::oid[]::regtype[] AS types
    FROM pg_proc p
   WHERE p.pronamespace = 'storlab'::regnamespace AND p.prokind = 'f'
     -- a trigger function (storlab.remember_server) is no call of anyone's:
     -- PostgreSQL runs it only as a trigger, and refuses any other call
     AND p.prorettype <> 'trigger'::regtype
), arg AS (
  SELECT f.*, a.i, a.i > f.pronargs - f.pronargdefaults AS has_default
    FROM f, generate_series(1, f.pronargs) AS a(i)
)
SELECT DISTINCT f.proname, format('storlab.%I(%s)', f.proname, coalesce((
         SELECT string_agg(format('%I => %s', a.names[a.i],
                  CASE WHEN a.i = v.i THEN v.v
                       ELSE coalesce((SELECT b.v FROM base b WHERE b.proname = f.proname AND b.arg = a.names[a.i]),
                                     (SELECT x.v FROM vals x WHERE x.type = a.types[a.i] AND x.ord = 0)) END), ', ' ORDER BY a.i)
           FROM arg a
          WHERE a.oid = f.oid AND (a.i = v.i OR NOT a.has_default
                                   OR EXISTS (SELECT FROM base b WHERE b.proname = f.proname AND b.arg = a.names[a.i]))), '')) AS call
  FROM f
  LEFT JOIN LATERAL (SELECT a.i, x.v FROM arg a JOIN vals x ON x.type = a.types[a.i] WHERE a.oid = f.oid) v ON true;

-- Every call is made four times: by the superuser; by the superuser in a
-- read-only transaction (what writes is refused, 25006, before it runs:
-- a probe measures nothing it could not store); by a role holding EXECUTE
-- on every function but CREATE on no tablespace (its probes, baselines and
-- moves must be refused, 42501, never run); and by a role with no grant at
-- all.
CREATE TEMP TABLE outcomes (as_role text, call text, state text, message text);
SET client_min_messages = error;
DROP ROLE IF EXISTS matrix_executor;
DROP ROLE IF EXISTS matrix_nobody;
RESET client_min_messages;
CREATE ROLE matrix_executor;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA storlab TO matrix_executor;
CREATE ROLE matrix_nobody;
GRANT SELECT ON calls TO matrix_executor, matrix_nobody;
GRANT INSERT ON outcomes TO matrix_executor, matrix_nobody;
CREATE FUNCTION pg_temp.run_calls(who text, read_only boolean DEFAULT false) RETURNS void LANGUAGE plpgsql AS $$
DECLARE c record; st text; msg text;
BEGIN
  EXECUTE format('SET LOCAL ROLE %I', who);
  FOR c IN SELECT call FROM calls ORDER BY call LOOP
    BEGIN
      -- read-only for this call's subtransaction only: its rollback
      -- brings read-write back for the outcome's row
      IF read_only THEN
        PERFORM set_config('transaction_read_only', 'on', true);
      END IF;
      EXECUTE format('SELECT count(*) FROM %s', c.call);
      RAISE EXCEPTION 'worked' USING ERRCODE = 'P0001';
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
      INSERT INTO outcomes VALUES (CASE WHEN read_only THEN who || ' (read only)' ELSE who END, c.call, st, msg);
    END;
  END LOOP;
  RESET ROLE;
END $$;
SELECT pg_temp.run_calls(current_user);
SELECT pg_temp.run_calls(current_user, read_only => true);
SELECT pg_temp.run_calls('matrix_executor');
SELECT pg_temp.run_calls('matrix_nobody');

-- What docs/errors.md documents, per function (its table "Errors and their
-- SQLSTATEs", read by test/documented_errors), and for every function: a
-- cancel, EXECUTE not granted, and what PostgreSQL raises for a literal
-- before storlab sees it. P0001 marks a call that worked.
CREATE TEMP TABLE documented (proname name, state text);
\copy documented FROM PROGRAM 'test/documented_errors'
INSERT INTO documented SELECT DISTINCT d.proname, s
  FROM documented d, unnest('{P0001,57014,42501,22P02,22003,22007,22008,42P01}'::text[]) s;
SELECT is((SELECT string_agg(DISTINCT c.proname, ', ') FROM calls c
            WHERE NOT EXISTS (SELECT FROM documented d WHERE d.proname = c.proname)),
          NULL, 'every function has its row in the table of SQLSTATEs of docs/errors.md');
SELECT is((SELECT string_agg(format('%s -> %s %s', o.call, o.state, left(o.message, 100)), E'\n' ORDER BY o.call)
             FROM outcomes o JOIN calls c USING (call)
            WHERE EXISTS (SELECT FROM documented d WHERE d.proname = c.proname)
              AND NOT EXISTS (SELECT FROM documented d WHERE d.proname = c.proname AND d.state = o.state)),
          NULL, 'every call works or fails with a SQLSTATE docs/errors.md documents for its function');
SELECT is((SELECT count(*) FROM outcomes WHERE state = 'XX000'), 0::bigint, 'none is an internal error');
SELECT is((SELECT string_agg(format('%s -> %s %s', o.call, o.state, left(o.message, 100)), E'\n' ORDER BY o.call)
             FROM outcomes o
            WHERE o.as_role = 'matrix_executor' AND o.state = 'P0001'
              AND o.call ~ '^storlab\.(probe|fsync_cost|profile|baseline|regressions)\('
              AND o.call ~ '''lab_'),
          NULL, 'a role without CREATE on the lab''s tablespaces probes none of them (42501 instead)');
SELECT is((SELECT string_agg(format('%s -> %s %s', o.call, o.state, left(o.message, 100)), E'\n' ORDER BY o.call)
             FROM outcomes o
            WHERE o.as_role LIKE '% (read only)' AND o.state = 'P0001'
              AND o.call ~ '^storlab\.(probe|fsync_cost|profile|baseline|regressions|move|apply_layout|restore_layout|undo_batch|bench_init|bench_start|move_indexes_online|experiment_start|experiment_resume|cancel|stop_now)\('
              AND o.call !~ 'dry_run => true'),
          NULL, 'in a read-only transaction nothing that must measure, move or start a job works (25006 instead)');
SELECT is((SELECT string_agg(DISTINCT o.state, ',') FROM outcomes o JOIN calls c USING (call)
            WHERE o.as_role = 'matrix_nobody'
              AND NOT EXISTS (SELECT FROM pg_proc p WHERE p.proname = c.proname AND p.pronamespace = 'storlab'::regnamespace
                                 AND has_function_privilege('public', p.oid, 'EXECUTE'))),
          '42501', 'a role with no grant gets 42501 from every function not open to PUBLIC');
SELECT is(pg_postmaster_start_time(), (SELECT started FROM before), 'and none crashed the server');
SELECT is((SELECT count(*) FROM storlab.job_records), (SELECT jobs FROM before), 'no job row is left');
SELECT is(((SELECT count(*) FROM storlab.relocations), (SELECT count(*) FROM storlab.probes)),
          ((SELECT moves FROM before), (SELECT probes FROM before)), 'no relocation or probe row is left');
SELECT is((SELECT count(*) FROM storlab.fleet_members) + (SELECT count(*) FROM pg_foreign_server)
            + (SELECT count(*) FROM pg_user_mappings), (SELECT fleet FROM before),
          'no fleet server, foreign server or user mapping is left');
SELECT is((SELECT count(*) FROM storlab.tablespaces() t,
                  pg_ls_dir(t.location || CASE WHEN t.kind = 'wal' THEN '' ELSE '/pgsql_tmp' END, true, false) f
            WHERE f LIKE 'pgsql_tmp_storlab%'), 0::bigint, 'no scratch file is left');
SELECT diag(format('%s calls of %s functions; SQLSTATEs seen: %s',
                   (SELECT count(*) FROM outcomes), (SELECT count(DISTINCT proname) FROM calls),
                   (SELECT string_agg(state || ' x' || n, ', ' ORDER BY state)
                      FROM (SELECT state, count(*) n FROM outcomes GROUP BY state) s)));
SELECT diag(format('SQLSTATEs per function: %s',
                   (SELECT string_agg(proname || ' ' || states, '; ' ORDER BY proname)
                      FROM (SELECT c.proname, string_agg(DISTINCT o.state, ',') states
                              FROM outcomes o JOIN calls c USING (call) GROUP BY c.proname) s)));
SELECT * FROM finish();
DROP TABLE public.matrix_t;
DROP OWNED BY matrix_executor, matrix_nobody;
DROP ROLE matrix_executor, matrix_nobody;
\if :matrix_fdw
DROP EXTENSION postgres_fdw;
\endif
