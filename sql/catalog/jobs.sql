-- Jobs: work done by a background worker that holds no snapshot while it
-- runs (see ARCHITECTURE.md, "The data path of a job"). Callers start a job and
-- read its rows later, or CALL a procedure that waits while committing.
-- The rows as stored; read them through the view storlab.jobs below.
CREATE TABLE storlab.job_records (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind        text        NOT NULL CHECK (kind IN ('bench_init', 'bench', 'move_indexes', 'move_online', 'experiment')),
    status      text        NOT NULL DEFAULT 'queued'
                            CHECK (status IN ('queued', 'running', 'cancelling', 'done', 'failed', 'cancelled')),
    args        jsonb       NOT NULL,
    database    name        NOT NULL DEFAULT current_database(),
    role        name        NOT NULL DEFAULT current_user,
    worker_pid  integer,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at  timestamptz,
    finished_at timestamptz,
    error       text,                  -- why it failed: pgbench's stderr when pgbench failed
    detail      jsonb
);

-- One row per benchmark run. A run started by bench_start() has the id of
-- its job (id = job_id); the runs of an experiment take ids from the same
-- sequence, and job_id is the experiment's.
CREATE TABLE storlab.bench_runs (
    id                      bigint PRIMARY KEY,
    job_id                  bigint NOT NULL REFERENCES storlab.job_records (id) ON DELETE CASCADE,
    script                  text   NOT NULL,
    clients                 integer NOT NULL,
    jobs                    integer NOT NULL,
    duration_s              float8 NOT NULL,
    scale                   integer,
    fillfactor              integer,
    layout                  jsonb,     -- tablespace and size of every pgbench table and index, at start
    tps                     float8,
    transactions            bigint,
    failures                bigint,
    lat_avg_ms              float8,
    lat_stddev_ms           float8,
    lat_p50_ms              float8,
    lat_p90_ms              float8,
    lat_p95_ms              float8,
    lat_p99_ms              float8,
    lat_max_ms              float8,
    histogram               bytea,     -- HDR histogram of transaction latency (microseconds), from pgbench's log
    -- deltas over the run, named for their scope: server_* are the whole
    -- server's (pg_stat_wal, pg_stat_bgwriter), db_* the whole database's
    -- (pg_stat_database, pg_statio_user_*): autovacuum and other sessions
    -- count too. run_blks_read_by_tablespace (last column) is the run's own.
    server_wal_bytes             numeric,
    server_wal_fpi               bigint,
    server_wal_write             bigint,
    server_wal_sync              bigint,
    server_wal_sync_time_ms      float8,
    server_checkpoints           bigint,
    server_buffers_checkpoint    bigint,
    server_buffers_backend       bigint,
    server_buffers_backend_fsync bigint,
    db_blks_read                 bigint,
    db_blks_hit                  bigint,
    db_blk_read_time_ms          float8,
    db_blk_write_time_ms         float8,
    db_blks_read_by_tablespace   jsonb,
    statements              jsonb,
    settings                jsonb,
    options                 jsonb NOT NULL DEFAULT '{}',
    pgbench_version         text,
    label                   text,
    system_identifier       bigint NOT NULL,
    hostname                text   NOT NULL,
    started_at              timestamptz,
    finished_at             timestamptz,  -- also when the run failed or was cancelled
    run_blks_read_by_tablespace jsonb,    -- blocks read from pgbench's own tables and indexes, per tablespace
    -- a run of an experiment (sql/catalog/experiments.sql): which, under
    -- which layout, in which repetition; warm-up runs are kept, and flagged
    experiment_id           bigint,
    experiment_layout       text,
    repetition              integer,
    warmup                  boolean NOT NULL DEFAULT false
);

-- One row per second of a run, from pgbench's transaction log; the first and
-- last are kept and marked partial.
CREATE TABLE storlab.bench_progress (
    run_id     bigint NOT NULL REFERENCES storlab.bench_runs (id) ON DELETE CASCADE,
    t_s        integer NOT NULL,
    tps        float8,
    lat_avg_ms float8,
    lat_max_ms float8,
    failures   bigint,
    partial    boolean NOT NULL DEFAULT false,  -- the run's first or last second, not whole: its tps understates
    PRIMARY KEY (run_id, t_s)
);

-- The jobs not finished: few, whatever the history holds (storlab.jobs
-- checks only these against pg_stat_activity).
CREATE INDEX job_records_unfinished ON storlab.job_records (id)
  WHERE status IN ('queued', 'running', 'cancelling');

-- pg_dump keeps jobs, runs and their progress rows (with the job ids'
-- sequence), in foreign-key order.
SELECT pg_catalog.pg_extension_config_dump('storlab.job_records', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.job_records_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.bench_runs', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.bench_progress', '');

-- The jobs as anyone reading them should see them: a job whose worker is gone
-- (a crash, an immediate restart, a killed worker) shows as failed at once,
-- not only after someone calls job_status() or wait(). A worker is the job's
-- own while a 'storlab job' backend with its pid has run since before the
-- job started (a pid reused after a restart is not).
-- Two arms: a finished job is as stored; only the few unfinished ones
-- (job_records_unfinished) are checked against pg_stat_activity. A filter
-- on id or status then reads only the rows it needs, however many jobs are
-- stored (each arm gets the filter). The check uses statement_timestamp(),
-- not the clock: a volatile function would keep the filter out of the arms.
CREATE VIEW storlab.jobs AS
SELECT j.id, j.kind, j.status, j.args, j.database, j.role, j.worker_pid, j.created_at, j.started_at,
       j.finished_at, j.error, j.detail
  FROM storlab.job_records j
 WHERE j.status IN ('done', 'failed', 'cancelled')
UNION ALL
SELECT j.id, j.kind,
       CASE WHEN j.dead THEN 'failed' ELSE j.status END,
       j.args, j.database, j.role, j.worker_pid, j.created_at, j.started_at, j.finished_at,
       CASE WHEN j.dead
            THEN 'the job''s worker exited before finishing it (an error in the worker, a crash or a server restart: the server log says which)'
            ELSE j.error END,
       j.detail
  FROM (SELECT r.*,
               -- on a hot standby a job runs on the primary, whose workers
               -- this server cannot see: its status is the replicated one
               NOT pg_catalog.pg_is_in_recovery() AND (
               (r.status IN ('running', 'cancelling')
                AND NOT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a
                                 WHERE a.pid = r.worker_pid AND a.backend_type = 'storlab job'
                                   AND a.backend_start <= r.started_at))
               OR (r.status = 'queued' AND r.created_at < pg_catalog.statement_timestamp() - interval '2 minutes')) AS dead
          FROM storlab.job_records r
         WHERE r.status IN ('queued', 'running', 'cancelling')) j;
COMMENT ON VIEW storlab.jobs IS 'Every storlab job with its status as of now: a job whose worker is gone is failed (on a hot standby, the status replicated from the primary)';
