//! The checks of relocation arguments that need no catalog.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{invalid, Result};
use crate::repack;
use crate::sql_text::ident;

/// How long a move waits for each lock: positive, at most an hour.
pub fn lock_timeout(us: i64) -> Result<Duration> {
    if us <= 0 || us > 3_600_000_000 {
        return Err(invalid(format!(
            "lock_timeout must be positive and at most 1 hour, not {} s",
            us as f64 / 1e6
        )));
    }
    Ok(Duration::from_micros(us as u64))
}

/// The label of an online move's rows when its call gave none.
pub const ONLINE_LABEL: &str = "move_online";

/// Tables moved while writes go on (`storlab.move(..., online => true)`,
/// apply_layout, restore_layout and undo_batch with `online`), as a job:
/// each table through pg_repack, then each of its indexes that must end
/// elsewhere than pg_repack left it through REINDEX CONCURRENTLY. One
/// batch of storlab.relocations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MoveOnline {
    pub batch: i64,
    pub tables: Vec<OnlineTable>,
    /// how long each exclusive lock is waited for (pg_repack's
    /// --wait-timeout, rounded up to whole seconds; REINDEX's lock_timeout)
    pub lock_timeout_ms: u64,
    /// pg_repack's version (`pg_repack --version`) when the call checked it
    pub repack_version: String,
    pub label: Option<String>,
    /// the batch this one undoes (undo_batch, restore_layout)
    pub undoes_batch: Option<i64>,
    /// partitioned tables and indexes: where their future partitions go, a
    /// change of the catalog only, made after their partitions moved
    #[serde(default)]
    pub parents: Vec<OnlineParent>,
}

impl MoveOnline {
    /// Every relation the job moves, as `(kind, name)`, in the order it
    /// moves them: each table (pg_repack), the indexes that go with it
    /// (`--moveidx`) or are rebuilt after it, then the partitioned parents.
    pub fn planned(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for t in &self.tables {
            if t.moves() {
                out.push(("table".to_string(), t.name.clone()));
                if t.repack_moves_indexes() {
                    out.extend(
                        t.indexes
                            .iter()
                            .filter(|i| i.from != t.to)
                            .map(|i| ("index".to_string(), i.name.clone())),
                    );
                }
            }
            out.extend(
                t.reindexed()
                    .into_iter()
                    .map(|i| ("index".to_string(), i.name.clone())),
            );
        }
        out.extend(
            self.parents
                .iter()
                .map(|p| (p.kind.clone(), p.name.clone())),
        );
        out
    }

    /// What a job that stopped half-way says of its batch: the relations
    /// moved (`moved`: kind, name, tablespace, as recorded), those not,
    /// and that undo_batch takes back what moved. None when nothing moved.
    pub fn progress(&self, moved: &[(String, String, String)]) -> Option<String> {
        if moved.is_empty() {
            return None;
        }
        let done: Vec<String> = moved
            .iter()
            .map(|(kind, name, to)| format!("{kind} {name} to {to}"))
            .collect();
        let left: Vec<String> = self
            .planned()
            .into_iter()
            .filter(|(kind, name)| !moved.iter().any(|(k, n, _)| k == kind && n == name))
            .map(|(kind, name)| format!("{kind} {name}"))
            .collect();
        Some(format!(
            "Relations moved: {}; not moved: {}. What moved is recorded in batch {b}: SELECT * FROM storlab.undo_batch({b}, online => true) takes it back.",
            done.join(", "),
            if left.is_empty() {
                "none".to_string()
            } else {
                left.join(", ")
            },
            b = self.batch
        ))
    }
}

/// A partitioned table or index of an online move: it has no storage, and
/// `ALTER ... SET TABLESPACE` only records where new partitions go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnlineParent {
    pub relation: u32,
    pub name: String,
    /// `relocate::Kind::as_str()`: "partitioned table" or "partitioned index"
    pub kind: String,
    pub from: String,
    pub to: String,
}

/// One table of an online move.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnlineTable {
    pub relation: u32,
    /// schema-qualified and quoted
    pub name: String,
    pub from: String,
    pub to: String,
    /// the table with its TOAST, in bytes, when the call planned it
    pub bytes: i64,
    /// every valid index of the table: where it is and where it must end
    pub indexes: Vec<OnlineIndex>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnlineIndex {
    pub relation: u32,
    pub name: String,
    pub from: String,
    pub to: String,
    pub bytes: i64,
}

impl OnlineTable {
    /// Does the table itself change tablespace (pg_repack runs)?
    pub fn moves(&self) -> bool {
        self.from != self.to
    }

    /// `--moveidx`: pg_repack puts every index into the table's target. It
    /// is given when every index is to end there; without it each index is
    /// rebuilt in the tablespace it is in.
    pub fn repack_moves_indexes(&self) -> bool {
        self.moves() && self.indexes.iter().all(|i| i.to == self.to)
    }

    /// The indexes REINDEX CONCURRENTLY moves after pg_repack (or alone,
    /// when the table stays): those not where they must end once pg_repack
    /// has run.
    pub fn reindexed(&self) -> Vec<&OnlineIndex> {
        if self.repack_moves_indexes() {
            return Vec::new();
        }
        self.indexes.iter().filter(|i| i.from != i.to).collect()
    }

    /// What pg_repack 1.4 cannot do with this table's names: it writes the
    /// target tablespace unquoted into each index's CREATE INDEX (1.5
    /// quotes it). A name that needs quoting would break that statement, or
    /// change what it says.
    pub fn check_names(&self, version: repack::Version) -> Result<()> {
        if !self.repack_moves_indexes() || version.owner_may_run() {
            return Ok(());
        }
        if ident(&self.to) != self.to {
            return Err(invalid(format!(
                "pg_repack {version} cannot move indexes into tablespace {}: it writes the name into CREATE INDEX unquoted, and this name needs quotes (pg_repack 1.5 quotes it)",
                ident(&self.to)
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_timeouts_are_bounded() {
        assert_eq!(lock_timeout(5_000_000).unwrap(), Duration::from_secs(5));
        assert!(lock_timeout(0).unwrap_err().message.contains("positive"));
        assert!(lock_timeout(3_600_000_001)
            .unwrap_err()
            .message
            .contains("1 hour"));
    }

    fn table(to: &str, indexes: &[(&str, &str)]) -> OnlineTable {
        OnlineTable {
            relation: 1,
            name: "public.t".into(),
            from: "a".into(),
            to: to.into(),
            bytes: 8192,
            indexes: indexes
                .iter()
                .enumerate()
                .map(|(n, (from, to))| OnlineIndex {
                    relation: 2 + n as u32,
                    name: format!("public.i{n}"),
                    from: from.to_string(),
                    to: to.to_string(),
                    bytes: 8192,
                })
                .collect(),
        }
    }

    #[test]
    fn indexes_go_with_pg_repack_only_when_all_end_with_the_table() {
        // every index with the table: one pg_repack run does it all
        let all = table("b", &[("a", "b"), ("c", "b"), ("b", "b")]);
        assert!(all.repack_moves_indexes());
        assert!(all.reindexed().is_empty());
        // indexes staying where they are: pg_repack rebuilds them in place
        let stay = table("b", &[("a", "a"), ("c", "c")]);
        assert!(!stay.repack_moves_indexes());
        assert!(stay.reindexed().is_empty());
        // data here, indexes there: pg_repack, then REINDEX CONCURRENTLY
        let split = table("b", &[("a", "c"), ("c", "c")]);
        assert!(!split.repack_moves_indexes());
        assert_eq!(split.reindexed().len(), 1);
        assert_eq!(split.reindexed()[0].name, "public.i0");
        // the table stays: no pg_repack at all, only the indexes
        let idx = table("a", &[("a", "c")]);
        assert!(!idx.moves());
        assert!(!idx.repack_moves_indexes());
        assert_eq!(idx.reindexed().len(), 1);
    }

    #[test]
    fn a_job_stopped_half_way_says_what_moved_and_what_did_not() {
        let m = MoveOnline {
            batch: 7,
            tables: vec![table("b", &[("a", "c"), ("a", "c")]), {
                let mut t = table("b", &[("a", "b")]);
                t.name = "public.u".into();
                t.indexes[0].name = "public.u_pkey".into();
                t
            }],
            lock_timeout_ms: 2000,
            repack_version: "1.5.3".into(),
            label: None,
            undoes_batch: None,
            parents: vec![OnlineParent {
                relation: 9,
                name: "public.p".into(),
                kind: "partitioned table".into(),
                from: "a".into(),
                to: "b".into(),
            }],
        };
        assert_eq!(
            m.planned(),
            [
                ("table", "public.t"),
                ("index", "public.i0"),
                ("index", "public.i1"),
                ("table", "public.u"),
                ("index", "public.u_pkey"),
                ("partitioned table", "public.p"),
            ]
            .map(|(k, n)| (k.to_string(), n.to_string()))
        );
        assert_eq!(m.progress(&[]), None);
        let moved = [("table".to_string(), "public.t".to_string(), "b".to_string())];
        assert_eq!(
            m.progress(&moved).unwrap(),
            "Relations moved: table public.t to b; not moved: index public.i0, index public.i1, table public.u, index public.u_pkey, partitioned table public.p. \
             What moved is recorded in batch 7: SELECT * FROM storlab.undo_batch(7, online => true) takes it back."
        );
    }

    #[test]
    fn pg_repack_1_4_cannot_take_a_tablespace_name_that_needs_quotes() {
        let old = repack::Version::parse("1.4.8").unwrap();
        let new = repack::Version::parse("1.5.3").unwrap();
        let quoted = table("Fast TS", &[("a", "Fast TS")]);
        let e = quoted.check_names(old).unwrap_err();
        assert!(e.message.contains("\"Fast TS\""), "{}", e.message);
        assert!(quoted.check_names(new).is_ok());
        // indexes rebuilt in place: the name is not written by pg_repack
        assert!(table("Fast TS", &[("a", "a")]).check_names(old).is_ok());
        assert!(table("fast", &[("a", "fast")]).check_names(old).is_ok());
    }
}
