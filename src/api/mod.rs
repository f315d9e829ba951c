//! The SQL surface: `#[pg_extern]` wrappers, argument checks, SQLSTATEs.
//! Everything else is delegated to the pure core.

pub mod name;
pub mod probe;
pub mod probe_args;
pub mod suite;
pub mod tablespaces;
