//! Cases read off libpq's conninfo_parse, each also checked against the
//! libpq this machine has by `against_libpq::table_cases_agree_with_libpq`.

use super::*;

/// What libpq reads of a connection string: its pairs, or None for an error.
pub(super) type Reading = Option<&'static [(&'static str, &'static str)]>;

/// (connection string, what libpq reads)
pub(super) const CASES: &[(&str, Reading)] = &[
    ("", Some(&[])),
    ("   ", Some(&[])),
    ("host=h port=5432", Some(&[("host", "h"), ("port", "5432")])),
    (
        "host = h   port= 5432",
        Some(&[("host", "h"), ("port", "5432")]),
    ),
    (
        "host=h\tport=1\nuser=u\x0bdbname=d\x0cpassword=p\rsslmode=disable",
        Some(&[
            ("host", "h"),
            ("port", "1"),
            ("user", "u"),
            ("dbname", "d"),
            ("password", "p"),
            ("sslmode", "disable"),
        ]),
    ),
    // a backslash in an unquoted value takes the next character as it is
    (r"password=a\ b", Some(&[("password", "a b")])),
    (r"password=a\\b", Some(&[("password", r"a\b")])),
    (r"password=a\'b", Some(&[("password", "a'b")])),
    (r"password=a\qb", Some(&[("password", "aqb")])),
    (r"password=ab\", Some(&[("password", "ab")])),
    (
        r"password=\\\\server\share",
        Some(&[("password", r"\\servershare")]),
    ),
    // a quote inside an unquoted value is an ordinary character
    ("password=it's", Some(&[("password", "it's")])),
    ("password=a'b c'", None),
    // quoted values
    ("password='a b'", Some(&[("password", "a b")])),
    (
        r"password='o\'brien' user=u",
        Some(&[("password", "o'brien"), ("user", "u")]),
    ),
    (r"password='a\\b'", Some(&[("password", r"a\b")])),
    (r"password='a\qb'", Some(&[("password", "aqb")])),
    ("password=''", Some(&[("password", "")])),
    (
        "password='a'user=u",
        Some(&[("password", "a"), ("user", "u")]),
    ),
    ("password='a'b", None),
    ("password='a", None),
    (r"password='a\'", None),
    (r"password='a\", None),
    // an empty value, and libpq's reading of `key= next=...`
    ("password=", Some(&[("password", "")])),
    ("host= port=5432", Some(&[("host", "port=5432")])),
    // words without `=`: a password pasted alone, or after an unquoted space
    ("dbname=d hunter2", None),
    ("dbname=d password=hunter 2", None),
    ("host", None),
    ("=x", Some(&[("", "x")])),
    // a non-ASCII space separates nothing
    ("password=a\u{a0}b", Some(&[("password", "a\u{a0}b")])),
    // the last of a key given twice
    ("host=a host=b", Some(&[("host", "a"), ("host", "b")])),
];

#[test]
fn reads_as_libpq_reads() {
    for (conninfo, want) in CASES {
        let got = parse(conninfo);
        match want {
            Some(pairs) => {
                let want: Vec<(String, String)> = pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                assert_eq!(got.as_ref().ok(), Some(&want), "{conninfo:?}: {got:?}");
            }
            None => assert!(got.is_err(), "{conninfo:?} should be refused, read {got:?}"),
        }
    }
}

#[test]
fn errors_name_no_word_that_is_no_keyword() {
    for (conninfo, says) in [
        (
            "dbname=d hunter2",
            "item 2 of the connection string is not key=value",
        ),
        (
            "dbname=d password=hunter 2 host=h",
            "item 3 of the connection string is not key=value",
        ),
        (
            "dbname=d password='hunter2",
            "the value of password opens a single quote",
        ),
        (
            "dbname=d password=a hunter2='x",
            "the value of item 3 opens a single quote",
        ),
    ] {
        let e = parse(conninfo).unwrap_err().to_string();
        assert!(e.starts_with(says), "{conninfo}: {e}");
        assert!(!e.contains("hunter"), "{conninfo}: {e}");
    }
}

#[test]
fn quoted_values_read_back_whole() {
    for v in [
        "", "a b", "o'brien", r"a\b", r"\'", "x=y z=w", "'", "\\", "a\tb",
    ] {
        let s = format!("password={} host=h", quote(v));
        assert_eq!(
            parse(&s).unwrap(),
            [
                ("password".into(), v.to_string()),
                ("host".into(), "h".into())
            ],
            "{s}"
        );
        let s = format!("password={} host=h", quote_if_needed(v));
        assert_eq!(parse(&s).unwrap()[0].1, v, "{s}");
    }
    assert_eq!(quote_if_needed("db1.example"), "db1.example");
}

#[test]
fn uris() {
    assert!(is_uri("postgresql://u:p@h/db"));
    assert!(is_uri("  postgres://h"));
    assert!(!is_uri("host=postgresql://"));
}
