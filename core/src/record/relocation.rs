//! One row of storlab.relocations.

use serde::Serialize;

use super::Record;

/// A relation storlab moved (or, in a plan, would move): one row of
/// storlab.relocations, field names = column names. `id` (an identity) and
/// `moved_at` (the time the row is written: `pg_catalog.clock_timestamp()`)
/// are not carried: a plan's row has neither.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Relocation {
    /// one per call of move / apply_layout / restore_layout; None in a plan
    pub batch_id: Option<i64>,
    /// the relation's oid
    pub relation: u32,
    /// schema-qualified and quoted, as at move time
    pub relation_name: String,
    /// `Kind::as_str()`
    pub kind: String,
    pub from_tablespace: String,
    pub to_tablespace: String,
    /// copied: the relation with its forks; None when its files are missing
    pub bytes: Option<i64>,
    pub duration_s: Option<f64>,
    pub lock_wait_s: Option<f64>,
    pub wal_bytes: Option<i64>,
    pub statement: String,
    pub moved_by: String,
    pub label: Option<String>,
    /// what the statement does to other sessions
    pub note: Option<String>,
    pub system_identifier: i64,
    pub hostname: String,
    /// the index's oid before an online rebuild gave it a new one
    pub previous_relation: Option<u32>,
    /// the batch a row of undo_batch() undoes
    pub undoes_batch: Option<i64>,
    /// moved while writes went on (REINDEX CONCURRENTLY, pg_repack)
    pub online: bool,
    /// a table moved online: the longest another session waited for a
    /// lock on it meanwhile
    pub writers_blocked_s: Option<f64>,
    /// an index (or partitioned index): its table's oid at the move
    pub index_table: Option<u32>,
    /// an index (or partitioned index): its definition at the move
    /// (pg_get_indexdef), with `index_table` what tells it again after a
    /// REINDEX CONCURRENTLY by hand (a new oid under the same name)
    pub index_definition: Option<String>,
}

impl Record for Relocation {
    const TABLE: &'static str = "storlab.relocations";
    // evidence to tell an index again, not what the move did: under an
    // install not updated yet the move is written without it (undo then
    // refuses to follow a rebuilt index it cannot tell, naming it)
    const OPTIONAL: &'static [&'static str] = &["index_table", "index_definition"];
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The columns of storlab.relocations (sql/catalog/relocations.sql)
    /// but the identity and the time.
    #[test]
    fn columns_are_the_tables() {
        assert_eq!(
            Relocation::columns(),
            [
                "batch_id",
                "relation",
                "relation_name",
                "kind",
                "from_tablespace",
                "to_tablespace",
                "bytes",
                "duration_s",
                "lock_wait_s",
                "wal_bytes",
                "statement",
                "moved_by",
                "label",
                "note",
                "system_identifier",
                "hostname",
                "previous_relation",
                "undoes_batch",
                "online",
                "writers_blocked_s",
                "index_table",
                "index_definition"
            ]
        );
    }

    #[test]
    fn unknowns_are_nulls() {
        let r = Relocation {
            batch_id: Some(7),
            relation: 16_384,
            relation_name: "public.t".into(),
            kind: "table".into(),
            from_tablespace: "pg_default".into(),
            to_tablespace: "lab_ram".into(),
            bytes: None,
            duration_s: Some(0.25),
            statement: "ALTER TABLE public.t SET TABLESPACE lab_ram".into(),
            moved_by: "alice".into(),
            system_identifier: -3,
            hostname: "h".into(),
            ..Default::default()
        };
        let j = r.to_json();
        assert_eq!(j["bytes"], serde_json::Value::Null);
        assert_eq!(j["lock_wait_s"], serde_json::Value::Null);
        assert_eq!(j["previous_relation"], serde_json::Value::Null);
        assert_eq!(j["relation"], 16_384);
        assert_eq!(j["duration_s"], 0.25);
        assert_eq!(j["system_identifier"], -3);
        // every column is a key, NULLs included: jsonb_populate_record
        // writes them as NULL
        assert_eq!(j.as_object().unwrap().len(), Relocation::columns().len());
    }
}
