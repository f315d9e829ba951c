//! Typed requests, checked once where they enter (the SQL functions) and
//! carried as they are into the operations and the job worker. Pure Rust:
//! every limit is covered by plain #[test]s, and SQL defaults live in the
//! `#[pg_extern]` signatures only.

pub mod bench;
pub mod checks;
pub mod experiment;
pub mod job;
pub mod probe;
pub mod prune;
pub mod read_path;
pub mod relocate;
