//! `storlab.tablespaces()`: the storage facts behind every tablespace and the WAL folder.

use std::ffi::CStr;
use std::path::PathBuf;

use pgrx::prelude::*;

use super::name::Name;
use crate::env;

/// A folder PostgreSQL writes to, named as a DBA names it.
#[derive(Debug, Clone)]
pub struct Target {
    /// 'tablespace' or 'wal'
    pub kind: &'static str,
    pub name: String,
    pub oid: Option<pg_sys::Oid>,
    pub folder: PathBuf,
}

pub fn data_dir() -> PathBuf {
    // SAFETY: DataDir is set by the postmaster before any backend runs SQL.
    PathBuf::from(
        unsafe { CStr::from_ptr(pg_sys::DataDir) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// `PG_15_202209061`: the folder a tablespace location holds for this server
/// version (TABLESPACE_VERSION_DIRECTORY in PostgreSQL's catalog.h).
pub fn version_dir() -> String {
    format!(
        "PG_{}_{}",
        pg_sys::PG_MAJORVERSION.to_string_lossy(),
        pg_sys::CATALOG_VERSION_NO
    )
}

/// Every tablespace but pg_global (nothing of ours is ever written there),
/// pg_default first, then by name, then the WAL folder.
pub fn all_targets() -> Vec<Target> {
    let data = data_dir();
    let mut targets: Vec<Target> = Spi::connect(|client| {
        let rows = client.select(
            "SELECT oid, spcname::text, pg_catalog.pg_tablespace_location(oid)
               FROM pg_catalog.pg_tablespace
              WHERE spcname <> 'pg_global'
              ORDER BY spcname <> 'pg_default', spcname",
            None,
            &[],
        )?;
        rows.map(|row| {
            let oid: pg_sys::Oid = row.get(1)?.expect("pg_tablespace.oid is never null");
            let name: String = row.get(2)?.expect("spcname is never null");
            let location: String = row.get(3)?.unwrap_or_default();
            let folder = if location.is_empty() {
                data.join("base") // pg_default
            } else {
                // In-place tablespaces (allow_in_place_tablespaces) report a relative path.
                data.join(location).join(version_dir())
            };
            Ok(Target {
                kind: "tablespace",
                name,
                oid: Some(oid),
                folder,
            })
        })
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .unwrap_or_else(|e| error!("could not list tablespaces: {e}"));
    targets.push(Target {
        kind: "wal",
        name: "pg_wal".into(),
        oid: None,
        folder: data.join("pg_wal"),
    });
    targets
}

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
);

fn bytes(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn row(t: Target) -> Row {
    let used = env::space::dir_bytes(&t.folder).ok().map(bytes);
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
            )
        }
    }
}

/// The storage facts behind every tablespace of the cluster (but pg_global)
/// and behind the WAL folder, read from the kernel at call time.
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
    ),
> {
    TableIterator::new(all_targets().into_iter().map(row).collect::<Vec<_>>())
}
