-- Experiments: refusals with their SQLSTATE before anything runs; one real
-- short experiment end to end (2 layouts, 2 repetitions, 1 s runs):
-- progress visible from here, cancel, a move that times out behind a lock
-- (the experiment fails with that error and says where the relations are),
-- resume to the end, and a report whose figures are the stored runs'.
-- No BEGIN: the job's worker sees only what is committed.
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT plan(83);

-- Waits (up to 60 s) until a job is done, failed or cancelled; its status.
CREATE FUNCTION pg_temp.final_status(job bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE s text;
BEGIN
  FOR i IN 1 .. 600 LOOP
    SELECT status INTO s FROM storlab.jobs WHERE id = job;
    EXIT WHEN s IN ('done', 'failed', 'cancelled');
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN s;
END $$;
-- Waits (up to 60 s) until the experiment's current_action matches.
CREATE FUNCTION pg_temp.wait_action(job bigint, pattern text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text;
BEGIN
  FOR i IN 1 .. 600 LOOP
    SELECT current_action INTO a FROM storlab.experiments WHERE id = job;
    EXIT WHEN a LIKE pattern;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN a;
END $$;
CREATE FUNCTION pg_temp.remote() RETURNS text LANGUAGE sql AS $$
  SELECT format('host=%s port=%s dbname=%s user=%s', current_setting('unix_socket_directories'),
                current_setting('port'), current_database(), current_user)
$$;

-- Refusals, each before any job exists.
CREATE TEMP TABLE jobs_before AS SELECT count(*) AS n FROM storlab.job_records;
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{}')$$, '22023', NULL, 'no layout: 22023');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '[1]')$$, '22023', NULL, 'an array item without a name: 22023');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {"tables": "lab_disk", "where": "x"}}')$$,
                 '22023', NULL, 'a placement with an unknown key: 22023');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {"indexes": "nowhere"}}')$$,
                 '42704', NULL, 'an unknown tablespace: 42704');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {"wal": "nowhere"}}')$$,
                 '42704', 'tablespace "nowhere" does not exist', 'an unknown tablespace for wal: 42704');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {"wal": 1}}')$$,
                 '22023', NULL, 'wal that is not a name: 22023');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {"settings": {"wal_level": "minimal"}}}')$$,
                 '22023', NULL, 'a setting a session cannot change: 22023');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {"settings": {"work_mem": "lots"}}}')$$,
                 '22023', NULL, 'a value the server refuses: 22023');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {}}', repetitions => 0)$$, '22023', NULL, 'repetitions < 1: 22023');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {}}', clients => '{2,0}')$$, '22023', NULL, 'clients < 1: 22023');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {}}', fillfactors => '{101}')$$, '22023', NULL, 'fillfactor > 100: 22023');
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {}}', duration => '2 days')$$, '22023', NULL,
                 'a duration beyond storlab.max_bench_duration: 22023');
-- pgbench's sessions get the settings through PGOPTIONS, whose words libpq
-- splits at white space: a tab or newline in a value is refused at the call
SELECT throws_ok($$SELECT storlab.experiment_start('x', '{"a": {"settings": {"application_name": "x\t-c\tsynchronous_commit=off"}}}')$$,
                 '22023', NULL, 'a tab in a setting''s value: 22023');
SELECT throws_like($$SELECT storlab.experiment_start('x', '{"a": {"settings": {"application_name": "x\ny"}}}')$$,
                   '%setting application_name contains a control character (U+000A)%', 'a newline too, saying so');
SELECT is((SELECT count(*) FROM storlab.job_records), (SELECT n FROM jobs_before), 'nothing was started');
SELECT throws_ok($$SELECT storlab.experiment_resume(424242)$$, '42704', NULL, 'resuming what does not exist: 42704');

-- A real experiment: "disk" (the baseline: first in the array) against
-- "ram-indexes"; each repetition visits disk, ram-indexes, then the
-- other way round.
SELECT storlab.experiment_start('tap',
  '[{"name": "disk", "tables": "lab_disk", "indexes": "lab_disk"},
    {"name": "ram-indexes", "tables": "lab_disk", "indexes": "lab_ram", "temp": "lab_ram",
     "settings": {"synchronous_commit": "off"}}]',
  clients => '{2}', jobs => 1, duration => '1 s', repetitions => 2, warmup => '1 s', scale => 1,
  options => '{"lock_timeout_ms": 300}') AS exp \gset
SELECT is((SELECT steps_total FROM storlab.experiments WHERE id = :exp), 7,
          'steps: pgbench -i, sizes under 2 layouts, 2 x 2 runs');

-- Progress is visible from another session while it runs; cancel() stops it.
SELECT alike(pg_temp.wait_action(:exp, 'repetition 1/2, layout disk, clients 2: measured run'),
            'repetition 1/2, layout disk, clients 2: measured run', 'progress says which run is on');
SELECT ok(storlab.cancel(:exp), 'cancel() finds the experiment');
SELECT is(pg_temp.final_status(:exp), 'cancelled', 'it ends cancelled');
SELECT alike((SELECT current_action FROM storlab.experiments WHERE id = :exp),
            'cancelled at step 4 of 7 (%); pgbench''s relations are placed as layout disk',
            'the row says where it stopped and where the relations are');
SELECT is((SELECT count(*)::int FROM storlab.experiment_sizes WHERE experiment_id = :exp), 20,
          'the sizes of 10 relations under both layouts were recorded');

-- Another session reads pgbench_accounts in an open transaction, so it
-- holds ACCESS SHARE locks on the table and on its indexes (the planner
-- opened them): resumed, the experiment measures the cell whose layout is
-- in place, then the next move (its indexes to lab_ram) gives up after
-- lock_timeout_ms and the experiment fails with that error.
SELECT dblink_connect('holder', pg_temp.remote());
SELECT dblink_exec('holder', 'BEGIN');
SELECT * FROM dblink('holder', 'SELECT abalance FROM pgbench_accounts WHERE aid = 1') AS t(abalance int);
SELECT is(storlab.experiment_resume(:exp), :exp::bigint, 'experiment_resume returns the same id');
SELECT is(pg_temp.final_status(:exp), 'failed', 'a move behind a lock fails the experiment');
SELECT alike((SELECT error FROM storlab.experiments WHERE id = :exp), 'could not lock %within lock_timeout (300 ms)%Nothing was moved.', 'with the lock timeout as its error');
SELECT alike((SELECT current_action FROM storlab.experiments WHERE id = :exp),
            'failed at step 5 of 7 (repetition 1/2, layout ram-indexes, %); pgbench''s relations are placed as layout disk',
            'and says the relations are still as the last completed step left them');
SELECT throws_ok(format('CALL storlab.wait(%s)', :exp), '55P03', NULL, 'CALL storlab.wait raises the lock timeout as 55P03');
SELECT is((SELECT count(*)::int FROM pg_class c JOIN pg_tablespace t ON t.oid = c.reltablespace
            WHERE c.relname LIKE 'pgbench%' AND t.spcname = 'lab_ram'), 0, 'nothing was moved half-way');
SELECT dblink_exec('holder', 'ROLLBACK');
SELECT dblink_disconnect('holder');

-- Resumed again, it runs only what is missing.
SELECT storlab.experiment_resume(:exp);
SELECT is(pg_temp.final_status(:exp), 'done', 'resumed, it finishes');
SELECT is((SELECT count(*)::int FROM storlab.bench_runs
            WHERE experiment_id = :exp AND NOT warmup AND tps IS NOT NULL), 4,
          'one measured run per cell and repetition, none run twice');
SELECT is((SELECT array_agg(experiment_layout || ' ' || repetition ORDER BY id) FROM storlab.bench_runs
            WHERE experiment_id = :exp AND NOT warmup AND tps IS NOT NULL),
          ARRAY['disk 1', 'ram-indexes 1', 'ram-indexes 2', 'disk 2'], 'in alternating order');
SELECT is((SELECT count(*)::int FROM storlab.relocations WHERE label LIKE 'experiment ' || :exp || ' (tap): layout %'
             AND to_tablespace = 'lab_ram'), 5, 'its moves are in storlab.relocations');

-- The report: one row per layout; its latency is the runs' histograms
-- merged (run_latency of the same runs), not an average of percentiles.
SELECT is((SELECT array_agg(layout || ':' || runs ORDER BY layout) FROM storlab.experiment_report(:exp)),
          ARRAY['disk:2', 'ram-indexes:2'], 'two cells of two runs');
SELECT is((SELECT lat_p99_ms FROM storlab.experiment_report(:exp) WHERE layout = 'disk'),
          (SELECT lat_ms FROM storlab.run_latency(
             (SELECT array_agg(id) FROM storlab.bench_runs WHERE experiment_id = :exp AND experiment_layout = 'disk'
                AND NOT warmup AND tps IS NOT NULL), '{99}')),
          'p99 is that of the runs'' transactions together');
SELECT ok((SELECT improvement_pct = 0 AND p_value IS NULL FROM storlab.experiment_report(:exp) WHERE layout = 'disk')
      AND (SELECT p_value BETWEEN 0 AND 1 AND tps_ci95_low < tps_mean AND tps_mean < tps_ci95_high
             FROM storlab.experiment_report(:exp) WHERE layout = 'ram-indexes'),
          'the baseline is 0 %, the other has a p-value and an interval around its mean');
-- experiment_io: on 16 and later every cell has what its backends did
-- (pg_stat_io); on 15 there is no such view, and no row.
SELECT is((SELECT array_agg(DISTINCT layout || ':' || runs ORDER BY layout || ':' || runs)
             FROM storlab.experiment_io(:exp) WHERE backend_type = 'client backend'),
          CASE WHEN current_setting('server_version_num')::int >= 160000
               THEN ARRAY['disk:2', 'ram-indexes:2'] END,
          'experiment_io has the client backends'' I/O of every cell (none before pg_stat_io)');

-- A layout that omits a part has it where the baseline puts it, for every
-- run: B's tables stay on lab_disk (A's), whichever layout ran before it
-- (C puts them on lab_ram). The stored layouts say so; every run's
-- observations (pg_class at its start and end) agree; the settings stored
-- are those pgbench's sessions ran with.
SELECT storlab.experiment_start('partial',
  '[{"name": "A", "tables": "lab_disk", "indexes": "lab_disk"},
    {"name": "B", "indexes": "lab_ram", "settings": {"synchronous_commit": "off", "work_mem": "64MB"}},
    {"name": "C", "tables": "lab_ram", "indexes": "lab_ram"}]',
  clients => '{1}', jobs => 1, duration => '1 s', repetitions => 2, warmup => '0', scale => 1) AS part \gset
SELECT is((SELECT args->'layouts'->1->'placement'->>'tables' FROM storlab.experiments WHERE id = :part), 'lab_disk',
          'B''s omitted tables are stored as the baseline''s tablespace');
SELECT is(pg_temp.final_status(:part), 'done', 'the experiment with a partial layout finishes');
SELECT is((SELECT array_agg(DISTINCT (observed->'start'->'tables'->>'pgbench_accounts') || '/' ||
                                     (observed->'end'->'tables'->>'pgbench_accounts'))
             FROM storlab.bench_runs WHERE experiment_id = :part AND experiment_layout = 'B' AND NOT warmup),
          ARRAY['lab_disk/lab_disk'], 'each run of B had its tables on lab_disk at its start and end');
SELECT is((SELECT count(*)::int FROM storlab.bench_runs WHERE experiment_id = :part AND tps IS NOT NULL AND invalid IS NULL), 6,
          'all six runs agree with their layout');
SELECT is((SELECT array_agg(DISTINCT experiment_layout || ': ' || (settings->>'synchronous_commit') || ' ' || (settings->>'work_mem')
                           ORDER BY experiment_layout || ': ' || (settings->>'synchronous_commit') || ' ' || (settings->>'work_mem'))
             FROM storlab.bench_runs WHERE experiment_id = :part),
          ARRAY['A: ' || current_setting('synchronous_commit') || ' ' || current_setting('work_mem'), 'B: off 64MB',
                'C: ' || current_setting('synchronous_commit') || ' ' || current_setting('work_mem')],
          'each run stores the settings its pgbench sessions ran with');

-- Runs whose observations disagree with their cell are marked invalid and
-- left out of the report: here pgbench_accounts' fillfactor changes while
-- the first run measures.
SELECT storlab.experiment_start('ff',
  '[{"name": "disk", "tables": "lab_disk", "indexes": "lab_disk"}, {"name": "ram", "indexes": "lab_ram"}]',
  script => 'select-only', clients => '{1}', jobs => 1, duration => '2 s', repetitions => 2, warmup => '0', scale => 1) AS ff \gset
SELECT alike(pg_temp.wait_action(:ff, 'repetition 1/2, layout disk, clients 1: measured run'),
             '%: measured run', 'the first run measures');
SELECT pg_sleep(0.5);
ALTER TABLE pgbench_accounts SET (fillfactor = 50);
SELECT is(pg_temp.final_status(:ff), 'done', 'the experiment finishes');
SELECT is((SELECT count(*)::int FROM storlab.bench_runs WHERE experiment_id = :ff AND NOT warmup AND tps IS NOT NULL
              AND invalid LIKE '%fillfactor 50%'), 4, 'its four runs are marked invalid, naming the fillfactor');
SELECT alike((SELECT invalid FROM storlab.bench_runs WHERE experiment_id = :ff AND NOT warmup ORDER BY id LIMIT 1),
             '%changed from 100 to 50 while it ran%', 'the first says it changed while it ran');
SELECT is((SELECT current_action FROM storlab.experiments WHERE id = :ff),
          format('done: 0 measured runs in the report, 4 measured in this session; 4 invalid runs left out '
                 '(bench_runs.invalid says why): storlab.experiment_resume(%s) measures them again; '
                 'storlab.experiment_report(%s) compares them', :ff, :ff), 'the job says so');
SELECT is((SELECT sum(runs)::int FROM storlab.experiment_report(:ff)), 0, 'and the report pools none of them');
ALTER TABLE pgbench_accounts RESET (fillfactor);
-- finished, with invalid runs: a resume measures them again
SELECT is(storlab.experiment_resume(:ff), :ff::bigint, 'a finished experiment with invalid runs may be resumed');
SELECT is(pg_temp.final_status(:ff), 'done', 'and finishes again');
SELECT is((SELECT sum(runs)::int FROM storlab.experiment_report(:ff)), 4, 'its report now pools the four runs measured again');
SELECT is((SELECT current_action FROM storlab.experiments WHERE id = :ff),
          format('done: 4 measured runs in the report, 4 measured in this session; 4 invalid runs measured again '
                 '(bench_runs.invalid says why); storlab.experiment_report(%s) compares them', :ff),
          'and the job''s last words count the runs the report pools, not the invalid ones measured again');
SELECT throws_ok(format('SELECT storlab.experiment_resume(%s)', :ff), '55006', NULL,
                 'once every cell has a valid run, a resume is refused');

-- A run measured under other settings than the runs before it is invalid
-- too: here ALTER DATABASE turns synchronous_commit off while the second
-- run measures (its sessions read the settings at its start), so the third
-- and fourth run without waiting for their commits. Each is marked with
-- the reason, and the report pools the two measured as the experiment began.
SELECT storlab.experiment_start('sync changed',
  '[{"name": "disk", "tables": "lab_disk", "indexes": "lab_disk"}, {"name": "ram", "indexes": "lab_ram"}]',
  script => 'tpcb-like', clients => '{1}', jobs => 1, duration => '1 s', repetitions => 2, warmup => '0', scale => 1) AS sync \gset
SELECT alike(pg_temp.wait_action(:sync, 'repetition 1/2, layout ram, clients 1: measured run'),
             '%: measured run', 'the second run measures');
SELECT pg_sleep(0.5);
SELECT format('ALTER DATABASE %I SET synchronous_commit = off', current_database()) \gexec
SELECT is(pg_temp.final_status(:sync), 'done', 'the experiment finishes');
SELECT is((SELECT array_agg(experiment_layout || ' ' || repetition || ': ' || coalesce(invalid, 'pooled') ORDER BY id)
             FROM storlab.bench_runs WHERE experiment_id = :sync AND NOT warmup),
          ARRAY['disk 1: pooled', 'ram 1: pooled',
                format('ram 2: its sessions ran with synchronous_commit = off, where run %s (the experiment''s first) ran with on',
                       (SELECT min(id) FROM storlab.bench_runs WHERE experiment_id = :sync)),
                format('disk 2: its sessions ran with synchronous_commit = off, where run %s (the experiment''s first) ran with on',
                       (SELECT min(id) FROM storlab.bench_runs WHERE experiment_id = :sync))],
          'the runs after the change are marked invalid, naming the setting and the run it differs from');
SELECT is((SELECT array_agg(layout || ':' || runs ORDER BY layout) FROM storlab.experiment_report(:sync)),
          ARRAY['disk:1', 'ram:1'], 'the report pools the runs measured as the experiment began');
SELECT format('ALTER DATABASE %I RESET synchronous_commit', current_database()) \gexec
SELECT is(storlab.experiment_resume(:sync), :sync::bigint, 'with the setting restored, it is resumed');
SELECT is(pg_temp.final_status(:sync), 'done', 'and finishes');
SELECT is((SELECT array_agg(layout || ':' || runs ORDER BY layout) FROM storlab.experiment_report(:sync)),
          ARRAY['disk:2', 'ram:2'], 'the two runs measured again are pooled');

-- Once a layout names pg_wal's place, one that omits it wants it where the
-- baseline does (stored so, with a NOTICE), as for tables and indexes.
SELECT storlab.experiment_start('wal inherited',
  '[{"name": "a", "tables": "lab_disk", "wal": "lab_disk"}, {"name": "b", "tables": "lab_disk"}]',
  script => 'select-only', clients => '{1}', jobs => 1, duration => '1 s', repetitions => 1, warmup => '0', scale => 1) AS inh \gset
SELECT is((SELECT args->'layouts'->1->'placement'->>'wal' FROM storlab.experiments WHERE id = :inh), 'lab_disk',
          'a layout that omits "wal" gets the baseline''s');
SELECT ok(storlab.cancel(:inh), 'and it is cancelled');
SELECT pg_temp.final_status(:inh);

-- Without pgbench_history the tables are not whole: a resumed experiment
-- makes them again (pgbench -i) and finishes.
SELECT storlab.experiment_start('history',
  '[{"name": "disk", "tables": "lab_disk", "indexes": "lab_disk"}]',
  script => 'select-only', clients => '{1}', jobs => 1, duration => '1 s', repetitions => 2, warmup => '0', scale => 1) AS hist \gset
SELECT alike(pg_temp.wait_action(:hist, 'repetition 1/2, layout disk, clients 1: measured run'),
             '%: measured run', 'an experiment measures');
SELECT ok(storlab.cancel(:hist), 'and is cancelled');
SELECT is(pg_temp.final_status(:hist), 'cancelled', 'it ends cancelled');
DROP TABLE pgbench_history;
SELECT is(storlab.experiment_resume(:hist), :hist::bigint, 'resumed after pgbench_history was dropped');
SELECT is(pg_temp.final_status(:hist) || coalesce(': ' || (SELECT error FROM storlab.experiments WHERE id = :hist), ''),
          'done', 'it makes the tables again and finishes');
SELECT ok(to_regclass('pgbench_history') IS NOT NULL, 'pgbench_history is back');

-- Where pg_wal is. A layout's "wal" names a tablespace whose filesystem
-- pg_wal must be on for its runs (lab_disk sits beside the data folder, on
-- its filesystem; lab_ram is a tmpfs). pg_wal moves only while the server
-- is stopped: the experiment runs what it can and stops, done, before the
-- first run that needs pg_wal elsewhere, saying what to do;
-- storlab.experiments.wal_needed names the tablespace (NULL otherwise).
-- Nothing is reordered: the alternating order runs here-, then there-.
SELECT storlab.experiment_start('wal',
  '[{"name": "wal-here", "tables": "lab_disk", "indexes": "lab_disk", "wal": "lab_disk"},
    {"name": "wal-ram", "tables": "lab_disk", "indexes": "lab_disk", "wal": "lab_ram"}]',
  script => 'select-only', clients => '{1}', jobs => 1, duration => '1 s', repetitions => 2, warmup => '0', scale => 1) AS wal \gset
SELECT is(pg_temp.final_status(:wal), 'done', 'an experiment whose next run needs pg_wal elsewhere ends done, not failed');
SELECT is((SELECT wal_needed FROM storlab.experiments WHERE id = :wal), 'lab_ram'::name, 'wal_needed names the tablespace');
SELECT is((SELECT current_action FROM storlab.experiments WHERE id = :wal),
          format('pg_wal is on lab_disk''s filesystem; the next run (layout "wal-ram", repetition 1) needs it on lab_ram''s: '
                 'move pg_wal while the server is stopped, then storlab.experiment_resume(%s)', :wal),
          'and current_action says exactly what to do');
SELECT is((SELECT array_agg(experiment_layout || ' ' || repetition ORDER BY id) FROM storlab.bench_runs
            WHERE experiment_id = :wal AND tps IS NOT NULL AND invalid IS NULL),
          ARRAY['wal-here 1'], 'the run with pg_wal in place ran, valid');
SELECT is((SELECT observed->'start'->'wal'->>'tablespace' || ' ' || (observed->'end'->'wal'->>'location')
             FROM storlab.bench_runs WHERE experiment_id = :wal),
          'lab_disk ' || (SELECT setting FROM pg_settings WHERE name = 'data_directory') || '/pg_wal',
          'it recorded where pg_wal was: on lab_disk''s filesystem, in the data folder');
SELECT ok((SELECT observed->'start'->'wal' ?& ARRAY['mount_point', 'fs_type'] FROM storlab.bench_runs WHERE experiment_id = :wal),
          'with its mount point and filesystem type');
SELECT is((SELECT wal FROM storlab.experiment_report(:wal) WHERE layout = 'wal-here'), 'lab_disk',
          'experiment_report names where WAL was');
SELECT is((SELECT wal_needed FROM storlab.experiments WHERE id = :exp), NULL, 'other experiments need nothing');
-- resumed without moving pg_wal: it stops again, at the same run
SELECT is(storlab.experiment_resume(:wal), :wal::bigint, 'an experiment stopped for WAL can be resumed');
SELECT is((SELECT wal_needed FROM storlab.experiments WHERE id = :wal), NULL, 'and needs nothing while it is queued');
SELECT is(pg_temp.final_status(:wal), 'done', 'resumed, it ends done');
SELECT is((SELECT wal_needed FROM storlab.experiments WHERE id = :wal), 'lab_ram'::name, 'pg_wal did not move: it stopped again');
SELECT is((SELECT count(*)::int FROM storlab.bench_runs WHERE experiment_id = :wal AND tps IS NOT NULL AND invalid IS NULL), 1,
          'the run done before stays valid, and none was added');
-- CALL storlab.experiment returns the id with a NOTICE (a script reads wal_needed)
CALL storlab.experiment('wal call', '{"a": {"tables": "lab_disk", "indexes": "lab_disk", "wal": "lab_ram"}}',
  script => 'select-only', clients => '{1}', jobs => 1, duration => '1 s', repetitions => 1, warmup => '0', scale => 1);
SELECT is((SELECT status || ' ' || wal_needed FROM storlab.experiments WHERE name = 'wal call' ORDER BY id DESC LIMIT 1), 'done lab_ram',
          'CALL storlab.experiment returns when the experiment stops for WAL');
-- a plain bench_start run records where pg_wal was too
SELECT storlab.bench_start('select-only', 1, 1, '1 s') AS run \gset
SELECT is(pg_temp.final_status(:run), 'done', 'a bench_start run finishes');
SELECT is((SELECT (observed->'start'->'wal'->>'tablespace') || ' ' || coalesce(invalid, 'valid') FROM storlab.bench_runs WHERE id = :run),
          'lab_disk valid', 'and records where pg_wal was');

SELECT * FROM finish();
