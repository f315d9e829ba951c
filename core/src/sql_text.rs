//! SQL text: identifiers and literals quoted exactly as PostgreSQL's
//! `quote_ident` and `quote_literal` quote them, without asking the server.
//!
//! Every statement storlab builds or shows quotes names here, so a name in
//! any case, with any character, means exactly that object, and the text is
//! the one `format('%I')` would print (`lab_ram`, `"Odd Schema"`).

/// A name as an identifier: left bare when PostgreSQL's `quote_ident`
/// leaves it bare (lower-case ASCII letters, digits and underscores, not
/// starting with a digit, and not a keyword other than an unreserved one),
/// otherwise in double quotes with embedded ones doubled. The empty name is
/// `""`.
pub fn ident(name: &str) -> String {
    if is_bare(name) {
        return name.to_string();
    }
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        if c == '"' {
            out.push('"');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `schema.name`, each part quoted by [`ident`].
pub fn qualified(schema: &str, name: &str) -> String {
    format!("{}.{}", ident(schema), ident(name))
}

/// A string as a literal, as PostgreSQL's `quote_literal` writes it:
/// single quotes doubled, and when the string holds a backslash, every
/// backslash doubled and the literal written `E'...'`, so that it reads
/// back the same whatever `standard_conforming_strings` is.
pub fn literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 3);
    if s.contains('\\') {
        out.push('E');
    }
    out.push('\'');
    for c in s.chars() {
        if c == '\'' || c == '\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// PostgreSQL's rule (`quote_identifier` in ruleutils.c, with
/// `quote_all_identifiers` off).
fn is_bare(name: &str) -> bool {
    let mut bytes = name.bytes();
    let Some(first) = bytes.next() else {
        return false;
    };
    (first.is_ascii_lowercase() || first == b'_')
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !needs_quotes_as_keyword(name)
}

/// A keyword that cannot stand as a bare identifier everywhere: PostgreSQL
/// 15's reserved, column-name and type/function-name keywords, plus those
/// later majors added. Quoting one of the latter is harmless on 15 (a quoted
/// identifier means the same object), leaving it bare would not be on the
/// major a statement may be replayed on.
fn needs_quotes_as_keyword(word: &str) -> bool {
    KEYWORDS_15.binary_search(&word).is_ok() || KEYWORDS_LATER.binary_search(&word).is_ok()
}

/// Every keyword of PostgreSQL 15's `src/include/parser/kwlist.h` whose
/// category is not UNRESERVED_KEYWORD (RESERVED, COL_NAME and
/// TYPE_FUNC_NAME), in the file's (ASCII) order.
const KEYWORDS_15: [&str; 151] = [
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "between",
    "bigint",
    "binary",
    "bit",
    "boolean",
    "both",
    "case",
    "cast",
    "char",
    "character",
    "check",
    "coalesce",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "dec",
    "decimal",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "exists",
    "extract",
    "false",
    "fetch",
    "float",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "greatest",
    "group",
    "grouping",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "inout",
    "int",
    "integer",
    "intersect",
    "interval",
    "into",
    "is",
    "isnull",
    "join",
    "lateral",
    "leading",
    "least",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "national",
    "natural",
    "nchar",
    "none",
    "normalize",
    "not",
    "notnull",
    "null",
    "nullif",
    "numeric",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "out",
    "outer",
    "overlaps",
    "overlay",
    "placing",
    "position",
    "precision",
    "primary",
    "real",
    "references",
    "returning",
    "right",
    "row",
    "select",
    "session_user",
    "setof",
    "similar",
    "smallint",
    "some",
    "substring",
    "symmetric",
    "table",
    "tablesample",
    "then",
    "time",
    "timestamp",
    "to",
    "trailing",
    "treat",
    "trim",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "values",
    "varchar",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
    "xmlattributes",
    "xmlconcat",
    "xmlelement",
    "xmlexists",
    "xmlforest",
    "xmlnamespaces",
    "xmlparse",
    "xmlpi",
    "xmlroot",
    "xmlserialize",
    "xmltable",
];

/// Keywords that PostgreSQL 16 and 17 added to kwlist.h outside the
/// unreserved category (16: `system_user` reserved; the SQL/JSON
/// constructors; 17: the SQL/JSON query functions and `merge_action`),
/// sorted. None of them is a keyword in 15, where `quote_ident` leaves them
/// bare; here they are quoted, which 15 reads as the same name. Extend this
/// list when a new major adds such a keyword; unreserved additions need
/// nothing.
const KEYWORDS_LATER: [&str; 13] = [
    "json",
    "json_array",
    "json_arrayagg",
    "json_exists",
    "json_object",
    "json_objectagg",
    "json_query",
    "json_scalar",
    "json_serialize",
    "json_table",
    "json_value",
    "merge_action",
    "system_user",
];

/// Names that PostgreSQL 15 leaves bare but [`ident`] quotes (the later
/// majors' keywords), for tests that compare with a 15 server.
pub fn quoted_for_later_majors_only(name: &str) -> bool {
    KEYWORDS_LATER.binary_search(&name).is_ok() && KEYWORDS_15.binary_search(&name).is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_tables_are_sorted_for_binary_search() {
        assert!(KEYWORDS_15.windows(2).all(|w| w[0] < w[1]));
        assert!(KEYWORDS_LATER.windows(2).all(|w| w[0] < w[1]));
        assert!(KEYWORDS_LATER
            .iter()
            .all(|k| quoted_for_later_majors_only(k)));
    }

    #[test]
    fn plain_lower_case_names_stay_bare() {
        for name in ["lab_ram", "pg_default", "_x", "a1", "public", "orders_pkey"] {
            assert_eq!(ident(name), name);
        }
    }

    #[test]
    fn other_names_are_quoted_as_postgresql_quotes_them() {
        assert_eq!(ident(""), "\"\"");
        assert_eq!(ident("Odd Schema"), "\"Odd Schema\"");
        assert_eq!(ident("LabRam"), "\"LabRam\"");
        assert_eq!(ident("1st"), "\"1st\"");
        assert_eq!(ident("a-b"), "\"a-b\"");
        assert_eq!(ident("idx \"quoted\""), "\"idx \"\"quoted\"\"\"");
        assert_eq!(ident("\""), "\"\"\"\"");
        assert_eq!(ident("café"), "\"café\"");
        assert_eq!(ident("x;DROP"), "\"x;DROP\"");
    }

    #[test]
    fn keywords_are_quoted_unless_unreserved() {
        // reserved, column-name and type/function-name keywords
        for k in [
            "select",
            "table",
            "user",
            "between",
            "int",
            "left",
            "authorization",
        ] {
            assert_eq!(ident(k), format!("\"{k}\""), "{k}");
        }
        // unreserved keywords are fine as identifiers
        for k in ["by", "index", "name", "data", "action", "abort"] {
            assert_eq!(ident(k), k, "{k}");
        }
        // later majors' keywords: quoted (harmless on 15)
        assert_eq!(ident("json_table"), "\"json_table\"");
        assert_eq!(ident("system_user"), "\"system_user\"");
    }

    #[test]
    fn qualified_names_quote_each_part() {
        assert_eq!(
            qualified("public", "pgbench_accounts"),
            "public.pgbench_accounts"
        );
        assert_eq!(qualified("Odd Schema", "user"), "\"Odd Schema\".\"user\"");
        assert_eq!(qualified("a.b", "c"), "\"a.b\".c");
    }

    #[test]
    fn literals_double_quotes_and_backslashes() {
        assert_eq!(literal(""), "''");
        assert_eq!(literal("lab_ram"), "'lab_ram'");
        assert_eq!(literal("it's"), "'it''s'");
        assert_eq!(literal("a\\b"), "E'a\\\\b'");
        assert_eq!(literal("'\\'"), "E'''\\\\'''");
        assert_eq!(literal("café \"x\""), "'café \"x\"'");
    }
}
