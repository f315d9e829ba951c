-- storlab script: index-lookup
-- Storage path: random 8 kB reads.
-- Each transaction fetches eight accounts chosen uniformly over all of
-- pgbench_accounts through its primary key. The keys are independent, so
-- once the table is larger than shared_buffers and the OS cache, nearly
-- every heap page (and the lower b-tree levels) is a random 8 kB read from
-- the tablespace that holds the table and its index. Eight keys rather than
-- one (as in the builtin select-only) so that reads, not round trips,
-- dominate the transaction time.
\set aid1 random(1, 100000 * :scale)
\set aid2 random(1, 100000 * :scale)
\set aid3 random(1, 100000 * :scale)
\set aid4 random(1, 100000 * :scale)
\set aid5 random(1, 100000 * :scale)
\set aid6 random(1, 100000 * :scale)
\set aid7 random(1, 100000 * :scale)
\set aid8 random(1, 100000 * :scale)
SELECT sum(abalance) FROM pgbench_accounts WHERE aid IN (:aid1, :aid2, :aid3, :aid4, :aid5, :aid6, :aid7, :aid8);
