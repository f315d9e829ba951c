--
-- Queued probes: one synchronous reader at a time (fio's psync) hides most
-- of what an SSD, a RAID set or a cloud volume can serve at once. iodepth
-- keeps that many requests in flight per worker on the worker's own io_uring,
-- each timed from submission to completion. Figures vary from machine to
-- machine: this file shows what is stored and checked (README: real ones).
--
SET storlab.suite_file_size = '8MB';

-- Depth 1 runs on psync (pread, one at a time) unless engine says
-- otherwise; deeper queues run on io_uring.
SELECT p.workload, p.iodepth, p.engine, p.ops > 0 AS measured,
       p.bytes = p.ops * p.block_size AS bytes_add_up,
       (SELECT samples FROM storlab.probe_latency(ARRAY[p.id], '{50}')) = p.ops AS every_op_timed
  FROM (VALUES (1), (8), (32)) AS v(depth),
       LATERAL storlab.probe('lab_ram', 'randread', duration => '200 ms', file_size => 8 * 1024 * 1024,
                             iodepth => v.depth) AS p
 ORDER BY p.id;

-- Writes queue too, and io_uring can be asked for at depth 1 (to compare
-- the engines on the same volume).
SELECT workload, iodepth, engine, ops > 0 AS measured
  FROM storlab.probe('lab_ram', 'randwrite', duration => '200 ms', file_size => 8 * 1024 * 1024, iodepth => 16);
SELECT workload, iodepth, engine, ops > 0 AS measured
  FROM storlab.probe('lab_ram', 'seqread', 131072, '200 ms', file_size => 8 * 1024 * 1024, engine => 'io_uring');

-- Every probe samples its throughput every 100 ms and stores how precise
-- its mean IOPS is (iops_ci95_pct: the half-width of the 95 % confidence
-- interval, in percent). With precision_pct a probe stops once it is that
-- precise and its p99 has settled (after 0.5 s at least); duration is then
-- the upper bound. Page-cache reads of a small file are steady: this one
-- stops long before its 20 s.
SELECT precision_pct, iops_ci95_pct <= precision_pct AS precise_enough,
       duration_s >= 0.5 AS ran_the_minimum, duration_s < 20 AS stopped_early
  FROM storlab.probe('lab_ram', 'randread', duration => '20 s', file_size => 8 * 1024 * 1024,
                     direct => false, precision_pct => 10);
-- Without it the probe runs its whole duration, and still says how precise it was.
SELECT precision_pct, iops_ci95_pct > 0 AS precision_known, duration_s >= 0.3 AS whole_duration
  FROM storlab.probe('lab_ram', 'randread', duration => '300 ms', file_size => 8 * 1024 * 1024, direct => false);

-- profile(iodepths): the suite at each depth (a WAL commit waits for its
-- fdatasync, so it runs at depth 1 only), plus the standard suite's queued
-- randread at depth 32. (Its NOTICE's time bound depends on the storage.)
SET client_min_messages = warning;
SELECT workload, block_size, iodepth, engine, ops > 0 AS measured
  FROM storlab.profile('lab_ram', '100 ms', iodepths => '{1,4}') ORDER BY id;
RESET client_min_messages;

-- compare_tablespaces shows the queued randread beside the single reader's.
SET client_min_messages = warning;
SELECT tablespace, randread_iops > 0 AS one_reader, randread_iops_qd32 > 0 AS queued_32
  FROM storlab.compare_tablespaces(duration => '100 ms')
 WHERE tablespace IN ('lab_ram', 'pg_wal') ORDER BY tablespace;
RESET client_min_messages;

-- Bad input: 22023, and nothing stored.
-- pg_temp.error_of(call): what a call raises, as 'SQLSTATE: message' (sql/lib/helpers.sql)
\set ECHO none
\i sql/lib/helpers.sql
\set ECHO all
SELECT count(*) AS probes_before FROM storlab.probes \gset
SELECT call, pg_temp.error_of(call) AS error FROM (VALUES
  ($$storlab.probe('lab_ram', iodepth => 0)$$),
  ($$storlab.probe('lab_ram', iodepth => 257)$$),
  ($$storlab.probe('lab_ram', iodepth => NULL)$$),
  ($$storlab.probe('lab_ram', engine => 'libaio')$$),
  ($$storlab.probe('lab_ram', iodepth => 8, engine => 'psync')$$),
  ($$storlab.probe('lab_ram', 'wal', engine => 'io_uring')$$),
  ($$storlab.probe('lab_ram', 'randwrite', iodepth => 4, sync_method => 'fdatasync')$$),
  ($$storlab.probe('lab_ram', block_size => 1048576, workers => 8, iodepth => 256)$$),
  ($$storlab.probe('lab_ram', precision_pct => 0)$$),
  ($$storlab.probe('lab_ram', precision_pct => 60)$$),
  ($$storlab.profile('lab_ram', iodepths => '{}')$$),
  ($$storlab.profile('lab_ram', iodepths => '{1,300}')$$),
  ($$storlab.profile('lab_ram', precision_pct => -1)$$),
  ($$storlab.compare_tablespaces(precision_pct => 51)$$)
) AS v(call);
SELECT count(*) - :probes_before AS new_probes FROM storlab.probes;
