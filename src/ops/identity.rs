//! Who runs storlab's SQL, and with which search_path.
//!
//! Work done for a caller runs as the caller. Only storlab's own bookkeeping
//! rows (storlab.probes, relocations, jobs, bench_runs, bench_progress) are
//! written and read as the extension's owner, so that a DBA who grants
//! EXECUTE on a function has granted all it needs.
//!
//! Switching to the owner is done the way PostgreSQL itself switches
//! identity around maintenance work (index builds, REFRESH MATERIALIZED
//! VIEW, RI checks): the SECURITY_RESTRICTED_OPERATION flag, a new GUC nest
//! level with `search_path = pg_catalog, pg_temp`, and everything restored
//! on every exit path, an error included. The caller's search_path therefore
//! never decides which function or operator runs as the owner.
//!
//! Fixed SQL run as the caller goes through [`pinned`] too: the SQL
//! functions are created with the same fixed search_path, and a background
//! worker, which has no such SET clause around it, pins it here.

use std::ffi::CStr;
use std::panic::AssertUnwindSafe;

use super::read;
use pgrx::pg_sys::{self, PgTryBuilder};
use pgrx::prelude::*;

/// The search_path storlab's own SQL runs under: pg_catalog first, and
/// pg_temp last (PostgreSQL never looks up functions or operators there).
pub const PINNED_SEARCH_PATH: &CStr = c"pg_catalog, pg_temp";

/// Runs `f` with search_path pinned at a GUC nest level of its own; the
/// previous value comes back on return and on error.
pub fn pinned<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: PostgreSQL's own pattern (RestrictSearchPath in newer
    // releases): a nest level, a SAVE-action setting, AtEOXact_GUC(false)
    // to undo it. Called from the backend's main thread.
    let level = unsafe {
        let level = pg_sys::NewGUCNestLevel();
        pg_sys::set_config_option(
            c"search_path".as_ptr(),
            PINNED_SEARCH_PATH.as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            0,
            false,
        );
        level
    };
    let mut f = Some(f);
    PgTryBuilder::new(AssertUnwindSafe(|| (f.take().expect("called once"))()))
        .finally(|| unsafe { pg_sys::AtEOXact_GUC(false, level) })
        .execute()
}

/// The role that owns the extension (a superuser: the control file says
/// `superuser = true`).
pub fn extension_owner() -> pg_sys::Oid {
    installed().0
}

/// The extension's owner and the version its SQL objects are at.
fn installed() -> (pg_sys::Oid, String) {
    let (owner, version) = read::two::<pg_sys::Oid, String>(
        "SELECT e.extowner, e.extversion::pg_catalog.text FROM pg_catalog.pg_extension e
          WHERE e.extname OPERATOR(pg_catalog.=) 'storlab'",
        &[],
    )
    .unwrap_or((None, None));
    match (owner, version) {
        (Some(owner), Some(version)) => (owner, version),
        _ => super::error::raise(super::error::Error::new(
            super::error::SqlState::UndefinedObject,
            "extension \"storlab\" is not installed in this database",
        )),
    }
}

/// The release of this library (the package installed on the server).
pub const LIBRARY_VERSION: &str = env!("CARGO_PKG_VERSION");

/// 55000 for a function this library no longer serves as the installed
/// release's SQL declares it (a newer package before ALTER EXTENSION
/// UPDATE): `what` says what changed.
#[track_caller]
pub fn raise_update_needed(what: &str) -> ! {
    let (_, version) = installed();
    super::error::raise(
        super::error::Error::new(
            super::error::SqlState::ObjectNotInPrerequisiteState,
            format!(
                "storlab's library is {LIBRARY_VERSION}, but this database's storlab is still {version}: run ALTER EXTENSION storlab UPDATE"
            ),
        )
        .with_detail(format!("{what}; the call was not run."))
        .with_hint("ALTER EXTENSION storlab UPDATE; (as the extension's owner, in each database that has it) keeps every stored row."),
    )
}

/// Runs `f` as the extension's owner, restricted, behind the pinned
/// search_path: for storlab's bookkeeping rows only.
///
/// Between installing a newer package and `ALTER EXTENSION storlab
/// UPDATE`, this library runs over the older release's tables: what it
/// reads that they lack (a table, a column, a function) would end the
/// call with PostgreSQL's bare "relation ... does not exist". Such an
/// error, when the releases differ, says so instead (55000), with the
/// statement that brings the tables up to date.
pub fn as_owner<R>(f: impl FnOnce() -> R) -> R {
    let (owner, version) = installed();
    let behind = version != LIBRARY_VERSION;
    let f = AssertUnwindSafe(f);
    let run = move || as_owner_of(owner, f.0);
    if !behind {
        return run();
    }
    let explain = move |e: pg_sys::panic::CaughtError| -> R {
        let original = match &e {
            pg_sys::panic::CaughtError::PostgresError(r)
            | pg_sys::panic::CaughtError::ErrorReport(r) => r.message().to_string(),
            pg_sys::panic::CaughtError::RustPanic { ereport, .. } => ereport.message().to_string(),
        };
        super::error::raise(
            super::error::Error::new(
                super::error::SqlState::ObjectNotInPrerequisiteState,
                format!(
                    "storlab's library is {LIBRARY_VERSION}, but this database's storlab is still {version}: run ALTER EXTENSION storlab UPDATE"
                ),
            )
            .with_detail(format!(
                "The newer package is installed and the extension's tables are not updated yet; reading them failed: {original}."
            ))
            .with_hint("ALTER EXTENSION storlab UPDATE; (as the extension's owner, in each database that has it) keeps every stored row."),
        )
    };
    let explain2 = explain.clone();
    let explain3 = explain.clone();
    PgTryBuilder::new(AssertUnwindSafe(run))
        .catch_when(PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE, explain)
        .catch_when(PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN, explain2)
        .catch_when(PgSqlErrorCode::ERRCODE_UNDEFINED_FUNCTION, explain3)
        .execute()
}

fn as_owner_of<R>(owner: pg_sys::Oid, f: impl FnOnce() -> R) -> R {
    pinned(|| {
        let mut user = pg_sys::InvalidOid;
        let mut context = 0;
        // SAFETY: the user id is swapped and restored on this thread, as
        // PostgreSQL does around internal operations.
        unsafe {
            pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
            pg_sys::SetUserIdAndSecContext(
                owner,
                context
                    | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32
                    | pg_sys::SECURITY_RESTRICTED_OPERATION as i32,
            );
        }
        let mut f = Some(f);
        PgTryBuilder::new(AssertUnwindSafe(|| (f.take().expect("called once"))()))
            .finally(|| unsafe { pg_sys::SetUserIdAndSecContext(user, context) })
            .execute()
    })
}

/// The role calling us (current_user), for `moved_by` and a job's role.
pub fn caller() -> String {
    // SAFETY: GetUserId is a plain read of the backend's current user.
    let oid = unsafe { pg_sys::GetUserId() };
    role_name(oid)
}

pub fn role_name(oid: pg_sys::Oid) -> String {
    // SAFETY: GetUserNameFromId returns a palloc'd copy (or errors for a
    // role that no longer exists, with its own SQLSTATE).
    unsafe {
        CStr::from_ptr(pg_sys::GetUserNameFromId(oid, false))
            .to_string_lossy()
            .into_owned()
    }
}

/// May the current user act for `role`: a member of it with its
/// privileges, as pg_cancel_backend asks of the sessions it signals.
pub fn has_privs_of(role: pg_sys::Oid) -> bool {
    // SAFETY: catalog lookups from the backend's main thread.
    unsafe { pg_sys::has_privs_of_role(pg_sys::GetUserId(), role) }
}

pub fn is_superuser(role: pg_sys::Oid) -> bool {
    // SAFETY: a syscache lookup.
    unsafe { pg_sys::superuser_arg(role) }
}

pub fn current_user() -> pg_sys::Oid {
    // SAFETY: a plain read.
    unsafe { pg_sys::GetUserId() }
}

/// The oid of a role by name, if it (still) exists.
pub fn role_oid(name: &str) -> Option<pg_sys::Oid> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: missing_ok = true: no error, InvalidOid for an unknown role.
    let oid = unsafe { pg_sys::get_role_oid(c.as_ptr(), true) };
    (oid != pg_sys::InvalidOid).then_some(oid)
}
