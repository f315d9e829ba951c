-- storlab 0.6.0 -> 0.7.0: the storage-bound studies lab.
-- One section per capability; each says what changed and why.

-- tablespaces() says what each tablespace runs on: the memory limit of the
-- server's cgroup (page cache included), the cgroup I/O throttles on the
-- tablespace's devices (read/write IOPS and bytes per second) and the
-- tablespace's comment, where its device class is stated. New last
-- columns: a new return type, so the function is made again, with its grants.
DROP FUNCTION storlab.tablespaces();
CREATE FUNCTION storlab."tablespaces"() RETURNS TABLE (
	"kind" TEXT,  /* String */
	"tablespace" name,  /* Name */
	"oid" oid,  /* Option < pg_sys :: Oid > */
	"location" TEXT,  /* String */
	"fs_type" TEXT,  /* Option < String > */
	"mount_point" TEXT,  /* Option < String > */
	"mount_options" TEXT,  /* Option < String > */
	"device" TEXT,  /* Option < String > */
	"rotational" bool,  /* Option < bool > */
	"fs_bytes" bigint,  /* Option < i64 > */
	"free_bytes" bigint,  /* Option < i64 > */
	"used_by_postgres_bytes" bigint,  /* Option < i64 > */
	"direct_io" bool,  /* Option < bool > */
	"backing" TEXT,  /* Option < String > */
	"raid_profile" TEXT,  /* Option < String > */
	"compression" TEXT,  /* Option < String > */
	"memory_limit_bytes" bigint,  /* Option < i64 > */
	"read_iops_limit" bigint,  /* Option < i64 > */
	"write_iops_limit" bigint,  /* Option < i64 > */
	"read_bps_limit" bigint,  /* Option < i64 > */
	"write_bps_limit" bigint,  /* Option < i64 > */
	"description" TEXT  /* Option < String > */
)
STRICT VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'tablespaces_wrapper';
REVOKE ALL ON FUNCTION storlab.tablespaces() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION storlab.tablespaces() TO pg_monitor;
