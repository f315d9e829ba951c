--
-- Charts: storlab.chart_svg(kind, id, title) draws stored results as a
-- standalone SVG document, for \o chart.svg in psql, a web page or a
-- ticket. Kinds: experiment (an experiment id), run (a bench run id),
-- probe (a probe id), profile, depths and tablespaces (no id: the newest
-- standard-suite probes).
--
CREATE EXTENSION IF NOT EXISTS storlab;

-- An experiment with known figures (rows as its job would have stored
-- them): "fast" significantly better than the baseline, "same" not.
INSERT INTO storlab.job_records (id, kind, status, args) OVERRIDING SYSTEM VALUE
VALUES (9002, 'experiment', 'done',
  '{"kind": "experiment", "name": "chart figures", "layouts": [
      {"name": "base", "placement": {"tables": "lab_disk", "indexes": "lab_disk", "temp": null, "settings": []}},
      {"name": "fast", "placement": {"tables": "lab_disk", "indexes": "lab_ram", "temp": null, "settings": []}},
      {"name": "same", "placement": {"tables": "lab_ram", "indexes": "lab_disk", "temp": null, "settings": []}}],
    "script": "tpcb-like", "clients": [8], "jobs": 2, "duration_s": 10, "repetitions": 3, "warmup_s": 2,
    "scale": 1, "fillfactors": [100], "order": "alternating", "lock_timeout_ms": 5000, "run": {}}');
INSERT INTO storlab.experiment_records (id, name, steps_total, system_identifier, hostname)
VALUES (9002, 'chart figures', 10, 0, 'regress');
INSERT INTO storlab.bench_runs (id, job_id, experiment_id, experiment_layout, fillfactor, repetition, warmup,
                                script, clients, jobs, duration_s, tps, transactions, system_identifier, hostname)
SELECT 9200 + row_number() OVER (), 9002, 9002, layout, 100, rep, false, 'tpcb-like', 8, 2, 10, tps, tps * 10, 0, 'regress'
  FROM (VALUES ('base', 1, 100.0), ('base', 2, 110.0), ('base', 3, 105.0),
               ('fast', 1, 120.0), ('fast', 2, 125.0), ('fast', 3, 130.0),
               ('same', 1, 104.0), ('same', 2, 108.0), ('same', 3, 106.0)) AS v(layout, rep, tps);

CREATE TEMP TABLE charts AS
SELECT kind, storlab.chart_svg(kind, id) AS svg
  FROM (VALUES ('experiment', 9002),
               ('run', (SELECT max(run_id) FROM storlab.bench_progress)),
               ('probe', (SELECT max(id) FROM storlab.probes WHERE workload = 'randread')),
               ('profile', NULL),
               ('depths', NULL),
               ('tablespaces', NULL)) AS k(kind, id);

-- Each is a well-formed XML document with an <svg> root, with text to read.
SELECT kind, xml_is_well_formed_document(svg) AS well_formed,
       (xpath('name(/*)', svg::xml))[1]::text AS root,
       (xpath('count(//s:text)', svg::xml, ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']]))[1]::text::int > 5 AS has_text
  FROM charts ORDER BY kind;

-- Each has its title and its axes labelled with units.
SELECT c.kind, l.label, strpos(c.svg, l.label) > 0 AS present
  FROM charts c JOIN (VALUES
    ('experiment', 'Experiment '), ('experiment', 'TPS (transactions per second)'), ('experiment', 'clients'),
    ('run', 'Run '), ('run', 'time (s)'), ('run', 'latency (ms), average per second'),
    ('probe', 'Probe '), ('probe', 'percentile (%), evenly spaced per nine'), ('probe', 'latency (µs)'),
    ('profile', 'IOPS by workers'), ('profile', 'workers'), ('profile', 'lab_ram randread'),
    ('tablespaces', 'Tablespaces compared'), ('tablespaces', 'WAL commit p99 (µs)'), ('tablespaces', 'pg_wal')
  ) AS l(kind, label) ON l.kind = c.kind
 ORDER BY 1, 2;

-- The experiment's bars carry the improvement over the baseline, and
-- "n.s." where Welch's test does not call it significant.
SELECT layout, fillfactor, clients, round(improvement_pct::numeric, 1) AS improvement_pct, significant,
       strpos((SELECT svg FROM charts WHERE kind = 'experiment'),
              CASE WHEN improvement_pct = 0 THEN 'baseline'
                   ELSE CASE WHEN improvement_pct > 0 THEN '+' ELSE '' END || round(improvement_pct::numeric, 1) || ' %' || CASE WHEN NOT significant THEN ' n.s.' ELSE '' END END) > 0
         AS written_on_its_bar
  FROM storlab.experiment_report(9002)
 ORDER BY layout;

-- A title of one's own, escaped as XML wants.
SELECT strpos(storlab.chart_svg('profile', title => 'RAM & disk <lab>'), 'RAM &amp; disk &lt;lab&gt;') > 0 AS own_title;

-- Bad input: an unknown kind or a missing id is an error, never an empty
-- picture; so is a stored row with nothing to draw.
-- pg_temp.error_of(call): what a call raises, as 'SQLSTATE: message' (sql/lib/helpers.sql)
\set ECHO none
\i sql/lib/helpers.sql
\set ECHO all
SELECT call, pg_temp.error_of(call) AS error FROM (VALUES
  ($$storlab.chart_svg('pie')$$),
  ($$storlab.chart_svg(NULL)$$),
  ($$storlab.chart_svg('experiment')$$),
  ($$storlab.chart_svg('experiment', -1)$$),
  ($$storlab.chart_svg('run', -1)$$),
  ($$storlab.chart_svg('probe', -1)$$),
  ($$storlab.chart_svg('profile', 1)$$),
  ($$storlab.chart_svg('run', (SELECT min(id) FROM storlab.bench_runs r
                                WHERE NOT EXISTS (SELECT FROM storlab.bench_progress p WHERE p.run_id = r.id)))$$)
) AS v(call);

DELETE FROM storlab.job_records WHERE id = 9002;
