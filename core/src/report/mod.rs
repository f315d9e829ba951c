//! Turning stored figures into comparisons. Pure Rust, no PostgreSQL.

pub mod checks;
pub mod compare;
pub mod devices;
pub mod experiment;
pub mod io;
pub mod latency;
pub mod pooled;
pub mod samples;
pub mod sequential;
pub mod volumes;
