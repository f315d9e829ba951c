-- Jobs: work done by a background worker that holds no snapshot while it
-- runs (see ARCHITECTURE.md, "The data path of a job"). Callers start a job and
-- read its rows later, or CALL a procedure that waits while committing.
CREATE TABLE storlab.jobs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind        text        NOT NULL CHECK (kind IN ('bench_init', 'bench', 'move_indexes')),
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

-- One row per benchmark run; its id is the id of the job that runs it.
CREATE TABLE storlab.bench_runs (
    id                      bigint PRIMARY KEY REFERENCES storlab.jobs (id) ON DELETE CASCADE,
    job_id                  bigint NOT NULL,
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
    wal_bytes               numeric,   -- server-side deltas over the run
    wal_fpi                 bigint,
    wal_write               bigint,
    wal_sync                bigint,
    wal_sync_time_ms        float8,
    checkpoints             bigint,
    buffers_checkpoint      bigint,
    buffers_backend         bigint,
    buffers_backend_fsync   bigint,
    blks_read               bigint,
    blks_hit                bigint,
    blk_read_time_ms        float8,
    blk_write_time_ms       float8,
    blks_read_by_tablespace jsonb,
    statements              jsonb,
    settings                jsonb,
    options                 jsonb NOT NULL DEFAULT '{}',
    pgbench_version         text,
    label                   text,
    system_identifier       bigint NOT NULL,
    hostname                text   NOT NULL,
    started_at              timestamptz,
    finished_at             timestamptz
);

-- One row per second of a run, from pgbench's transaction log.
CREATE TABLE storlab.bench_progress (
    run_id     bigint NOT NULL REFERENCES storlab.bench_runs (id) ON DELETE CASCADE,
    t_s        integer NOT NULL,
    tps        float8,
    lat_avg_ms float8,
    lat_max_ms float8,
    failures   bigint,
    PRIMARY KEY (run_id, t_s)
);

-- pg_dump keeps jobs, runs and their progress rows (with the job ids'
-- sequence), in foreign-key order.
SELECT pg_catalog.pg_extension_config_dump('storlab.jobs', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.jobs_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.bench_runs', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.bench_progress', '');
