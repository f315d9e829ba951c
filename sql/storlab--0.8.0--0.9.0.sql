-- storlab 0.8.0 -> 0.9.0: answers on every server (hot standbys, read-only
-- callers), online moves that give way to other sessions' DDL, and a fleet
-- that keeps every row and no secret.
-- One section per capability; each says what changed and why.

-- Online moves and undo: a moved index is known again after a REINDEX
-- CONCURRENTLY by hand, which gives it a new oid under the same name.
-- storlab.relocations records an index's table and definition at the move
-- (sql/catalog/relocations.sql); undo_batch and restore_layout follow the
-- index of that name on the same table with the same definition, and refuse
-- the whole undo, naming it, for a row written before this release.
ALTER TABLE storlab.relocations ADD COLUMN index_table oid, ADD COLUMN index_definition text;
