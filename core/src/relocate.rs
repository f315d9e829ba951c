//! What moving a relation between tablespaces means, per kind of relation.
//! Pure Rust: the SQL side (src/api/relocate.rs) feeds it catalog facts and
//! runs the statements it writes.

pub mod batch;

/// The kinds of relation storlab.layout() reports, from pg_class.relkind
/// (and the namespace, for TOAST).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Table,
    Index,
    ToastTable,
    ToastIndex,
    MaterializedView,
    PartitionedTable,
    PartitionedIndex,
}

impl Kind {
    /// `relkind` as pg_class has it; `in_toast` when the relation lives in a pg_toast schema.
    pub fn from_relkind(relkind: &str, in_toast: bool) -> Option<Kind> {
        Some(match (relkind, in_toast) {
            ("r", _) => Kind::Table,
            ("i", false) => Kind::Index,
            ("i", true) => Kind::ToastIndex,
            ("t", _) => Kind::ToastTable,
            ("m", _) => Kind::MaterializedView,
            ("p", _) => Kind::PartitionedTable,
            ("I", _) => Kind::PartitionedIndex,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Table => "table",
            Kind::Index => "index",
            Kind::ToastTable => "toast table",
            Kind::ToastIndex => "toast index",
            Kind::MaterializedView => "materialized view",
            Kind::PartitionedTable => "partitioned table",
            Kind::PartitionedIndex => "partitioned index",
        }
    }

    /// The ALTER keyword, or None for TOAST, which moves with its table.
    fn alter_keyword(self) -> Option<&'static str> {
        match self {
            Kind::Table | Kind::PartitionedTable => Some("TABLE"),
            Kind::Index | Kind::PartitionedIndex => Some("INDEX"),
            Kind::MaterializedView => Some("MATERIALIZED VIEW"),
            Kind::ToastTable | Kind::ToastIndex => None,
        }
    }

    /// Partitioned relations have no storage: moving one only sets where
    /// future partitions (or partition indexes) are created.
    pub fn has_storage(self) -> bool {
        !matches!(self, Kind::PartitionedTable | Kind::PartitionedIndex)
    }
}

/// The statement that moves a relation. Both names must already be quoted
/// identifiers (format('%I.%I') / quote_ident on the SQL side): nothing a name
/// contains is ever executed.
pub fn statement(kind: Kind, quoted_relation: &str, quoted_tablespace: &str) -> Option<String> {
    Some(format!(
        "ALTER {} {quoted_relation} SET TABLESPACE {quoted_tablespace}",
        kind.alter_keyword()?
    ))
}

/// What the move does to other sessions, for the plan's rows. `table` is an
/// index's table: while an index is locked, every query planned on its table
/// waits (the planner locks all of a table's indexes, not only those it
/// uses), and so does every writer to the table (writes update every index).
/// `call_bytes` is what the whole call copies: a call is one transaction, so
/// each lock, taken when its relation's turn comes, is held until the call
/// ends, not only for that relation's own copy (a reader of the first of
/// three partitions waits for all three).
pub fn note(
    kind: Kind,
    relation: &str,
    table: Option<&str>,
    bytes: i64,
    call_bytes: i64,
) -> String {
    let until = format!(
        "until the call's transaction ends (the call copies {} in all)",
        human_bytes(call_bytes)
    );
    if !kind.has_storage() {
        let blocked = match (kind, table) {
            (Kind::PartitionedIndex, Some(table)) => {
                format!("every query planned on {table} waits")
            }
            _ => format!("every query on {relation} and its partitions waits"),
        };
        return format!(
            "copies nothing (sets the tablespace of future partitions of {relation}), but holds ACCESS EXCLUSIVE on it {until}: {blocked}"
        );
    }
    let what = match (kind, table) {
        (Kind::Index, Some(table)) => format!(
            "every query planned on {table} and every writer to it waits, whether or not it uses this index"
        ),
        _ => "every reader and writer of it waits".to_string(),
    };
    format!(
        "holds ACCESS EXCLUSIVE on {relation} from its copy of {} {until}: {what}",
        human_bytes(bytes)
    )
}

/// Free space a batch of moves leaves on each filesystem it copies into.
/// A move copies the relation's files into the target and removes the old
/// ones only at commit, so every byte of the batch must fit at once, on top
/// of the reserve (storlab.min_free_bytes), whichever filesystem it leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceAfter {
    /// Free bytes on the target's filesystem before the batch.
    pub free: u64,
    /// Bytes the whole batch copies into that filesystem.
    pub copied: u64,
    pub reserve: u64,
}

impl SpaceAfter {
    /// What the filesystem has left once the whole batch copied.
    pub fn left(&self) -> i64 {
        self.free as i64 - self.copied as i64
    }

    pub fn fits(&self) -> bool {
        self.left() >= self.reserve as i64
    }
}

/// For each move (the target filesystem's id, its free bytes, the bytes
/// to copy), the space its filesystem has left after the whole batch.
pub fn space_after(moves: &[(u64, u64, u64)], reserve: u64) -> Vec<SpaceAfter> {
    let mut copied: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for &(fs, _, bytes) in moves {
        *copied.entry(fs).or_default() += bytes;
    }
    moves
        .iter()
        .map(|&(fs, free, _)| SpaceAfter {
            free,
            copied: copied[&fs],
            reserve,
        })
        .collect()
}

/// The duration psql's `\timing` printed for the statement it ran
/// ("Time: 1234.567 ms (00:01.235)"), in seconds: the statement's own
/// time, where the job's clock would count its polling too.
pub fn psql_timing_s(stdout: &str) -> Option<f64> {
    stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Time: "))
        .filter_map(|t| t.split_once(" ms"))
        .filter_map(|(ms, _)| ms.trim().parse::<f64>().ok())
        .last()
        .map(|ms| ms / 1000.0)
}

pub fn human_bytes(bytes: i64) -> String {
    const UNITS: [&str; 5] = ["bytes", "kB", "MB", "GB", "TB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_fits_only_when_all_of_it_fits_at_once_per_filesystem() {
        let mb = 1024 * 1024;
        // two moves into one filesystem with 100 MB free, one into another
        let moves = [
            (1, 100 * mb, 30 * mb),
            (2, 10 * mb, 5 * mb),
            (1, 100 * mb, 30 * mb),
        ];
        let after = space_after(&moves, 20 * mb);
        // every row of filesystem 1 counts both of its copies: what is
        // left after the call, not after one relation
        assert_eq!((after[0].copied, after[2].copied), (60 * mb, 60 * mb));
        assert_eq!(after[0].left(), 40 * mb as i64);
        assert!(after[0].fits() && after[2].fits());
        assert_eq!(after[1].left(), 5 * mb as i64);
        assert!(!after[1].fits(), "5 MB left is below the 20 MB reserve");
        // 104 MB into 64 MB: negative, never fits
        let after = space_after(&[(7, 64 * mb, 104 * mb)], 0);
        assert_eq!(after[0].left(), -40 * mb as i64);
        assert!(!after[0].fits());
    }

    #[test]
    fn psql_timing_is_read_in_seconds() {
        assert_eq!(psql_timing_s("Time: 12.500 ms\n"), Some(0.0125));
        assert_eq!(
            psql_timing_s("REINDEX\nTime: 1234.567 ms (00:01.235)\n"),
            Some(1.234567)
        );
        assert_eq!(psql_timing_s("Timing is on.\nREINDEX\n"), None);
    }

    #[test]
    fn relkinds_map_to_layout_kinds() {
        assert_eq!(Kind::from_relkind("r", false), Some(Kind::Table));
        assert_eq!(Kind::from_relkind("i", true), Some(Kind::ToastIndex));
        assert_eq!(
            Kind::from_relkind("I", false).map(Kind::as_str),
            Some("partitioned index")
        );
        assert_eq!(
            Kind::from_relkind("S", false),
            None,
            "sequences are not moved"
        );
        assert_eq!(
            Kind::from_relkind("v", false),
            None,
            "views have no storage"
        );
    }

    #[test]
    fn statements_use_the_quoted_names_as_given() {
        assert_eq!(
            statement(
                Kind::MaterializedView,
                r#""Sales"."mv; drop""#,
                r#""fast disk""#
            )
            .unwrap(),
            r#"ALTER MATERIALIZED VIEW "Sales"."mv; drop" SET TABLESPACE "fast disk""#
        );
        assert_eq!(
            statement(Kind::PartitionedIndex, "p.i", "t").unwrap(),
            "ALTER INDEX p.i SET TABLESPACE t"
        );
        assert_eq!(
            statement(Kind::ToastTable, "pg_toast.x", "t"),
            None,
            "TOAST moves with its table"
        );
    }

    #[test]
    fn notes_warn_about_the_lock_and_say_the_size() {
        let mb = 1024 * 1024;
        let n = note(Kind::Table, "public.t", None, 3 * mb, 9 * mb);
        assert_eq!(
            n,
            "holds ACCESS EXCLUSIVE on public.t from its copy of 3.0 MB until the call's transaction ends (the call copies 9.0 MB in all): every reader and writer of it waits"
        );
        // a partitioned parent copies nothing, yet blocks every query on the tree for the whole call
        let p = note(Kind::PartitionedTable, "public.p", None, 0, 9 * mb);
        assert_eq!(
            p,
            "copies nothing (sets the tablespace of future partitions of public.p), but holds ACCESS EXCLUSIVE on it until the call's transaction ends (the call copies 9.0 MB in all): every query on public.p and its partitions waits"
        );
        // an index blocks its whole table, not only the queries that use it
        let i = note(Kind::Index, "public.t_v", Some("public.t"), 8192, 8192);
        assert!(
            i.contains("every query planned on public.t and every writer to it"),
            "{i}"
        );
        assert_eq!(human_bytes(512), "512 bytes");
        assert_eq!(human_bytes(1536), "1.5 kB");
    }
}

/// The batches that cancel out, from `(undo, undone)` pairs of
/// undo_batch() rows: a batch undone by an undo that still stands, and
/// that undo. Newest undo first, so that an undo undone in its turn
/// cancels nothing (its target is in effect again).
pub fn cancelled_batches(pairs: &[(i64, i64)]) -> std::collections::HashSet<i64> {
    let mut undos: Vec<(i64, i64)> = pairs.to_vec();
    undos.sort_unstable_by(|a, b| b.cmp(a));
    undos.dedup();
    let mut cancelled = std::collections::HashSet::new();
    for (undo, undone) in undos {
        if !cancelled.contains(&undo) {
            cancelled.insert(undo);
            cancelled.insert(undone);
        }
    }
    cancelled
}

#[cfg(test)]
mod undo_tests {
    use super::cancelled_batches;

    #[test]
    fn an_undone_batch_and_its_undo_cancel_out() {
        // batch 5 undone by 6
        let c = cancelled_batches(&[(6, 5)]);
        assert!(c.contains(&5) && c.contains(&6));
        // 5 undone by 6, 4 undone by 7: all four cancel
        let c = cancelled_batches(&[(6, 5), (7, 4)]);
        assert_eq!(c.len(), 4);
    }

    #[test]
    fn an_undo_undone_cancels_nothing() {
        // 6 undoes 5, 7 undoes 6: 5's moves are in effect again
        let c = cancelled_batches(&[(6, 5), (7, 6)]);
        assert!(c.contains(&6) && c.contains(&7));
        assert!(!c.contains(&5));
        // and an undo of that: 8 undoes 7, so 6 stands again, cancelling 5
        let c = cancelled_batches(&[(6, 5), (7, 6), (8, 7)]);
        assert!(c.contains(&5) && c.contains(&6) && c.contains(&7) && c.contains(&8));
        assert!(cancelled_batches(&[]).is_empty());
    }
}
