//! storlab's one error type: a message with the SQLSTATE it is raised with.
//! Pure Rust, so that request checks in the core say which SQLSTATE they
//! mean; `ops::error` turns an `Error` into `ereport(ERROR)` in one place.

use std::fmt;

/// The SQLSTATEs storlab raises itself (PostgreSQL's own errors, raised
/// inside SPI, keep theirs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlState {
    /// 22023
    InvalidParameterValue,
    /// 22004
    NullValueNotAllowed,
    /// 42704
    UndefinedObject,
    /// 42710: a baseline of that label exists
    DuplicateObject,
    /// 42P01
    UndefinedTable,
    /// 3F000
    InvalidSchemaName,
    /// 42501
    InsufficientPrivilege,
    /// 55P03
    LockNotAvailable,
    /// 55006: another storlab job already uses the object
    ObjectInUse,
    /// 55000: the object is not ready for this (pgbench's tables half made)
    ObjectNotInPrerequisiteState,
    /// 25001: work that commits as it goes, called inside a transaction block
    ActiveSqlTransaction,
    /// 25006: work that writes, on a hot standby or in a read-only transaction
    ReadOnlySqlTransaction,
    /// 53100
    DiskFull,
    /// 53400
    ConfigurationLimitExceeded,
    /// 54000: a call would take longer than statement_timeout allows
    ProgramLimitExceeded,
    /// 57014
    QueryCanceled,
    /// 58030
    IoError,
    /// 0A000: the kernel refuses what was asked (io_uring switched off)
    FeatureNotSupported,
    /// 22003: figures too large to compute with
    NumericValueOutOfRange,
    /// XX000: a bug of ours, never a user's mistake
    Internal,
}

impl SqlState {
    pub fn code(self) -> &'static str {
        match self {
            SqlState::InvalidParameterValue => "22023",
            SqlState::NullValueNotAllowed => "22004",
            SqlState::UndefinedObject => "42704",
            SqlState::DuplicateObject => "42710",
            SqlState::UndefinedTable => "42P01",
            SqlState::InvalidSchemaName => "3F000",
            SqlState::InsufficientPrivilege => "42501",
            SqlState::LockNotAvailable => "55P03",
            SqlState::ObjectInUse => "55006",
            SqlState::ObjectNotInPrerequisiteState => "55000",
            SqlState::ActiveSqlTransaction => "25001",
            SqlState::ReadOnlySqlTransaction => "25006",
            SqlState::DiskFull => "53100",
            SqlState::ConfigurationLimitExceeded => "53400",
            SqlState::ProgramLimitExceeded => "54000",
            SqlState::QueryCanceled => "57014",
            SqlState::IoError => "58030",
            SqlState::FeatureNotSupported => "0A000",
            SqlState::NumericValueOutOfRange => "22003",
            SqlState::Internal => "XX000",
        }
    }
}

/// PostgreSQL's packed SQLSTATE (MAKE_SQLSTATE: six bits a character,
/// first character lowest) as its five characters, e.g. `55P03`.
pub fn unpack_sqlstate(code: i32) -> String {
    (0..5)
        .map(|i| (((code >> (6 * i)) & 0x3F) as u8 + b'0') as char)
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub state: SqlState,
    pub message: String,
    /// Figures that vary from run to run go here, so the message stays stable.
    pub detail: Option<String>,
    pub hint: Option<String>,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(state: SqlState, message: impl Into<String>) -> Self {
        Error {
            state,
            message: message.into(),
            detail: None,
            hint: None,
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// 22023, the error of a request that fails its checks.
pub fn invalid(message: impl Into<String>) -> Error {
    Error::new(SqlState::InvalidParameterValue, message)
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(d) = &self.detail {
            write!(f, " ({d})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_postgresqls() {
        assert_eq!(SqlState::InvalidParameterValue.code(), "22023");
        assert_eq!(SqlState::LockNotAvailable.code(), "55P03");
        assert_eq!(SqlState::ObjectInUse.code(), "55006");
        assert_eq!(SqlState::ObjectNotInPrerequisiteState.code(), "55000");
    }

    #[test]
    fn packed_sqlstates_unpack_as_postgresql_spells_them() {
        // MAKE_SQLSTATE('5','5','P','0','3'), as errcodes.h defines ERRCODE_LOCK_NOT_AVAILABLE
        let pack = |s: &str| {
            s.bytes().enumerate().fold(0i32, |acc, (i, c)| {
                acc | (((c - b'0') as i32 & 0x3F) << (6 * i))
            })
        };
        for code in ["55P03", "42501", "22023", "XX000", "57014", "40001"] {
            assert_eq!(unpack_sqlstate(pack(code)), code);
        }
        let e = invalid("scale must be at least 1").with_detail("got 0");
        assert_eq!(e.to_string(), "scale must be at least 1 (got 0)");
    }
}
