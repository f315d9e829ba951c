--
-- storlab.tablespaces(): the storage behind every tablespace and behind the
-- WAL folder, read from the kernel (mount table, statvfs, sysfs) at call time.
--
CREATE EXTENSION storlab;

-- One row per tablespace (pg_global is left out: nothing of ours is ever
-- written there) and one for the WAL folder. The columns:
SELECT a.name AS column, format_type(a.type, NULL) AS type
  FROM pg_proc p,
       unnest(p.proargnames, p.proallargtypes, p.proargmodes) WITH ORDINALITY AS a(name, type, mode, n)
 WHERE p.oid = 'storlab.tablespaces'::regproc AND a.mode = 't'
 ORDER BY a.n;

-- The lab has a tablespace on RAM and one on the local disk (and, as root,
-- loop-mounted ext4, xfs and btrfs, which the pgTAP tests check).
SELECT kind, tablespace, oid IS NOT NULL AS has_oid
  FROM storlab.tablespaces()
 WHERE tablespace IN ('pg_default', 'pg_global', 'lab_ram', 'lab_disk', 'pg_wal')
 ORDER BY kind, tablespace;

-- lab_ram lives on tmpfs: no block device behind it, so the kernel says
-- nothing about rotation.
SELECT tablespace, fs_type, device, rotational
  FROM storlab.tablespaces()
 WHERE tablespace = 'lab_ram';

-- What stands behind the device (a loop device's image file, a zram
-- device), btrfs's RAID profile and what compresses the data: tmpfs has
-- none of them (the pgTAP tests check the loop, btrfs and zram answers).
SELECT tablespace, backing, raid_profile, compression
  FROM storlab.tablespaces()
 WHERE tablespace = 'lab_ram';

-- What the server runs under. memory_limit_bytes: the memory limit of its
-- cgroup (the smallest of its group's and its ancestors'; page cache is
-- charged to it), the same on every row, NULL when there is none.
SELECT count(DISTINCT coalesce(memory_limit_bytes, -1)) AS memory_limits,
       bool_and(memory_limit_bytes IS NULL OR memory_limit_bytes > 0) AS null_or_positive
  FROM storlab.tablespaces();

-- The cgroup I/O throttles on the tablespace's block devices: none can
-- apply to tmpfs (the pgTAP tests compare the others with the kernel's files).
SELECT tablespace, read_iops_limit, write_iops_limit, read_bps_limit, write_bps_limit
  FROM storlab.tablespaces()
 WHERE tablespace = 'lab_ram';

-- description: the tablespace's comment, where a DBA (or the lab) states
-- its device class. The WAL folder is no tablespace: it has none.
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE regress_storlab_described LOCATION '';
RESET allow_in_place_tablespaces;
COMMENT ON TABLESPACE regress_storlab_described IS 'cloud volume class: 500 IOPS per device';
SELECT tablespace, description
  FROM storlab.tablespaces()
 WHERE tablespace IN ('regress_storlab_described', 'pg_wal')
 ORDER BY tablespace;
COMMENT ON TABLESPACE regress_storlab_described IS NULL;
SELECT description IS NULL AS no_description
  FROM storlab.tablespaces()
 WHERE tablespace = 'regress_storlab_described';
DROP TABLESPACE regress_storlab_described;

-- `location` is the folder PostgreSQL really writes to: base/ for pg_default,
-- the version folder inside a tablespace's location, pg_wal for WAL.
SELECT tablespace,
       CASE WHEN tablespace = 'pg_default' THEN location LIKE '%/base'
            WHEN kind = 'wal' THEN location LIKE '%/pg_wal'
            ELSE location = pg_tablespace_location(oid) || '/PG_' || current_setting('server_version_num')::int / 10000
                            || '_' || (SELECT catalog_version_no FROM pg_control_system())
       END AS location_as_expected
  FROM storlab.tablespaces()
 WHERE tablespace IN ('pg_default', 'lab_ram', 'lab_disk', 'pg_wal')
 ORDER BY tablespace;

-- Facts that hold everywhere: a folder is below its mount point, and free
-- space (what an unprivileged writer may still use) is at most the size.
SELECT count(*) AS rows_breaking_invariants
  FROM storlab.tablespaces()
 WHERE NOT (location LIKE rtrim(mount_point, '/') || '/%')
    OR free_bytes > fs_bytes
    OR fs_bytes <= 0
    OR used_by_postgres_bytes < 0;

-- pg_default, pg_wal and lab_disk share the disk's filesystem in the lab.
SELECT count(DISTINCT mount_point) AS filesystems
  FROM storlab.tablespaces()
 WHERE tablespace IN ('pg_default', 'lab_disk', 'pg_wal');

-- used_by_postgres_bytes counts what PostgreSQL keeps in the folder, as
-- pg_tablespace_size() does.
CREATE TABLE on_ram (id int, filler text) TABLESPACE lab_ram;
INSERT INTO on_ram SELECT g, repeat('x', 100) FROM generate_series(1, 10000) g;
SELECT t.used_by_postgres_bytes >= pg_relation_size('on_ram') AS counts_the_table,
       t.used_by_postgres_bytes = pg_tablespace_size('lab_ram') AS same_as_pg_tablespace_size
  FROM storlab.tablespaces() t
 WHERE t.tablespace = 'lab_ram';
DROP TABLE on_ram;

-- A read-only report: readable by pg_monitor, not by PUBLIC.
CREATE ROLE regress_storlab_nobody;
CREATE ROLE regress_storlab_monitor IN ROLE pg_monitor;
SELECT has_function_privilege('regress_storlab_monitor', 'storlab.tablespaces()', 'EXECUTE') AS monitor_may,
       has_function_privilege('regress_storlab_nobody', 'storlab.tablespaces()', 'EXECUTE') AS public_may;
SET ROLE regress_storlab_monitor;
SELECT count(*) > 2 AS monitor_sees_rows FROM storlab.tablespaces();
SET ROLE regress_storlab_nobody;
SELECT * FROM storlab.tablespaces();
RESET ROLE;
DROP ROLE regress_storlab_nobody, regress_storlab_monitor;

-- The extension can be dropped and created again, repeatedly.
DROP EXTENSION storlab;
CREATE EXTENSION storlab;
DROP EXTENSION storlab;
-- PostgreSQL made the schema named in the control file and keeps it, empty,
-- after DROP EXTENSION (as for any extension with a fixed schema); nothing of
-- ours is left in it.
SELECT (SELECT count(*) FROM pg_proc WHERE pronamespace = 'storlab'::regnamespace) AS functions_left,
       (SELECT count(*) FROM pg_class WHERE relnamespace = 'storlab'::regnamespace) AS relations_left;
CREATE EXTENSION storlab;
SELECT count(*) > 0 AS works_again FROM storlab.tablespaces();
