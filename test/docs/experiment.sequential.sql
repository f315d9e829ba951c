-- docs/experiment.md, "Experiments that stop when answered": its experiment is job 11, as it shows.
SELECT setval(pg_get_serial_sequence('storlab.job_records', 'id'), 10);
