-- Study 4: fillfactor on a compressing SSD.
-- The seed: pgbench at scale 10000, 128 clients, on an SSD whose controller
-- compresses what it stores: fillfactor 70 gave +38 % TPS for +8 % of
-- device space, fillfactor 50 +46 % TPS for +20 %; the empty part of each
-- page compressed away.
-- Lab: one experiment, two devices of the same SSD class (blkio, 2,000 read
-- and 2,000 write IOPS): lab_zram, ext4 on a zram device that compresses
-- with lz4 (its mm_stat says what it stores), and lab_ssd, its uncompressed
-- twin; pgbench's data four times the lab's memory limit (:scale) at
-- fillfactor 100, 70 and 50 (pgbench -i for each); 32 clients (128 would
-- not fit the lab's memory limit); five repetitions of 35 s after 10 s of
-- warm-up, so every run contains a checkpoint. The device's share of the
-- fillfactor gain is the interaction: the gain on lab_zram beyond the gain
-- on lab_ssd. HOT updates: after pgbench -i a fillfactor-100 page of
-- pgbench_accounts has 116 bytes free, less than one 128-byte row, so
-- none of its updates is HOT from the start; the report shows each cell's
-- HOT ratio and WAL bytes per transaction.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\ir lib/verdict.sql
CALL storlab.experiment('study 4: fillfactor on a compressing device and its uncompressed twin',
  '[{"name": "zram-lz4", "tables": "lab_zram", "indexes": "lab_zram"},
    {"name": "ssd",      "tables": "lab_ssd",  "indexes": "lab_ssd"}]',
  clients => '{32}', jobs => 2, duration => '35 s', repetitions => 5, warmup => '10 s', scale => :scale,
  fillfactors => '{100,70,50}') \gset
\ir report/4_compression_fillfactor.sql
