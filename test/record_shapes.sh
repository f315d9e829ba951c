#!/usr/bin/env bash
# What storlab's own rows look like, without their figures: stores a plan, a
# move, an online index move, a bench run and an experiment in a database of
# its own, then prints, per row, every column (nested jsonb keys included)
# with its JSON type, the text values that do not vary between runs, and the
# scale of nested numbers. Figures, ids, node_ids and times vary; the
# shape does not: the output of two builds is compared with diff to show
# that a change in how rows are written left the stored rows as they were.
#   test/record_shapes.sh > before.txt; (install the other build); test/record_shapes.sh > after.txt
#   STORLAB_SHAPES_FROM=0.1.0  the extension is created at that release and
#                              updated first (its tables' columns in another
#                              order; test/dump_upgrade.sh installs the scripts)
#   STORLAB_SHAPES_STATEMENTS=1  with pg_stat_statements (when preloaded)
# Needs the lab (PGHOST, PGPORT, PGUSER: eval "$(scripts/lab env)").
set -euo pipefail
source "$(dirname "$0")/../scripts/pg-env.sh"
db=storlab_record_shapes
psql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
psql -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
if [[ -n ${STORLAB_SHAPES_FROM:-} ]]; then
  psql -d "$db" -c "CREATE EXTENSION storlab VERSION '$STORLAB_SHAPES_FROM'" -c "ALTER EXTENSION storlab UPDATE" >/dev/null
else
  psql -d "$db" -c "CREATE EXTENSION storlab" >/dev/null
fi
psql -d "$db" -v statements="${STORLAB_SHAPES_STATEMENTS:-0}" >/dev/null <<'SQL'
-- with pg_stat_statements preloaded, a run stores its top statements too
SELECT :statements = 1 AND pg_catalog.current_setting('shared_preload_libraries') ~ 'pg_stat_statements' AS pss \gset
\if :pss
CREATE EXTENSION pg_stat_statements;
\endif
CREATE TABLE shape_t (id int PRIMARY KEY, v text);
INSERT INTO shape_t SELECT g, pg_catalog.repeat('x', 100) FROM pg_catalog.generate_series(1, 2000) g;
CREATE TABLE shape_plan AS SELECT * FROM storlab.move('shape_t', 'lab_disk', dry_run => true);
SELECT storlab.move('shape_t', 'lab_disk');
SELECT storlab.bench_init(scale => 1) AS job \gset
CALL storlab.wait(:job);
SELECT storlab.move_indexes_online('pgbench_accounts', 'lab_ram') AS job \gset
CALL storlab.wait(:job);
CALL storlab.bench('select-only', 1, 1, '2 s');
CALL storlab.experiment('shapes', '{"disk": {"tables": "lab_disk", "indexes": "lab_disk"}, "ram": {"indexes": "lab_ram"}}',
                        'select-only', '{1}', 1, '1 s', 1, '0 s', 1);
SQL
psql -d "$db" <<'SQL'
-- every path of a jsonb value: objects by key, arrays by element ('[]')
CREATE FUNCTION pg_temp.paths(v jsonb, p text) RETURNS TABLE (path text, t text, shown text)
LANGUAGE sql AS $$
  SELECT p, jsonb_typeof(v),
         CASE jsonb_typeof(v)
           WHEN 'string' THEN CASE WHEN v #>> '{}' ~ '^(\d{4}-\d\d-\d\d[ T]|\\x)' THEN '(time or bytes)'
                                   WHEN v #>> '{}' ~ '^\d+$' THEN '(digits: an oid)'
                                   WHEN v #>> '{}' ~ '^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$' THEN '(a uuid: a node_id)'
                                   WHEN p ~ '(moved_at|created_at|started_at|finished_at|query|statement|note|invalid|current_action|relation_name|pgbench_version)$'
                                        AND v #>> '{}' ~ '\d' THEN '(text with figures)'
                                   ELSE v #>> '{}' END
           WHEN 'number' THEN CASE WHEN p LIKE '%.%.%' OR p LIKE '%[]%' THEN 'scale ' || scale((v #>> '{}')::numeric) END
           WHEN 'boolean' THEN v #>> '{}'
         END
  UNION ALL
  SELECT q.* FROM jsonb_each(CASE jsonb_typeof(v) WHEN 'object' THEN v ELSE '{}' END) e,
                  pg_temp.paths(e.value, p || '.' || e.key) q
  UNION ALL
  SELECT DISTINCT q.* FROM jsonb_array_elements(CASE jsonb_typeof(v) WHEN 'array' THEN v ELSE '[]' END) e,
                  pg_temp.paths(e.value, p || '[]') q
$$;
CREATE FUNCTION pg_temp.shape(what text, rows jsonb) RETURNS SETOF text LANGUAGE sql AS $$
  SELECT what || ' #' || r.n || ' ' || x.path || ': ' || x.t || coalesce(' = ' || x.shown, '')
    FROM jsonb_array_elements(rows) WITH ORDINALITY r(row, n), pg_temp.paths(r.row, '') x
   ORDER BY r.n, x.path, x.t, x.shown
$$;
SELECT pg_temp.shape('plan', jsonb_agg(to_jsonb(p) ORDER BY relation_name)) FROM shape_plan p;
SELECT pg_temp.shape('relocations', jsonb_agg(to_jsonb(r) ORDER BY r.label NULLS FIRST, r.relation_name, r.to_tablespace)) FROM storlab.relocations r;
SELECT pg_temp.shape('bench_runs', jsonb_agg(to_jsonb(b) ORDER BY b.experiment_layout NULLS FIRST, b.warmup, b.id)) FROM storlab.bench_runs b;
SELECT pg_temp.shape('experiment_records', jsonb_agg(to_jsonb(e))) FROM storlab.experiment_records e;
SELECT pg_temp.shape('bench_progress rows', jsonb_agg(to_jsonb(g) - 'run_id' - 't_s' ORDER BY g.run_id, g.t_s) FILTER (WHERE g.t_s = 0)) FROM storlab.bench_progress g;
SQL
psql -d postgres -c "DROP DATABASE $db" >/dev/null
