-- docs/experiment.md: the page's experiment is job 88, as it shows.
SELECT setval(pg_get_serial_sequence('storlab.job_records', 'id'), 87);
