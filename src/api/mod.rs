//! The SQL surface: `#[pg_extern]` wrappers, argument checks, SQLSTATEs.
//! Everything else is delegated to the pure core.

pub mod name;
pub mod tablespaces;
