-- Queued probes: what each worker's io_uring does on the lab's storage, and
-- that cancel at depth 64 drains the queue and leaves no scratch file.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT plan(12);

\ir lib/probe_helpers.sql

-- A queue keeps requests in flight: latency grows with the depth (each
-- request waits behind the others), which a psync probe cannot show.
CREATE TEMP TABLE depths AS
  SELECT v.depth, p.* FROM (VALUES (1), (32)) v(depth),
         LATERAL storlab.probe('lab_disk', 'randread', duration => '1 s', file_size => 64 * 1024 * 1024,
                               iodepth => v.depth) p;
SELECT is((SELECT array_agg(engine ORDER BY depth) FROM depths), '{psync,io_uring}', 'depth 1 runs on psync, depth 32 on io_uring');
SELECT cmp_ok((SELECT lat_mean_us FROM depths WHERE depth = 32), '>', (SELECT lat_mean_us FROM depths WHERE depth = 1),
              'requests queued 32 deep wait longer each than one at a time');
SELECT is((SELECT bool_and(direct) FROM depths), true, 'both with O_DIRECT on the disk');
-- Every completion is timed: the histogram holds every operation.
SELECT is((SELECT samples FROM storlab.probe_latency(ARRAY[(SELECT id FROM depths WHERE depth = 32)], '{50}')),
          (SELECT ops FROM depths WHERE depth = 32), 'a queued probe''s histogram holds every operation');

-- statement_timeout at depth 64 (two workers, 128 writes in flight): the
-- queue is drained before its buffers are freed, the file removed, promptly.
SELECT pg_temp.tick();
SET statement_timeout = '500ms';
SELECT is(pg_temp.sqlstate_of($$SELECT storlab.probe('lab_disk', 'randwrite', duration => '30 s', workers => 2,
                                                     file_size => 16 * 1024 * 1024, iodepth => 64)$$),
          '57014', 'statement_timeout cancels a probe at depth 64 (57014)');
RESET statement_timeout;
SELECT cmp_ok(pg_temp.since_tick(), '<', 1.5, 'and it stopped within 1.5 s');
SELECT is(pg_temp.scratch_files(), 0::bigint, 'no scratch file is left');

-- pg_cancel_backend from another session, at depth 64 on the RAM tablespace.
SELECT dblink_connect('prober', format('host=%s port=%s dbname=%s user=%s',
       current_setting('unix_socket_directories'), current_setting('port'), current_database(), current_user));
CREATE TEMP TABLE prober AS SELECT pid FROM dblink('prober', 'SELECT pg_backend_pid()') AS r(pid int);
SELECT dblink_send_query('prober', $$SELECT storlab.probe('lab_ram', 'randread', duration => '30 s', file_size => 16 * 1024 * 1024, iodepth => 64)$$);
SELECT pg_sleep(0.7);
SELECT pg_temp.tick();
SELECT ok(pg_cancel_backend(pid), 'pg_cancel_backend reaches the probing backend') FROM prober;
SELECT is(pg_temp.sqlstate_of($$SELECT * FROM dblink_get_result('prober') AS r(p text)$$), '57014',
          'the cancelled queued probe fails with 57014');
SELECT cmp_ok(pg_temp.since_tick(), '<', 1.5, 'and stopped within 1.5 s');
SELECT dblink_disconnect('prober');
SELECT is(pg_temp.scratch_files(), 0::bigint, 'no scratch file after the cancel either');

-- With precision_pct, duration is only the upper bound.
SELECT cmp_ok((SELECT duration_s FROM storlab.probe('lab_ram', 'randread', duration => '30 s', file_size => 8 * 1024 * 1024,
                                                    direct => false, precision_pct => 10)),
              '<', 30::float8, 'a probe asked for 10 % stops when it has it, well before its 30 s');

SELECT * FROM finish();
ROLLBACK;
