-- storlab.probes: one row per probe run, kept so that runs can be compared,
-- charted and gathered from many servers.
CREATE TABLE storlab.probes (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tablespace        name        NOT NULL,   -- or 'pg_wal' for the WAL folder
    location          text        NOT NULL,   -- the folder the scratch file was in
    workload          text        NOT NULL CHECK (workload IN ('randread', 'randwrite', 'seqread', 'seqwrite', 'wal', 'seqscan', 'bitmapscan')),
    block_size        integer     NOT NULL CHECK (block_size > 0),
    workers           integer     NOT NULL CHECK (workers > 0),
    direct            boolean     NOT NULL,   -- O_DIRECT really used (false after a fallback)
    sync_method       text        NOT NULL CHECK (sync_method IN ('none', 'fdatasync', 'fsync', 'open_datasync', 'open_sync')),
    writes_per_sync   integer     NOT NULL DEFAULT 1 CHECK (writes_per_sync > 0),  -- one op = this many writes, then the sync
    file_size         bigint      NOT NULL,
    duration_s        float8      NOT NULL,   -- measured, not requested
    ops               bigint      NOT NULL,
    bytes             bigint      NOT NULL,
    iops              float8      NOT NULL,   -- ops per second (commits per second for wal)
    mib_s             float8      NOT NULL,
    lat_mean_us       float8,
    lat_p50_us        float8,
    lat_p90_us        float8,
    lat_p99_us        float8,
    lat_p999_us       float8,
    lat_max_us        float8,
    histogram         bytea       NOT NULL,   -- HDR histogram (V2, deflate) in nanoseconds, mergeable
    env               jsonb       NOT NULL,   -- storlab.tablespaces() facts at probe time
    label             text,
    system_identifier bigint      NOT NULL,
    hostname          text        NOT NULL,
    started_at        timestamptz NOT NULL,
    suite             text CHECK (suite IN ('standard', 'fsync_cost', 'read_path')),
    iodepth           integer     NOT NULL DEFAULT 1 CHECK (iodepth BETWEEN 1 AND 256),  -- requests in flight per worker
    engine            text        NOT NULL DEFAULT 'psync' CHECK (engine IN ('psync', 'io_uring', 'postgres')),
    precision_pct     float8,     -- the precision asked (percent); NULL: a fixed duration
    iops_ci95_pct     float8,     -- half-width of the 95 % CI of the mean IOPS over 100 ms samples, percent of it
    io_method         text CHECK (io_method IN ('sync', 'worker', 'io_uring')),  -- read_path: the server's io_method
    effective_io_concurrency integer CHECK (effective_io_concurrency BETWEEN 0 AND 1000),  -- read_path: the value scanned at
    node_id           uuid        -- the server that measured it (storlab.node_id(), sql/catalog/fleet.sql); NULL: before 0.8.0
);

CREATE INDEX probes_lookup ON storlab.probes (tablespace, workload, block_size, workers, started_at DESC);
-- Readers take the newest probes of each group (core/src/newest.rs): one
-- index per kind of group, its predicate the reader's filter, so that each
-- group costs a few index descents however many years of probes are stored.
-- The standard suite's figures at depth 1 (compare, charts, advice):
CREATE INDEX probes_newest_suite ON storlab.probes (tablespace, workload, workers, started_at DESC)
  WHERE suite = 'standard' AND ops > 0 AND iodepth = 1;
-- the repeated probes recommend() tests a difference on:
CREATE INDEX probes_newest_direct ON storlab.probes (tablespace, workload, started_at DESC)
  WHERE ops > 0 AND workers = 1 AND iodepth = 1 AND direct
    AND ((workload = 'randread' AND block_size = 8192)
         OR (workload IN ('seqread', 'seqwrite') AND block_size = 131072));
-- the read path's scans (few beside the rest):
CREATE INDEX probes_read_path ON storlab.probes (tablespace, workload, started_at DESC)
  WHERE suite = 'read_path';
COMMENT ON COLUMN storlab.probes.suite IS 'standard: a probe of the standard suite (profile, compare_tablespaces); fsync_cost: one of fsync_cost''s tests (writes rewound to the start of the file, as pg_test_fsync does); read_path: one cold scan of probe_read_path (PostgreSQL 18); NULL: a probe() call';
COMMENT ON COLUMN storlab.probes.io_method IS 'read_path probes: the server''s io_method during the scan (PostgreSQL 18); NULL for the other probes, which do their own I/O';
COMMENT ON COLUMN storlab.probes.effective_io_concurrency IS 'read_path probes: the effective_io_concurrency the scan ran at; NULL for the other probes';

COMMENT ON COLUMN storlab.probes.iops_ci95_pct IS 'Precision reached: half-width of the 95 % confidence interval of the mean IOPS over the probe''s 100 ms samples, in percent of the mean (NULL below two samples)';
COMMENT ON COLUMN storlab.probes.precision_pct IS 'The precision the probe was asked for (percent): it stopped once iops_ci95_pct was within it and the p99 had settled, or at its duration; NULL: it ran for its whole duration';

COMMENT ON TABLE storlab.probes IS 'One row per storlab probe: workload, parameters, throughput, latency percentiles (microseconds), HDR histogram and the storage facts at probe time';

-- Stored results are the user's data: pg_dump keeps the rows and the
-- identity sequence's position (CREATE EXTENSION on restore makes the table).
SELECT pg_catalog.pg_extension_config_dump('storlab.probes', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.probes_id_seq', '');
