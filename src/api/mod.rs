//! The SQL surface: `#[pg_extern]` wrappers that parse their arguments into
//! a typed request, call an operation (`crate::ops`) and return its rows.
//! Every function runs behind `SET search_path = pg_catalog, pg_temp`.

pub mod advice;
pub mod bench;
pub mod chart;
pub mod checks;
pub mod experiment;
pub mod fleet;
pub mod latency;
pub mod probe;
pub mod prune;
pub mod read_path;
pub mod relocate;
pub mod samples;
pub mod standby;
pub mod suite;
pub mod tablespaces;

/// An interval argument in microseconds (months and days counted as 30
/// days and 24 hours, as PostgreSQL's own interval arithmetic does). One
/// beyond 64 bits (PostgreSQL 17's 'infinity' and '-infinity', or a
/// million years) keeps its sign: i64::MAX or i64::MIN, so that a check
/// for a positive age still refuses '-infinity'.
pub fn interval_micros(i: &pgrx::datum::Interval) -> i64 {
    let micros = i.as_micros();
    i64::try_from(micros).unwrap_or(if micros < 0 { i64::MIN } else { i64::MAX })
}
