//! How pgbench reaches the server, and the checks shared by every option
//! that ends up on its command line.

use std::ffi::OsString;

use super::error::PgbenchError;

/// Where pgbench connects. `None` leaves the field to libpq's defaults
/// (environment, then compiled-in), as `psql` would.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Connection {
    /// Host name, address, or socket directory (absolute path).
    pub host: Option<String>,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub dbname: String,
}

impl Connection {
    /// Appends the connection arguments. They must come last: the database
    /// name is a positional argument and follows `--`, so that a name
    /// starting with `-` is never read as an option.
    pub(crate) fn push_args(&self, args: &mut Vec<OsString>) -> Result<(), PgbenchError> {
        if let Some(host) = &self.host {
            check_text("host", host)?;
            args.push(format!("--host={host}").into());
        }
        if let Some(port) = self.port {
            if port == 0 {
                return Err(invalid("port must be in range 1..65535, got 0"));
            }
            args.push(format!("--port={port}").into());
        }
        if let Some(user) = &self.user {
            check_text("user", user)?;
            args.push(format!("--username={user}").into());
        }
        check_text("dbname", &self.dbname)?;
        // pgbench hands the name to libpq with expand_dbname, so a value
        // with '=' or a URI prefix would be read as a whole connection
        // string and could point pgbench at another server than the one
        // being measured.
        let lower = self.dbname.to_ascii_lowercase();
        if self.dbname.contains('=')
            || lower.starts_with("postgresql://")
            || lower.starts_with("postgres://")
        {
            return Err(invalid(format!(
                "dbname \"{}\" looks like a connection string; give a plain database name",
                self.dbname
            )));
        }
        args.push("--".into());
        args.push(self.dbname.clone().into());
        Ok(())
    }
}

pub(crate) fn invalid(msg: impl Into<String>) -> PgbenchError {
    PgbenchError::InvalidOption(msg.into())
}

/// A text option must be non-empty and free of NUL bytes (which cannot
/// cross `execve` and would make the spawn fail with a less clear error).
pub(crate) fn check_text(what: &str, value: &str) -> Result<(), PgbenchError> {
    if value.is_empty() {
        return Err(invalid(format!("{what} must not be empty")));
    }
    if value.contains('\0') {
        return Err(invalid(format!("{what} must not contain a NUL byte")));
    }
    Ok(())
}

/// pgbench reads its integer options as C ints in `1..=i32::MAX` (or from
/// `min`); checking here gives the message in storlab's words and before
/// any folder is created.
pub(crate) fn check_range(what: &str, value: i32, min: i32, max: i32) -> Result<(), PgbenchError> {
    if value < min || value > max {
        return Err(invalid(format!(
            "{what} must be in range {min}..{max}, got {value}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(c: &Connection) -> Result<Vec<String>, PgbenchError> {
        let mut v = Vec::new();
        c.push_args(&mut v)?;
        Ok(v.into_iter().map(|s| s.into_string().unwrap()).collect())
    }

    #[test]
    fn full_connection_is_one_argument_per_field_then_the_name() {
        let c = Connection {
            host: Some("/tmp/sock dir".into()),
            port: Some(5433),
            user: Some("bench user".into()),
            dbname: "-odd name".into(),
        };
        assert_eq!(
            args(&c).unwrap(),
            [
                "--host=/tmp/sock dir",
                "--port=5433",
                "--username=bench user",
                "--",
                "-odd name"
            ]
        );
    }

    #[test]
    fn defaults_leave_only_the_database() {
        let c = Connection {
            dbname: "postgres".into(),
            ..Default::default()
        };
        assert_eq!(args(&c).unwrap(), ["--", "postgres"]);
    }

    #[test]
    fn bad_values_are_refused_with_the_field_name() {
        let base = Connection {
            dbname: "db".into(),
            ..Default::default()
        };
        let cases = [
            (
                Connection {
                    dbname: "".into(),
                    ..base.clone()
                },
                "dbname must not be empty",
            ),
            (
                Connection {
                    host: Some("".into()),
                    ..base.clone()
                },
                "host must not be empty",
            ),
            (
                Connection {
                    user: Some("a\0b".into()),
                    ..base.clone()
                },
                "user must not contain a NUL",
            ),
            (
                Connection {
                    port: Some(0),
                    ..base.clone()
                },
                "port must be in range",
            ),
            (
                Connection {
                    dbname: "host=evil dbname=x".into(),
                    ..base.clone()
                },
                "connection string",
            ),
            (
                Connection {
                    dbname: "PostgreSQL://evil/x".into(),
                    ..base.clone()
                },
                "connection string",
            ),
        ];
        for (c, want) in cases {
            let err = args(&c).unwrap_err().to_string();
            assert!(err.contains(want), "{err} should contain {want}");
        }
    }

    #[test]
    fn range_check_names_bounds() {
        assert!(check_range("clients", 1, 1, i32::MAX).is_ok());
        let err = check_range("fillfactor", 5, 10, 100)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("fillfactor must be in range 10..100, got 5"),
            "{err}"
        );
    }
}
