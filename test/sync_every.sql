-- probe()'s sync_every: writes synced every N writes, or once after the
-- last (iozone -e), stored as such and never pooled or compared with
-- probes whose every write is a commit. Everything here is rolled back.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SET LOCAL client_min_messages = warning;
SELECT plan(31);

\ir lib/probe_helpers.sql

-- The call: a thirteenth argument, by name or by position.
SELECT has_function('storlab', 'probe',
  ARRAY['name', 'text', 'integer', 'interval', 'integer', 'bigint', 'boolean', 'text', 'text', 'integer', 'text', 'real', 'integer'],
  'probe() takes sync_every as its thirteenth argument');
SELECT hasnt_function('storlab', 'probe',
  ARRAY['name', 'text', 'integer', 'interval', 'integer', 'bigint', 'boolean', 'text', 'text', 'integer', 'text', 'real'],
  'and the twelve-argument probe() of 0.11.0 is gone');
SELECT is((SELECT sync_every FROM storlab.probe('lab_ram', 'randwrite', 8192, '50 ms', 1, 1048576, false,
                                                NULL, NULL, 1, NULL, NULL, 4)),
          4, 'sync_every given by position');

-- iozone -e on the disk: buffered 8 kB random writes, one fsync at the end.
CREATE TEMP TABLE once AS
  SELECT * FROM storlab.probe('lab_disk', 'randwrite', duration => '100 ms', file_size => 4 * 1024 * 1024,
                              direct => false, sync_every => 0);
SELECT is((SELECT concat_ws(' ', sync_method, sync_every) FROM once), 'fsync 0',
          'sync_every => 0 syncs with fsync, as iozone -e, and is stored');
SELECT ok((SELECT sync_s > 0 AND duration_s >= 0.1 + sync_s FROM once),
          'its one fsync is timed (sync_s) and inside duration_s, after the asked 100 ms of writes');
SELECT ok((SELECT abs(iops - ops / duration_s) < 1e-6 * iops AND abs(mib_s - bytes / 1048576.0 / duration_s) < 1e-6 * mib_s FROM once),
          'iops and mib_s are the writes over the writes'' and the flush''s time');
SELECT is((SELECT samples FROM storlab.probe_latency(ARRAY[(SELECT id FROM once)], '{50}')), (SELECT ops FROM once),
          'the histogram holds each write, the flush apart');
SELECT is((SELECT iops_ci95_pct FROM once), NULL, 'no precision from samples that never saw the flush');
-- the same writes, each followed by fsync (one op, one commit)
CREATE TEMP TABLE each AS
  SELECT * FROM storlab.probe('lab_disk', 'randwrite', duration => '100 ms', file_size => 4 * 1024 * 1024,
                              direct => false, sync_method => 'fsync');
SELECT is((SELECT concat_ws(' ', sync_method, coalesce(sync_every::text, 'NULL'), coalesce(sync_s::text, 'NULL')) FROM each), 'fsync NULL NULL',
          'a sync after every write stores sync_every NULL and no sync_s, as before');
SELECT cmp_ok((SELECT ops FROM once), '>', (SELECT ops FROM each),
              'writes synced once at the end outnumber writes each synced, in the same time on the same disk');

-- sync_every => N: fdatasync if sync_method says so, every N writes of each worker
CREATE TEMP TABLE every16 AS
  SELECT * FROM storlab.probe('lab_disk', 'seqwrite', 131072, '100 ms', 2, 4 * 1024 * 1024, false,
                              sync_method => 'fdatasync', sync_every => 16);
SELECT is((SELECT concat_ws(' ', sync_method, sync_every, workers) FROM every16), 'fdatasync 16 2',
          'sync_every => 16 with fdatasync, two workers');
SELECT ok((SELECT sync_s > 0 FROM every16), 'its syncs are timed');

-- NULL is today's probe: sync_method decides
SELECT is((SELECT concat_ws(' ', sync_method, coalesce(sync_every::text, 'NULL'), coalesce(sync_s::text, 'NULL'))
              FROM storlab.probe('lab_ram', 'randwrite', duration => '50 ms', file_size => 1048576, direct => false,
                                 sync_every => NULL)),
          'none NULL NULL', 'sync_every NULL: a randwrite without sync_method syncs nothing');
SELECT is((SELECT concat_ws(' ', sync_method, coalesce(sync_every::text, 'NULL'))
              FROM storlab.probe('lab_ram', 'wal', duration => '50 ms', file_size => 1048576)),
          'fdatasync NULL', 'and wal commits with fdatasync, as before');

-- Bad input: 22023, nothing stored, nothing left behind
SELECT count(*) AS probes_before FROM storlab.probes \gset
SELECT throws_like($$SELECT storlab.probe('lab_ram', 'randwrite', sync_every => -1)$$,
                   'sync_every must be NULL (each write synced as sync_method says), 0 %not -1', 'a negative sync_every is refused');
SELECT throws_ok($$SELECT storlab.probe('lab_ram', 'randwrite', sync_every => -2147483648)$$, '22023', NULL,
                 'however negative');
SELECT throws_like($$SELECT storlab.probe('lab_ram', 'wal', sync_every => 0)$$,
                   '%wal syncs every commit (sync_method), which a sync every N writes would contradict%',
                   'wal: a commit per write, which sync_every would contradict');
SELECT throws_ok($$SELECT storlab.probe('lab_ram', 'randread', sync_every => 0)$$, '22023',
                 'sync_every applies to randwrite and seqwrite only; randread reads', 'a read workload has nothing to sync');
SELECT throws_ok($$SELECT storlab.probe('lab_ram', 'seqread', sync_every => 8)$$, '22023',
                 'sync_every applies to randwrite and seqwrite only; seqread reads', 'seqread neither');
SELECT throws_like($$SELECT storlab.probe('lab_ram', 'randwrite', sync_method => 'none', sync_every => 0)$$,
                   '% not none: none makes no sync', 'sync_method none contradicts a sync');
SELECT throws_like($$SELECT storlab.probe('lab_ram', 'seqwrite', sync_method => 'open_sync', sync_every => 0)$$,
                   '% not open_sync: it syncs every write as the write is made', 'open_sync syncs every write already');
SELECT throws_like($$SELECT storlab.probe('lab_ram', 'randwrite', engine => 'io_uring', sync_every => 0)$$,
                   'sync_every runs on engine psync at iodepth 1%', 'io_uring is refused');
SELECT throws_like($$SELECT storlab.probe('lab_ram', 'randwrite', precision_pct => 5, sync_every => 0)$$,
                   'precision_pct stops a probe %', 'a precision stop with one sync after the last sample is refused');
SELECT is((SELECT count(*) FROM storlab.probes), :'probes_before'::bigint, 'no refused call stored anything');
SELECT is(pg_temp.scratch_files(), 0::bigint, 'nor left a scratch file');

-- What a role and a collector read carries it too; the suites never set it.
SELECT ok((SELECT bool_and(has) FROM (
             SELECT EXISTS (SELECT FROM pg_attribute WHERE attrelid = t AND attname = c AND NOT attisdropped) AS has
               FROM unnest('{storlab.own_probes,storlab.fleet_probes}'::regclass[]) t, unnest('{sync_every,sync_s}'::name[]) c) x),
          'own_probes and the fleet''s copies have sync_every and sync_s');
SELECT throws_ok(format($$INSERT INTO storlab.probes (tablespace, location, workload, block_size, workers, direct, sync_method,
                                                      file_size, duration_s, ops, bytes, iops, mib_s, histogram, env,
                                                      system_identifier, hostname, started_at, suite, sync_every)
                          SELECT tablespace, location, workload, block_size, workers, direct, sync_method, file_size,
                                 duration_s, ops, bytes, iops, mib_s, histogram, env, system_identifier, hostname,
                                 started_at, 'standard', 0 FROM storlab.probes WHERE id = %s$$, (SELECT id FROM once)),
                 '23514', NULL, 'a suite''s probe cannot carry sync_every: the suites'' readers see NULL only');

-- probe_latency() merges only probes synced alike
SELECT throws_like(format('SELECT * FROM storlab.probe_latency(%L)', ARRAY[(SELECT id FROM once), (SELECT id FROM each)]),
                   '%differ in sync_every: 0 (probe %), NULL (probe %)', 'a probe synced once is not merged with one synced every write');
CREATE TEMP TABLE once_again AS
  SELECT * FROM storlab.probe('lab_disk', 'randwrite', duration => '100 ms', file_size => 4 * 1024 * 1024,
                              direct => false, sync_every => 0);
SELECT is((SELECT max(samples) FROM storlab.probe_latency(ARRAY[(SELECT id FROM once), (SELECT id FROM once_again)])),
          (SELECT sum(ops) FROM (SELECT ops FROM once UNION ALL SELECT ops FROM once_again) o)::bigint,
          'two probes synced once at the end merge');

-- recommend() prices temp files from repeated sequential probes of one
-- worker (probe()'s too): a seqwrite synced every N writes is not one of
-- them. lab_ram's repeats here: three plain pairs, then three seqwrites
-- synced once at the end, newer and far slower. (Experiments set aside:
-- their verdict would speak first.)
SET LOCAL temp_tablespaces = '';
UPDATE storlab.job_records SET status = 'failed' WHERE kind = 'experiment' AND status = 'done';
-- (every probe, and what refers to them: baselines other files left)
TRUNCATE storlab.probes CASCADE;
CREATE TEMP TABLE figs (tablespace name, workload text, mib_s float8, suite text, sync_every int, label text, age int);
INSERT INTO figs
SELECT 'pg_default', w, 100, 'standard', NULL::int, 'suite', 0 FROM unnest('{seqread,seqwrite}'::text[]) w
UNION ALL SELECT 'lab_ram', w, 1000, 'standard', NULL, 'suite', 0 FROM unnest('{seqread,seqwrite}'::text[]) w
UNION ALL SELECT 'lab_ram', w, 950 + a, NULL, NULL::int, 'repeat', 10 + a FROM unnest('{seqread,seqwrite}'::text[]) w, generate_series(1, 3) a
UNION ALL SELECT 'lab_ram', 'seqwrite', 50 + a, NULL, 0, 'repeat', a FROM generate_series(1, 3) a;
INSERT INTO storlab.probes (tablespace, location, workload, block_size, workers, direct, sync_method, file_size,
                            duration_s, ops, bytes, iops, mib_s, lat_mean_us, lat_p50_us, lat_p99_us, histogram, env,
                            label, system_identifier, hostname, started_at, suite, sync_every, sync_s)
SELECT tablespace, '/srv/' || tablespace, workload, 131072, 1, true, CASE WHEN sync_every IS NULL THEN 'none' ELSE 'fsync' END,
       67108864, 1, mib_s * 8, (mib_s * 1048576)::bigint, mib_s * 8, mib_s, 100, 100, 200, '\x',
       jsonb_build_object('fs_type', 'ext4', 'device', '/dev/vd_' || tablespace, 'mount_point', '/srv/' || tablespace),
       label, 0, 'sync_every test', now() - age * interval '1 minute', suite, sync_every,
       CASE WHEN sync_every IS NOT NULL THEN 0.5 END
  FROM figs;
CREATE TEMP TABLE advice AS SELECT * FROM storlab.recommend();
SELECT set_eq($$SELECT p.id FROM advice a, jsonb_array_elements_text(a.evidence -> 'probes') e(id)
                  JOIN storlab.probes p ON p.id = e.id::bigint
                 WHERE a.topic = 'temp' AND p.workload = 'seqwrite'$$,
              $$SELECT id FROM storlab.probes WHERE tablespace = 'lab_ram' AND workload = 'seqwrite' AND sync_every IS NULL$$,
              'recommend()''s temp advice rests on lab_ram''s seqwrites without sync_every (the suite''s and the plain repeats)');
SELECT is((SELECT count(*) FROM advice a,
                  LATERAL (SELECT jsonb_path_query(a.evidence, 'strict $.**.probes[*]')
                           UNION ALL SELECT jsonb_path_query(a.evidence, 'strict $.**.current_probes[*]')) e(id)
            WHERE e.id::text::bigint IN (SELECT id FROM storlab.probes WHERE sync_every IS NOT NULL)),
          0::bigint, 'no advice cites a probe synced every N writes');

SELECT * FROM finish();
ROLLBACK;
