//! `storlab.conninfo`: how jobs' client programs (pgbench, psql) reach the
//! server when the default (the server's own socket folder and port, the
//! caller's role) is not enough, e.g. when pg_hba.conf wants a password over
//! TCP. A libpq-style `key=value` list; only the keys that choose *this*
//! server's endpoint and credentials are accepted: a job never benchmarks
//! another database or server than the one its caller is in.

use super::Connection;
use crate::conninfo;

/// A value of a libpq connection string, quoted so that it reads back as
/// one value (crate::conninfo, the one reader of connection strings).
pub use crate::conninfo::quote;

pub const KEYS: [&str; 4] = ["host", "port", "user", "passfile"];

/// The `key=value` pairs of storlab.conninfo, read as libpq reads them;
/// only [`KEYS`]. No message names a word that is no libpq keyword.
pub fn parse(conninfo: &str) -> Result<Vec<(String, String)>, String> {
    let pairs = conninfo::parse(conninfo).map_err(|e| format!("storlab.conninfo: {e}"))?;
    for (i, (key, _)) in pairs.iter().enumerate() {
        if !KEYS.contains(&key.as_str()) {
            let which = if conninfo::is_keyword(key) {
                format!("key \"{key}\"")
            } else {
                format!("the key of item {}", i + 1)
            };
            return Err(format!(
                "storlab.conninfo: {which} is not allowed; allowed: {}",
                KEYS.join(", ")
            ));
        }
    }
    Ok(pairs)
}

/// Applies the pairs to a connection; returns the passfile, if any (it goes
/// to the client programs as PGPASSFILE).
pub fn apply(conn: &mut Connection, conninfo: &str) -> Result<Option<String>, String> {
    let mut passfile = None;
    for (key, value) in parse(conninfo)? {
        match key.as_str() {
            "host" => conn.host = Some(value),
            "port" => {
                conn.port = Some(value.parse().map_err(|_| {
                    "storlab.conninfo: port is not a port number (1..65535)".to_string()
                })?)
            }
            "user" => conn.user = Some(value),
            _ => passfile = Some(value),
        }
    }
    Ok(passfile)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Connection {
        Connection {
            host: Some("/run/postgresql".into()),
            port: Some(5432),
            user: Some("alice".into()),
            dbname: "shop".into(),
        }
    }

    #[test]
    fn overrides_endpoint_and_credentials() {
        let mut c = conn();
        let pass = apply(
            &mut c,
            "host=127.0.0.1  port = 6432 user='bench user' passfile=/etc/storlab/pgpass",
        )
        .unwrap();
        assert_eq!(c.host.as_deref(), Some("127.0.0.1"));
        assert_eq!(c.port, Some(6432));
        assert_eq!(c.user.as_deref(), Some("bench user"));
        assert_eq!(c.dbname, "shop", "the database is always the caller's");
        assert_eq!(pass.as_deref(), Some("/etc/storlab/pgpass"));
    }

    #[test]
    fn quotes_and_escapes_as_libpq_reads_them() {
        assert_eq!(
            parse(r"user='o\'brien' host=h").unwrap(),
            vec![
                ("user".into(), "o'brien".into()),
                ("host".into(), "h".into())
            ]
        );
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn refuses_other_keys_and_bad_syntax() {
        assert!(
            parse("dbname=other").unwrap_err().contains("not allowed"),
            "no benchmarking of another database"
        );
        assert!(parse("host").unwrap_err().contains("not key=value"));
        assert!(parse("user='open").unwrap_err().contains("never closed"));
        // a password pasted in is not repeated
        let e = parse("host=h hunter2").unwrap_err();
        assert!(e.contains("item 2") && !e.contains("hunter2"), "{e}");
        let e = parse("user=u hunter2=x").unwrap_err();
        assert!(
            e.contains("the key of item 2") && !e.contains("hunter2"),
            "{e}"
        );
        assert!(apply(&mut conn(), "port=fifty")
            .unwrap_err()
            .contains("not a port"));
    }
}
