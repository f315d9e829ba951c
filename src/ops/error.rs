//! The one place a storlab [`Error`] becomes `ereport(ERROR)`, and the
//! mapping of pgrx's SPI errors into it. PostgreSQL's own errors raised
//! inside a query (42501, 55P03, ...) never pass through here: they unwind
//! with their own SQLSTATE.

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use pgrx::PgLogLevel;

pub use storlab_core::error::{invalid, Error, Result, SqlState};

fn pg_code(state: SqlState) -> PgSqlErrorCode {
    use PgSqlErrorCode::*;
    match state {
        SqlState::InvalidParameterValue => ERRCODE_INVALID_PARAMETER_VALUE,
        SqlState::NullValueNotAllowed => ERRCODE_NULL_VALUE_NOT_ALLOWED,
        SqlState::UndefinedObject => ERRCODE_UNDEFINED_OBJECT,
        SqlState::UndefinedTable => ERRCODE_UNDEFINED_TABLE,
        SqlState::InvalidSchemaName => ERRCODE_INVALID_SCHEMA_NAME,
        SqlState::InsufficientPrivilege => ERRCODE_INSUFFICIENT_PRIVILEGE,
        SqlState::LockNotAvailable => ERRCODE_LOCK_NOT_AVAILABLE,
        SqlState::ObjectInUse => ERRCODE_OBJECT_IN_USE,
        SqlState::ObjectNotInPrerequisiteState => ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        SqlState::ActiveSqlTransaction => ERRCODE_ACTIVE_SQL_TRANSACTION,
        SqlState::ReadOnlySqlTransaction => ERRCODE_READ_ONLY_SQL_TRANSACTION,
        SqlState::DiskFull => ERRCODE_DISK_FULL,
        SqlState::ConfigurationLimitExceeded => ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
        SqlState::ProgramLimitExceeded => ERRCODE_PROGRAM_LIMIT_EXCEEDED,
        SqlState::QueryCanceled => ERRCODE_QUERY_CANCELED,
        SqlState::IoError => ERRCODE_IO_ERROR,
        SqlState::Internal => ERRCODE_INTERNAL_ERROR,
        SqlState::FeatureNotSupported => ERRCODE_FEATURE_NOT_SUPPORTED,
        SqlState::NumericValueOutOfRange => ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
        SqlState::DuplicateObject => ERRCODE_DUPLICATE_OBJECT,
    }
}

thread_local! {
    /// The SQL function this backend is running, as its errors name it.
    static CALLED: std::cell::Cell<&'static str> = const { std::cell::Cell::new("storlab") };
}

/// While it lives, storlab's errors say they were raised by the SQL
/// function `name` (`storlab.probe`): the server log's LOCATION line, with
/// log_error_verbosity = verbose, and psql's with VERBOSITY verbose, then
/// read "storlab.probe, src/api/probe.rs:57" instead of the one line of
/// this file every error passed through. Each SQL function takes one first.
#[must_use = "the name holds only while the guard lives"]
pub struct Called(&'static str);

/// Names the SQL function being run (see [`Called`]).
pub fn called(name: &'static str) -> Called {
    Called(CALLED.with(|c| c.replace(name)))
}

impl Drop for Called {
    fn drop(&mut self) {
        CALLED.with(|c| c.set(self.0));
    }
}

/// Raises `e` as an ERROR with its SQLSTATE, detail and hint, located at
/// the SQL function being run and the Rust line that raised it.
#[track_caller]
pub fn raise(e: Error) -> ! {
    let mut report = ErrorReport::new(pg_code(e.state), e.message, CALLED.with(|c| c.get()));
    if let Some(detail) = e.detail {
        report = report.set_detail(detail);
    }
    if let Some(hint) = e.hint {
        report = report.set_hint(hint);
    }
    report.report(PgLogLevel::ERROR);
    unreachable!("ereport(ERROR) does not return")
}

/// `result.or_raise()`: the value, or the error raised.
pub trait OrRaise<T> {
    fn or_raise(self) -> T;
}

impl<T> OrRaise<T> for Result<T> {
    #[track_caller]
    fn or_raise(self) -> T {
        match self {
            Ok(v) => v,
            Err(e) => raise(e),
        }
    }
}

/// pgrx's SPI errors are misuses of the SPI interface (a query that
/// returned no row where one was certain, a column of another type): bugs
/// of ours, named as such with what was being done.
pub fn spi(what: &str) -> impl FnOnce(pgrx::spi::Error) -> Error + '_ {
    move |e| Error::new(SqlState::Internal, format!("storlab: {what}: {e}"))
}

/// A SQL argument that must not be NULL (22004).
#[track_caller]
pub fn required<T>(value: Option<T>, what: &str) -> T {
    match value {
        Some(v) => v,
        None => raise(Error::new(
            SqlState::NullValueNotAllowed,
            format!("{what} must not be NULL"),
        )),
    }
}

/// A SQL array argument that must not be NULL (22004) nor hold a NULL
/// (22023, naming the argument).
pub fn required_elements<T>(value: Option<Vec<Option<T>>>, what: &str) -> Vec<T> {
    required(value, what)
        .into_iter()
        .map(|x| x.unwrap_or_else(|| raise(invalid(format!("{what} must not contain NULL")))))
        .collect()
}

/// `error.raise()`: the error type lives in the pure core, which knows
/// nothing of ereport, so raising it is a trait of this crate.
pub trait Raise {
    #[track_caller]
    fn raise(self) -> !;
}

impl Raise for Error {
    /// Raises this error (see [`raise`]).
    #[track_caller]
    fn raise(self) -> ! {
        raise(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_core::error::unpack_sqlstate;

    #[test]
    fn postgresqls_packed_codes_unpack_to_their_sqlstate() {
        for state in [
            SqlState::LockNotAvailable,
            SqlState::InsufficientPrivilege,
            SqlState::ObjectNotInPrerequisiteState,
            SqlState::Internal,
        ] {
            assert_eq!(unpack_sqlstate(pg_code(state) as i32), state.code());
        }
    }
}
