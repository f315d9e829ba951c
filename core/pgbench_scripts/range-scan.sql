-- storlab script: range-scan
-- Storage path: sequential reads.
-- Each transaction reads 10 000 consecutive accounts (about 165 heap pages
-- at fillfactor 100). pgbench -i loads pgbench_accounts in aid order, so a
-- range of aid is a run of adjacent heap pages: the read-ahead and
-- sequential throughput of the table's tablespace decide the rate. The
-- start is random so that runs do not only hit cached pages.
\set start random(1, 100000 * :scale - 9999)
SELECT count(*), sum(abalance) FROM pgbench_accounts WHERE aid BETWEEN :start AND :start + 9999;
