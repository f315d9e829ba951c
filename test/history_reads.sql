-- Years of stored results do not slow the readers: with 200 000 old
-- probes and 20 000 finished jobs stored, every reader takes the newest
-- rows through an index and touches a handful of rows, never the whole
-- history. Counted, not timed: pg_stat_xact_user_tables holds this
-- transaction's own table accesses (sequential scans, rows read by them
-- and fetched through indexes). bench/scale times the same readers at a
-- million probes.
CREATE EXTENSION IF NOT EXISTS pgtap;
SET client_min_messages = warning;
SET storlab.suite_file_size = '16MB';
-- a fresh suite to read (only missing or day-old figures are probed)
SELECT count(*) > 0 AS measured FROM storlab.compare_tablespaces(duration => '100 ms') \gset
-- and a profile at two worker counts and two depths (what the profile and
-- depths charts draw)
SELECT count(*) > 0 AS profiled FROM storlab.profile('pg_default', '100 ms', '{1,2}', '{1,8}') \gset

BEGIN;
SELECT plan(12);

-- the history: the fresh suite's rows copied 200 000 times over the five
-- years before it, and 20 000 finished bench jobs
CREATE FUNCTION pg_temp.columns(t regclass, skip text[]) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
   WHERE attrelid = t AND attnum > 0 AND NOT attisdropped AND NOT attname = ANY (skip) $$;
-- (each copy of a suite call is a call of its own, as each call of the
-- past was)
DO $$
DECLARE fresh bigint := (SELECT count(*) FROM storlab.probes);
        cols text := pg_temp.columns('storlab.probes', '{id,started_at,suite_call}');
BEGIN
  EXECUTE format('INSERT INTO storlab.probes (%s, started_at, suite_call)
                  SELECT %s, p.started_at - make_interval(days => 2) - g * make_interval(years => 5) / 200000,
                         md5(p.suite_call::text || g)::uuid
                    FROM storlab.probes p, generate_series(1, ceil(200000.0 / %s)::int) g', cols, cols, fresh);
END $$;
INSERT INTO storlab.job_records (kind, status, args, created_at, started_at, finished_at)
SELECT 'bench', 'done', '{}', now() - g * interval '1 hour', now() - g * interval '1 hour', now() - g * interval '1 hour'
  FROM generate_series(1, 20000) g;
ANALYZE storlab.probes;
ANALYZE storlab.job_records;
SELECT cmp_ok((SELECT count(*) FROM storlab.probes), '>=', 200000::bigint, 'at least 200 000 probes stored');

-- What one statement read from a table in this transaction: sequential
-- scans, and rows read by them or fetched through an index.
CREATE FUNCTION pg_temp.reads(t regclass) RETURNS TABLE (seq_scans bigint, rows_read bigint) LANGUAGE sql AS $$
  SELECT coalesce(seq_scan, 0), coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)
    FROM pg_stat_xact_user_tables WHERE relid = t $$;
CREATE FUNCTION pg_temp.read_by(q text, t regclass DEFAULT 'storlab.probes') RETURNS TABLE (seq_scans bigint, rows_read bigint)
LANGUAGE plpgsql AS $$
DECLARE before record; n bigint;
BEGIN
  SELECT * INTO before FROM pg_temp.reads(t);
  -- every column of every row, as a client would be sent it
  EXECUTE format('SELECT count(*) FROM (%s) q WHERE length(q::text) >= 0', q) INTO n;
  RETURN QUERY SELECT r.seq_scans - before.seq_scans, r.rows_read - before.rows_read FROM pg_temp.reads(t) r;
END $$;

-- Each reader's reads, in a table of its own (one test per row below).
CREATE TEMP TABLE read (reader text, seq_scans bigint, rows_read bigint);
INSERT INTO read SELECT 'compare_tablespaces()', * FROM pg_temp.read_by('SELECT * FROM storlab.compare_tablespaces()');
INSERT INTO read SELECT 'recommend()', * FROM pg_temp.read_by('SELECT * FROM storlab.recommend()');
INSERT INTO read SELECT 'chart_svg() of the newest figures', sum(r.seq_scans), sum(r.rows_read)
  FROM unnest('{tablespaces,profile,depths}'::text[]) k, pg_temp.read_by(format('SELECT storlab.chart_svg(%L)', k)) r;
-- check() reuses young probes (under a minute old), or measures
INSERT INTO read SELECT 'check()', *
  FROM pg_temp.read_by($$SELECT * FROM storlab.check('pg_default', 'randread', 'iops', '>', 0, '100 ms', 2)$$);

-- the readers of the newest probes: no sequential scan of storlab.probes,
-- and at most 5 000 of its 200 000 rows (a few per group of figures)
SELECT diag(format('%s: %s sequential scans, %s rows read', reader, seq_scans, rows_read)) FROM read ORDER BY reader;
SELECT is(seq_scans, 0::bigint, reader || ' scans no history') FROM read ORDER BY reader;
SELECT cmp_ok(rows_read, '<', 5000::bigint, reader || ' reads a handful of probes') FROM read ORDER BY reader;

-- the jobs view: a filter on status or id reads only those jobs
SELECT is(seq_scans, 0::bigint, 'the unfinished jobs are read without scanning every job')
  FROM pg_temp.read_by($$SELECT * FROM storlab.jobs WHERE status IN ('queued', 'running', 'cancelling')$$, 'storlab.job_records');
SELECT cmp_ok(rows_read, '<', 10::bigint, 'one job is read by its id')
  FROM pg_temp.read_by('SELECT * FROM storlab.jobs WHERE id = (SELECT min(id) FROM storlab.job_records)', 'storlab.job_records');
SELECT cmp_ok(rows_read, '<', 100::bigint, 'job_status() reads its job and the unfinished ones')
  FROM pg_temp.read_by('SELECT * FROM storlab.job_status((SELECT min(id) FROM storlab.job_records))', 'storlab.job_records');

SELECT * FROM finish();
ROLLBACK;
