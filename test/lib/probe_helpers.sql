-- Helpers of the pgTAP files that cancel probes (included with \ir; not a
-- test of its own: pg_prove runs test/*.sql only).

-- Scratch files of storlab's anywhere it probes.
CREATE FUNCTION pg_temp.scratch_files() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM storlab.tablespaces() t,
         pg_ls_dir(t.location || CASE WHEN t.kind = 'wal' THEN '' ELSE '/pgsql_tmp' END, true, false) f
   WHERE f LIKE 'pgsql_tmp_storlab%'
$$;
-- pgTAP's throws_ok cannot see 57014: PL/pgSQL's WHEN OTHERS deliberately
-- leaves query_canceled alone, so catch it by name.
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION
  WHEN query_canceled THEN RETURN SQLSTATE;
  WHEN OTHERS THEN RETURN SQLSTATE;
END $$;
-- A stopwatch: tick() starts it, since_tick() reads it in seconds.
CREATE TEMP TABLE clock (t timestamptz);
CREATE FUNCTION pg_temp.tick() RETURNS void LANGUAGE sql AS $$ DELETE FROM clock; INSERT INTO clock VALUES (clock_timestamp()) $$;
CREATE FUNCTION pg_temp.since_tick() RETURNS numeric LANGUAGE sql AS $$ SELECT extract(epoch FROM clock_timestamp() - t) FROM clock $$;
