-- storlab.tablespaces() against the tools DBAs trust: findmnt, df, dd.
-- Environment-dependent checks live here, not in pg_regress.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(31);

CREATE TEMP TABLE facts AS SELECT * FROM storlab.tablespaces();
CREATE TEMP TABLE peer (tablespace name, tool text, line text);

-- Ask findmnt, df and dd about every folder, as the server's OS user.
CREATE TEMP TABLE peer_line (line text);
CREATE FUNCTION pg_temp.ask(ts name, tool text, cmd text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE peer_line;
  EXECUTE format('COPY peer_line FROM PROGRAM %L', cmd);
  INSERT INTO peer SELECT ts, tool, line FROM peer_line;
END $$;
CREATE FUNCTION pg_temp.sh(path text) RETURNS text LANGUAGE sql AS
  $$ SELECT '''' || replace(path, '''', '''\''''') || '''' $$;

SELECT pg_temp.ask(tablespace, 'findmnt',
         'findmnt -n -r -o FSTYPE,TARGET,OPTIONS --target ' || pg_temp.sh(location) || ' | head -1'),
       pg_temp.ask(tablespace, 'df', 'df -B1 --output=size,avail ' || pg_temp.sh(location) || ' | tail -1'),
       pg_temp.ask(tablespace, 'dd',
         'f=' || pg_temp.sh(location || '/pgsql_tmp_storlab_tap_dd') || '; '
         || 'dd if=/dev/zero of="$f" bs=4096 count=1 oflag=direct 2>/dev/null && echo t || echo f; rm -f "$f"')
  FROM facts;

CREATE TEMP VIEW cmp AS
SELECT f.*,
       split_part(m.line, ' ', 1) AS findmnt_fstype,
       split_part(m.line, ' ', 2) AS findmnt_target,
       split_part(m.line, ' ', 3) AS findmnt_options,
       split_part(trim(d.line), ' ', 1)::bigint AS df_size,
       (regexp_split_to_array(trim(d.line), '\s+'))[2]::bigint AS df_avail,
       dd.line::boolean AS dd_direct
  FROM facts f
  JOIN peer m ON m.tablespace = f.tablespace AND m.tool = 'findmnt'
  JOIN peer d ON d.tablespace = f.tablespace AND d.tool = 'df'
  JOIN peer dd ON dd.tablespace = f.tablespace AND dd.tool = 'dd';

SELECT is((SELECT count(*) FROM cmp), (SELECT count(*) FROM facts), 'every folder was asked');
SELECT is((SELECT string_agg(tablespace, ',') FROM cmp WHERE fs_type <> findmnt_fstype), NULL, 'fs_type agrees with findmnt');
SELECT is((SELECT string_agg(tablespace, ',') FROM cmp WHERE mount_point <> findmnt_target), NULL, 'mount_point agrees with findmnt');
SELECT is((SELECT string_agg(tablespace, ',') FROM cmp WHERE mount_options <> findmnt_options), NULL, 'mount_options agree with findmnt');
SELECT is((SELECT string_agg(tablespace, ',') FROM cmp WHERE fs_bytes <> df_size), NULL, 'fs_bytes is df''s size');
SELECT is((SELECT string_agg(tablespace || ':' || free_bytes || '/' || df_avail, ',') FROM cmp
            WHERE abs(free_bytes - df_avail) > greatest(0.02 * df_avail, 64 * 1024 * 1024)),
          NULL, 'free_bytes is df''s avail, within 2 %');
SELECT is((SELECT string_agg(tablespace, ',') FROM cmp WHERE direct_io IS DISTINCT FROM dd_direct), NULL,
          'direct_io agrees with dd oflag=direct');
-- live, in one statement: this test's own temp tables grow pg_default. A
-- file that changes between the two readings (autovacuum truncating a
-- table after the benchmark tests) is not a disagreement: up to five tries.
CREATE FUNCTION pg_temp.size_mismatches() RETURNS text LANGUAGE plpgsql AS $$
DECLARE m text;
BEGIN
  FOR i IN 1 .. 5 LOOP
    SELECT string_agg(tablespace, ',') INTO m FROM storlab.tablespaces()
     WHERE kind = 'tablespace' AND used_by_postgres_bytes <> pg_tablespace_size(oid);
    EXIT WHEN m IS NULL;
    PERFORM pg_sleep(0.2);
  END LOOP;
  RETURN m;
END $$;
SELECT is(pg_temp.size_mismatches(), NULL, 'used_by_postgres_bytes is pg_tablespace_size() for every tablespace');
SELECT cmp_ok((SELECT used_by_postgres_bytes FROM facts WHERE kind = 'wal'),
              '>=', (SELECT sum(size) FROM pg_ls_waldir())::bigint, 'the WAL row counts every WAL segment');
-- only database folders and PostgreSQL's own temp folder belong there
SELECT is((SELECT count(*) FROM pg_ls_dir((SELECT location FROM facts WHERE tablespace = 'lab_ram')) f
            WHERE f !~ '^[0-9]+$' AND f <> 'pgsql_tmp'), 0::bigint, 'checking O_DIRECT left no file in the tablespace');

-- The loop-mounted filesystems exist only when the lab was made as root.
SELECT CASE WHEN EXISTS (SELECT FROM facts WHERE tablespace = 'lab_xfs') THEN
  collect_tap(
    is((SELECT fs_type FROM facts WHERE tablespace = 'lab_ext4'), 'ext4', 'lab_ext4 is ext4'),
    is((SELECT fs_type FROM facts WHERE tablespace = 'lab_xfs'), 'xfs', 'lab_xfs is xfs'),
    is((SELECT fs_type FROM facts WHERE tablespace = 'lab_btrfs'), 'btrfs', 'lab_btrfs is btrfs'),
    ok((SELECT mount_options ~ '(^|,)compress=zstd' FROM facts WHERE tablespace = 'lab_btrfs'),
       'lab_btrfs is mounted with zstd compression'),
    is((SELECT count(*) FROM facts WHERE tablespace IN ('lab_ext4', 'lab_xfs', 'lab_btrfs')
                                     AND device LIKE '/dev/loop%' AND rotational IS NOT NULL),
       3::bigint, 'loop devices are named and the kernel says whether they rotate (btrfs too)'),
    ok((SELECT count(DISTINCT device) = 3 FROM facts WHERE tablespace IN ('lab_ext4', 'lab_xfs', 'lab_btrfs')),
       'each loop filesystem has its own device'))
ELSE skip('the lab was made without root: no loop-mounted filesystems', 6) END;

-- backing agrees with losetup (the image behind each loop device), and
-- btrfs's profile with its sysfs folder as `btrfs filesystem df` reads it.
SELECT pg_temp.ask(tablespace, 'losetup', 'losetup -n -O BACK-FILE ' || pg_temp.sh(device) || ' 2>/dev/null || true')
  FROM facts WHERE device LIKE '/dev/loop%' AND fs_type <> 'btrfs';
SELECT is((SELECT string_agg(f.tablespace, ',') FROM facts f JOIN peer p ON p.tablespace = f.tablespace AND p.tool = 'losetup'
            WHERE f.backing IS DISTINCT FROM 'loop image ' || trim(p.line)),
          NULL, 'backing names the image losetup says each loop device reads');
SELECT is((SELECT string_agg(tablespace, ',') FROM facts
            WHERE device NOT LIKE '/dev/loop%' AND device NOT LIKE '/dev/zram%' AND backing IS NOT NULL),
          NULL, 'other devices have no backing to name');
SELECT CASE WHEN EXISTS (SELECT FROM facts WHERE tablespace = 'lab_btrfs') THEN
  collect_tap(
    is((SELECT raid_profile || ' / ' || compression FROM facts WHERE tablespace = 'lab_btrfs'),
       'data single, metadata dup / zstd:3 (btrfs)', 'lab_btrfs: one device, metadata dup, zstd by mount option'))
ELSE skip('the lab was made without root: no btrfs', 1) END;
-- lab_zram exists in a lab started with --studies
SELECT CASE WHEN EXISTS (SELECT FROM facts WHERE tablespace = 'lab_zram') THEN
  collect_tap(
    is((SELECT backing || ' / ' || compression FROM facts WHERE tablespace = 'lab_zram'),
       'zram (lz4) / lz4 (zram)', 'lab_zram: a zram device that compresses with lz4'))
ELSE skip('no lab_zram (the lab was started without --studies)', 1) END;

-- What the server runs under, against the kernel's own files read here
-- (not by storlab's code): its memory group's limit and the blkio throttles
-- on each tablespace's devices. Holds throttled or not; the lab sets no rule.
CREATE TEMP TABLE groups AS
SELECT c.controller, rtrim('/sys/fs/cgroup/' || c.controller || '/' || array_to_string(p[1:n], '/'), '/') AS dir
  FROM (SELECT c.controller,
               string_to_array(trim(BOTH '/' FROM substring(pg_read_file('/proc/self/cgroup')
                                                             FROM '(?n)^[0-9]+:' || c.controller || ':(.*)$')), '/') AS p
          FROM (VALUES ('memory'), ('blkio')) c(controller)) c,
       generate_series(0, coalesce(cardinality(p), -1)) n;
CREATE FUNCTION pg_temp.sysfs(path text) RETURNS text LANGUAGE sql AS
  $$ SELECT trim(E' \n' FROM pg_read_file(path, 0, 1048576, true)) $$;
SELECT CASE WHEN EXISTS (SELECT FROM groups WHERE controller = 'memory') THEN
  collect_tap(
    is((SELECT string_agg(DISTINCT coalesce(memory_limit_bytes::text, 'none'), ',') FROM facts),
       (SELECT coalesce(min(pg_temp.sysfs(dir || '/memory.limit_in_bytes')::numeric)::text, 'none') FROM groups
         WHERE controller = 'memory' AND pg_temp.sysfs(dir || '/memory.limit_in_bytes')::numeric < 2::numeric ^ 62),
       'memory_limit_bytes is the smallest memory.limit_in_bytes of the server''s group and its ancestors, on every row'))
ELSE skip('no cgroup v1 memory hierarchy here', 1) END;

-- The devices under each tablespace: btrfs's members (its sysfs folder
-- lists them), else the mount's device; their major:minor from sysfs.
CREATE TEMP TABLE members AS
SELECT f.tablespace, m.member, pg_temp.sysfs('/sys/class/block/' || m.member || '/dev') AS devno
  FROM facts f
  CROSS JOIN LATERAL (
    SELECT d AS member
      FROM pg_ls_dir('/sys/fs/btrfs', true, false) b, pg_ls_dir('/sys/fs/btrfs/' || b || '/devices', true, false) d
     WHERE f.fs_type = 'btrfs'
       AND (pg_stat_file('/sys/fs/btrfs/' || b || '/devices/' || substr(f.device, 6), true)).modification IS NOT NULL
    UNION
    SELECT substr(f.device, 6) WHERE f.fs_type IS DISTINCT FROM 'btrfs') m
 WHERE f.device ~ '^/dev/[^/]+$';
-- a partition is throttled through its disk
UPDATE members SET devno = pg_temp.sysfs('/sys/class/block/' || member || '/../dev')
 WHERE (pg_stat_file('/sys/class/block/' || member || '/partition', true)).modification IS NOT NULL;
CREATE TEMP TABLE rules AS
SELECT k.kind, split_part(l, ' ', 1) AS devno, min(split_part(l, ' ', 2)::bigint) AS lim
  FROM groups g, (VALUES ('read_iops'), ('write_iops'), ('read_bps'), ('write_bps')) k(kind),
       regexp_split_to_table(coalesce(pg_temp.sysfs(g.dir || '/blkio.throttle.' || k.kind || '_device'), ''), '\n') l
 WHERE g.controller = 'blkio' AND l <> ''
 GROUP BY 1, 2;
CREATE TEMP VIEW expected_limits AS
SELECT f.tablespace, k.kind,
       CASE WHEN count(m.devno) > 0 AND count(m.devno) = count(r.lim) THEN sum(r.lim)::bigint END AS lim
  FROM facts f CROSS JOIN (VALUES ('read_iops'), ('write_iops'), ('read_bps'), ('write_bps')) k(kind)
  LEFT JOIN members m ON m.tablespace = f.tablespace
  LEFT JOIN rules r ON r.devno = m.devno AND r.kind = k.kind
 GROUP BY 1, 2;
SELECT CASE WHEN EXISTS (SELECT FROM groups WHERE controller = 'blkio') THEN
  collect_tap(
    is((SELECT string_agg(e.tablespace || ' ' || e.kind || ': ' || coalesce(e.lim::text, 'none') || ' expected', ', ')
          FROM expected_limits e JOIN facts f USING (tablespace)
         WHERE f.device ~ '^/dev/[^/]+$'
           AND e.lim IS DISTINCT FROM CASE e.kind WHEN 'read_iops' THEN f.read_iops_limit WHEN 'write_iops' THEN f.write_iops_limit
                                                  WHEN 'read_bps' THEN f.read_bps_limit ELSE f.write_bps_limit END),
       NULL, 'the IOPS and bytes/s limits are the blkio throttles on each tablespace''s devices (btrfs''s members summed)'),
    ok((SELECT count(*) > 0 FROM members WHERE devno ~ '^[0-9]+:[0-9]+$'), 'the devices under the tablespaces were found'))
ELSE skip('no cgroup v1 blkio hierarchy here', 2) END;
SELECT is((SELECT string_agg(tablespace, ',') FROM facts
            WHERE device !~ '^/dev/' AND (read_iops_limit IS NOT NULL OR write_iops_limit IS NOT NULL)),
          NULL, 'no throttle applies where there is no block device (tmpfs)');
SELECT CASE WHEN EXISTS (SELECT FROM facts WHERE tablespace = 'lab_btrfs_raid6') THEN
  collect_tap(
    is((SELECT count(*) FROM members WHERE tablespace = 'lab_btrfs_raid6'), 4::bigint,
       'each of lab_btrfs_raid6''s four devices is throttled on its own'))
ELSE skip('no lab_btrfs_raid6 (the lab was started without --studies)', 1) END;

-- description: each tablespace's comment, where its device class is stated
SELECT is((SELECT string_agg(tablespace, ',') FROM facts
            WHERE description IS DISTINCT FROM shobj_description(oid, 'pg_tablespace')),
          NULL, 'description is the comment on each tablespace, none for pg_wal');
COMMENT ON TABLESPACE lab_ram IS 'cloud volume class: 500 IOPS per device';
SELECT is((SELECT description FROM storlab.tablespaces() WHERE tablespace = 'lab_ram'),
          'cloud volume class: 500 IOPS per device', 'COMMENT ON TABLESPACE shows in description');

-- a probe stores them with its facts: a stored result says what it ran on
SELECT storlab.probe(CASE WHEN EXISTS (SELECT FROM facts WHERE tablespace = 'lab_ext4') THEN 'lab_ext4' ELSE 'lab_ram' END,
                     'randwrite', duration => '100 ms', file_size => 1048576, direct => false) AS p \gset
SELECT is((SELECT string_agg(k, ',') FROM storlab.probes p JOIN storlab.tablespaces() t USING (tablespace),
                  LATERAL (VALUES ('memory_limit_bytes', to_jsonb(t.memory_limit_bytes)), ('read_iops_limit', to_jsonb(t.read_iops_limit)),
                                  ('write_iops_limit', to_jsonb(t.write_iops_limit)), ('description', to_jsonb(t.description))) v(k, val)
            WHERE p.id = (:'p'::storlab.probes).id AND p.env -> k IS DISTINCT FROM coalesce(val, 'null')),
          NULL, 'a probe stores the memory limit, the throttles and the description with its facts');

-- One volume, one answer: in the lab pg_wal and lab_disk share pg_default's
-- filesystem, so they are measured once, as pg_default, and show its
-- figures and roles. (A volume of pg_wal alone competes for wal only: the
-- core's tests show it.) Here the volume's figures are made the best of
-- all, and every volume's alike in each repetition (rolled back at the
-- end): it wins every role, for each of its tablespaces, and no one ties.
CREATE TEMP TABLE first AS SELECT * FROM storlab.compare_tablespaces('1 day', '100 ms');
SELECT is((SELECT string_agg(tablespace || '=' || coalesce(same_volume_as, '-'), ',' ORDER BY tablespace) FROM first
            WHERE tablespace IN ('pg_wal', 'lab_disk')),
          'lab_disk=pg_default,pg_wal=pg_default', 'pg_wal and lab_disk are on pg_default''s volume');
UPDATE storlab.probes
   SET lat_p99_us = CASE WHEN tablespace = 'pg_default' THEN 0.5 ELSE 500 END + id % 2 * 0.01,
       mib_s = CASE WHEN tablespace = 'pg_default' THEN 1e9 ELSE 100 END + id % 2
 WHERE suite_call IN (SELECT suite_call FROM first);
CREATE TEMP TABLE ranked AS SELECT * FROM storlab.compare_tablespaces('1 day', '100 ms');
SELECT is((SELECT string_agg(DISTINCT array_to_string(best_for, ' '), ',') FROM ranked
            WHERE tablespace IN ('pg_default', 'lab_disk', 'pg_wal')),
          'wal indexes bulk', 'the best volume wins every role, for each of its tablespaces');
SELECT is((SELECT string_agg(tablespace, ',') FROM ranked WHERE tied_for <> '{}' OR (best_for <> '{}'
            AND coalesce(same_volume_as, tablespace) <> 'pg_default')),
          NULL, 'it beats every other volume significantly: no one else has a role, no one ties');

SELECT * FROM finish();
ROLLBACK;
