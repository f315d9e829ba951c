//! storlab: a storage lab inside PostgreSQL.
//!
//! Layers point one way (ARCHITECTURE.md): `api` (the SQL functions) and
//! `jobs` (the background worker) use `ops` (operations under an explicit
//! identity); those three are the only modules that talk to PostgreSQL.
//! Everything else is the pure core, the crate `storlab-core` (core/):
//! requests, the probe engine, storage facts, pgbench, reports, advice and
//! charts, tested with plain `#[test]`s that need no server.

// SQL functions returning rows spell their columns out as tuples of
// name!(...) types; naming each tuple once more as a type alias would only
// move the column list away from the function that returns it.
#![allow(clippy::type_complexity)]

use pgrx::prelude::*;

#[macro_use]
pub mod sqltypes;

pub mod api;
pub mod jobs;
pub mod ops;

::pgrx::pg_module_magic!(name, version);

// Schema objects (tables, views, grants) live in SQL files, not Rust strings.
// `bootstrap` runs first, so functions can return the tables' row types;
// `finalize` runs after every function exists, so the grants can name them.
extension_sql_file!("../sql/catalog/probes.sql", name = "probes", bootstrap);
extension_sql_file!(
    "../sql/catalog/relocations.sql",
    name = "relocations",
    requires = ["probes"]
);
extension_sql_file!(
    "../sql/catalog/jobs.sql",
    name = "jobs",
    requires = ["relocations"]
);
extension_sql_file!(
    "../sql/catalog/experiments.sql",
    name = "experiments",
    requires = ["jobs"]
);
extension_sql_file!(
    "../sql/catalog/checks.sql",
    name = "checks",
    requires = ["experiments"]
);
extension_sql_file!(
    "../sql/catalog/servers.sql",
    name = "servers",
    requires = ["checks"]
);
extension_sql_file!(
    "../sql/catalog/prune.sql",
    name = "prune",
    requires = ["servers"]
);
extension_sql_file!(
    "../sql/catalog/fleet.sql",
    name = "fleet",
    requires = ["prune", node_id, node_info]
);
extension_sql_file!(
    "../sql/catalog/own_rows.sql",
    name = "own_rows",
    requires = ["fleet"]
);
extension_sql_file!(
    "../sql/catalog/suite_calls.sql",
    name = "suite_calls",
    requires = ["own_rows"]
);
extension_sql_file!(
    "../sql/catalog/sync_every.sql",
    name = "sync_every",
    requires = ["suite_calls"]
);
// after sync_every, in the 0.12.0 update's order
extension_sql_file!(
    "../sql/catalog/run_io.sql",
    name = "run_io",
    requires = ["sync_every"]
);
// The procedures call functions of api (PL/pgSQL resolves them at run
// time, so this orders the script, it is not needed to create them).
extension_sql_file!(
    "../sql/catalog/procedures.sql",
    name = "procedures",
    requires = [
        "experiments",
        api::bench::job_status,
        api::bench::stop_now,
        api::bench::bench_start,
        api::experiment::experiment_start,
        api::suite::compare_volumes,
        api::suite::measure_volume
    ]
);
extension_sql_file!("../sql/catalog/grants.sql", name = "grants", finalize);

/// Runs when a backend first loads the library (no shared_preload_libraries needed).
#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    ops::settings::init_gucs();
    keep_backtraces_out_of_errors();
}

/// pgrx's panic hook captures a Rust backtrace for every error that passes
/// through Rust (a cancel, a lock timeout, a disk full, an invalid setting,
/// storlab's own), and appends it to the error's DETAIL whenever the
/// capture succeeds: with RUST_BACKTRACE=1 in the server's environment (a
/// DBA's shell passes it to pg_ctl) every such error would reach the client
/// with 25-33 frames of Rust as its detail, PostgreSQL's own detail buried
/// under them. RUST_LIB_BACKTRACE=0 turns off exactly these captures
/// (`std::backtrace::Backtrace::capture` reads it before RUST_BACKTRACE),
/// while RUST_BACKTRACE still governs what a panicking thread prints to the
/// server log. Set once per process, whatever the environment says, before
/// any capture (std reads it once), while the backend is single-threaded.
fn keep_backtraces_out_of_errors() {
    // SAFETY: _PG_init runs on the backend's only thread, before storlab
    // starts any thread of its own.
    unsafe { std::env::set_var("RUST_LIB_BACKTRACE", "0") };
}

#[cfg(any(test, feature = "pg_test"))]
#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    /// The core's quoting says what the server's says: every keyword this
    /// server knows, awkward names, and literals. (The later majors'
    /// keywords, which the core quotes and 15 does not, are the one
    /// deliberate difference.)
    #[pg_test]
    fn core_quoting_matches_quote_ident_and_quote_literal() {
        use storlab_core::sql_text::{ident, literal, qualified, quoted_for_later_majors_only};
        let keywords: Vec<String> = Spi::connect(|c| {
            c.select(
                "SELECT word::text FROM pg_catalog.pg_get_keywords()",
                None,
                &[],
            )
            .unwrap()
            .map(|r| r.get::<String>(1).unwrap().unwrap())
            .collect()
        });
        assert!(keywords.len() > 400, "{} keywords", keywords.len());
        let awkward = [
            "",
            "lab_ram",
            "LabRam",
            "MixedCase",
            "with space",
            "idx \"quoted\"",
            "\"",
            "'",
            "it's",
            "back\\slash",
            "café",
            "日本",
            "1st",
            "_x",
            "a1",
            "a$b",
            "x;DROP TABLE t",
            "Select",
            "user_",
            "pg_default",
            "json_tablex",
            "system_users",
        ];
        let names: Vec<String> = keywords
            .iter()
            .cloned()
            .chain(awkward.iter().map(|s| s.to_string()))
            .collect();
        let mut compared = 0;
        for name in &names {
            let theirs = Spi::get_one_with_args::<String>(
                "SELECT pg_catalog.quote_ident($1)",
                &[name.as_str().into()],
            )
            .unwrap()
            .unwrap();
            if quoted_for_later_majors_only(name) {
                assert_eq!(ident(name), format!("\"{name}\""), "{name:?}");
            } else {
                assert_eq!(ident(name), theirs, "quote_ident({name:?})");
                compared += 1;
            }
            let lit = Spi::get_one_with_args::<String>(
                "SELECT pg_catalog.quote_literal($1)",
                &[name.as_str().into()],
            )
            .unwrap()
            .unwrap();
            assert_eq!(literal(name), lit, "quote_literal({name:?})");
        }
        assert!(compared >= keywords.len(), "{compared}");
        let q = Spi::get_one::<String>("SELECT pg_catalog.format('%I.%I', 'Odd Schema', 'user')");
        assert_eq!(Ok(Some(qualified("Odd Schema", "user"))), q);
    }

    #[pg_test]
    fn tablespaces_lists_default_and_wal() {
        let kinds: Vec<(String, String)> = Spi::connect(|c| {
            c.select(
                "SELECT kind, tablespace::text FROM storlab.tablespaces() ORDER BY 1, 2",
                None,
                &[],
            )
            .unwrap()
            .map(|r| {
                (
                    r.get::<String>(1).unwrap().unwrap(),
                    r.get::<String>(2).unwrap().unwrap(),
                )
            })
            .collect()
        });
        assert!(kinds.contains(&("tablespace".into(), "pg_default".into())));
        assert!(kinds.contains(&("wal".into(), "pg_wal".into())));
        assert!(!kinds.iter().any(|(_, t)| t == "pg_global"));
    }

    #[pg_test]
    fn wal_row_describes_the_real_wal_folder() {
        let ok = Spi::get_one::<bool>(
            "SELECT location LIKE '%/pg_wal' AND fs_type IS NOT NULL AND free_bytes <= fs_bytes
               AND used_by_postgres_bytes >= 16 * 1024 * 1024 AND oid IS NULL
             FROM storlab.tablespaces() WHERE kind = 'wal'",
        );
        assert_eq!(ok, Ok(Some(true)));
    }

    #[pg_test]
    fn probe_stores_one_row_and_leaves_no_file() {
        let ops = Spi::get_one::<i64>(
            "SELECT ops FROM storlab.probe('pg_default', 'randwrite', duration => '100 ms',
                                           file_size => 1048576, direct => false)",
        );
        assert!(ops.unwrap().unwrap() > 0);
        assert_eq!(
            Spi::get_one::<i64>("SELECT count(*) FROM storlab.probes"),
            Ok(Some(1))
        );
        let left = Spi::get_one::<i64>(
            "SELECT count(*) FROM pg_ls_dir('base/pgsql_tmp', true, false) f WHERE f LIKE 'pgsql_tmp_storlab%'",
        );
        assert_eq!(left, Ok(Some(0)));
    }

    #[pg_test]
    fn layout_and_a_dry_run_move_change_nothing() {
        Spi::run("CREATE TABLE t_lay (id int PRIMARY KEY, v text)").unwrap();
        let kinds = Spi::get_one::<String>(
            "SELECT string_agg(kind, ',' ORDER BY kind) FROM storlab.layout('public') WHERE parent = 't_lay'::regclass OR relation = 't_lay'::regclass",
        );
        assert_eq!(kinds, Ok(Some("index,table,toast table".into())));
        // already in pg_default: nothing to plan, nothing rewritten
        let plan = Spi::get_one::<i64>(
            "SELECT count(*) FROM storlab.move('t_lay', 'pg_default', dry_run => true)",
        );
        assert_eq!(plan, Ok(Some(0)));
        let recorded = Spi::get_one::<i64>("SELECT count(*) FROM storlab.relocations");
        assert_eq!(recorded, Ok(Some(0)));
    }

    /// Every record's fields are columns of its table as installed fresh:
    /// a misspelt field would be left out of what is written.
    #[pg_test]
    fn every_record_field_is_a_column_of_its_table() {
        use storlab_core::record::*;
        fn check<R: Record>() {
            let table = crate::ops::record::table_columns(R::TABLE).unwrap();
            for c in R::columns() {
                assert!(table.contains(&c), "{} has no column {c}", R::TABLE);
            }
        }
        check::<Relocation>();
        check::<RunResult>();
        check::<ExperimentRecord>();
        check::<ExperimentProgress>();
        check::<ExperimentWalStop>();
    }

    fn a_relocation(previous: Option<u32>) -> storlab_core::record::Relocation {
        storlab_core::record::Relocation {
            batch_id: Some(41),
            relation: 16_999,
            relation_name: "public.\"T x\"".into(),
            kind: "index".into(),
            from_tablespace: "pg_default".into(),
            to_tablespace: "pg_global".into(),
            bytes: Some(8192),
            duration_s: Some(0.125),
            lock_wait_s: None,
            wal_bytes: Some(123_456_789_012),
            statement: "ALTER INDEX public.\"T x\" SET TABLESPACE pg_global".into(),
            moved_by: "postgres".into(),
            label: Some("by name".into()),
            note: Some("a note".into()),
            system_identifier: -7,
            hostname: "here".into(),
            previous_relation: previous,
            undoes_batch: Some(40),
            online: true,
            writers_blocked_s: Some(0.25),
            index_table: Some(16_998),
            index_definition: Some("CREATE INDEX \"T x\" ON public.t USING btree (v)".into()),
        }
    }

    fn write(r: &storlab_core::record::Relocation) -> Result<(), pgrx::spi::Error> {
        use storlab_core::record::Record;
        let sql =
            crate::ops::record::insert_sql(r, &[("moved_at", "pg_catalog.clock_timestamp()")])?;
        Spi::run_with_args(&sql, &[pgrx::JsonB(r.to_json()).into()])
    }

    /// A relocation written by name reads back as written; the identity
    /// and the time are the table's.
    #[pg_test]
    fn a_relocation_is_written_by_name() {
        write(&a_relocation(Some(16_998))).unwrap();
        let row = Spi::get_one::<String>(
            "SELECT concat_ws('|', batch_id, relation, relation_name, kind, from_tablespace, to_tablespace, bytes,
                              duration_s, coalesce(lock_wait_s::text, 'NULL'), wal_bytes, statement, moved_by, label, note,
                              system_identifier, hostname, previous_relation, undoes_batch, online, writers_blocked_s,
                              index_table, index_definition, id IS NOT NULL, moved_at IS NOT NULL)
               FROM storlab.relocations",
        );
        assert_eq!(
            row,
            Ok(Some(
                "41|16999|public.\"T x\"|index|pg_default|pg_global|8192|0.125|NULL|123456789012|ALTER INDEX public.\"T x\" SET TABLESPACE pg_global|postgres|by name|a note|-7|here|16998|40|t|0.25|16998|CREATE INDEX \"T x\" ON public.t USING btree (v)|t|t".into()
            ))
        );
    }

    /// Under an install not updated yet (no previous_relation before
    /// 0.6.0): a move is written without the column, an online rebuild's
    /// previous oid is refused rather than lost.
    #[pg_test(
        error = "storlab.relocations has no column previous_relation to store this record's value in"
    )]
    fn a_table_without_a_later_column() {
        Spi::run("ALTER TABLE storlab.relocations DROP COLUMN previous_relation").unwrap();
        write(&a_relocation(None)).unwrap();
        assert_eq!(
            Spi::get_one::<i64>("SELECT count(*) FROM storlab.relocations"),
            Ok(Some(1))
        );
        let _ = write(&a_relocation(Some(16_998)));
    }

    #[pg_test(error = "tablespace \"no_such_ts\" does not exist")]
    fn probe_of_an_unknown_tablespace_is_an_error() {
        let _ = Spi::run("SELECT storlab.probe('no_such_ts')");
    }
}

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
