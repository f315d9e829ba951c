//! `InitOptions`: `pgbench --initialize` as arguments.
//!
//! This is where a layout is set up: the tables go to `tablespace`, their
//! primary keys to `index_tablespace`, with `fillfactor` deciding how much
//! room updates find on a page. pgbench quotes both tablespace names itself
//! (`PQescapeIdentifier`), so any name PostgreSQL accepts can be passed.

use std::ffi::OsString;

use super::connection::{check_range, check_text, invalid, Connection};
use super::error::PgbenchError;

/// PostgreSQL truncates longer identifiers (NAMEDATALEN - 1 bytes) with a
/// NOTICE only; a truncated tablespace name could name another tablespace.
const MAX_IDENTIFIER_BYTES: usize = 63;

/// The initialisation steps pgbench knows (`-I`): drop, create tables,
/// client-side or server-side data generation, vacuum, primary keys,
/// foreign keys.
const INIT_STEPS: &str = "dtgGvpf";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionMethod {
    Range,
    Hash,
}

impl PartitionMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            PartitionMethod::Range => "range",
            PartitionMethod::Hash => "hash",
        }
    }

    pub fn parse(name: &str) -> Result<PartitionMethod, PgbenchError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "range" => Ok(PartitionMethod::Range),
            "hash" => Ok(PartitionMethod::Hash),
            _ => Err(invalid(format!(
                "partition method must be range or hash, got \"{name}\""
            ))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitOptions {
    /// 100 000 accounts per unit (about 15 MB of table per unit).
    pub scale: i32,
    /// 10..100; `None` keeps pgbench's 100.
    pub fillfactor: Option<i32>,
    pub tablespace: Option<String>,
    pub index_tablespace: Option<String>,
    /// Partitions of pgbench_accounts; 0 for a plain table.
    pub partitions: i32,
    /// Only with `partitions > 0`; pgbench's default is range.
    pub partition_method: Option<PartitionMethod>,
    /// pgbench's `-I` steps, e.g. "dtGvp" for server-side generation;
    /// `None` keeps pgbench's default "dtgvp".
    pub init_steps: Option<String>,
    pub unlogged_tables: bool,
    pub foreign_keys: bool,
    /// One progress line every 5 seconds instead of one per 100 000 rows.
    pub quiet: bool,
    pub connection: Connection,
}

impl InitOptions {
    pub fn new(scale: i32, dbname: &str) -> InitOptions {
        InitOptions {
            scale,
            fillfactor: None,
            tablespace: None,
            index_tablespace: None,
            partitions: 0,
            partition_method: None,
            init_steps: None,
            unlogged_tables: false,
            foreign_keys: false,
            quiet: false,
            connection: Connection {
                dbname: dbname.to_string(),
                ..Default::default()
            },
        }
    }

    pub fn validate(&self) -> Result<(), PgbenchError> {
        check_range("scale", self.scale, 1, i32::MAX)?;
        if let Some(ff) = self.fillfactor {
            check_range("fillfactor", ff, 10, 100)?;
        }
        if let Some(ts) = &self.tablespace {
            check_identifier("tablespace", ts)?;
        }
        if let Some(ts) = &self.index_tablespace {
            check_identifier("index tablespace", ts)?;
        }
        check_range("partitions", self.partitions, 0, i32::MAX)?;
        if self.partition_method.is_some() && self.partitions == 0 {
            return Err(invalid("partition method needs partitions greater than 0"));
        }
        if let Some(steps) = &self.init_steps {
            if steps.is_empty() {
                return Err(invalid(format!(
                    "init steps must not be empty; allowed steps: {INIT_STEPS}"
                )));
            }
            if let Some(bad) = steps.chars().find(|c| !INIT_STEPS.contains(*c)) {
                return Err(invalid(format!(
                    "unknown init step '{bad}' in \"{steps}\"; allowed steps: {INIT_STEPS} \
                     (d drop, t create tables, g client-side data, G server-side data, \
                     v vacuum, p primary keys, f foreign keys)"
                )));
            }
        }
        Ok(())
    }

    /// The pgbench command line after the program name.
    pub fn args(&self) -> Result<Vec<OsString>, PgbenchError> {
        self.validate()?;
        let mut args: Vec<OsString> = vec!["--initialize".into()];
        if let Some(steps) = &self.init_steps {
            args.push(format!("--init-steps={steps}").into());
        }
        args.push(format!("--scale={}", self.scale).into());
        if let Some(ff) = self.fillfactor {
            args.push(format!("--fillfactor={ff}").into());
        }
        if let Some(ts) = &self.tablespace {
            args.push(format!("--tablespace={ts}").into());
        }
        if let Some(ts) = &self.index_tablespace {
            args.push(format!("--index-tablespace={ts}").into());
        }
        if self.partitions > 0 {
            args.push(format!("--partitions={}", self.partitions).into());
            if let Some(m) = self.partition_method {
                args.push(format!("--partition-method={}", m.as_str()).into());
            }
        }
        if self.unlogged_tables {
            args.push("--unlogged-tables".into());
        }
        if self.foreign_keys {
            args.push("--foreign-keys".into());
        }
        if self.quiet {
            args.push("--quiet".into());
        }
        self.connection.push_args(&mut args)?;
        Ok(args)
    }
}

fn check_identifier(what: &str, name: &str) -> Result<(), PgbenchError> {
    check_text(what, name)?;
    if name.len() > MAX_IDENTIFIER_BYTES {
        return Err(invalid(format!(
            "{what} name is longer than {MAX_IDENTIFIER_BYTES} bytes: \"{name}\""
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(o: &InitOptions) -> Vec<String> {
        o.args()
            .unwrap()
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect()
    }

    #[test]
    fn minimal_init() {
        assert_eq!(
            strings(&InitOptions::new(10, "bench")),
            ["--initialize", "--scale=10", "--", "bench"]
        );
    }

    #[test]
    fn layout_options_are_separate_arguments() {
        let mut o = InitOptions::new(100, "bench");
        o.fillfactor = Some(70);
        o.tablespace = Some("raid6 \"slow\"".into());
        o.index_tablespace = Some("-nvme".into());
        o.partitions = 4;
        o.partition_method = Some(PartitionMethod::Hash);
        o.init_steps = Some("dtGvp".into());
        o.unlogged_tables = true;
        o.foreign_keys = true;
        o.quiet = true;
        o.connection.port = Some(5433);
        assert_eq!(
            strings(&o),
            [
                "--initialize",
                "--init-steps=dtGvp",
                "--scale=100",
                "--fillfactor=70",
                "--tablespace=raid6 \"slow\"",
                "--index-tablespace=-nvme",
                "--partitions=4",
                "--partition-method=hash",
                "--unlogged-tables",
                "--foreign-keys",
                "--quiet",
                "--port=5433",
                "--",
                "bench",
            ]
        );
    }

    #[test]
    fn bad_values_are_refused() {
        type Edit = fn(&mut InitOptions);
        let cases: [(Edit, &str); 10] = [
            (|o| o.scale = 0, "scale must be in range 1.."),
            (
                |o| o.fillfactor = Some(9),
                "fillfactor must be in range 10..100, got 9",
            ),
            (
                |o| o.fillfactor = Some(101),
                "fillfactor must be in range 10..100, got 101",
            ),
            (|o| o.partitions = -1, "partitions must be in range 0.."),
            (
                |o| o.partition_method = Some(PartitionMethod::Range),
                "needs partitions greater than 0",
            ),
            (
                |o| o.tablespace = Some(String::new()),
                "tablespace must not be empty",
            ),
            (
                |o| o.index_tablespace = Some("t".repeat(64)),
                "longer than 63 bytes",
            ),
            (
                |o| o.init_steps = Some("dtx".into()),
                "unknown init step 'x'",
            ),
            (
                |o| o.init_steps = Some(String::new()),
                "init steps must not be empty",
            ),
            (
                |o| o.connection.dbname = String::new(),
                "dbname must not be empty",
            ),
        ];
        for (edit, want) in cases {
            let mut o = InitOptions::new(1, "bench");
            edit(&mut o);
            let e = o.args().unwrap_err().to_string();
            assert!(e.contains(want), "{e} should contain {want}");
        }
        let mut edge = InitOptions::new(1, "bench");
        edge.fillfactor = Some(10);
        edge.tablespace = Some("t".repeat(63));
        assert!(edge.args().is_ok());
        edge.fillfactor = Some(100);
        assert!(edge.args().is_ok());
    }

    #[test]
    fn partition_method_names() {
        assert_eq!(
            PartitionMethod::parse("HASH").unwrap(),
            PartitionMethod::Hash
        );
        assert_eq!(
            PartitionMethod::parse("range").unwrap(),
            PartitionMethod::Range
        );
        assert!(PartitionMethod::parse("list").is_err());
    }
}
