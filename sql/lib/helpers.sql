-- Helpers of the pg_regress files (sql/*.sql), which include this file from
-- the repository's root, where pg_regress runs psql:
--   \set ECHO none
--   \i sql/lib/helpers.sql
--   \set ECHO all
-- Not a test of its own (regress_schedule does not list it).

-- pg_temp.error_of(call): what a call raises, as 'SQLSTATE: message', or
-- 'no error'. The call is run as a FROM item, so that a set-returning
-- function runs to its end and a scalar one runs once.
CREATE FUNCTION pg_temp.error_of(call text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'SELECT count(*) FROM ' || call;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
