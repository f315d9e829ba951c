//! The catalogue of benchmark scripts: pgbench's builtins and storlab's own.
//!
//! storlab's scripts are compiled into the extension (`include_str!`) rather
//! than read from the installation at run time, so that a result row always
//! names a script whose text is exactly the one that ran, whatever was
//! installed later. Each one stresses a single storage path, which its
//! header comment names, so that layouts can be compared path by path.

use std::fmt;

use crate::sql_text;

/// Where a script's text comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptSource {
    /// Built into pgbench, selected with `--builtin=<name>`.
    Builtin,
    /// Shipped with storlab, written to a file and run with `--file=`.
    Storlab,
}

impl fmt::Display for ScriptSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScriptSource::Builtin => "builtin",
            ScriptSource::Storlab => "storlab",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Script {
    pub name: &'static str,
    pub source: ScriptSource,
    /// What the script stresses, for humans (shown by the SQL catalogue).
    pub description: &'static str,
    /// The script for `pgbench --file`; `None` for builtins, whose text
    /// belongs to the pgbench that runs them (`pgbench --show-script`).
    pub text: Option<&'static str>,
}

impl Script {
    /// True when the script writes to `storlab_bench_append`, which
    /// `pgbench -i` does not create: the caller must run
    /// [`APPEND_TABLE_DDL`] after initialising.
    pub fn needs_append_table(&self) -> bool {
        self.text.is_some_and(|t| t.contains(APPEND_TABLE_NAME))
    }

    /// True when the script reads pgbench's `:scale` variable. pgbench sets
    /// it from `pgbench_branches` only for builtins; for a `--file` script
    /// it is 1 unless `--scale` is given, so such runs must pass the scale
    /// the database was initialised with.
    pub fn uses_scale(&self) -> bool {
        self.text.is_some_and(|t| t.contains(":scale"))
    }
}

/// The table the `insert-append` script fills.
pub const APPEND_TABLE_NAME: &str = "storlab_bench_append";

/// Drops and recreates [`APPEND_TABLE_NAME`] with its two indexes (several
/// statements; run it with the simple query protocol). Like `pgbench -i`
/// for pgbench's tables, it gives every run an empty table.
pub const APPEND_TABLE_DDL: &str =
    include_str!("../../pgbench_scripts/setup/storlab_bench_append.sql");

/// The names of the append table's indexes, as created by [`APPEND_TABLE_DDL`].
const APPEND_TABLE_INDEXES: [&str; 2] =
    ["storlab_bench_append_pkey", "storlab_bench_append_aid_idx"];

/// [`APPEND_TABLE_DDL`] followed by the statements that move the new,
/// still empty table and its indexes to the given tablespaces, mirroring
/// `pgbench -i --tablespace= --index-tablespace=`. Moving an empty relation
/// costs nothing, and keeping the DDL itself free of tablespace clauses
/// keeps it one file that can be read and run by hand.
pub fn append_table_ddl(tablespace: Option<&str>, index_tablespace: Option<&str>) -> String {
    let mut sql = APPEND_TABLE_DDL.to_string();
    if !sql.ends_with('\n') {
        sql.push('\n');
    }
    if let Some(ts) = tablespace {
        sql.push_str(&format!(
            "ALTER TABLE {APPEND_TABLE_NAME} SET TABLESPACE {};\n",
            sql_text::ident(ts)
        ));
    }
    if let Some(ts) = index_tablespace {
        for index in APPEND_TABLE_INDEXES {
            sql.push_str(&format!(
                "ALTER INDEX {index} SET TABLESPACE {};\n",
                sql_text::ident(ts)
            ));
        }
    }
    sql
}

const BUILTINS: [Script; 3] = [
    Script {
        name: "tpcb-like",
        source: ScriptSource::Builtin,
        description: "pgbench's TPC-B-like transaction: three updates, a select and an insert \
                      into pgbench_history; random reads and writes on all tables and a WAL \
                      flush per commit",
        text: None,
    },
    Script {
        name: "simple-update",
        source: ScriptSource::Builtin,
        description: "tpcb-like without the updates of pgbench_tellers and pgbench_branches: \
                      random heap and index writes with less lock contention, a WAL flush per commit",
        text: None,
    },
    Script {
        name: "select-only",
        source: ScriptSource::Builtin,
        description: "one random primary-key read of pgbench_accounts per transaction: random \
                      8 kB reads once the table outgrows the caches, otherwise CPU and round trips",
        text: None,
    },
];

const STORLAB: [Script; 4] = [
    Script {
        name: "index-lookup",
        source: ScriptSource::Storlab,
        description: "eight independent random primary-key reads of pgbench_accounts per \
                      transaction: random 8 kB reads of heap and index",
        text: Some(include_str!("../../pgbench_scripts/index-lookup.sql")),
    },
    Script {
        name: "insert-append",
        source: ScriptSource::Storlab,
        description: "one insert into storlab_bench_append per transaction: WAL flushes and \
                      relation extension, an appended and a randomly filled index",
        text: Some(include_str!("../../pgbench_scripts/insert-append.sql")),
    },
    Script {
        name: "update-hot",
        source: ScriptSource::Storlab,
        description: "one update of the non-indexed abalance of a random account: HOT updates \
                      when fillfactor leaves room on the page, WAL flush per commit",
        text: Some(include_str!("../../pgbench_scripts/update-hot.sql")),
    },
    Script {
        name: "range-scan",
        source: ScriptSource::Storlab,
        description: "10 000 consecutive accounts from a random start: sequential reads of \
                      adjacent heap pages",
        text: Some(include_str!("../../pgbench_scripts/range-scan.sql")),
    },
];

/// Every script, builtins first, in a stable order (the SQL catalogue lists
/// them in this order).
pub fn all() -> Vec<Script> {
    BUILTINS.iter().chain(STORLAB.iter()).copied().collect()
}

/// The script called `name`, in any ASCII case (names arrive from SQL typed
/// by a user). The error lists every known name, since the SQL side shows
/// it as is.
pub fn find(name: &str) -> Result<Script, String> {
    let name = name.trim();
    all()
        .into_iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| {
            let known: Vec<&str> = all().iter().map(|s| s.name).collect();
            format!(
                "unknown pgbench script \"{name}\"; known scripts: {}",
                known.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_has_the_builtins_and_storlab_scripts() {
        let names: Vec<&str> = all().iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "tpcb-like",
                "simple-update",
                "select-only",
                "index-lookup",
                "insert-append",
                "update-hot",
                "range-scan"
            ]
        );
        for s in all() {
            assert_eq!(
                s.text.is_some(),
                s.source == ScriptSource::Storlab,
                "{}: builtins have no text, storlab scripts do",
                s.name
            );
            assert!(!s.description.is_empty());
        }
    }

    #[test]
    fn storlab_scripts_say_which_storage_path_they_stress() {
        for s in all()
            .into_iter()
            .filter(|s| s.source == ScriptSource::Storlab)
        {
            let text = s.text.unwrap();
            let mut lines = text.lines();
            assert_eq!(
                lines.next(),
                Some(format!("-- storlab script: {}", s.name).as_str()),
                "{} must start with its header",
                s.name
            );
            assert!(
                lines
                    .next()
                    .is_some_and(|l| l.starts_with("-- Storage path: ")),
                "{}: second line names the storage path",
                s.name
            );
        }
    }

    #[test]
    fn storlab_scripts_draw_keys_over_the_whole_scale() {
        for s in all()
            .into_iter()
            .filter(|s| s.source == ScriptSource::Storlab)
        {
            let text = s.text.unwrap();
            assert!(s.uses_scale(), "{}", s.name);
            // Every meta-command is a \set with a random() over the scale;
            // a constant range would benchmark one cached corner.
            for line in text.lines().filter(|l| l.starts_with('\\')) {
                assert!(line.starts_with("\\set "), "{}: {line}", s.name);
                assert!(line.contains("random("), "{}: {line}", s.name);
            }
            // One SQL statement per transaction, no explicit BEGIN: pgbench
            // then counts one commit per transaction.
            let sql: Vec<&str> = text
                .lines()
                .filter(|l| !l.starts_with("--") && !l.starts_with('\\') && !l.trim().is_empty())
                .collect();
            assert_eq!(sql.len(), 1, "{}: {sql:?}", s.name);
            assert!(sql[0].ends_with(';'), "{}", s.name);
        }
    }

    #[test]
    fn scripts_match_what_they_claim() {
        let lookup = find("index-lookup").unwrap().text.unwrap();
        assert_eq!(lookup.matches("random(1, 100000 * :scale)").count(), 8);
        let range = find("range-scan").unwrap().text.unwrap();
        assert!(range.contains("BETWEEN :start AND :start + 9999"));
        // The start leaves room for 10 000 rows even at scale 1.
        assert!(range.contains("random(1, 100000 * :scale - 9999)"));
        let hot = find("update-hot").unwrap().text.unwrap();
        assert!(hot.contains("SET abalance = abalance + :delta"));
        let append = find("insert-append").unwrap();
        assert!(append.needs_append_table());
        assert!(all()
            .iter()
            .filter(|s| s.name != "insert-append")
            .all(|s| !s.needs_append_table()));
        assert!(!find("tpcb-like").unwrap().uses_scale());
    }

    #[test]
    fn find_ignores_case_and_lists_names_on_error() {
        assert_eq!(find("TPCB-Like").unwrap().name, "tpcb-like");
        assert_eq!(find(" range-scan ").unwrap().name, "range-scan");
        let err = find("tpcc").unwrap_err();
        assert!(err.starts_with("unknown pgbench script \"tpcc\""), "{err}");
        for s in all() {
            assert!(err.contains(s.name), "{err}");
        }
        assert!(find("").is_err());
    }

    #[test]
    fn append_table_ddl_creates_the_table_and_both_indexes() {
        assert!(APPEND_TABLE_DDL.contains("DROP TABLE IF EXISTS storlab_bench_append;"));
        assert!(APPEND_TABLE_DDL.contains("CREATE TABLE storlab_bench_append ("));
        for index in APPEND_TABLE_INDEXES {
            assert!(APPEND_TABLE_DDL.contains(index), "{index}");
        }
        // The insert names exactly the columns the table has.
        let insert = find("insert-append").unwrap().text.unwrap();
        assert!(insert.contains("INSERT INTO storlab_bench_append (aid, delta, filler)"));
        for col in ["aid integer", "delta integer", "filler char(84)"] {
            assert!(APPEND_TABLE_DDL.contains(col), "{col}");
        }
        assert_eq!(
            append_table_ddl(None, None).trim_end(),
            APPEND_TABLE_DDL.trim_end()
        );
    }

    #[test]
    fn append_table_ddl_moves_to_quoted_tablespaces() {
        let sql = append_table_ddl(Some("Fast \"ssd\""), Some("idx"));
        // quoted as quote_ident quotes: only when the name needs it
        assert!(
            sql.contains("ALTER TABLE storlab_bench_append SET TABLESPACE \"Fast \"\"ssd\"\"\";\n")
        );
        assert!(sql.contains("ALTER INDEX storlab_bench_append_pkey SET TABLESPACE idx;\n"));
        assert!(sql.contains("ALTER INDEX storlab_bench_append_aid_idx SET TABLESPACE idx;\n"));
        let keyword = append_table_ddl(Some("user"), None);
        assert!(keyword.contains("ALTER TABLE storlab_bench_append SET TABLESPACE \"user\";\n"));
        // The moves come after the table exists.
        assert!(sql.find("CREATE TABLE").unwrap() < sql.find("ALTER TABLE").unwrap());
        let only_index = append_table_ddl(None, Some("idx"));
        assert!(!only_index.contains("ALTER TABLE"));
    }
}
