//! `storlab.tablespaces()`: the storage facts behind every tablespace and the WAL folder.

use pgrx::prelude::*;

use crate::ops::targets::{all_targets, Target};
use crate::sqltypes::Name;
use storlab_core::env;

/// One row of tablespaces(); the #[pg_extern] signature below must spell the
/// same tuple out, since pgrx reads column names from it.
type Row = (
    String,
    Name,
    Option<pg_sys::Oid>,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<bool>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<bool>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<String>,
);

fn bytes(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn row(t: Target, memory_limit: Option<i64>) -> Row {
    let description = t.description.clone();
    // a cancel (statement_timeout) stops a walk over a million files
    let mut poll = || {
        pg_sys::check_for_interrupts!();
    };
    let used = env::space::dir_bytes_polling(&t.folder, &mut poll)
        .ok()
        .map(bytes);
    match env::facts(&t.folder) {
        Ok(f) => (
            t.kind.to_string(),
            Name(t.name),
            t.oid,
            f.location.display().to_string(),
            Some(f.fs_type),
            Some(f.mount_point.display().to_string()),
            Some(f.mount_options),
            Some(f.device),
            f.rotational,
            Some(bytes(f.fs_bytes)),
            Some(bytes(f.free_bytes)),
            used,
            f.direct_io,
            f.backing,
            f.raid_profile,
            f.compression,
            memory_limit,
            f.throttle.read_iops.map(bytes),
            f.throttle.write_iops.map(bytes),
            f.throttle.read_bps.map(bytes),
            f.throttle.write_bps.map(bytes),
            description,
        ),
        Err(e) => {
            // One broken tablespace (folder removed behind PostgreSQL's back, a
            // volume not mounted) must not hide the facts of all the others.
            warning!(
                "storlab: no storage facts for {} {} at {}: {e}",
                t.kind,
                t.name,
                t.folder.display()
            );
            let loc = t.folder.display().to_string();
            (
                t.kind.to_string(),
                Name(t.name),
                t.oid,
                loc,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                used,
                None,
                None,
                None,
                None,
                memory_limit,
                None,
                None,
                None,
                None,
                description,
            )
        }
    }
}

/// The storage facts behind every tablespace of the cluster (but pg_global)
/// and behind the WAL folder, read from the kernel at call time, with what
/// the server runs under: its cgroup memory limit (the same on every row)
/// and the I/O throttles on each tablespace's devices, and the comment
/// stating the tablespace's device class.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn tablespaces() -> TableIterator<
    'static,
    (
        name!(kind, String),
        name!(tablespace, Name),
        name!(oid, Option<pg_sys::Oid>),
        name!(location, String),
        name!(fs_type, Option<String>),
        name!(mount_point, Option<String>),
        name!(mount_options, Option<String>),
        name!(device, Option<String>),
        name!(rotational, Option<bool>),
        name!(fs_bytes, Option<i64>),
        name!(free_bytes, Option<i64>),
        name!(used_by_postgres_bytes, Option<i64>),
        name!(direct_io, Option<bool>),
        name!(backing, Option<String>),
        name!(raid_profile, Option<String>),
        name!(compression, Option<String>),
        name!(memory_limit_bytes, Option<i64>),
        name!(read_iops_limit, Option<i64>),
        name!(write_iops_limit, Option<i64>),
        name!(read_bps_limit, Option<i64>),
        name!(write_bps_limit, Option<i64>),
        name!(description, Option<String>),
    ),
> {
    let memory_limit = env::cgroup::memory_limit().map(bytes);
    TableIterator::new(
        all_targets()
            .into_iter()
            .map(|t| row(t, memory_limit))
            .collect::<Vec<_>>(),
    )
}
