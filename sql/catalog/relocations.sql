-- storlab.relocations: every relation storlab moved, written in the same
-- transaction as the move, so that history and reality never disagree.
CREATE TABLE storlab.relocations (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    batch_id          bigint      NOT NULL,  -- one per call of move / apply_layout / restore_layout
    relation          oid         NOT NULL,
    relation_name     text        NOT NULL,  -- schema-qualified and quoted, as at move time
    kind              text        NOT NULL CHECK (kind IN ('table', 'index', 'materialized view',
                                                           'partitioned table', 'partitioned index')),
    from_tablespace   name        NOT NULL,
    to_tablespace     name        NOT NULL,
    bytes             bigint      NOT NULL,  -- copied: the relation with its forks (and TOAST for a table)
    duration_s        float8,
    lock_wait_s       float8,
    wal_bytes         bigint,
    statement         text        NOT NULL,
    moved_by          name        NOT NULL,
    moved_at          timestamptz NOT NULL,
    label             text,
    note              text,                  -- what the statement does to other sessions
    system_identifier bigint      NOT NULL,
    hostname          text        NOT NULL,
    -- an online rebuild (REINDEX CONCURRENTLY) gives the index a new oid:
    -- the oid it had before, so that history follows the index
    previous_relation oid,
    -- a row of undo_batch(N): N. A batch undone since is no later move of
    -- its relations when an earlier batch is undone: the two cancel out
    undoes_batch      bigint,
    -- moved while writes went on: REINDEX CONCURRENTLY, or pg_repack for a
    -- table (storlab.move(..., online => true))
    online            boolean     NOT NULL DEFAULT false,
    -- an online move of a table: the longest any other session waited for
    -- a lock on it while pg_repack ran (sampled from pg_locks.waitstart)
    writers_blocked_s float8,
    -- an index (or partitioned index): its table and its definition
    -- (pg_get_indexdef) at the move. A REINDEX CONCURRENTLY by hand gives
    -- the index a new oid under the same name: undo_batch and
    -- restore_layout follow the index of that name on the same table with
    -- the same definition
    index_table       oid,
    index_definition  text
);

CREATE INDEX relocations_moved_at ON storlab.relocations (moved_at);
-- one batch's moves (undo_batch, restore_layout)
CREATE INDEX relocations_batch_id ON storlab.relocations (batch_id);
CREATE SEQUENCE storlab.relocation_batches;

COMMENT ON TABLE storlab.relocations IS 'Every relation storlab moved between tablespaces: from, to, bytes, lock wait, WAL, statement; written in the moving transaction';

SELECT pg_catalog.pg_extension_config_dump('storlab.relocations', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.relocations_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.relocation_batches', '');
