//! libpq's `key=value` connection strings, read as libpq itself reads them
//! (`conninfo_parse` in PostgreSQL's src/interfaces/libpq/fe-connect.c), in
//! one place: a fleet member's conninfo (split into a foreign server's and a
//! user mapping's options, which postgres_fdw hands to libpq one by one,
//! never as a string) and `storlab.conninfo` (the jobs' client programs).
//! A value that works in psql must mean the same here: a password read
//! differently would be stored wrong and fail only at the next connection.
//!
//! libpq's rules, all of them:
//! - items are separated by whitespace, C's `isspace` in the C locale
//!   (space, tab, newline, vertical tab, form feed, carriage return);
//! - a key is everything up to `=` or whitespace; whitespace may stand
//!   around the `=`, and a key with no `=` after it is an error;
//! - a value not starting with `'` runs to the next whitespace, and a
//!   backslash in it takes the next character literally (`a\ b` is `a b`,
//!   `a\\b` is `a\b`; a backslash at the very end is dropped);
//! - a value starting with `'` runs to the next unescaped `'`, a backslash
//!   again taking the next character literally; no closing quote is an
//!   error, and nothing needs to separate a closing quote from the next key;
//! - a key given twice keeps its last value (storlab's callers refuse that).
//!
//! No error here names the text it could not read: a password typed with an
//! unquoted space, or pasted without `password=`, is exactly such text.

use std::fmt;

/// The keywords libpq 18 knows (`PQconninfoOptions`), older majors' among
/// them. Used only to decide whether a message may name a key: a word that
/// is one of them is a keyword, anything else may be part of a secret.
pub const KEYWORDS: [&str; 51] = [
    "service",
    "user",
    "password",
    "passfile",
    "channel_binding",
    "connect_timeout",
    "dbname",
    "host",
    "hostaddr",
    "port",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "sslmode",
    "sslnegotiation",
    "sslcompression",
    "sslcert",
    "sslkey",
    "sslcertmode",
    "sslpassword",
    "sslrootcert",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "requirepeer",
    "require_auth",
    "min_protocol_version",
    "max_protocol_version",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "gssencmode",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "replication",
    "target_session_attrs",
    "load_balance_hosts",
    "scram_client_key",
    "scram_server_key",
    "oauth_issuer",
    "oauth_client_id",
    "oauth_client_secret",
    "oauth_scope",
    "sslkeylogfile",
    // (removed in libpq 14, still in older clients' strings)
    "tty",
];

/// The keywords whose value is a secret: libpq's password fields (its
/// `*` display mark) and the SCRAM keys postgres_fdw passes through.
pub const SECRET_KEYWORDS: [&str; 5] = [
    "password",
    "sslpassword",
    "oauth_client_secret",
    "scram_client_key",
    "scram_server_key",
];

pub fn is_keyword(key: &str) -> bool {
    KEYWORDS.contains(&key)
}

/// Why a connection string could not be read. Items are counted from 1 in
/// the order written; a key is named only when it is a libpq keyword.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The item has no `=` after its first word.
    MissingEquals { item: usize },
    /// The item's value opens a single quote that is never closed.
    Unterminated { item: usize, key: String },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::MissingEquals { item } => write!(
                f,
                "item {item} of the connection string is not key=value (a value with spaces needs single quotes, as in password='a b')"
            ),
            ParseError::Unterminated { item, key } => {
                write!(f, "the value of {} opens a single quote that is never closed", named(*item, key))
            }
        }
    }
}

/// How a message names an item's key: the key when it is a libpq keyword,
/// else only the item's place.
pub fn named(item: usize, key: &str) -> String {
    if is_keyword(key) {
        key.to_string()
    } else {
        format!("item {item}")
    }
}

/// A URI (`postgresql://`, `postgres://`) rather than `key=value` pairs.
pub fn is_uri(conninfo: &str) -> bool {
    let s = conninfo.trim_start();
    s.starts_with("postgresql://") || s.starts_with("postgres://")
}

/// The `(key, value)` pairs of a `key=value` connection string, in the
/// order written (a key twice is there twice). Keys are not checked
/// against libpq's: callers decide which they take.
pub fn parse(conninfo: &str) -> Result<Vec<(String, String)>, ParseError> {
    let mut out = Vec::new();
    let mut chars = conninfo.chars().peekable();
    loop {
        while chars.next_if(|c| is_space(*c)).is_some() {}
        if chars.peek().is_none() {
            return Ok(out);
        }
        let item = out.len() + 1;
        let key: String =
            std::iter::from_fn(|| chars.next_if(|c| *c != '=' && !is_space(*c))).collect();
        while chars.next_if(|c| is_space(*c)).is_some() {}
        if chars.next() != Some('=') {
            return Err(ParseError::MissingEquals { item });
        }
        while chars.next_if(|c| is_space(*c)).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    Some('\\') => value.extend(chars.next()),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => return Err(ParseError::Unterminated { item, key }),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !is_space(*c)) {
                if c == '\\' {
                    // (at the very end: dropped)
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        out.push((key, value));
    }
}

/// A value of a connection string, always single-quoted with `\` and `'`
/// escaped: read back as one value whatever it holds (a space, a `key=`),
/// never as more keywords.
pub fn quote(v: &str) -> String {
    format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// A value as psql would show it in a connection string: bare when libpq
/// reads it back bare (not empty, no whitespace, quote or backslash), else
/// quoted.
pub fn quote_if_needed(v: &str) -> String {
    if !v.is_empty() && !v.contains(|c: char| is_space(c) || c == '\'' || c == '\\') {
        return v.to_string();
    }
    quote(v)
}

/// C's `isspace` in the C locale, as libpq applies it byte by byte: a
/// non-ASCII character (a no-break space) separates nothing.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

#[cfg(test)]
mod against_libpq;
#[cfg(test)]
mod tests;
