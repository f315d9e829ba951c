--
-- sync_every: writes synced every N writes, or once at the end. A classic
-- reading of random writes (iozone -e) writes 8 kB records through the page
-- cache and calls fsync once, at the end of the file, with the flush inside
-- the time its KB/s is computed over. storlab.probe(..., sync_every => 0)
-- measures that: each op is one write, each worker calls fsync after its
-- last write, and duration_s, iops and mib_s hold that flush. A probe whose
-- every write is followed by fsync (sync_method => 'fsync', sync_every
-- NULL: one op is one commit) is another measurement, and is stored as one.
-- Figures vary from machine to machine: this file shows what is stored and
-- checked (docs/probe.md: real ones).
--

-- The same tablespace, the same 8 kB random writes through the page cache,
-- synced once at the end and after every write:
CREATE TEMP TABLE synced AS
SELECT v.way, p.*
  FROM (VALUES ('once at the end', 0, NULL), ('after every write', NULL, 'fsync')) AS v(way, sync_every, sync_method),
       LATERAL storlab.probe('lab_disk', 'randwrite', duration => '100 ms', file_size => 4 * 1024 * 1024,
                             direct => false, sync_method => v.sync_method, sync_every => v.sync_every,
                             label => 'regress sync_every') AS p;
-- sync_every => 0 calls fsync, as iozone -e does. Each op is one write: the
-- histogram holds the writes, and sync_s the time spent in the fsync, which
-- lies inside duration_s (the writes ran for the asked 100 ms, then the
-- flush): iops and mib_s are the writes over the writes' and the flush's
-- time, as iozone -e's KB/s. With a sync after every write, one op is a
-- write and its fsync, timed together, and no sync time stands apart.
SELECT way, workload, sync_method, sync_every, ops > 0 AS measured,
       bytes = ops * block_size AS each_op_one_write,
       (SELECT samples FROM storlab.probe_latency(ARRAY[id], '{50}')) = ops AS histogram_holds_each_op,
       sync_s > 0 AS sync_timed, duration_s >= 0.1 + coalesce(sync_s, 0) AS duration_holds_writes_and_sync,
       abs(iops - ops / duration_s) < 1e-6 * iops AS iops_over_that_duration
  FROM synced ORDER BY id;
-- The throughput samples taken while the writes ran do not say how precise
-- writes and flush together are: a probe synced once at the end stores no
-- iops_ci95_pct (and takes no precision_pct, below).
SELECT iops_ci95_pct FROM synced WHERE sync_every = 0;

-- sync_every => N syncs each worker's writes after every N-th of them and
-- after its last; sync_method may ask for fdatasync instead of fsync.
SELECT workload, sync_method, sync_every, ops > 0 AS measured, sync_s > 0 AS sync_timed
  FROM storlab.probe('lab_disk', 'seqwrite', 131072, '100 ms', 2, 4 * 1024 * 1024, false,
                     sync_method => 'fdatasync', sync_every => 16, label => 'regress sync_every');

-- NULL, the default, is every probe before it: sync_method decides, and
-- a randwrite without one syncs nothing.
SELECT workload, sync_method, sync_every, sync_s
  FROM storlab.probe('lab_ram', 'randwrite', duration => '50 ms', file_size => 1024 * 1024, direct => false,
                     sync_every => NULL);

-- The two ways are never one distribution: probe_latency() refuses to merge
-- them (22023), naming sync_every (ids shown as N).
\set ECHO none
\i sql/lib/helpers.sql
\set ECHO all
SELECT regexp_replace(pg_temp.error_of(format('storlab.probe_latency(%L)', (SELECT array_agg(id ORDER BY id) FROM synced))),
                      '\d+(?=[,)]| and )', 'N', 'g') AS error;

-- Bad input: a clear error (22023) with what is allowed, and nothing
-- stored or left behind.
SELECT count(*) AS probes_before FROM storlab.probes \gset
SELECT call, pg_temp.error_of(call) AS error FROM (VALUES
  ($$storlab.probe('lab_ram', 'randwrite', sync_every => -1)$$),
  ($$storlab.probe('lab_ram', 'randread', sync_every => 0)$$),
  ($$storlab.probe('lab_ram', 'wal', sync_every => 0)$$),
  ($$storlab.probe('lab_ram', 'randwrite', sync_method => 'none', sync_every => 0)$$),
  ($$storlab.probe('lab_ram', 'randwrite', sync_method => 'open_datasync', sync_every => 4)$$),
  ($$storlab.probe('lab_ram', 'randwrite', iodepth => 8, sync_every => 0)$$),
  ($$storlab.probe('lab_ram', 'randwrite', precision_pct => 5, sync_every => 0)$$)
) AS v(call);
SELECT count(*) - :probes_before AS new_probes FROM storlab.probes;
SELECT count(*) AS scratch_files_left
  FROM storlab.tablespaces() t, pg_ls_dir(t.location || '/pgsql_tmp', true, false) f
 WHERE t.kind = 'tablespace' AND f LIKE 'pgsql_tmp_storlab%';
