//! `storlab.conninfo`: how jobs' client programs (pgbench, psql) reach the
//! server when the default (the server's own socket folder and port, the
//! caller's role) is not enough, e.g. when pg_hba.conf wants a password over
//! TCP. A libpq-style `key=value` list; only the keys that choose *this*
//! server's endpoint and credentials are accepted: a job never benchmarks
//! another database or server than the one its caller is in.

use super::Connection;

pub const KEYS: [&str; 4] = ["host", "port", "user", "passfile"];

/// The `key=value` pairs of a conninfo string; values may be single-quoted,
/// with `\'` and `\\` escapes, as libpq reads them.
/// A value of a libpq connection string, always single-quoted with `\`
/// and `'` escaped: read back as one value whatever it holds (a space, a
/// `key=`), never as more keywords.
pub fn quote(v: &str) -> String {
    format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
}

pub fn parse(conninfo: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = conninfo.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(out);
        }
        let key: String =
            std::iter::from_fn(|| chars.next_if(|c| *c != '=' && !c.is_whitespace())).collect();
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') {
            return Err(format!(
                "storlab.conninfo: \"{key}\" has no value; write key=value pairs"
            ));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            loop {
                match chars.next() {
                    Some('\\') => value.extend(chars.next()),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => {
                        return Err(format!(
                            "storlab.conninfo: unterminated quote in the value of {key}"
                        ))
                    }
                }
            }
        } else {
            value.extend(std::iter::from_fn(|| chars.next_if(|c| !c.is_whitespace())));
        }
        if !KEYS.contains(&key.as_str()) {
            return Err(format!(
                "storlab.conninfo: key \"{key}\" is not allowed; allowed: {}",
                KEYS.join(", ")
            ));
        }
        out.push((key, value));
    }
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
                    format!("storlab.conninfo: port \"{value}\" is not a port number")
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
        assert!(parse("host").unwrap_err().contains("no value"));
        assert!(parse("user='open").unwrap_err().contains("unterminated"));
        assert!(apply(&mut conn(), "port=fifty")
            .unwrap_err()
            .contains("not a port"));
    }
}
