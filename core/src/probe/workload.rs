//! The access patterns a probe can run, named as fio names them (plus `wal`).

use std::fmt;
use std::str::FromStr;

use super::error::parse_name;
use super::sync_method::SyncMethod;

/// What each worker does in the timed phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Workload {
    /// Block-aligned reads at uniform random offsets over the whole file.
    Randread,
    /// Block-aligned writes at uniform random offsets over the whole file.
    Randwrite,
    /// Reads walking each worker's own region, wrapping at its end.
    Seqread,
    /// Writes walking each worker's own region, wrapping at its end.
    Seqwrite,
    /// Like `Seqwrite` but synced by default: models WAL commits the way
    /// pg_test_fsync does.
    Wal,
}

#[cfg(test)]
const NAMES: &[&str] = &["randread", "randwrite", "seqread", "seqwrite", "wal"];

impl Workload {
    pub const ALL: [Workload; 5] = [
        Workload::Randread,
        Workload::Randwrite,
        Workload::Seqread,
        Workload::Seqwrite,
        Workload::Wal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Workload::Randread => "randread",
            Workload::Randwrite => "randwrite",
            Workload::Seqread => "seqread",
            Workload::Seqwrite => "seqwrite",
            Workload::Wal => "wal",
        }
    }

    pub fn is_write(self) -> bool {
        matches!(
            self,
            Workload::Randwrite | Workload::Seqwrite | Workload::Wal
        )
    }

    /// Random workloads spread over the whole file; the others walk a
    /// per-worker region so that workers never touch each other's blocks.
    pub fn is_random(self) -> bool {
        matches!(self, Workload::Randread | Workload::Randwrite)
    }

    /// The sync a user most likely means when they do not say: WAL without
    /// a sync would measure the page cache, not commits.
    pub fn default_sync(self) -> SyncMethod {
        match self {
            Workload::Wal => SyncMethod::Fdatasync,
            _ => SyncMethod::None,
        }
    }
}

impl FromStr for Workload {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_name("workload", s, &Workload::ALL, Workload::as_str)
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for w in Workload::ALL {
            assert_eq!(w.as_str().parse::<Workload>(), Ok(w));
            assert_eq!(w.to_string(), w.as_str());
        }
        assert_eq!(" RandRead ".parse::<Workload>(), Ok(Workload::Randread));
    }

    #[test]
    fn names_table_matches_variants() {
        let from_variants: Vec<&str> = Workload::ALL.iter().map(|w| w.as_str()).collect();
        assert_eq!(from_variants, NAMES);
    }

    #[test]
    fn unknown_names_are_rejected_with_the_allowed_list() {
        for bad in ["", "read", "random", "randreads", "wal2", "seq write"] {
            let msg = bad.parse::<Workload>().unwrap_err();
            assert!(msg.contains(&format!("\"{bad}\"")), "{msg}");
            assert!(
                msg.ends_with("randread, randwrite, seqread, seqwrite, wal"),
                "{msg}"
            );
        }
    }

    #[test]
    fn write_and_random_classification() {
        let writes: Vec<_> = Workload::ALL.into_iter().filter(|w| w.is_write()).collect();
        assert_eq!(
            writes,
            [Workload::Randwrite, Workload::Seqwrite, Workload::Wal]
        );
        let random: Vec<_> = Workload::ALL
            .into_iter()
            .filter(|w| w.is_random())
            .collect();
        assert_eq!(random, [Workload::Randread, Workload::Randwrite]);
    }

    #[test]
    fn only_wal_syncs_by_default() {
        for w in Workload::ALL {
            let expected = if w == Workload::Wal {
                SyncMethod::Fdatasync
            } else {
                SyncMethod::None
            };
            assert_eq!(w.default_sync(), expected, "{w}");
        }
    }
}
