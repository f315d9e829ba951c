//! What relocation reads of the catalog, without a lock: a relation as a
//! move sees it (`Rel`: kind, place, owner, the bytes its files hold), where
//! one is now, an index's identity, who holds a lock on one. With the types
//! the checks, the mover, online moves and the history share: a plan's
//! `Step` and the row a call returns.

use pgrx::heap_tuple::PgHeapTuple;
use pgrx::prelude::*;
use pgrx::AllocatedByRust;

use crate::ops::error::{spi, OrRaise};
use crate::ops::read;
use crate::ops::server::data_dir;
use storlab_core::env::allocation;
use storlab_core::relocate::Kind;

/// A relation as the catalog describes it, with names already quoted by PostgreSQL.
#[derive(Debug, Clone)]
pub(super) struct Rel {
    pub(super) oid: pg_sys::Oid,
    pub(super) qualified: String,
    pub(super) kind: Kind,
    pub(super) tablespace: String,
    /// What a move copies: the relation's files with their forks, and its
    /// TOAST table and TOAST index (pg_table_size's sum), read from disk.
    pub(super) bytes: i64,
    pub(super) owned: bool,
    /// An index's table (for what moving the index does to other sessions).
    pub(super) table: Option<String>,
    /// Permanent (relpersistence 'p'): a reboot of volatile storage loses it.
    pub(super) logged: bool,
    /// Its main file is not where the catalog says: `bytes` is unknown.
    pub(super) files_missing: bool,
}

/// Columns and joins shared by every catalog query here. `tablespace` is
/// spelled out: reltablespace 0 means the database's default tablespace.
/// Nothing here takes a lock: pg_relation_filepath reads the syscache, where
/// pg_table_size would queue for ACCESS SHARE behind any waiting DDL, with
/// no bound but the caller's lock_timeout (by default none). Sizes come from
/// the files themselves.
const REL_SELECT: &str = "
    SELECT c.oid, format('%I.%I', n.nspname, c.relname), c.relkind::text, n.nspname LIKE 'pg\\_toast%',
           coalesce(t.spcname, d.spcname)::text,
           ARRAY[pg_catalog.pg_relation_filepath(c.oid),
                 CASE WHEN c.reltoastrelid <> 0 THEN pg_catalog.pg_relation_filepath(c.reltoastrelid) END,
                 (SELECT pg_catalog.pg_relation_filepath(ti.indexrelid) FROM pg_catalog.pg_index ti
                   WHERE c.reltoastrelid <> 0 AND ti.indrelid = c.reltoastrelid LIMIT 1)],
           pg_catalog.pg_has_role(c.relowner, 'USAGE'),
           (SELECT format('%I.%I', tn.nspname, tc.relname) FROM pg_catalog.pg_index ix
              JOIN pg_catalog.pg_class tc ON tc.oid = ix.indrelid
              JOIN pg_catalog.pg_namespace tn ON tn.oid = tc.relnamespace
             WHERE ix.indexrelid = c.oid),
           c.relpersistence = 'p'
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN pg_catalog.pg_tablespace t ON t.oid = c.reltablespace
     CROSS JOIN (SELECT s.spcname FROM pg_catalog.pg_database db
                   JOIN pg_catalog.pg_tablespace s ON s.oid = db.dattablespace
                  WHERE db.datname = pg_catalog.current_database()) d";

/// The relations a query selects, in its order; kinds storlab does not move
/// (a foreign table in a partition tree) are left out.
pub(super) fn rels(where_order: &str, args: Vec<pgrx::datum::DatumWithOid<'static>>) -> Vec<Rel> {
    let query = format!("{REL_SELECT} {where_order}");
    let data = data_dir();
    Spi::connect(|c| {
        c.select(query.as_str(), None, &args)?
            .filter_map(|r| {
                let row = (|| {
                    let relkind: String = r.get(3)?.unwrap_or_default();
                    let in_toast: bool = r.get(4)?.unwrap_or(false);
                    let Some(kind) = Kind::from_relkind(&relkind, in_toast) else {
                        return Ok(None);
                    };
                    let paths: Vec<Option<String>> = r.get(6)?.unwrap_or_default();
                    // the main fork's first file must be there (a tmpfs
                    // tablespace after a reboot has none): else the size is
                    // unknown, not 0
                    let files_missing = paths
                        .first()
                        .cloned()
                        .flatten()
                        .is_some_and(|p| !data.join(p).exists());
                    let bytes: u64 = paths
                        .into_iter()
                        .flatten()
                        .map(|p| allocation::relation_bytes(&data.join(p)).0)
                        .sum();
                    Ok(Some(Rel {
                        oid: r.get(1)?.expect("oid"),
                        qualified: r.get(2)?.expect("name"),
                        kind,
                        tablespace: r.get(5)?.expect("tablespace"),
                        bytes: bytes as i64,
                        owned: r.get(7)?.unwrap_or(false),
                        table: r.get(8)?,
                        logged: r.get(9)?.unwrap_or(false),
                        files_missing,
                    }))
                })();
                row.transpose()
            })
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(spi("reading the catalog"))
    .or_raise()
}

/// One step of a plan: a relation and where it goes.
pub(super) struct Step {
    pub(super) rel: Rel,
    pub(super) to: String,
}

/// An index's table (InvalidOid for a relation that is no index).
pub(super) fn table_of(index: pg_sys::Oid) -> pg_sys::Oid {
    Spi::get_one_with_args::<pg_sys::Oid>(
        "SELECT i.indrelid FROM pg_catalog.pg_index i WHERE i.indexrelid = $1",
        &[index.into()],
    )
    .ok()
    .flatten()
    .unwrap_or(pg_sys::InvalidOid)
}

/// An index's table and its definition now (pg_get_indexdef, under the
/// search_path every caller of it pins), for its history row: what tells
/// the index again after a REINDEX CONCURRENTLY by hand gives it a new oid
/// under the same name. (None, None) for a relation that is no index.
pub fn index_identity(oid: pg_sys::Oid) -> (Option<u32>, Option<String>) {
    read::two::<pg_sys::Oid, String>(
        "SELECT i.indrelid, pg_catalog.pg_get_indexdef(i.indexrelid)
           FROM (SELECT 1) one LEFT JOIN pg_catalog.pg_index i ON i.indexrelid = $1",
        &[oid.into()],
    )
    .map(|(table, definition)| (table.map(|t| t.to_u32()), definition))
    .unwrap_or((None, None))
}

/// Who holds a lock on a relation (see HOLDERS), or None.
pub fn lock_holders(oid: pg_sys::Oid) -> Option<String> {
    read::one::<String>(HOLDERS, &[oid.into()]).ok().flatten()
}

/// Who holds a lock on a relation: backends by pid and kind (an
/// autovacuum worker, a client backend, ...: pg_stat_activity shows every
/// role that), and prepared
/// transactions (which have no backend: a lock of theirs lasts until
/// someone runs COMMIT PREPARED or ROLLBACK PREPARED) by gid, owner and
/// the time they were prepared.
const HOLDERS: &str = "
    SELECT pg_catalog.string_agg(DISTINCT CASE
             WHEN l.pid IS NOT NULL THEN pg_catalog.format('backend pid %s (%s)', l.pid, coalesce(a.backend_type, 'ended'))
             ELSE pg_catalog.format('prepared transaction %L (owner %s, prepared at %s)', p.gid, p.owner, p.prepared)
           END, ', ')
      FROM pg_catalog.pg_locks l
      -- a prepared transaction's locks belong to a dummy process with no
      -- pid: its own transaction id lock, under the same virtual
      -- transaction, tells which prepared transaction it is
      LEFT JOIN pg_catalog.pg_locks x ON l.pid IS NULL AND x.locktype = 'transactionid'
                                     AND x.virtualtransaction = l.virtualtransaction
      LEFT JOIN pg_catalog.pg_prepared_xacts p ON p.transaction = x.transactionid
      LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'relation' AND l.relation = $1 AND l.granted
       AND l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid()
       AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())";

pub type RelocationRow = PgHeapTuple<'static, AllocatedByRust>;

/// Where a relation is now and how many bytes its files hold (with its
/// TOAST), read as `layout()` reads them, without a lock; None once it is
/// dropped.
pub fn where_now(oid: pg_sys::Oid) -> Option<(String, i64)> {
    rels("WHERE c.oid = $1", vec![oid.into()])
        .pop()
        .map(|r| (r.tablespace, r.bytes))
}

/// Where a relation is now, as the catalog says once we hold its lock: read
/// through the syscache, which taking the lock brought up to date (as the
/// relcache is), not through SPI, whose snapshot under REPEATABLE READ or
/// SERIALIZABLE is the transaction's own and would not see a move another
/// session committed since: history would record where the relation was at
/// the transaction's start, and a move to where it already is would run a
/// no-op ALTER and be recorded. None: it was dropped.
pub(super) fn tablespace_now(oid: pg_sys::Oid) -> Option<String> {
    // SAFETY: lsyscache lookups from the backend's thread; the name is
    // palloc'd in the current memory context and copied out at once.
    unsafe {
        if pg_sys::get_rel_relkind(oid) == 0 {
            return None;
        }
        let mut spc = pg_sys::get_rel_tablespace(oid);
        if spc == pg_sys::InvalidOid {
            spc = pg_sys::MyDatabaseTableSpace;
        }
        let name = pg_sys::get_tablespace_name(spc);
        (!name.is_null()).then(|| {
            std::ffi::CStr::from_ptr(name)
                .to_string_lossy()
                .into_owned()
        })
    }
}
