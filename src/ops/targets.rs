//! The folders storlab measures: every tablespace but pg_global, and the
//! WAL folder, each named as a DBA names it.

use std::path::PathBuf;

use pgrx::prelude::*;

use super::error::{spi, Error, OrRaise, SqlState};
use super::server::{data_dir, version_dir};
use crate::error::invalid;

/// A folder PostgreSQL writes to, named as a DBA names it.
#[derive(Debug, Clone)]
pub struct Target {
    /// 'tablespace' or 'wal'
    pub kind: &'static str,
    pub name: String,
    pub oid: Option<pg_sys::Oid>,
    pub folder: PathBuf,
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
    .map_err(spi("listing tablespaces"))
    .or_raise();
    targets.push(Target {
        kind: "wal",
        name: "pg_wal".into(),
        oid: None,
        folder: data.join("pg_wal"),
    });
    targets
}

/// A tablespace name, or 'pg_wal', to the folder storlab measures.
pub fn resolve(name: &str) -> Result<Target, Error> {
    if name == "pg_global" {
        return Err(invalid(
            "storlab does not probe pg_global: it holds only shared catalogs and nothing of ours is written there",
        ));
    }
    all_targets()
        .into_iter()
        .find(|t| t.name == name)
        .ok_or_else(|| {
            Error::new(
                SqlState::UndefinedObject,
                format!("tablespace \"{name}\" does not exist"),
            )
        })
}
