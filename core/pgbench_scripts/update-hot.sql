-- storlab script: update-hot
-- Storage path: heap-only tuple (HOT) updates, decided by fillfactor.
-- Each transaction changes abalance of one random account. abalance is not
-- indexed, so the new row version can stay on the same heap page, without
-- any index insertion, whenever that page has free space: a table
-- initialised with a lower fillfactor (pgbench -i -F 70) keeps that space
-- and turns these into HOT updates; at fillfactor 100 they spill to other
-- pages and touch every index. The WAL flush at commit is part of the cost.
\set aid random(1, 100000 * :scale)
\set delta random(-5000, 5000)
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
