//! What an interrupted REINDEX CONCURRENTLY leaves and how a job removes
//! it: its session, still running once its psql is gone, and the invalid
//! copy of the index (`_ccnew`, `_ccold`) that every write keeps up to
//! date. Both online moves rebuild indexes so and share this.

use std::path::Path;

use pgrx::prelude::*;

use super::client::{psql, with_env};
use super::job::{as_caller, Job};
use crate::ops::read;
use storlab_core::pgbench::Connection;

/// Drops the invalid copies an interrupted REINDEX CONCURRENTLY of the
/// table left (`_ccnew`, `_ccold`, with a number when the name was taken):
/// each would slow every write to the table until dropped. As the job's
/// role, which owns the table or could not have rebuilt its indexes.
/// Returns how many it dropped.
pub(super) fn drop_invalid_leftovers(
    job: &Job,
    conn: &Connection,
    relation: i64,
    dir: &Path,
) -> usize {
    // DROP INDEX CONCURRENTLY waits for every transaction holding a lock on
    // the table: bounded, so that a cancel is done within seconds even
    // then (the copy is then left, and said to be)
    with_env("PGOPTIONS", "-c lock_timeout=2s", || {
        invalid_leftovers(relation)
            .iter()
            .filter(|name| {
                psql(
                    job,
                    conn,
                    &format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"),
                    dir,
                )
                .is_ok()
            })
            .count()
    })
}

/// The table's invalid index copies left by an interrupted rebuild.
pub(super) fn invalid_leftovers(relation: i64) -> Vec<String> {
    as_caller(|| {
        Spi::connect(|c| {
            c.select(
                "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_index i
                   JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                  WHERE i.indrelid = $1::oid AND NOT i.indisvalid AND c.relname ~ '_cc(new|old)[0-9]*$'",
                None,
                &[relation.into()],
            )?
            .map(|r| Ok(r.get::<String>(1)?.unwrap_or_default()))
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
    })
}

/// Cancels the job's own client sessions still running a statement (by pid,
/// found by their application_name), as the job's role, which started them;
/// then waits up to two seconds for them to be done.
pub(super) fn cancel_backends(tag: &str) {
    let busy = || {
        as_caller(|| {
            read::one::<i64>(
                "SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity
                  WHERE application_name = $1 AND state <> 'idle' AND pid <> pg_catalog.pg_backend_pid()",
                &[tag.into()],
            )
        })
        .unwrap_or(0)
    };
    as_caller(|| {
        read::one::<i64>(
            "SELECT pg_catalog.count(pg_catalog.pg_cancel_backend(pid)) FROM pg_catalog.pg_stat_activity
              WHERE application_name = $1 AND state <> 'idle' AND pid <> pg_catalog.pg_backend_pid()",
            &[tag.into()],
        )
    });
    let start = std::time::Instant::now();
    while busy() > 0 && start.elapsed() < std::time::Duration::from_secs(2) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// How many invalid copies a stopped rebuild's cleanup dropped, in words.
pub(super) fn copies_dropped(n: usize) -> String {
    match n {
        0 => "no invalid copy dropped".to_string(),
        1 => "1 invalid copy dropped".to_string(),
        n => format!("{n} invalid copies dropped"),
    }
}

#[cfg(test)]
mod tests {
    use super::copies_dropped;

    #[test]
    fn dropped_copies_counted_in_words() {
        assert_eq!(copies_dropped(0), "no invalid copy dropped");
        assert_eq!(copies_dropped(1), "1 invalid copy dropped");
        assert_eq!(copies_dropped(3), "3 invalid copies dropped");
    }
}
