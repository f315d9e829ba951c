//! `storlab.tablespaces()`: the storage facts behind every tablespace and the WAL folder.

use pgrx::prelude::*;

use crate::ops::read_path::{aio_settings, session_eic, tablespace_eic};
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
    Option<i32>,
    Option<String>,
    Option<i32>,
    Option<String>,
);

/// The server's I/O settings: NULL where this major has no such setting
/// (io_method and io_workers before 18, io_combine_limit before 17).
struct Io {
    eic: Option<i32>,
    method: Option<String>,
    workers: Option<i32>,
    combine_limit: Option<String>,
}

impl Io {
    fn read() -> Io {
        let a = aio_settings();
        let int = |k: &str| a[k].as_i64().and_then(|v| i32::try_from(v).ok());
        let text = |k: &str| a[k].as_str().map(str::to_owned);
        Io {
            eic: session_eic(),
            method: text("io_method"),
            workers: int("io_workers"),
            combine_limit: text("io_combine_limit"),
        }
    }
}

fn bytes(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn row(t: Target, memory_limit: Option<i64>, io: &Io) -> Row {
    // a tablespace's own effective_io_concurrency, else the server's
    let eic = t
        .oid
        .filter(|_| t.kind == "tablespace")
        .map(|oid| tablespace_eic(oid).or(io.eic));
    let io_columns = (
        eic.flatten(),
        io.method.clone(),
        io.workers,
        io.combine_limit.clone(),
    );
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
            io_columns.0,
            io_columns.1,
            io_columns.2,
            io_columns.3,
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
                io_columns.0,
                io_columns.1,
                io_columns.2,
                io_columns.3,
            )
        }
    }
}

/// The storage facts behind every tablespace of the cluster (but pg_global)
/// and behind the WAL folder, read from the kernel at call time, with what
/// the server runs under: its cgroup memory limit (the same on every row)
/// and the I/O throttles on each tablespace's devices, and the comment
/// stating the tablespace's device class; the effective_io_concurrency
/// reads in it are prefetched at (its own, else the server's), and the
/// server's asynchronous I/O settings (PostgreSQL 18: io_method,
/// io_workers; 17 and later: io_combine_limit; NULL where the major has
/// no such setting).
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
        name!(effective_io_concurrency, Option<i32>),
        name!(io_method, Option<String>),
        name!(io_workers, Option<i32>),
        name!(io_combine_limit, Option<String>),
    ),
> {
    let _called = crate::ops::error::called("storlab.tablespaces");
    let memory_limit = env::cgroup::memory_limit().map(bytes);
    let io = Io::read();
    TableIterator::new(
        all_targets()
            .into_iter()
            .map(|t| row(t, memory_limit, &io))
            .collect::<Vec<_>>(),
    )
}
