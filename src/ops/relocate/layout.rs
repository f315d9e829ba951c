//! `layout()`: every relation of a schema (or of every user schema), where
//! it lives and how much it holds, logically and on the filesystem.

use pgrx::prelude::*;

use crate::ops::error::{spi, Error, OrRaise, Raise, SqlState};
use crate::ops::read;
use crate::ops::server::data_dir;
use crate::sqltypes::{Name, RegClass};
use storlab_core::env::allocation;
use storlab_core::relocate::Kind;

/// Every table, index, TOAST table and index, materialized view, partitioned
/// table and index of one schema (or every user schema): where it lives and
/// how much it holds, logically and on the filesystem.
pub type LayoutRow = (
    RegClass,
    String,
    Option<RegClass>,
    Name,
    Option<i64>,
    Option<i64>,
);

pub fn layout(schema_name: Option<Name>) -> Vec<LayoutRow> {
    if let Some(schema) = &schema_name {
        // a typo is an error, as for apply_layout, not an empty answer
        let exists = read::one::<bool>(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = $1)",
            &[schema.clone().into()],
        );
        if exists != Ok(Some(true)) {
            Error::new(
                SqlState::InvalidSchemaName,
                format!("schema \"{schema}\" does not exist"),
            )
            .raise();
        }
    }
    let data = data_dir();
    let mut sizer = allocation::RelationSizer::default();
    let mut missing: Vec<String> = Vec::new();
    let rows = Spi::connect(|c| {
        c.select(
            "WITH owners AS (           -- user tables, partitioned tables, materialized views
               SELECT c.oid, c.relkind, c.reltoastrelid,
                      (SELECT i.inhparent FROM pg_catalog.pg_inherits i WHERE i.inhrelid = c.oid) AS parent
                 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                WHERE c.relkind IN ('r', 'm', 'p')
                  AND CASE WHEN $1::name IS NULL
                           THEN n.nspname NOT IN ('pg_catalog', 'information_schema')
                                AND n.nspname NOT LIKE 'pg\\_toast%'
                                -- other sessions' temporary schemas, not the caller's own
                                AND (n.nspname NOT LIKE 'pg\\_temp%' OR n.oid = pg_catalog.pg_my_temp_schema())
                           ELSE n.nspname = $1 END
             ), members AS (
               SELECT oid, parent FROM owners
               UNION ALL SELECT i.indexrelid, i.indrelid FROM pg_catalog.pg_index i JOIN owners o ON o.oid = i.indrelid
               UNION ALL SELECT reltoastrelid, oid FROM owners WHERE reltoastrelid <> 0
               UNION ALL SELECT i.indexrelid, i.indrelid FROM pg_catalog.pg_index i
                           JOIN owners o ON o.reltoastrelid = i.indrelid
             )
             -- each file's path as pg_relation_filepath() makes it, without
             -- its catalog lookup per relation (20 ms for 10 000 in a new
             -- session): user relations are never mapped, never in pg_global;
             -- a temporary relation's file names its backend (t3_16384),
             -- which only pg_relation_filepath() knows
             SELECT m.oid, c.relkind::text, n.nspname LIKE 'pg\\_toast%', m.parent,
                    coalesce(t.spcname, d.spcname)::text,
                    CASE WHEN c.relfilenode = 0 THEN NULL
                         WHEN c.relpersistence = 't' THEN pg_catalog.pg_relation_filepath(c.oid)
                         WHEN coalesce(t.oid, d.oid) = 1663 THEN 'base/' || $3 || '/' || c.relfilenode
                         ELSE 'pg_tblspc/' || coalesce(t.oid, d.oid) || '/' || $2 || '/' || $3 || '/' || c.relfilenode END
               FROM members m
               JOIN pg_catalog.pg_class c ON c.oid = m.oid
               JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
               LEFT JOIN pg_catalog.pg_tablespace t ON t.oid = c.reltablespace
              CROSS JOIN (SELECT s.spcname, s.oid FROM pg_catalog.pg_database db
                            JOIN pg_catalog.pg_tablespace s ON s.oid = db.dattablespace
                           WHERE db.datname = pg_catalog.current_database()) d
              ORDER BY n.nspname LIKE 'pg\\_toast%', n.nspname, c.relname",
            None,
            &[
                schema_name.into(),
                format!("PG_{}_{}", pg_sys::PG_MAJORVERSION_NUM, pg_sys::CATALOG_VERSION_NO).into(),
                // SAFETY: the backend's database, set at connection
                i64::from(u32::from(unsafe { pg_sys::MyDatabaseId })).into(),
            ],
        )?
        .map(|r| {
            let relkind: String = r.get(2)?.unwrap_or_default();
            let kind = Kind::from_relkind(&relkind, r.get(3)?.unwrap_or(false)).expect("selected kinds");
            let path: Option<String> = r.get(6)?;
            // relation files are read straight from disk: sizes include what
            // the filesystem really allocates, which SQL cannot see; a
            // relation without storage holds 0 bytes, one whose files are
            // missing an unknown number (NULL, and a WARNING below)
            let sizes = match &path {
                None => Some((0, 0)),
                Some(p) => sizer.sizes(&data.join(p)),
            };
            if sizes.is_none() {
                missing.push(path.clone().unwrap_or_default());
            }
            let (logical, allocated) = (sizes.map(|s| s.0 as i64), sizes.map(|s| s.1 as i64));
            Ok((
                RegClass(r.get(1)?.expect("oid")),
                kind.as_str().to_string(),
                r.get::<pg_sys::Oid>(4)?.map(RegClass),
                Name(r.get(5)?.expect("tablespace")),
                logical,
                allocated,
            ))
        })
        .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the catalog"))
    .or_raise();
    if !missing.is_empty() {
        warning!(
            "storlab: the files of {} relation(s) cannot be found ({}{}): their sizes are NULL, not 0",
            missing.len(),
            missing.iter().take(3).cloned().collect::<Vec<_>>().join(", "),
            if missing.len() > 3 { ", ..." } else { "" }
        );
    }
    rows
}
