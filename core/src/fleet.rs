//! A fleet: one collector database gathers the results of many servers
//! through postgres_fdw (sql/catalog/fleet.sql). What is decided without a
//! server lives here: a member's name, how a conninfo splits into a foreign
//! server's options and a user mapping's, what of it may be shown, and
//! which storlab versions a collector can read.

use crate::conninfo;
use crate::error::{Error, SqlState};

/// A member's name becomes part of two identifiers (`storlab_fleet_<name>`
/// for its foreign server and its schema of foreign tables): lower-case,
/// so that it never needs quoting, and short enough for NAMEDATALEN.
pub const NAME_MAX: usize = 40;

/// The oldest storlab a collector reads: the first release whose tables
/// (probes, baselines, bench runs, experiments) hold every column the
/// fleet's readers use.
pub const OLDEST_READABLE: (u32, u32, u32) = (0, 5, 0);

/// libpq keywords that go on the user mapping: the role, the client
/// certificate and every secret (postgres_fdw takes `user` and libpq's
/// password fields there only; sslkey and sslcert are per role too).
/// Everything else describes the server and goes on the foreign server.
const MAPPING_KEYS: [&str; 6] = [
    "user",
    "sslkey",
    "sslcert",
    "password",
    "sslpassword",
    "oauth_client_secret",
];

/// Keywords postgres_fdw sets itself, or that would make the connection
/// something else than a plain read of another server's database.
const REFUSED_KEYS: [&str; 6] = [
    "client_encoding",
    "fallback_application_name",
    "replication",
    "service",
    "scram_client_key",
    "scram_server_key",
];

pub fn check_name(name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name.len() <= NAME_MAX
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::new(
            SqlState::InvalidParameterValue,
            format!(
                "a fleet server's name must be a lower-case letter followed by lower-case letters, digits or _, at most {NAME_MAX} characters: \"{name}\""
            ),
        ))
    }
}

/// A conninfo split for postgres_fdw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// Options of the foreign server (host, port, dbname, sslmode, ...).
    pub server: Vec<(String, String)>,
    /// Options of the user mapping (user, password, ...).
    pub mapping: Vec<(String, String)>,
}

impl Split {
    /// What may be shown of the conninfo: every option but the secrets,
    /// as `key=value` pairs (values quoted when they need it).
    pub fn shown(&self) -> String {
        self.server
            .iter()
            .chain(&self.mapping)
            .filter(|(k, _)| !conninfo::SECRET_KEYWORDS.contains(&k.as_str()))
            .map(|(k, v)| format!("{k}={}", conninfo::quote_if_needed(v)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Splits a libpq `key=value` conninfo, read as libpq reads it
/// (crate::conninfo). A URI (`postgresql://...`) is refused rather than
/// parsed: its password would sit in the middle of a string storlab must
/// never echo. No message names a value, nor a word that is no libpq
/// keyword: a password typed with an unquoted space, or pasted without
/// `password=`, stays unseen.
pub fn split_conninfo(conninfo: &str) -> Result<Split, Error> {
    let bad = |msg: String| Error::new(SqlState::InvalidParameterValue, msg);
    if conninfo::is_uri(conninfo) {
        return Err(
            bad("a fleet server's conninfo must be key=value pairs, not a URI".into())
                .with_hint("Write it as host=... port=... dbname=... user=..."),
        );
    }
    let pairs =
        conninfo::parse(conninfo).map_err(|e| bad(format!("a fleet server's conninfo: {e}")))?;
    let mut split = Split {
        server: Vec::new(),
        mapping: Vec::new(),
    };
    for (i, (k, v)) in pairs.into_iter().enumerate() {
        let item = i + 1;
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            return Err(bad(format!(
                "a fleet server's conninfo: the key of item {item} is not a libpq keyword"
            )));
        }
        if REFUSED_KEYS.contains(&k.as_str()) {
            return Err(bad(format!(
                "a fleet server's conninfo may not set {k}: postgres_fdw sets or refuses it"
            )));
        }
        if split
            .server
            .iter()
            .chain(&split.mapping)
            .any(|(o, _)| *o == k)
        {
            return Err(bad(format!(
                "a fleet server's conninfo sets {} twice",
                conninfo::named(item, &k)
            )));
        }
        if MAPPING_KEYS.contains(&k.as_str()) {
            split.mapping.push((k, v));
        } else {
            split.server.push((k, v));
        }
    }
    if !split.server.iter().any(|(k, _)| k == "dbname") {
        return Err(
            bad("a fleet server's conninfo must name its database: dbname=...".into()).with_hint(
                "storlab's results are per database: name the one storlab is installed in.",
            ),
        );
    }
    Ok(split)
}

/// A storlab version as (major, minor, patch); None when it is not one.
pub fn parse_version(v: &str) -> Option<(u32, u32, u32)> {
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    let version = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(version)
}

/// Whether a collector of version `collector` reads a server whose storlab
/// is `remote`: not newer than itself (it would not know the new columns'
/// meaning), and not older than [`OLDEST_READABLE`].
pub fn check_readable(remote: &str, collector: &str) -> Result<(), Error> {
    let (Some(r), Some(c)) = (parse_version(remote), parse_version(collector)) else {
        return Err(Error::new(
            SqlState::FeatureNotSupported,
            format!("storlab version \"{remote}\" is not one this collector ({collector}) knows"),
        ));
    };
    if r > c {
        return Err(Error::new(
            SqlState::FeatureNotSupported,
            format!("the server's storlab {remote} is newer than this collector's {collector}"),
        )
        .with_hint("Update the collector first: ALTER EXTENSION storlab UPDATE."));
    }
    if r < OLDEST_READABLE {
        let (a, b, p) = OLDEST_READABLE;
        return Err(Error::new(
            SqlState::FeatureNotSupported,
            format!("the server's storlab {remote} is older than {a}.{b}.{p}, the oldest a collector reads"),
        )
        .with_hint("Update storlab on that server: ALTER EXTENSION storlab UPDATE."));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["a", "old_array", "db01", &"x".repeat(NAME_MAX)] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "1db",
            "Old",
            "old-array",
            "a b",
            "é",
            &"x".repeat(NAME_MAX + 1),
        ] {
            let e = check_name(bad).unwrap_err();
            assert_eq!(e.state, SqlState::InvalidParameterValue, "{bad}");
        }
    }

    #[test]
    fn splits_server_and_mapping_options() {
        let s = split_conninfo(
            "host=db1.example port=5433 dbname=shop user=collector password='se cr\\'et' sslmode=require",
        )
        .unwrap();
        assert_eq!(
            s.server,
            [
                ("host", "db1.example"),
                ("port", "5433"),
                ("dbname", "shop"),
                ("sslmode", "require")
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
        );
        assert_eq!(
            s.mapping,
            [("user", "collector"), ("password", "se cr'et")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
        );
        let shown = s.shown();
        assert_eq!(
            shown,
            "host=db1.example port=5433 dbname=shop sslmode=require user=collector"
        );
        assert!(!shown.contains("cr"), "no password shown");
    }

    #[test]
    fn refusals_never_show_a_value() {
        for (conninfo, says) in [
            ("postgresql://u:hunter2@h/db", "not a URI"),
            ("host=h password=hunter2", "must name its database"),
            (
                "dbname=d password=hunter2 password=hunter2",
                "sets password twice",
            ),
            ("dbname=d replication=hunter2", "may not set replication"),
            (
                "dbname=d password='hunter2",
                "the value of password opens a single quote",
            ),
            // a password pasted without password=, or with an unquoted space
            (
                "dbname=d hunter2",
                "item 2 of the connection string is not key=value",
            ),
            (
                "dbname=d password=hun ter2",
                "item 3 of the connection string is not key=value",
            ),
            (
                "dbname=d password=a Hunter2=x",
                "the key of item 3 is not a libpq keyword",
            ),
            (
                "dbname=d password=a hunterx=x hunterx=y",
                "sets item 4 twice",
            ),
            (
                "dbname=d password=a hunterx='x",
                "the value of item 3 opens a single quote",
            ),
        ] {
            let e = split_conninfo(conninfo).unwrap_err();
            assert_eq!(e.state, SqlState::InvalidParameterValue);
            assert!(e.message.contains(says), "{conninfo}: {}", e.message);
            let all = format!("{} {:?} {:?}", e.message, e.detail, e.hint);
            assert!(!all.contains("hunter") && !all.contains("ter2"), "{all}");
        }
    }

    #[test]
    fn values_are_read_as_libpq_reads_them() {
        // a backslash outside quotes takes the next character: psql and
        // postgres_fdw's libpq would log in with "se cret\"
        let s = split_conninfo(r"dbname=d password=se\ cret\\ user=u").unwrap();
        assert_eq!(
            s.mapping[0],
            ("password".to_string(), r"se cret\".to_string())
        );
        assert_eq!(s.shown(), "dbname=d user=u");
        let s = split_conninfo("dbname=d oauth_client_secret=x sslcert=/c user=u").unwrap();
        assert_eq!(s.shown(), "dbname=d sslcert=/c user=u");
        assert!(s.mapping.iter().any(|(k, _)| k == "oauth_client_secret"));
    }

    #[test]
    fn versions() {
        assert_eq!(parse_version("0.8.0"), Some((0, 8, 0)));
        assert_eq!(parse_version("0.10.2"), Some((0, 10, 2)));
        assert_eq!(parse_version("1.0"), None);
        assert_eq!(parse_version("0.8.0.1"), None);
        assert!(check_readable("0.8.0", "0.8.0").is_ok());
        assert!(check_readable("0.5.0", "0.8.0").is_ok());
        assert!(
            check_readable("0.10.0", "0.9.0").is_err(),
            "0.10 is newer than 0.9"
        );
        let e = check_readable("0.9.0", "0.8.0").unwrap_err();
        assert_eq!(e.state, SqlState::FeatureNotSupported);
        assert!(e.message.contains("newer"));
        assert!(check_readable("0.4.0", "0.8.0")
            .unwrap_err()
            .message
            .contains("older"));
        assert!(check_readable("dev", "0.8.0").is_err());
    }
}
