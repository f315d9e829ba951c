-- storlab script: insert-append
-- Storage path: WAL writes and relation extension.
-- Each transaction appends one row to storlab_bench_append (created by the
-- storlab init step, see setup/storlab_bench_append.sql). The heap only
-- grows at its end, and so does the identity primary key, while the index
-- on aid takes inserts at random leaf pages. Every commit waits for a WAL
-- flush, so the WAL volume's fsync latency and the data volume's extension
-- cost decide the rate, not reads.
\set aid random(1, 100000 * :scale)
\set delta random(-5000, 5000)
INSERT INTO storlab_bench_append (aid, delta, filler) VALUES (:aid, :delta, repeat('x', 84));
