//! What a job reads of its server and of pgbench's tables: where the job's
//! pgbench finds its tables, where pgbench's relations and pg_wal are (what
//! a run observes at its start and end, and an experiment after placing a
//! layout), and whether pg_stat_statements can be read.

use pgrx::bgworkers::BackgroundWorker;
use pgrx::prelude::*;
use pgrx::JsonB;

use super::job::{as_caller, bookkeeping, JobEnd};
use crate::ops::read;
use crate::ops::server::data_dir;
use crate::sqltypes::Name;
use storlab_core::report::experiment::{wal_tablespace, Observation, WalPlace};
use storlab_core::sql_text::ident;

/// The schema of the pgbench tables the job's pgbench will use:
/// `pgbench_accounts` as the job's role finds it with its own default
/// search_path, as pgbench's connection does. The one lookup of a name
/// through a search_path not our own; the function itself is qualified.
pub(super) fn pgbench_schema() -> Result<String, JobEnd> {
    let found = BackgroundWorker::transaction(|| {
        read::one::<String>(
            "SELECT n.nspname::text FROM pg_catalog.pg_class c
               JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
              WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass('pgbench_accounts')",
            &[],
        )
        .ok()
        .flatten()
    });
    found.ok_or_else(|| {
        JobEnd::Failed(
            "pgbench's tables are missing for this role: pgbench_accounts is not found with its default search_path"
                .into(),
        )
    })
}

/// Where pgbench's relations are now (read from pg_class, as the caller),
/// pgbench_accounts' fillfactor and where pg_wal is (`wal`: the layout's
/// tablespace for it, if any): what a run observes at its start and at its
/// end.
pub(super) fn observe(schema: &str, wal: Option<&str>) -> Observation {
    let mut o = observe_relations(schema);
    o.wal = observe_wal(wal).ok();
    o
}

pub(super) fn observe_relations(schema: &str) -> Observation {
    let json = as_caller(|| {
        read::one::<JsonB>(
            "SELECT pg_catalog.jsonb_build_object(
                 'tables', coalesce(pg_catalog.jsonb_object_agg(r.relname, r.ts)
                                      FILTER (WHERE r.relkind OPERATOR(pg_catalog.=) 'r'), '{}'),
                 'indexes', coalesce(pg_catalog.jsonb_object_agg(r.relname, r.ts)
                                      FILTER (WHERE r.relkind OPERATOR(pg_catalog.=) 'i'), '{}'),
                 'fillfactor', (SELECT coalesce((SELECT o.option_value::pg_catalog.int4
                                                  FROM pg_catalog.pg_options_to_table(c.reloptions) o
                                                 WHERE o.option_name OPERATOR(pg_catalog.=) 'fillfactor'), 100)
                                  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
                                 WHERE n.nspname OPERATOR(pg_catalog.=) $1 AND c.relname OPERATOR(pg_catalog.=) 'pgbench_accounts'
                                   AND c.relkind OPERATOR(pg_catalog.=) 'r'))
               FROM (SELECT c.relname::pg_catalog.text AS relname, c.relkind,
                            coalesce(t.spcname, d.spcname)::pg_catalog.text AS ts
                       FROM pg_catalog.pg_class c
                       JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
                       LEFT JOIN pg_catalog.pg_tablespace t ON t.oid OPERATOR(pg_catalog.=) c.reltablespace
                      CROSS JOIN (SELECT s.spcname FROM pg_catalog.pg_database db
                                    JOIN pg_catalog.pg_tablespace s ON s.oid OPERATOR(pg_catalog.=) db.dattablespace
                                   WHERE db.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) d
                      WHERE n.nspname OPERATOR(pg_catalog.=) $1 AND c.relkind IN ('r', 'i')
                        AND coalesce((SELECT tc.relname FROM pg_catalog.pg_index ix
                                        JOIN pg_catalog.pg_class tc ON tc.oid OPERATOR(pg_catalog.=) ix.indrelid
                                       WHERE ix.indexrelid OPERATOR(pg_catalog.=) c.oid), c.relname)
                            OPERATOR(pg_catalog.~) '^(pgbench_(accounts|branches|tellers|history)|storlab_bench_append)$') r",
            &[Name(schema.to_string()).into()],
        )
    });
    json.and_then(|j| serde_json::from_value(j.0).ok())
        .unwrap_or_default()
}

/// Where pg_wal is now: its folder (links resolved) and filesystem, read
/// by the worker (the data folder's path is the server's, not the
/// caller's to read), with a tablespace whose folder shares that
/// filesystem (`preferred`, the layout's `wal`, when it does).
pub(super) fn observe_wal(preferred: Option<&str>) -> Result<WalPlace, String> {
    let wal = data_dir().join("pg_wal");
    let here = storlab_core::env::place(&wal)
        .map_err(|e| format!("cannot tell where pg_wal is ({}): {e}", wal.display()))?;
    let sharing = tablespaces_on(here.dev);
    Ok(WalPlace {
        location: here.location.to_string_lossy().into_owned(),
        mount_point: here.mount_point.to_string_lossy().into_owned(),
        fs_type: here.fs_type,
        tablespace: wal_tablespace(&sharing, preferred),
    })
}

/// The tablespaces whose folders are on the filesystem with st_dev `dev`
/// (pg_default and pg_global: the data folder's).
fn tablespaces_on(dev: u64) -> Vec<String> {
    let data = data_dir();
    let all: Vec<(String, String)> = as_caller(|| {
        Spi::connect(|c| {
            c.select(
                "SELECT spcname::pg_catalog.text, coalesce(pg_catalog.pg_tablespace_location(oid), '')
                   FROM pg_catalog.pg_tablespace ORDER BY spcname",
                None,
                &[],
            )?
            .map(|r| Ok((r.get::<String>(1)?.unwrap_or_default(), r.get::<String>(2)?.unwrap_or_default())))
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
    });
    all.into_iter()
        .filter(|(_, location)| {
            // an in-place tablespace's location is relative to the data folder
            let folder = if location.is_empty() {
                data.clone()
            } else {
                data.join(location)
            };
            storlab_core::env::device_of(&folder).ok() == Some(dev)
        })
        .map(|(name, _)| name)
        .collect()
}

/// The schema of pg_stat_statements, quoted, when the extension is
/// installed in this database and preloaded (querying it otherwise fails).
/// A server fact (shared_preload_libraries needs pg_read_all_settings); the
/// statistics themselves are read as the caller.
pub(super) fn pg_stat_statements_schema() -> Option<String> {
    bookkeeping(|| {
        read::one::<String>(
            // a scalar subquery: one row (NULL) when the extension is absent
            "SELECT (SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
                      WHERE e.extname = 'pg_stat_statements'
                        AND current_setting('shared_preload_libraries') ~ '(^|[ ,])pg_stat_statements($|[ ,])')", &[],
        )
    })
    .map(|schema| ident(&schema))
}
