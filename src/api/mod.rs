//! The SQL surface: `#[pg_extern]` wrappers that parse their arguments into
//! a typed request, call an operation (`crate::ops`) and return its rows.
//! Every function runs behind `SET search_path = pg_catalog, pg_temp`.

pub mod advice;
pub mod bench;
pub mod chart;
pub mod checks;
pub mod experiment;
pub mod latency;
pub mod probe;
pub mod prune;
pub mod read_path;
pub mod relocate;
pub mod samples;
pub mod suite;
pub mod tablespaces;

/// An interval argument in microseconds (months and days counted as 30
/// days and 24 hours, as PostgreSQL's own interval arithmetic does).
pub fn interval_micros(i: &pgrx::datum::Interval) -> i64 {
    i64::try_from(i.as_micros()).unwrap_or(i64::MAX)
}
