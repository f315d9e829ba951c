-- docs/tour.md: the standard suite on every volume with short fixed
-- probes, twice, so that the tour's compare_tablespaces() answers from
-- stored figures (it measures a volume without a complete call; figures
-- differ, the shape does not) and the docs' check stays within its time.
SET storlab.suite_file_size = '16MB';
SELECT count(*) FROM storlab.compare_tablespaces(duration => '0.2 s', precision_pct => NULL, max_repetitions => 2);
