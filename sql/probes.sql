--
-- Probes: how a tablespace behaves for the I/O PostgreSQL does, measured with
-- a scratch file in the tablespace's own temp folder and stored in
-- storlab.probes. Figures vary from machine to machine, so this file shows
-- what is stored and checked, never the figures themselves (see the README
-- for real ones).
--
CREATE EXTENSION IF NOT EXISTS storlab;
-- Keep the scratch files of the suites small in this test.
SET storlab.suite_file_size = '8MB';

-- storlab.probe(tablespace, workload, block_size, duration, workers,
--               file_size, direct, sync_method, label) measures one workload
-- and returns the stored row. 8 kB random reads on the RAM tablespace:
SELECT tablespace, workload, block_size, workers, sync_method, file_size,
       ops > 0 AS measured,
       iops > 0 AND mib_s > 0 AS rates,
       lat_p50_us <= lat_p90_us AND lat_p90_us <= lat_p99_us AND lat_p99_us <= lat_p999_us
         AND lat_p999_us <= lat_max_us AS percentiles_ordered,
       bytes = ops * block_size AS bytes_add_up,
       length(histogram) > 0 AS has_histogram,
       env->>'fs_type' AS fs_type,
       system_identifier = (SELECT system_identifier FROM pg_control_system()) AS this_server,
       label
  FROM storlab.probe('lab_ram', 'randread', duration => '200 ms', file_size => 8 * 1024 * 1024,
                     direct => false, label => 'regress');

-- A WAL-like probe of the WAL folder's own volume: sequential 8 kB writes,
-- each followed by fdatasync (PostgreSQL's WAL flush on Linux). One op is
-- one commit. The scratch file is removed from pg_wal afterwards.
SELECT tablespace, workload, sync_method, writes_per_sync, ops > 0 AS measured,
       bytes = ops * block_size AS bytes_add_up, env->>'kind' AS kind
  FROM storlab.probe('pg_wal', 'wal', duration => '200 ms', file_size => 1024 * 1024);
SELECT count(*) AS our_files_in_pg_wal FROM pg_ls_waldir() WHERE name LIKE 'pgsql_tmp%';

-- Every call leaves one row, with the storage facts at probe time.
SELECT tablespace, workload, env ? 'mount_point' AS has_facts
  FROM storlab.probes ORDER BY id;

-- Several workers: each has its own descriptor and its own random offsets;
-- their histograms are merged into one.
SELECT workers, ops > 0 AS measured
  FROM storlab.probe('lab_ram', 'randwrite', duration => '200 ms', workers => 4,
                     file_size => 8 * 1024 * 1024, direct => false);

-- storlab.fsync_cost(tablespace, duration): pg_test_fsync's comparison of
-- sync methods, with percentiles; every test is also stored as a probe.
-- (Notices about O_DIRECT fallbacks depend on the kernel: not shown here.)
SET client_min_messages = warning;
SELECT test, method, write_size, writes_per_sync, ops_per_s > 0 AS measured,
       lat_mean_us > 0 AND lat_p99_us > 0 AS has_latency
  FROM storlab.fsync_cost('lab_ram', '50 ms');
RESET client_min_messages;
SELECT count(*) AS stored_fsync_probes FROM storlab.probes WHERE label LIKE 'fsync_cost:%';

-- storlab.profile(tablespace, duration, workers[]): the standard suite at each
-- worker count. A single-process test hides how a volume scales; '{1,2}'
-- shows it. (Its NOTICE, how many probes and how long they may take at
-- most, names a time that depends on the storage: set aside here.)
SET client_min_messages = warning;
SELECT workload, block_size, workers, sync_method, ops > 0 AS measured, label
  FROM storlab.profile('lab_ram', '100 ms', '{1,2}') ORDER BY id;
RESET client_min_messages;

-- storlab.compare_tablespaces(max_age, duration, precision_pct,
-- min_repetitions, max_repetitions, measure): every tablespace and pg_wal
-- side by side. Tablespaces on one filesystem are one volume, measured once.
-- A volume without a complete suite call younger than max_age is measured
-- first: the whole suite min_repetitions times (2), then the ranked figures
-- again where less precise than precision_pct or tied, up to
-- max_repetitions (4; here 2, to keep the test short). A NOTICE names the
-- volumes and the most it may take (hidden here: the lab's tablespaces
-- differ with and without root).
SET client_min_messages = warning;
CREATE TEMP TABLE cmp AS SELECT * FROM storlab.compare_tablespaces(duration => '100 ms', max_repetitions => 2);
RESET client_min_messages;
SELECT c.tablespace, c.fs_type = t.fs_type AS fs_type_as_in_tablespaces,
       randread_p99_us > 0 AND wal_commit_p99_us > 0 AND seqread_mib_s > 0 AS measured,
       probed_at IS NOT NULL AS dated, same_volume_as, repetitions BETWEEN 2 AND 4 AS repeated
  FROM cmp c JOIN storlab.tablespaces() t USING (tablespace)
 WHERE c.tablespace IN ('pg_default', 'lab_ram', 'lab_disk', 'pg_wal') ORDER BY c.tablespace;
-- One volume, one answer: pg_default, lab_disk and pg_wal are one
-- filesystem in the lab, so they show one set of figures, ratios and roles,
-- from one suite call.
SELECT count(DISTINCT (randread_p99_us, wal_commit_p99_us, seqwrite_mib_s, randread_vs_best,
                       wal_commit_vs_best, best_for, tied_for, suite_call)) AS answers
  FROM cmp WHERE tablespace IN ('pg_default', 'lab_disk', 'pg_wal');
-- Each figure is the mean of the call's repetitions; every ranked one has
-- the half-width of its 95 % interval, in percent of it.
SELECT bool_and(randread_p99_ci95_pct > 0 AND wal_commit_p99_ci95_pct > 0
                AND seqwrite_ci95_pct > 0 AND seqread_ci95_pct > 0) AS every_ranked_figure_has_its_interval
  FROM cmp;
-- A role goes to a volume only when Welch's test says its figure beats
-- every other candidate's (two-sided, 0.05). Otherwise no one has it, and
-- the volumes that cannot be told from the leader tie for it, each with a
-- caveat naming the others and the test. So each role has one winner or a
-- tie of two volumes or more, never both.
SELECT role,
       (winners = 1 AND tied = 0) OR (winners = 0 AND tied >= 2) AS one_winner_or_a_tie
  FROM (SELECT role,
               count(DISTINCT coalesce(same_volume_as, tablespace)) FILTER (WHERE role = ANY (best_for)) AS winners,
               count(DISTINCT coalesce(same_volume_as, tablespace)) FILTER (WHERE role = ANY (tied_for)) AS tied
          FROM cmp, unnest(ARRAY['wal', 'indexes', 'bulk']) role GROUP BY role) r
 ORDER BY role;
SELECT bool_and(EXISTS (SELECT FROM unnest(caveats) c WHERE c LIKE tie || ': a tie, no one is best: %'))
         AS every_tie_explained
  FROM cmp, unnest(tied_for) tie;
-- The lab's RAM tablespace has the fastest WAL commits, yet it is volatile
-- (tmpfs loses everything at a reboot): it wins no role and ties for none,
-- and the ratios are to the best durable tablespace, so the advice is one a
-- DBA can follow.
SELECT volatile, best_for, tied_for, wal_commit_vs_best < 1 AS faster_than_the_best_durable
  FROM cmp WHERE tablespace = 'lab_ram';
SELECT bool_and(NOT volatile) FILTER (WHERE best_for <> '{}' OR tied_for <> '{}') AS roles_go_to_durable_storage
  FROM cmp;

-- Called again within max_age, it probes nothing and reuses the stored
-- figures. Only probes of the standard suite count: a newer single probe()
-- (here buffered reads, served by the page cache) never stands in for them.
SELECT ops > 0 AS measured
  FROM storlab.probe('lab_disk', 'randread', duration => '100 ms', file_size => 8 * 1024 * 1024, direct => false);
SELECT count(*) AS probes_before FROM storlab.probes \gset
CREATE TEMP TABLE cmp2 AS SELECT * FROM storlab.compare_tablespaces(duration => '100 ms');
SELECT count(*) - :probes_before AS new_probes FROM storlab.probes;
SELECT c2.randread_p99_us = c.randread_p99_us AS same_randread_figure, c2.suite_call = c.suite_call AS same_call
  FROM cmp c JOIN cmp2 c2 USING (tablespace) WHERE tablespace = 'lab_disk';
-- measure => false ranks what is stored and measures nothing, in a
-- read-only transaction too: pg_monitor may call it so.
BEGIN READ ONLY;
SELECT count(*) AS rows, count(*) FILTER (WHERE repetitions >= 2) AS ranked
  FROM storlab.compare_tablespaces(measure => false);
COMMIT;

-- Bad input: a clear error with its SQLSTATE, and nothing left behind.
-- pg_temp.error_of(call): what a call raises, as 'SQLSTATE: message' (sql/lib/helpers.sql)
\set ECHO none
\i sql/lib/helpers.sql
\set ECHO all
SELECT count(*) AS probes_before FROM storlab.probes \gset
SELECT call, pg_temp.error_of(call) AS error FROM (VALUES
  ($$storlab.probe('no_such_tablespace')$$),
  ($$storlab.probe('pg_global')$$),
  ($$storlab.probe(NULL)$$),
  ($$storlab.probe('lab_ram', 'scan')$$),
  ($$storlab.probe('lab_ram', block_size => 1000)$$),
  ($$storlab.probe('lab_ram', block_size => 2097152)$$),
  ($$storlab.probe('lab_ram', duration => '0 s')$$),
  ($$storlab.probe('lab_ram', duration => '1 microsecond')$$),
  ($$storlab.profile('lab_ram', duration => '5 ms')$$),
  ($$storlab.probe('lab_ram', duration => '1 hour')$$),
  ($$storlab.probe('lab_ram', workers => 0)$$),
  ($$storlab.probe('lab_ram', workers => 65)$$),
  ($$storlab.probe('lab_ram', file_size => 4096)$$),
  ($$storlab.probe('lab_ram', 'wal', sync_method => 'sometimes')$$),
  ($$storlab.probe('lab_ram', 'randread', sync_method => 'fsync')$$),
  ($$storlab.fsync_cost('no_such_tablespace')$$),
  ($$storlab.profile('lab_ram', workers => '{1,0}')$$),
  ($$storlab.profile('lab_ram', workers => '{}')$$),
  ($$storlab.compare_tablespaces(max_age => '-1 day')$$),
  ($$storlab.compare_tablespaces(min_repetitions => 1)$$),
  ($$storlab.compare_tablespaces(min_repetitions => 3, max_repetitions => 2)$$),
  ($$storlab.compare_tablespaces(measure => NULL)$$)
) AS v(call);
-- A call that may take longer than statement_timeout is refused before it
-- measures anything (54000), with the most it may take and the ways out.
SET statement_timeout = '2s';
SELECT count(*) AS probes_before FROM storlab.probes \gset
SELECT regexp_replace(pg_temp.error_of($$storlab.compare_tablespaces(max_age => '1 microsecond')$$),
                      '(\d+ min \d+ s|\d+ min|\d+ s|\d+s)\M', 'N', 'g') AS error;
RESET statement_timeout;
SELECT count(*) - :probes_before AS new_probes FROM storlab.probes;
-- Before writing, the free space is checked: file_size plus
-- storlab.min_free_bytes must fit, else 53100 and nothing is written.
SELECT pg_temp.error_of($$storlab.probe('lab_ram', 'randwrite', duration => '1 s', file_size => (1024 ^ 5)::bigint)$$) AS error;
SET storlab.min_free_bytes = '1GB';
SELECT pg_temp.error_of(format($$storlab.probe('lab_ram', 'randwrite', duration => '1 s', file_size => %s)$$,
       (SELECT free_bytes - 512 * 1024 * 1024 FROM storlab.tablespaces() WHERE tablespace = 'lab_ram'))) AS error;
RESET storlab.min_free_bytes;
SELECT count(*) AS scratch_files_left
  FROM storlab.tablespaces() t, pg_ls_dir(t.location || '/pgsql_tmp', true, false) f
 WHERE t.kind = 'tablespace' AND f LIKE 'pgsql_tmp_storlab%';

-- DROP TABLESPACE still succeeds after a probe: scratch files never go into
-- a database folder.
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE regress_probe_ts LOCATION '';
SELECT tablespace, ops > 0 AS measured
  FROM storlab.probe('regress_probe_ts', 'randwrite', duration => '100 ms', file_size => 1024 * 1024, direct => false);
DROP TABLESPACE regress_probe_ts;

-- storlab.probe_latency(probe_ids, percentiles): the stored HDR histograms
-- of several probes merged, read as one distribution (the p99 of every
-- operation together, not an average of p99s). Here: the first probe of
-- this file and one more like it (8 kB random reads on lab_ram, one
-- worker, through the page cache).
SELECT ops > 0 AS measured
  FROM storlab.probe('lab_ram', 'randread', duration => '200 ms', file_size => 8 * 1024 * 1024, direct => false);
SELECT array_agg(id) AS randread_ids, sum(ops) AS randread_ops, count(*) AS probes
  FROM storlab.probes WHERE tablespace = 'lab_ram' AND workload = 'randread' AND workers = 1 AND NOT direct \gset
SELECT :probes AS probes_merged;
SELECT percentile, lat_us > 0 AS measured, samples = :randread_ops AS every_op_counted
  FROM storlab.probe_latency(:'randread_ids', '{50,99,99.9}');
SELECT bool_and(lat_us >= coalesce(prev, 0)) AS percentiles_ordered
  FROM (SELECT lat_us, lag(lat_us) OVER (ORDER BY percentile) AS prev FROM storlab.probe_latency(:'randread_ids')) l;
SELECT call, pg_temp.error_of(call) AS error FROM (VALUES
  ($$storlab.probe_latency('{}')$$),
  ($$storlab.probe_latency('{-1}')$$),
  ($$storlab.probe_latency(NULL)$$),
  ($$storlab.probe_latency(ARRAY[(SELECT min(id) FROM storlab.probes)], '{0}')$$),
  ($$storlab.probe_latency(ARRAY[(SELECT min(id) FROM storlab.probes)], '{50,101}')$$),
  ($$storlab.probe_latency(ARRAY[(SELECT min(id) FROM storlab.probes)], '{50,NULL}')$$)
) AS v(call);
-- Only probes measured alike are merged: the randread probes on lab_ram
-- (profile's at 1 and 2 workers and at queue depth 32 through io_uring,
-- and those two through the page cache) is no one distribution, and is
-- refused (22023), naming what differs and whose it is (ids shown as N).
SELECT regexp_replace(pg_temp.error_of(format('storlab.probe_latency(%L)',
         (SELECT array_agg(id ORDER BY id) FROM storlab.probes
           WHERE tablespace = 'lab_ram' AND workload = 'randread' AND label IS DISTINCT FROM 'compare_tablespaces')))
       , '\d+(?=[,)]| and )', 'N', 'g') AS error;

-- Probing writes files: not for PUBLIC. The stored results are readable by pg_monitor.
CREATE ROLE regress_probe_nobody;
SET ROLE regress_probe_nobody;
SELECT pg_temp.error_of($$storlab.probe('lab_ram')$$) AS error;
SELECT pg_temp.error_of($$storlab.compare_tablespaces()$$) AS error;
RESET ROLE;
DROP ROLE regress_probe_nobody;
SELECT has_table_privilege('pg_monitor', 'storlab.probes', 'SELECT') AS monitor_reads_results,
       has_function_privilege('pg_monitor', 'storlab.probe_latency(bigint[], float8[])', 'EXECUTE') AS monitor_merges;

-- A probe stores its figures: in a read-only transaction (BEGIN READ ONLY,
-- default_transaction_read_only) it is refused at the call (25006), before
-- it measures anything or waits for another session's probe of the same
-- device. (On a hot standby the probes measure that server's own storage
-- and return the figures unstored: docs/safety.md, "On a standby".)
BEGIN READ ONLY;
SELECT storlab.probe('lab_ram', duration => '2 s');
ROLLBACK;
-- Reports only read: a monitoring job polling them assigns no transaction
-- id and writes no commit record.
BEGIN;
SELECT count(*) > 0 AS tablespaces_listed FROM storlab.tablespaces();
SELECT count(*) > 0 AS advice_given FROM storlab.recommend();
SELECT count(*) > 0 AS latency_read FROM storlab.probe_latency(:'randread_ids');
SELECT pg_current_xact_id_if_assigned() AS transaction_id;
COMMIT;
