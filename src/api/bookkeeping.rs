//! storlab's own rows (storlab.probes, storlab.relocations) are written and
//! read back as the extension's owner, so that a DBA who grants EXECUTE on a
//! function has granted all it needs: the caller never gets, and never needs,
//! privileges on storlab's tables. Only fixed statements with data parameters
//! run this way, and the caller's identity is restored straight after (an
//! error restores it too: transaction abort resets the user id).

use pgrx::prelude::*;

fn extension_owner() -> pg_sys::Oid {
    Spi::get_one::<pg_sys::Oid>(
        "SELECT nspowner FROM pg_catalog.pg_namespace WHERE nspname = 'storlab'",
    )
    .ok()
    .flatten()
    .unwrap_or_else(|| error!("schema storlab is missing"))
}

/// The name of the role calling us, for `moved_by`.
pub fn caller() -> String {
    Spi::get_one::<String>("SELECT current_user::text")
        .ok()
        .flatten()
        .unwrap_or_default()
}

pub fn as_extension_owner<R>(f: impl FnOnce() -> R) -> R {
    let owner = extension_owner();
    let mut user = pg_sys::InvalidOid;
    let mut context = 0;
    // SAFETY: the backend's user id is swapped and put back on this thread,
    // as PostgreSQL itself does around internal operations.
    unsafe {
        pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
        pg_sys::SetUserIdAndSecContext(
            owner,
            context | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32,
        );
    }
    let result = f();
    unsafe { pg_sys::SetUserIdAndSecContext(user, context) };
    result
}
