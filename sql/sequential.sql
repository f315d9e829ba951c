--
-- Sequential experiments: options => '{"stop": "sequential", ...}' looks
-- after every repetition and stops each layout's comparison with the
-- baseline as soon as it is answered: different (the sign of the effect is
-- proven), equivalent (the difference is within ± equivalence_pct), or,
-- after max_repetitions, undecided. The error rates hold over all looks:
-- repeated confidence intervals (Jennison & Turnbull) with the 5 % spent
-- over the looks by a Pocock-type function (Lan & DeMets) and shared
-- among the comparisons (Bonferroni).
--
CREATE EXTENSION IF NOT EXISTS storlab;

SELECT count(*) AS jobs_before FROM storlab.job_records \gset

-- The design is checked before anything runs or moves (22023).
SELECT storlab.experiment_start('bad', '{"a": {}, "b": {}}', options => '{"stop": "early"}');
SELECT storlab.experiment_start('bad', '{"a": {}, "b": {}}',
         options => '{"stop": "sequential", "min_repetitions": 4, "max_repetitions": 3}');
SELECT storlab.experiment_start('bad', '{"a": {}, "b": {}}', options => '{"stop": "sequential", "min_repetitions": 1}');
SELECT storlab.experiment_start('bad', '{"a": {}, "b": {}}', options => '{"stop": "sequential", "equivalence_pct": 0}');
SELECT storlab.experiment_start('bad', '{"a": {}, "b": {}}', options => '{"stop": "sequential", "equivalence_pct": 100}');
-- a sequential design compares layouts: one is not enough
SELECT storlab.experiment_start('bad', '{"a": {}}', options => '{"stop": "sequential"}');
-- its options without it are a mistake, not silently ignored
SELECT storlab.experiment_start('bad', '{"a": {}, "b": {}}', options => '{"max_repetitions": 8}');
-- ... and nothing was left behind
SELECT count(*) - :jobs_before AS new_jobs FROM storlab.job_records;

-- A report over stored runs whose decisions are known. These rows stand
-- for a sequential experiment that ran (min_repetitions 2,
-- max_repetitions 6, equivalence_pct 5): the baseline "base" and three
-- layouts, 8 clients, so three comparisons, each at 5 % / 3 after all
-- looks. Each look after repetition n spends
-- (α(n/6) − α((n−1)/6)) / 3 of α(t) = 0.05 ln(1 + (e − 1) t), all of
-- α(2/6) at the first: 0.00755, 0.00279, 0.00239, 0.00209, 0.00186.
--   half:  TPS about half the baseline's; after 2 repetitions its interval
--          is −62.9 .. −32.3 %: different, and its runs stop there.
--   twin:  equal; after 3 the two one-sided tests at α_3 each give the
--          interval −3.6 .. +3.9 %, inside ± 5 %: equivalent (after 2,
--          with about one degree of freedom, it was not).
--   noisy: runs that scatter ± 15 %: after 6 the interval is −25.7 ..
--          +35.6 %: undecided, and the baseline ran all 6 for it.
-- (Welch's interval of the mean log TPS, checked with SciPy: for
-- different, scipy.stats.t.ppf(1 − α_n / 2, df) with Welch's df; for
-- equivalent, t.ppf(1 − α_n, df), Schuirmann's two one-sided tests.)
INSERT INTO storlab.job_records (id, kind, status, args) OVERRIDING SYSTEM VALUE
VALUES (9005, 'experiment', 'done',
  '{"kind": "experiment", "name": "sequential, known figures", "layouts": [
      {"name": "base",  "placement": {"tables": "lab_disk", "indexes": "lab_disk", "temp": null, "settings": []}},
      {"name": "half",  "placement": {"tables": "lab_xfs",  "indexes": "lab_xfs",  "temp": null, "settings": []}},
      {"name": "twin",  "placement": {"tables": "lab_disk", "indexes": "lab_disk", "temp": null, "settings": []}},
      {"name": "noisy", "placement": {"tables": "lab_ram",  "indexes": "lab_ram",  "temp": null, "settings": []}}],
    "script": "tpcb-like", "clients": [8], "jobs": 2, "duration_s": 10, "repetitions": 6, "warmup_s": 2,
    "scale": 1, "fillfactors": [100], "order": "alternating", "lock_timeout_ms": 5000, "run": {},
    "stop": {"min_repetitions": 2, "max_repetitions": 6, "equivalence_pct": 5.0}}');
INSERT INTO storlab.experiment_records (id, name, steps_total, system_identifier, hostname)
VALUES (9005, 'sequential, known figures', 29, 0, 'regress');
INSERT INTO storlab.bench_runs (id, job_id, experiment_id, experiment_layout, fillfactor, repetition, warmup,
                                script, clients, jobs, duration_s, tps, system_identifier, hostname)
SELECT 9500 + row_number() OVER (), 9005, 9005, layout, 100, rep, false, 'tpcb-like', 8, 2, 10, tps, 0, 'regress'
  FROM (VALUES ('base', 1, 1000.0), ('half', 1, 510.0), ('twin', 1, 1003.0), ('noisy', 1,  900.0),
               ('noisy', 2, 1150.0), ('twin', 2, 1009.0), ('half', 2, 498.0), ('base', 2, 1012.0),
               ('base', 3,  995.0), ('twin', 3,  998.0), ('noisy', 3,  980.0),
               ('noisy', 4, 1080.0), ('base', 4, 1004.0),
               ('base', 5,  998.0), ('noisy', 5,  850.0),
               ('noisy', 6, 1120.0), ('base', 6, 1010.0)
       ) AS v(layout, rep, tps);

-- decision, decided_after (the repetitions at the deciding look) and the
-- improvement's repeated confidence interval that decided (95 % over all
-- looks; for equivalent, the two one-sided tests' 90 %-style interval;
-- for an undecided one, the last look's), valid however early the
-- comparison stopped. improvement_pct, p_value and significant stay the fixed-sample
-- figures they always were: after a sequential stop they overstate the
-- evidence (noisy's p would have been read at every look).
SELECT layout, runs, round(improvement_pct::numeric, 1) AS "improv_%", decision, decided_after,
       round(seq_ci_low_pct::numeric, 1) AS "seq_ci_low_%", round(seq_ci_high_pct::numeric, 1) AS "seq_ci_high_%"
  FROM storlab.experiment_report(9005);

-- While repetitions are left, an undecided comparison is open: the same
-- experiment as it stood after repetition 3 (as a cancelled one would
-- stay until experiment_resume).
DELETE FROM storlab.bench_runs WHERE experiment_id = 9005 AND repetition > 3;
SELECT layout, runs, decision, decided_after,
       round(seq_ci_low_pct::numeric, 1) AS "seq_ci_low_%", round(seq_ci_high_pct::numeric, 1) AS "seq_ci_high_%"
  FROM storlab.experiment_report(9005);

-- A fixed experiment (the default) has no decisions: its report is as before.
UPDATE storlab.job_records SET args = args - 'stop' WHERE id = 9005;
SELECT layout, runs, decision, decided_after, seq_ci_low_pct FROM storlab.experiment_report(9005);

DELETE FROM storlab.job_records WHERE id = 9005;
SELECT count(*) AS runs_left FROM storlab.bench_runs WHERE experiment_id = 9005;
