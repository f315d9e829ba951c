//! The folders storlab measures: every tablespace but pg_global, and the
//! WAL folder, each named as a DBA names it.

use std::path::PathBuf;

use pgrx::prelude::*;

use super::error::{spi, Error, OrRaise, SqlState};
use super::read;
use super::server::{data_dir, version_dir};
use storlab_core::error::invalid;

/// A folder PostgreSQL writes to, named as a DBA names it.
#[derive(Debug, Clone)]
pub struct Target {
    /// 'tablespace' or 'wal'
    pub kind: &'static str,
    pub name: String,
    pub oid: Option<pg_sys::Oid>,
    pub folder: PathBuf,
    /// The tablespace's comment (COMMENT ON TABLESPACE), where a DBA or the
    /// lab states its device class; None for pg_wal and uncommented ones.
    pub description: Option<String>,
}

/// Every tablespace but pg_global (nothing of ours is ever written there),
/// pg_default first, then by name, then the WAL folder.
pub fn all_targets() -> Vec<Target> {
    let data = data_dir();
    let mut targets: Vec<Target> = Spi::connect(|client| {
        let rows = client.select(
            "SELECT oid, spcname::text, pg_catalog.pg_tablespace_location(oid),
                    pg_catalog.shobj_description(oid, 'pg_tablespace')
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
            let description: Option<String> = row.get(4)?;
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
                description,
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
        description: None,
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

impl Target {
    /// May the caller write storlab's scratch files here? storlab never does
    /// more than its caller could do by hand:
    /// - a tablespace: CREATE on it, the rule `CREATE TABLE ... TABLESPACE`
    ///   follows (the database's own default tablespace needs none);
    /// - pg_wal: it is the server's, not a tablespace anyone is granted, and
    ///   a probe writes up to its file_size into it (ENOSPC there is a
    ///   PANIC): superusers and members of pg_write_server_files, the role
    ///   PostgreSQL itself requires for writing files on the server.
    ///
    /// Checked by every path that writes (ops::probe::measure), and up
    /// front by the calls that probe several targets.
    pub fn check_may_write(&self) -> Result<(), Error> {
        if self.may_write()? {
            return Ok(());
        }
        Err(denied(&[self]))
    }

    /// Does the caller have the right of [`Target::check_may_write`]?
    fn may_write(&self) -> Result<bool, Error> {
        let allowed = match (self.kind, self.oid) {
            ("tablespace", Some(oid)) => read::one::<bool>(
                "SELECT $1 = (SELECT d.dattablespace FROM pg_catalog.pg_database d
                               WHERE d.datname = pg_catalog.current_database())
                        OR pg_catalog.has_tablespace_privilege($1, 'CREATE')",
                &[oid.into()],
            ),
            _ => read::one::<bool>(
                "SELECT pg_catalog.pg_has_role('pg_write_server_files', 'MEMBER')",
                &[],
            ),
        }
        .map_err(spi("checking a privilege"))?
        .unwrap_or(false);
        Ok(allowed)
    }

    /// The folder must be there: a tablespace whose folder is gone (a
    /// tmpfs after a reboot, an unmounted volume) cannot be measured (58030).
    pub fn check_folder(&self) -> Result<(), Error> {
        match std::fs::metadata(&self.folder) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err(Error::new(
                SqlState::IoError,
                format!(
                    "the folder of {} is not a directory: {}",
                    self.name,
                    self.folder.display()
                ),
            )),
            Err(e) => Err(Error::new(
                SqlState::IoError,
                format!(
                    "cannot measure {}: its folder {} cannot be read: {e}",
                    self.name,
                    self.folder.display()
                ),
            )
            .with_hint(
                "Is the volume mounted? A tablespace on tmpfs loses its folder at a reboot.",
            )),
        }
    }
}

/// Checks every target before anything is written: a call over several
/// targets fails before its first probe, not half-way.
pub fn check_may_write_all(targets: &[Target]) -> Result<(), Error> {
    check_may_write_each(targets.iter())?;
    for t in targets {
        t.check_folder()?;
    }
    Ok(())
}

/// The caller's right to write to each target, every missing grant named
/// in one error (a role short of four grants learns all four at once).
pub fn check_may_write_each<'a>(
    targets: impl IntoIterator<Item = &'a Target>,
) -> Result<(), Error> {
    let mut missing: Vec<&Target> = Vec::new();
    for t in targets {
        if !t.may_write()? && !missing.iter().any(|m| m.name == t.name) {
            missing.push(t);
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(denied(&missing))
    }
}

/// 42501 for the targets the caller may not write to, naming each and
/// every grant it lacks.
fn denied(missing: &[&Target]) -> Error {
    let tablespaces: Vec<&str> = missing
        .iter()
        .filter(|t| t.kind == "tablespace")
        .map(|t| t.name.as_str())
        .collect();
    let wal = missing.iter().any(|t| t.kind != "tablespace");
    let message = match (tablespaces.as_slice(), wal) {
        ([one], false) => format!("permission denied for tablespace {one}"),
        ([], true) => "permission denied to probe pg_wal".to_string(),
        (many, false) => format!("permission denied for tablespaces {}", list(many)),
        (many, true) => format!(
            "permission denied for tablespace{} {}, and to probe pg_wal",
            if many.len() > 1 { "s" } else { "" },
            list(many)
        ),
    };
    let mut detail = Vec::new();
    let mut hint = Vec::new();
    if !tablespaces.is_empty() {
        detail.push("A probe writes into a tablespace (a scratch file, or the read-path probe's scratch table), which needs CREATE on it, as CREATE TABLE ... TABLESPACE does.");
        hint.push(format!(
            "GRANT CREATE ON TABLESPACE {} TO the role;",
            tablespaces.join(", ")
        ));
    }
    if wal {
        detail.push("A probe of pg_wal writes its scratch file into the server's WAL folder: only superusers and members of pg_write_server_files may.");
        hint.push(
            "GRANT pg_write_server_files TO the role; (or let a superuser probe pg_wal)"
                .to_string(),
        );
    }
    Error::new(SqlState::InsufficientPrivilege, message)
        .with_detail(detail.join(" "))
        .with_hint(hint.join(" "))
}

/// "a, b and c"
fn list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}
