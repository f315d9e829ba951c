//! "The newest rows of each group" over a history that only grows, read in
//! time that does not grow with it.
//!
//! `SELECT DISTINCT ON (group) ... ORDER BY group, started_at DESC` (or a
//! `row_number()` window) reads every row of the history to keep a handful:
//! at a million stored probes that is seconds. PostgreSQL has no skip scan
//! before 18 (and 18's does not serve DISTINCT ON), so the query is written
//! as one: a recursive walk that finds the next group with one index
//! descent each (`(a, b) > (previous a, previous b) ORDER BY a, b LIMIT 1`),
//! then, per group, the newest rows with one more descent each. With an
//! index on the group columns followed by the time column, under the same
//! filter as its partial predicate, the cost is a few descents per group,
//! whatever the history holds.
//!
//! The group columns must be NOT NULL: a row comparison with a NULL is
//! NULL, and the walk would stop at the first NULL group.

/// The newest `per_group` rows of every group of `table` under `filter`.
#[derive(Debug, Clone, Copy)]
pub struct NewestPerGroup<'a> {
    /// schema-qualified table
    pub table: &'a str,
    /// the group columns, NOT NULL, in the order of the serving index
    pub groups: &'a [&'a str],
    /// the rows considered: the serving index's predicate, and anything
    /// further (a condition the index does not hold is checked per row)
    pub filter: &'a str,
    /// newest first within a group, e.g. `started_at DESC, id DESC`
    pub newest_first: &'a str,
    /// rows kept per group: a number, or a parameter (`$1`)
    pub per_group: &'a str,
}

impl NewestPerGroup<'_> {
    /// The query: every column of `table`, groups in ascending order,
    /// newest first within each.
    pub fn sql(&self) -> String {
        // each group column through a pattern (`{c}`), joined
        let each = |pattern: &str, sep: &str| {
            self.groups
                .iter()
                .map(|c| pattern.replace("{c}", c))
                .collect::<Vec<_>>()
                .join(sep)
        };
        let (cols, prev) = (each("{c}", ", "), each("walk.{c}", ", "));
        let (same, order) = (each("h.{c} = walk.{c}", " AND "), each("newest.{c}", ", "));
        let NewestPerGroup {
            table,
            filter,
            newest_first,
            per_group,
            ..
        } = self;
        format!(
            "WITH RECURSIVE walk AS (
               (SELECT {cols} FROM {table} WHERE {filter} ORDER BY {cols} LIMIT 1)
               UNION ALL
               SELECT g.* FROM walk, LATERAL (
                 SELECT {cols} FROM {table}
                  WHERE ({filter}) AND ({cols}) > ({prev})
                  ORDER BY {cols} LIMIT 1) g)
             SELECT newest.* FROM walk, LATERAL (
               SELECT h.* FROM {table} h
                WHERE ({filter}) AND {same}
                ORDER BY {newest_first} LIMIT {per_group}) newest
             ORDER BY {order}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_groups_then_takes_the_newest_of_each() {
        let q = NewestPerGroup {
            table: "storlab.probes",
            groups: &["tablespace", "workload"],
            filter: "ops > 0",
            newest_first: "started_at DESC, id DESC",
            per_group: "$1",
        }
        .sql();
        // the first group, then each next one after the previous
        assert!(q.contains("(SELECT tablespace, workload FROM storlab.probes WHERE ops > 0 ORDER BY tablespace, workload LIMIT 1)"));
        assert!(q.contains(
            "WHERE (ops > 0) AND (tablespace, workload) > (walk.tablespace, walk.workload)"
        ));
        // per group, the newest rows
        assert!(q.contains(
            "WHERE (ops > 0) AND h.tablespace = walk.tablespace AND h.workload = walk.workload"
        ));
        assert!(q.contains("ORDER BY started_at DESC, id DESC LIMIT $1"));
        assert!(q
            .trim_end()
            .ends_with("ORDER BY newest.tablespace, newest.workload"));
    }

    #[test]
    fn one_group_column_is_a_plain_comparison() {
        let q = NewestPerGroup {
            table: "t",
            groups: &["a"],
            filter: "true",
            newest_first: "at DESC",
            per_group: "1",
        }
        .sql();
        assert!(q.contains("(a) > (walk.a)"));
        assert!(q.contains("LIMIT 1) newest"));
    }
}
