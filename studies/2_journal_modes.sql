-- Study 2: ext3's journal modes, measured as iozone measured them.
-- The seed: iozone, 8 kB records, flushes included (-e: one fsync at the
-- end of each file, its time in the figure), random writes, buffered, one
-- process: data=journal 49 MB/s, ordered 143, writeback 169, ext2 (no
-- journal) 178.
-- Lab: ext4 in the same four modes (lab_ext4_journal, lab_ext4 = ordered,
-- lab_ext4_writeback, lab_ext4_nojournal for ext2's layout), each on a
-- drive of its own, 200 I/Os a second for reads and writes together.
-- iozone -e's test: storlab.probe()'s 8 kB random writes, buffered, one
-- worker, one fsync after the last write (sync_every => 0), 10 s of writes
-- on a 256 MiB file, five repetitions in alternating order. A second,
-- named test measures a commit's cost instead: an fsync after every write
-- (16 MiB file), as the first version of this study did.
-- needs: lab_ext4 lab_ext4_journal lab_ext4_writeback lab_ext4_nojournal
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\ir lib/verdict.sql
INSERT INTO public.study_runs (study) VALUES (2);
DO $$
DECLARE
  modes text[] := '{nojournal,ordered,writeback,journal}';
  rep int; i int; m text; ts text;
BEGIN
  FOR rep IN 1..5 LOOP
    FOR i IN 1..4 LOOP
      m := modes[CASE WHEN rep % 2 = 1 THEN i ELSE 5 - i END];
      ts := CASE m WHEN 'ordered' THEN 'lab_ext4' ELSE 'lab_ext4_' || m END;
      PERFORM storlab.probe(ts, 'randwrite', 8192, '10 s', 1, 256 * 1024 * 1024,
                            direct => false, label => 'study 2 iozone -e', sync_every => 0);
      COMMIT;
      PERFORM storlab.probe(ts, 'randwrite', 8192, '5 s', 1, 16 * 1024 * 1024,
                            direct => false, sync_method => 'fsync', label => 'study 2 fsync each');
      COMMIT;
    END LOOP;
  END LOOP;
END $$;
\ir report/2_journal_modes.sql
