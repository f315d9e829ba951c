//! Errors of the pgbench layer.

use std::{fmt, io};

/// Why options could not be turned into a command line, or pgbench's output
/// could not be read.
///
/// The variants follow the SQLSTATEs the SQL side raises, so that it can map
/// them without looking at message texts: `UnknownScript` is an undefined
/// object (42704), `InvalidOption` an invalid parameter value (22023).
#[derive(Debug)]
pub enum PgbenchError {
    /// No script of that name; the message lists the known names.
    UnknownScript(String),
    /// An option is out of range or cannot be combined with another one;
    /// the message names the option, the value and what is allowed.
    InvalidOption(String),
    /// pgbench printed something this module does not understand (a
    /// changed format, or a file that is not a pgbench log).
    Parse(String),
    /// A file or folder could not be created, listed or read.
    Io { context: String, source: io::Error },
}

impl PgbenchError {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        PgbenchError::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for PgbenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PgbenchError::UnknownScript(msg) => write!(f, "{msg}"),
            PgbenchError::InvalidOption(msg) => write!(f, "invalid pgbench option: {msg}"),
            PgbenchError::Parse(msg) => write!(f, "cannot read pgbench output: {msg}"),
            PgbenchError::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for PgbenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PgbenchError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    #[test]
    fn messages_say_what_went_wrong() {
        let e = PgbenchError::InvalidOption("clients must be at least 1, got 0".into());
        assert_eq!(
            e.to_string(),
            "invalid pgbench option: clients must be at least 1, got 0"
        );
        assert!(e.source().is_none());
        let e = PgbenchError::Parse("line 3: bad".into());
        assert_eq!(e.to_string(), "cannot read pgbench output: line 3: bad");
    }

    #[test]
    fn io_errors_keep_their_cause() {
        let e = PgbenchError::io(
            "reading /x",
            io::Error::new(io::ErrorKind::NotFound, "gone"),
        );
        assert_eq!(e.to_string(), "reading /x: gone");
        assert!(e.source().is_some());
    }
}
