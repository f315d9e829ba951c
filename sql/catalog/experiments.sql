-- Experiments: a layout x fillfactor x clients matrix of pgbench runs done by
-- one job (kind 'experiment'). The experiment's id is its job's id: cancel(),
-- wait() and storlab.jobs work on it as on any job, and experiment_resume()
-- starts the same job again. Its runs are storlab.bench_runs rows with
-- experiment_id set.
CREATE TABLE storlab.experiment_records (
    id                bigint PRIMARY KEY REFERENCES storlab.job_records (id) ON DELETE CASCADE,
    name              text    NOT NULL,
    steps_total       integer NOT NULL,
    current_step      integer NOT NULL DEFAULT 0,   -- steps done or skipped so far
    current_action    text,                         -- what the job does now, for a person to read
    layout_applied    text,                         -- the layout the relations were last placed in, completely
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    system_identifier bigint  NOT NULL,
    hostname          text    NOT NULL,
    -- (last: added by 0.7.0's update, which appends it)
    wal_needed        name,                         -- stopped where its next run needs pg_wal on this tablespace's filesystem
    node_id           uuid                          -- the server that ran it (storlab.node_id()); NULL: before 0.8.0
);

-- The size of each of pgbench's relations under each layout, right after
-- pgbench -i at each fillfactor: logical (what PostgreSQL wrote), allocated
-- (what the filesystem allocated) and stored (what the storage really holds,
-- where the kernel can tell: btrfs compression, a zram device; else NULL).
CREATE TABLE storlab.experiment_sizes (
    experiment_id   bigint  NOT NULL REFERENCES storlab.experiment_records (id) ON DELETE CASCADE,
    fillfactor      integer NOT NULL,
    layout          text    NOT NULL,
    relation_name   text    NOT NULL,
    kind            text    NOT NULL,
    tablespace      name    NOT NULL,
    logical_bytes   bigint  NOT NULL,
    allocated_bytes bigint  NOT NULL,
    stored_bytes    bigint,
    measured_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (experiment_id, fillfactor, layout, relation_name)
);

ALTER TABLE storlab.bench_runs
  ADD CONSTRAINT bench_runs_experiment_id_fkey FOREIGN KEY (experiment_id)
      REFERENCES storlab.experiment_records (id) ON DELETE CASCADE;

-- What a run observed, beside what it was asked to do: where each of
-- pgbench's relations was and pgbench_accounts' fillfactor, at its start and
-- at its end ({"start": {"tables": {relation: tablespace}, "indexes": {...},
-- "fillfactor": n}, "end": {...}}, from pg_class). `settings` holds what its
-- pgbench sessions ran with. `invalid` says why a run's observations disagree
-- with each other or with its experiment's layout and fillfactor (NULL: they
-- agree); experiment_report() pools only runs without one and names the
-- others.
ALTER TABLE storlab.bench_runs
  ADD COLUMN observed jsonb,
  ADD COLUMN invalid  text;

-- pg_stat_io's differences over the run (PostgreSQL 16 and later; NULL on
-- 15, which has no such view): per "backend type/object/context", the
-- reads, writes, writebacks, extends, hits, evictions, reuses and fsyncs
-- with their times (ms), and sizes as that major gives them (op_bytes
-- before 18, *_bytes from 18 on). Rows where nothing moved are left out.
ALTER TABLE storlab.bench_runs
  ADD COLUMN server_io jsonb;
-- the server that ran it (storlab.node_id(), sql/catalog/fleet.sql); NULL: before 0.8.0
ALTER TABLE storlab.bench_runs ADD COLUMN node_id uuid;
CREATE INDEX bench_runs_experiment_id_idx ON storlab.bench_runs (experiment_id) WHERE experiment_id IS NOT NULL;

SELECT pg_catalog.pg_extension_config_dump('storlab.experiment_records', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.experiment_sizes', '');

-- Experiments as a person follows them: the job's status (a dead worker
-- shows as failed at once, as in storlab.jobs) and where the work stands
-- (for a dead worker, where it stopped, as the stored row will say once
-- storlab notices: ops::jobs::sweep_dead_jobs). wal_needed: the job ended
-- (done) before a run whose layout needs pg_wal on that tablespace's
-- filesystem; current_action says what to do (move pg_wal while the
-- server is stopped, then experiment_resume). NULL otherwise.
-- (A job's worker is gone as storlab.jobs tells it; read from job_records
-- here, so that a filter on id or ORDER BY id LIMIT n reads only those rows.)
CREATE VIEW storlab.experiments AS
SELECT e.id, e.name, CASE WHEN d.dead THEN 'failed' ELSE r.status END AS status, r.args,
       e.current_step, e.steps_total,
       CASE WHEN d.dead
            -- where the relations were last observed placed: a past fact,
            -- since the worker that would observe them now is gone
            THEN format('failed at step %s of %s (%s): its worker exited before finishing it; pgbench''s relations were last placed %s (storlab.layout() shows where they are now)',
                        e.current_step + 1, e.steps_total, coalesce(e.current_action, 'starting'),
                        coalesce('as layout ' || e.layout_applied, 'by pgbench -i or a move'))
            ELSE e.current_action END AS current_action,
       r.started_at, r.finished_at,
       CASE WHEN d.dead
            THEN 'the job''s worker exited before finishing it (an error in the worker, a crash or a server restart: the server log says which)'
            ELSE r.error END AS error,
       e.system_identifier, e.hostname, e.layout_applied, r.role, e.created_at,
       CASE WHEN r.status = 'done' THEN e.wal_needed END AS wal_needed,
       e.node_id
  FROM storlab.experiment_records e
 -- each experiment's job by its id (the fence keeps it a lookup per
 -- experiment: a filter on status would otherwise read every job)
 CROSS JOIN LATERAL (SELECT * FROM storlab.job_records j WHERE j.id = e.id OFFSET 0) r
 -- (on a hot standby the job runs on the primary, whose workers this
 -- server cannot see: its status is the replicated one)
 CROSS JOIN LATERAL (
   SELECT NOT pg_catalog.pg_is_in_recovery() AND (
          (r.status IN ('running', 'cancelling')
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a
                            WHERE a.pid = r.worker_pid AND a.backend_type = 'storlab job'
                              AND a.backend_start <= r.started_at))
       OR (r.status = 'queued' AND r.created_at < pg_catalog.statement_timestamp() - interval '2 minutes')) AS dead) d;
COMMENT ON VIEW storlab.experiments IS 'Every storlab experiment: its status, progress and where its relations were left';
