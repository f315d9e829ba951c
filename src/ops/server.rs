//! Facts about this server that every stored row carries, so that results
//! gathered from many servers can still be told apart.

use std::ffi::CStr;
use std::path::PathBuf;

use super::read;
use pgrx::prelude::*;

pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

pub fn system_identifier() -> i64 {
    // SAFETY: reads the control file copy in shared memory, set at startup.
    unsafe { pg_sys::GetSystemIdentifier() as i64 }
}

/// The system identifiers whose rows are this server's: its own, and those
/// storlab.server_identities lists (identifiers it had before a pg_upgrade;
/// see sql/catalog/servers.sql). Read as the extension's owner.
pub fn this_server() -> Vec<i64> {
    let own = system_identifier();
    let mut ids = vec![own];
    let listed = super::identity::as_owner(|| {
        read::one::<Vec<i64>>(
            "SELECT pg_catalog.array_agg(system_identifier) FROM storlab.server_identities",
            &[],
        )
    })
    .ok()
    .flatten()
    .unwrap_or_default();
    ids.extend(listed.into_iter().filter(|id| *id != own));
    ids
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

thread_local! {
    /// This backend's node, once read back from storlab.nodes (a row
    /// committed before this call), with the oid of the storlab.nodes it was
    /// read from: a node minted in a transaction that later rolls back must
    /// not be remembered, and one of an install dropped since (DROP
    /// EXTENSION and CREATE EXTENSION in this session, or another session's
    /// while this one stays, as a collector's postgres_fdw session does) is
    /// no node of this install.
    static NODE: std::cell::Cell<Option<(pg_sys::Oid, [u8; 16])>> = const { std::cell::Cell::new(None) };
    /// The transaction (its xid) that minted this backend's node, until a
    /// later one reads it back committed.
    static MINTED_IN: std::cell::Cell<pg_sys::TransactionId> =
        const { std::cell::Cell::new(pg_sys::InvalidTransactionId) };
}

/// This database's node (sql/catalog/fleet.sql): the row of storlab.nodes
/// for its system identifier, host name, data directory and database oid,
/// minted at CREATE EXTENSION and at first use after one of them changed (a
/// clone, a copy made with CREATE DATABASE ... TEMPLATE, a pg_upgrade).
/// On a hot standby, the node derived from its own place
/// (`standby_node_id`). None in a read-only transaction of a primary that
/// has none yet.
pub fn node_id() -> Option<pgrx::datum::Uuid> {
    let install = nodes_table()?;
    if let Some((table, b)) = NODE.with(|n| n.get()) {
        if table == install {
            return Some(pgrx::datum::Uuid::from_bytes(b));
        }
    }
    // A standby stores nothing of its own (its rows are its primary's) and
    // can mint no node: its own measurements, returned unstored, are named
    // by a node derived from its place (`standby_node_id`).
    // SAFETY: reads shared recovery state.
    if unsafe { pg_sys::RecoveryInProgress() } {
        return standby_node_id();
    }
    let (sysid, host, dir) = (
        system_identifier(),
        hostname(),
        data_dir().display().to_string(),
    );
    // SAFETY: set for the backend's whole life before any SQL runs.
    let database = unsafe { pg_sys::MyDatabaseId };
    super::identity::as_owner(|| {
        let args = [
            sysid.into(),
            host.as_str().into(),
            dir.as_str().into(),
            database.into(),
        ];
        // a read-only SPI call (pgrx's get_one would give the transaction
        // an xid, and the check below would never remember the node)
        let found = Spi::connect(|c| {
            c.select(
                "SELECT node_id FROM storlab.nodes
                  WHERE system_identifier = $1 AND hostname = $2 AND data_directory = $3 AND database_oid = $4",
                Some(1),
                &args,
            )?
            .first()
            .get_one::<pgrx::datum::Uuid>()
        })
        .ok()
        .flatten();
        if let Some(id) = found {
            // Remembered only when it is not this transaction's own row:
            // minted by an earlier call of this transaction, it goes if the
            // transaction rolls back, and the backend would go on naming a
            // node that no row of storlab.nodes records.
            // SAFETY: reads backend-global transaction state.
            let this = unsafe { pg_sys::GetTopTransactionIdIfAny() };
            if MINTED_IN.with(|m| m.get()) != this || this == pg_sys::InvalidTransactionId {
                NODE.with(|n| n.set(Some((install, *id))));
            }
            return Some(id);
        }
        // SAFETY: reads a backend-global flag.
        let read_only = unsafe { pg_sys::XactReadOnly };
        if read_only {
            return None;
        }
        // another session minting the same node at once: its row, once committed
        let minted = Spi::get_one_with_args::<pgrx::datum::Uuid>(
            "INSERT INTO storlab.nodes AS n (system_identifier, hostname, data_directory, database_oid) VALUES ($1, $2, $3, $4)
             ON CONFLICT (system_identifier, hostname, data_directory, database_oid) DO UPDATE SET node_id = n.node_id
             RETURNING node_id",
            &args,
        )
        .ok()
        .flatten();
        // SAFETY: reads backend-global transaction state (the INSERT gave it an xid).
        MINTED_IN.with(|m| m.set(unsafe { pg_sys::GetTopTransactionIdIfAny() }));
        minted
    })
}

/// A hot standby's own node: replicas share their primary's system
/// identifier and every stored row, so its own measurements (returned
/// unstored) are named by a node of its own place, derived, never stored:
/// the same for every session of this standby's database, another for each
/// standby (host, data directory) and database, and never a primary's
/// (those are random, minted in storlab.nodes). A standby promoted since
/// mints a node of its own at its first write, as a clone does.
pub fn standby_node_id() -> Option<pgrx::datum::Uuid> {
    // SAFETY: set for the backend's whole life before any SQL runs.
    let database = u32::from(unsafe { pg_sys::MyDatabaseId });
    let place = format!(
        "storlab standby node\n{}\n{}\n{}\n{database}",
        system_identifier(),
        hostname(),
        data_dir().display()
    );
    super::read::one::<pgrx::datum::Uuid>(
        "SELECT pg_catalog.md5($1)::pg_catalog.uuid",
        &[place.as_str().into()],
    )
    .ok()
    .flatten()
}

/// The oid of this install's storlab.nodes, which a reinstall changes: the
/// key of the remembered node (two syscache lookups, no SPI). None while
/// there is none (inside DROP EXTENSION).
fn nodes_table() -> Option<pg_sys::Oid> {
    // SAFETY: catalog lookups by name inside a transaction; a missing
    // schema is InvalidOid (missing_ok), a missing table too.
    let table = unsafe {
        let schema = pg_sys::get_namespace_oid(c"storlab".as_ptr(), true);
        if schema == pg_sys::InvalidOid {
            return None;
        }
        pg_sys::get_relname_relid(c"nodes".as_ptr(), schema)
    };
    (table != pg_sys::InvalidOid).then_some(table)
}
