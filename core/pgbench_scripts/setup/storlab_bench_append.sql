-- Table written by the insert-append script, (re)created by the storlab
-- init step after pgbench -i so that every run starts from an empty table,
-- like pgbench's own tables. An identity key appended at the right edge
-- and a second index on a random column: the two ways indexes grow.
DROP TABLE IF EXISTS storlab_bench_append;
CREATE TABLE storlab_bench_append (
    id bigint GENERATED ALWAYS AS IDENTITY,
    aid integer NOT NULL,
    delta integer NOT NULL,
    mtime timestamptz NOT NULL DEFAULT now(),
    filler char(84),
    CONSTRAINT storlab_bench_append_pkey PRIMARY KEY (id)
);
CREATE INDEX storlab_bench_append_aid_idx ON storlab_bench_append (aid);
