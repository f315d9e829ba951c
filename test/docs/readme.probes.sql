-- README.md's tour: the standard suite on every tablespace and pg_wal with
-- short fixed probes, so that the tour's compare_tablespaces() answers from
-- stored figures (it probes what is missing; figures differ, the shape does
-- not) and the docs' check stays within its time.
SELECT count(*) FROM storlab.profile(NULL, '0.2 s', precision_pct => NULL);
