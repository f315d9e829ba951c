//! What an interrupted pg_repack run leaves on a table (its trigger, log
//! table, copy and type), read and removed with pg_repack's own
//! repack_drop, never while a pg_repack runs on the table.

use std::path::Path;
use std::time::{Duration, Instant};

use pgrx::prelude::*;

use crate::jobs::client::{psql_tidying, with_env};
use crate::jobs::job::as_caller;
use crate::ops::read;
use storlab_core::pgbench::Connection;

/// The backend of a pg_repack run on the table now: it holds pg_repack's
/// advisory lock on it (pg_try_advisory_lock(16185446, -2147483648 + oid)).
pub(super) fn repack_running(oid: pg_sys::Oid) -> Option<i32> {
    as_caller(|| {
        read::one::<i32>(
            "SELECT pg_catalog.min(l.pid) FROM pg_catalog.pg_locks l
              WHERE l.locktype = 'advisory' AND l.classid = 16185446 AND l.objsubid = 2
                AND l.objid = (($1::oid::int8 + 2147483648) % 4294967296)::oid
                AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                                   WHERE d.datname = pg_catalog.current_database())",
            &[oid.into()],
        )
    })
}

/// The objects an interrupted pg_repack run of the table left: its
/// trigger, log table, copy and type. Read as the job's role.
pub(super) fn leftovers(oid: pg_sys::Oid) -> Vec<String> {
    as_caller(|| {
        read::one::<Vec<String>>(
            "SELECT pg_catalog.array_remove(ARRAY[
                      CASE WHEN EXISTS (SELECT FROM pg_catalog.pg_trigger t
                                         WHERE t.tgrelid = $1 AND t.tgname = 'repack_trigger')
                           THEN pg_catalog.format('trigger repack_trigger on %s', $1::regclass) END,
                      CASE WHEN pg_catalog.to_regclass('repack.log_' || $1::text) IS NOT NULL
                           THEN 'table repack.log_' || $1::text END,
                      CASE WHEN pg_catalog.to_regclass('repack.table_' || $1::text) IS NOT NULL
                           THEN 'table repack.table_' || $1::text END,
                      CASE WHEN pg_catalog.to_regtype('repack.pk_' || $1::text) IS NOT NULL
                           THEN 'type repack.pk_' || $1::text END], NULL)",
            &[oid.into()],
        )
    })
    .unwrap_or_default()
}

/// Removes what an interrupted pg_repack run of the table left, with
/// pg_repack's own function (repack.repack_drop, as its documentation
/// advises), as the job's role, over a client connection (a lock timeout
/// there is an error of that session, not of the worker). It takes ACCESS
/// EXCLUSIVE on the table: each attempt waits at most 100 ms (a queued
/// request blocks the table's writers), once a second, until `limit`.
/// Returns what is still there.
pub(super) fn drop_leftovers(
    conn: &Connection,
    dir: &Path,
    oid: pg_sys::Oid,
    limit: Duration,
) -> Vec<String> {
    let start = Instant::now();
    loop {
        let left = leftovers(oid);
        if left.is_empty() || start.elapsed() >= limit {
            return left;
        }
        if drop_attempt(conn, dir, oid) {
            continue;
        }
        // each attempt queues the table's writers for up to 100 ms: one a
        // second at most
        std::thread::sleep(Duration::from_millis(900));
    }
}

/// One attempt at removing pg_repack's objects on the table, its lock
/// waited for at most 100 ms, while no pg_repack runs on it: the attempt
/// holds pg_repack's own advisory lock on the table (the one a run takes
/// at its start, pg_try_advisory_lock(16185446, -2147483648 + oid)) for its
/// transaction, so that it never removes the objects of a run under way,
/// and no run starts meanwhile. Not cut short by a stop request: it tidies
/// after one. Did it succeed?
pub(super) fn drop_attempt(conn: &Connection, dir: &Path, oid: pg_sys::Oid) -> bool {
    let key = (i64::from(oid.to_u32()) - 2_147_483_648) as i32;
    let sql = format!(
        "DO $storlab$ BEGIN
           IF NOT pg_catalog.pg_try_advisory_xact_lock(16185446, {key}) THEN
             RAISE EXCEPTION 'pg_repack runs on the table';
           END IF;
           PERFORM repack.repack_drop({}, 4);
         END $storlab$",
        oid.to_u32()
    );
    with_env("PGOPTIONS", "-c lock_timeout=100ms", || {
        psql_tidying(conn, &[&sql], dir, Duration::from_secs(30)).is_ok()
    })
}
