\set a random(1, 5)
\set b random(1, 5)
BEGIN ISOLATION LEVEL REPEATABLE READ;
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :a;
UPDATE pgbench_accounts SET abalance = abalance - 1 WHERE aid = :b;
END;
