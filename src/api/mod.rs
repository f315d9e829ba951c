//! The SQL surface: `#[pg_extern]` wrappers, argument checks, SQLSTATEs.
//! Everything else is delegated to the pure core.

pub mod bookkeeping;
pub mod name;
pub mod probe;
pub mod probe_args;
pub mod regclass;
pub mod relocate;
pub mod suite;
pub mod tablespaces;
