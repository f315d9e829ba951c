//! Errors returned by the probe engine, and the name parsers' message.

use std::{fmt, io};

/// Why a probe did not produce a result.
///
/// `DiskFull` is split out of `Io` because the SQL side reports it as a
/// capacity problem of the tablespace, not as a broken device.
#[derive(Debug)]
pub enum ProbeError {
    /// The spec cannot be run as given; the message says which field and why.
    InvalidSpec(String),
    /// ENOSPC or EDQUOT while writing; the message names the file and step.
    DiskFull(String),
    /// The caller's `poll` asked to stop.
    Cancelled,
    /// The kernel refuses what the spec needs (io_uring switched off); the
    /// message says why.
    Unsupported(String),
    /// Any other system call failure, with what we were doing at the time.
    Io { context: String, source: io::Error },
}

impl ProbeError {
    /// Wraps an I/O error, routing "out of space" errnos to `DiskFull` so
    /// that every call site classifies them the same way.
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        let context = context.into();
        match source.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => {
                ProbeError::DiskFull(format!("{context}: {source}"))
            }
            _ => ProbeError::Io { context, source },
        }
    }
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::InvalidSpec(msg) => write!(f, "invalid probe spec: {msg}"),
            ProbeError::DiskFull(msg) => write!(f, "disk full: {msg}"),
            ProbeError::Cancelled => write!(f, "probe cancelled"),
            ProbeError::Unsupported(msg) => f.write_str(msg),
            ProbeError::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for ProbeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProbeError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The value of `all` whose name is `given`, in any ASCII case (names
/// arrive from SQL, typed by a user). Otherwise an error message that lists
/// what would have been accepted, since the SQL side shows it as is.
pub(crate) fn parse_name<T: Copy>(
    kind: &str,
    given: &str,
    all: &[T],
    name: fn(T) -> &'static str,
) -> Result<T, String> {
    all.iter()
        .copied()
        .find(|v| name(*v).eq_ignore_ascii_case(given.trim()))
        .ok_or_else(|| {
            let allowed: Vec<&str> = all.iter().map(|v| name(*v)).collect();
            format!(
                "unknown {kind} \"{given}\"; allowed: {}",
                allowed.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_space_errnos_become_disk_full() {
        for errno in [libc::ENOSPC, libc::EDQUOT] {
            let e = ProbeError::io("writing x", io::Error::from_raw_os_error(errno));
            match e {
                ProbeError::DiskFull(msg) => assert!(msg.starts_with("writing x: "), "{msg}"),
                other => panic!("errno {errno} gave {other:?}"),
            }
        }
    }

    #[test]
    fn other_errnos_keep_context_and_source() {
        let e = ProbeError::io("reading y", io::Error::from_raw_os_error(libc::EIO));
        assert!(e.to_string().starts_with("reading y: "), "{e}");
        assert!(std::error::Error::source(&e).is_some());
        assert!(matches!(e, ProbeError::Io { .. }));
    }

    #[test]
    fn unknown_name_lists_allowed_spellings() {
        let name = |c: char| if c == 'r' { "red" } else { "blue" };
        assert_eq!(parse_name("colour", " RED ", &['r', 'b'], name), Ok('r'));
        assert_eq!(
            parse_name("colour", "mauve", &['r', 'b'], name),
            Err("unknown colour \"mauve\"; allowed: red, blue".to_string())
        );
    }
}
