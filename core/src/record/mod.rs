//! storlab's own rows as structs, written by column name: a record
//! serializes to one jsonb object whose keys are its table's column names,
//! and SQL turns it into a row with `pg_catalog.jsonb_populate_record`. The
//! order of a table's columns never matters: a fresh install and an
//! upgraded one (whose added columns come last) take the same statement.
//! Columns a record does not carry keep their defaults (an identity, a
//! creation time) on INSERT and their values on UPDATE.
//!
//! - [`Relocation`]: one row of storlab.relocations (a move, or a plan's row)
//! - [`Probe`]: one row of storlab.probes (stored, or on a hot standby kept
//!   in the session only)
//! - [`Counters`]: the server's cumulative counters a run reads at its start
//!   and end; [`Counters::delta`] gives a run's [`RunCounters`]
//! - [`RunResult`]: what a measured run stores in its storlab.bench_runs row,
//!   with [`RunDeviceIo`]: the block devices beneath its tablespaces
//! - [`ExperimentRecord`]: an experiment's storlab.experiment_records row,
//!   [`ExperimentProgress`] and [`ExperimentWalStop`] what its job updates

use serde::Serialize;

mod counters;
mod device_io;
mod experiment;
mod probe;
mod relocation;
pub mod snapshot_sql;

pub use counters::{Counters, RunCounters, RunResult};
pub use device_io::{DeviceUse, NoDevice, RunDeviceIo};
pub use experiment::{ExperimentProgress, ExperimentRecord, ExperimentWalStop};
pub use probe::{bytea_hex, timestamp_text, Probe};
pub use relocation::Relocation;

/// A row of one of storlab's tables, written by column name.
///
/// `Default` gives the column names (its serialization's keys, in field
/// order): no field may be skipped when serializing.
pub trait Record: Serialize + Default {
    /// The table, schema-qualified.
    const TABLE: &'static str;

    /// Columns whose value a table that lacks them (an install not updated
    /// yet) may go without: evidence kept beside what the row says, never
    /// part of it.
    const OPTIONAL: &'static [&'static str] = &[];

    /// The columns this record carries, in field order.
    fn columns() -> Vec<String> {
        match serde_json::to_value(Self::default()) {
            Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
            _ => panic!("a record serializes to a JSON object"),
        }
    }

    /// The record as the jsonb object `$n` of the statements below.
    fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a record serializes to JSON")
    }

    /// The record's columns that `table_columns` (the installed table's)
    /// has. A library runs under an install not updated yet, whose table
    /// lacks the columns later releases added: such a column is left out
    /// while the record holds NULL for it (the older schema has nowhere to
    /// keep what it does not know of); a value for it is an error, with the
    /// column named, since it would be lost.
    fn columns_in(&self, table_columns: &[String]) -> Result<Vec<String>, crate::error::Error> {
        let json = self.to_json();
        let mut out = Vec::new();
        for c in Self::columns() {
            if table_columns.contains(&c) {
                out.push(c);
            } else if !Self::OPTIONAL.contains(&c.as_str())
                && !json[c.as_str()].is_null()
                && json[c.as_str()] != serde_json::Value::Bool(false)
            {
                // a column this install lacks may only carry a value that
                // says nothing it did not say before: NULL, or a flag that
                // is off (an offline move under 0.7.0 is not online)
                return Err(crate::error::Error::new(
                    crate::error::SqlState::ObjectNotInPrerequisiteState,
                    format!(
                        "{} has no column {c} to store this record's value in",
                        Self::TABLE
                    ),
                )
                .with_hint(
                    "ALTER EXTENSION storlab UPDATE brings the table to this library's release.",
                ));
            }
        }
        Ok(out)
    }

    /// `INSERT` of the record given as jsonb in `$1`, by column name, into
    /// `columns` (of [`Record::columns_in`]); `computed` adds columns
    /// computed by SQL (`("moved_at", "pg_catalog.clock_timestamp()")`).
    /// Returns the stored row (`r`).
    fn insert_sql(columns: &[String], computed: &[(&str, &str)]) -> String {
        let mut cols: Vec<String> = columns.to_vec();
        let mut values: Vec<String> = cols.iter().map(|c| format!("p.{c}")).collect();
        for (c, v) in computed {
            cols.push(c.to_string());
            values.push(v.to_string());
        }
        format!(
            "INSERT INTO {t} AS r ({cols}) SELECT {values} FROM pg_catalog.jsonb_populate_record(NULL::{t}, $1) AS p RETURNING r",
            t = Self::TABLE,
            cols = cols.join(", "),
            values = values.join(", "),
        )
    }

    /// `UPDATE` of the row whose `key` is `$1` with the record given as
    /// jsonb in `$2`, by column name, of `columns` (of
    /// [`Record::columns_in`]); `computed` as for [`Record::insert_sql`].
    fn update_sql(columns: &[String], key: &str, computed: &[(&str, &str)]) -> String {
        let mut set: Vec<String> = columns.iter().map(|c| format!("{c} = p.{c}")).collect();
        for (c, v) in computed {
            set.push(format!("{c} = {v}"));
        }
        format!(
            "UPDATE {t} AS r SET {set} FROM pg_catalog.jsonb_populate_record(NULL::{t}, $2) AS p WHERE r.{key} OPERATOR(pg_catalog.=) $1",
            t = Self::TABLE,
            set = set.join(", "),
        )
    }

    /// The record given as jsonb in `$1` as a row of its table, not stored:
    /// the columns it does not carry are NULL.
    fn row_sql() -> String {
        format!(
            "SELECT p FROM pg_catalog.jsonb_populate_record(NULL::{t}, $1) AS p",
            t = Self::TABLE
        )
    }
}

/// A column name SQL takes unquoted: the statements above splice names in.
#[cfg(test)]
pub(crate) fn is_plain_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('a'..='z' | '_'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain<R: Record>() {
        let cols = R::columns();
        assert!(!cols.is_empty());
        for c in &cols {
            assert!(is_plain_identifier(c), "{}: column {c:?}", R::TABLE);
        }
        let mut sorted = cols.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), cols.len(), "{}: a column twice", R::TABLE);
        assert!(R::TABLE.starts_with("storlab."));
    }

    #[test]
    fn every_record_names_plain_columns_once() {
        plain::<Relocation>();
        plain::<Probe>();
        plain::<RunResult>();
        plain::<ExperimentRecord>();
        plain::<ExperimentProgress>();
        plain::<ExperimentWalStop>();
    }

    #[test]
    fn identifiers() {
        assert!(is_plain_identifier("moved_at"));
        assert!(is_plain_identifier("_x1"));
        assert!(!is_plain_identifier("Moved"));
        assert!(!is_plain_identifier("1a"));
        assert!(!is_plain_identifier("a b"));
        assert!(!is_plain_identifier("a\"b"));
        assert!(!is_plain_identifier(""));
    }

    #[test]
    fn insert_by_name_with_computed_columns() {
        let sql = ExperimentRecord::insert_sql(&ExperimentRecord::columns(), &[]);
        assert_eq!(
            sql,
            "INSERT INTO storlab.experiment_records AS r (id, name, steps_total, current_action, system_identifier, hostname) \
             SELECT p.id, p.name, p.steps_total, p.current_action, p.system_identifier, p.hostname \
             FROM pg_catalog.jsonb_populate_record(NULL::storlab.experiment_records, $1) AS p RETURNING r"
        );
        let sql = Relocation::insert_sql(
            &Relocation::columns(),
            &[("moved_at", "pg_catalog.clock_timestamp()")],
        );
        assert!(
            sql.contains(
                ", previous_relation, undoes_batch, online, writers_blocked_s, index_table, index_definition, moved_at) SELECT "
            ),
            "{sql}"
        );
        assert!(
            sql.contains(
                ", p.previous_relation, p.undoes_batch, p.online, p.writers_blocked_s, p.index_table, p.index_definition, pg_catalog.clock_timestamp() FROM "
            ),
            "{sql}"
        );
        // the identity and the time are not the record's: their defaults apply
        assert!(!Relocation::columns()
            .iter()
            .any(|c| c == "id" || c == "moved_at"));
    }

    #[test]
    fn update_by_name() {
        let sql = ExperimentProgress::update_sql(&ExperimentProgress::columns(), "id", &[]);
        assert_eq!(
            sql,
            "UPDATE storlab.experiment_records AS r SET current_step = p.current_step, current_action = p.current_action \
             FROM pg_catalog.jsonb_populate_record(NULL::storlab.experiment_records, $2) AS p WHERE r.id OPERATOR(pg_catalog.=) $1"
        );
    }

    /// An install not updated yet: storlab.relocations before 0.6.0 had no
    /// previous_relation (nor 0.8.0's undoes_batch, online and
    /// writers_blocked_s).
    #[test]
    fn a_table_without_a_later_column() {
        let later = [
            "previous_relation",
            "undoes_batch",
            "online",
            "writers_blocked_s",
            "index_table",
            "index_definition",
        ];
        let before_0_6: Vec<String> = Relocation::columns()
            .into_iter()
            .filter(|c| !later.contains(&c.as_str()))
            .chain(["id".to_string(), "moved_at".to_string()])
            .collect();
        let moved = Relocation {
            relation: 1,
            ..Default::default()
        };
        // a move records no previous relation: written without the column
        assert_eq!(
            moved.columns_in(&before_0_6).unwrap(),
            before_0_6[..16].to_vec()
        );
        assert!(!moved
            .columns_in(&before_0_6)
            .unwrap()
            .contains(&"previous_relation".to_string()));
        // a flag that is off says nothing the older table did not: an
        // offline move (online false) is written without the column; an
        // online one is refused
        let online = Relocation {
            online: true,
            ..moved.clone()
        };
        assert!(online
            .columns_in(&before_0_6)
            .unwrap_err()
            .message
            .contains("no column online"));
        // an online rebuild does: refused, not lost
        let rebuilt = Relocation {
            previous_relation: Some(16_384),
            ..moved.clone()
        };
        let e = rebuilt.columns_in(&before_0_6).unwrap_err();
        assert_eq!(
            e.state,
            crate::error::SqlState::ObjectNotInPrerequisiteState
        );
        assert!(
            e.message
                .contains("storlab.relocations has no column previous_relation"),
            "{}",
            e.message
        );
        // an index's table and definition are evidence beside the move, not
        // what it did: an install without the columns (0.8.0) writes the
        // move without them
        let index = Relocation {
            index_table: Some(16_383),
            index_definition: Some("CREATE INDEX i ON public.t USING btree (v)".into()),
            ..moved.clone()
        };
        let before_0_9: Vec<String> = Relocation::columns()
            .into_iter()
            .filter(|c| c != "index_table" && c != "index_definition")
            .collect();
        assert_eq!(index.columns_in(&before_0_9).unwrap(), before_0_9);
        // the current table: every column
        assert_eq!(
            rebuilt.columns_in(&Relocation::columns()).unwrap(),
            Relocation::columns()
        );
        assert_eq!(
            index.columns_in(&Relocation::columns()).unwrap(),
            Relocation::columns()
        );
    }

    #[test]
    fn row_without_storing() {
        assert_eq!(
            Relocation::row_sql(),
            "SELECT p FROM pg_catalog.jsonb_populate_record(NULL::storlab.relocations, $1) AS p"
        );
    }
}
