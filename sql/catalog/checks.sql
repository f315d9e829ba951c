-- Baselines for storage checks in CI: a labelled standard suite, taken once
-- on known-good storage, that regressions() compares today's figures with.
CREATE TABLE storlab.baselines (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    label             text        NOT NULL UNIQUE CHECK (label <> ''),
    tablespaces       name[]      NOT NULL,
    duration_s        float8      NOT NULL,   -- the upper bound of each probe
    repetitions       integer     NOT NULL CHECK (repetitions > 0),
    system_identifier bigint      NOT NULL,
    hostname          text        NOT NULL,
    taken_at          timestamptz NOT NULL DEFAULT pg_catalog.now(),
    node_id           uuid        -- the server it was taken on (storlab.node_id()); NULL: before 0.8.0
);
COMMENT ON TABLE storlab.baselines IS 'Labelled standard suites taken by storlab.baseline(); storlab.regressions() compares new figures with them. Deleting a row deletes its links to its probes (the probes stay)';

CREATE TABLE storlab.baseline_probes (
    baseline_id bigint  NOT NULL REFERENCES storlab.baselines (id) ON DELETE CASCADE,
    -- no cascade: a probe a baseline compares with cannot be deleted under
    -- it (storlab.prune keeps such probes; a DELETE by hand fails)
    probe_id    bigint  NOT NULL REFERENCES storlab.probes (id),
    repetition  integer NOT NULL CHECK (repetition > 0),
    PRIMARY KEY (baseline_id, probe_id)
);
COMMENT ON TABLE storlab.baseline_probes IS 'The probes of each baseline, by repetition';

-- Stored results are the user's data: pg_dump keeps them.
SELECT pg_catalog.pg_extension_config_dump('storlab.baselines', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.baselines_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('storlab.baseline_probes', '');
