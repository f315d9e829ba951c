-- docs/experiment.md, "What the runs measured beneath PostgreSQL": its experiment is job 120, as it shows.
SELECT setval(pg_get_serial_sequence('storlab.job_records', 'id'), 119);
