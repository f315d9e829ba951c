//! Which volume is best at what: the figures, intervals, ratios and roles
//! that `storlab.compare_tablespaces()` and `compare_fleet()` report.
//!
//! A volume (one filesystem: every tablespace on it, pg_wal included, is
//! measured once) brings each ranked figure as repetitions: one value per
//! probe of the same suite item. A figure is shown as the mean of its
//! repetitions with the half-width of its 95 % interval in percent; a role
//! goes to a volume only when Welch's test, two-sided at [`ALPHA`] (the rule
//! of experiments and advice), says its figure beats every other
//! candidate's. Otherwise the role goes to no one and the candidates that
//! cannot be told from the leader are said to tie for it.

use crate::request::probe::SUITE_PRECISION_PCT;
pub use crate::stats::{estimate, Estimate};
use crate::stats::{usable, welch, ALPHA};

/// The repeated figures of one volume that the ranking looks at, one value
/// per repetition (empty where it could not be measured: it then wins
/// nothing and has no ratio).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scores {
    /// 8 kB random read p99 of each repetition (µs; lower is better)
    pub randread_p99_us: Vec<f64>,
    /// WAL commit (8 kB write + fdatasync) p99 of each repetition (µs)
    pub wal_commit_p99_us: Vec<f64>,
    /// sequential write + sequential read MiB/s of each repetition
    /// (higher is better)
    pub bulk_mib_s: Vec<f64>,
    /// the sequential write and read MiB/s of each repetition that
    /// `bulk_mib_s` sums: shown apart, so their precision is said apart
    /// (empty where only the sum is known)
    pub seqwrite_mib_s: Vec<f64>,
    pub seqread_mib_s: Vec<f64>,
    /// Storage that loses its contents at a reboot (tmpfs, zram): fast, and
    /// no place for WAL, data or indexes, so it wins no role and is no one's
    /// yardstick while durable storage was measured too.
    pub volatile: bool,
    /// Only the WAL folder is on this volume: no table or index can be
    /// placed there, so it competes for `wal` only (and is no yardstick for
    /// reads or bulk).
    pub wal_only: bool,
}

/// The roles, the figure each is judged on, and which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// lowest WAL commit p99
    Wal,
    /// lowest 8 kB random read p99
    Indexes,
    /// highest sequential throughput, read plus write
    Bulk,
}

pub const ROLES: [Role; 3] = [Role::Wal, Role::Indexes, Role::Bulk];

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Wal => "wal",
            Role::Indexes => "indexes",
            Role::Bulk => "bulk",
        }
    }

    /// The figure the role is judged on, as the output names it.
    pub fn figure_name(self) -> &'static str {
        match self {
            Role::Wal => "wal commit p99",
            Role::Indexes => "8 kB random read p99",
            Role::Bulk => "sequential write + read MiB/s",
        }
    }

    pub fn values(self, s: &Scores) -> &[f64] {
        match self {
            Role::Wal => &s.wal_commit_p99_us,
            Role::Indexes => &s.randread_p99_us,
            Role::Bulk => &s.bulk_mib_s,
        }
    }

    fn lower_is_better(self) -> bool {
        !matches!(self, Role::Bulk)
    }

    /// Whether a volume may hold what the role places: relations go
    /// nowhere but a tablespace, so a volume of pg_wal alone competes for
    /// `wal` only.
    fn open_to(self, s: &Scores) -> bool {
        self == Role::Wal || !s.wal_only
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ranking {
    /// randread p99 / best randread p99: 1.0 is the best, 3.0 three times slower.
    pub randread_vs_best: Option<f64>,
    pub wal_commit_vs_best: Option<f64>,
    /// Roles this volume wins among durable storage: its figure is
    /// significantly better than every other candidate's.
    pub best_for: Vec<&'static str>,
    /// Roles no one wins because this volume and at least one other lead
    /// together: their figures cannot be told apart.
    pub tied_for: Vec<&'static str>,
    /// What limits the answer: a tie (with whom, the test), a figure less
    /// precise than asked, a figure measured once.
    pub caveats: Vec<String>,
}

/// Welch's test of two volumes' repetitions: (p, significant); None when
/// either side has fewer than two (no spread to test against).
fn tells_apart(a: &[f64], b: &[f64]) -> Option<(f64, bool)> {
    let w = welch(&usable(a), &usable(b))?;
    Some((w.p_value, w.p_value < ALPHA))
}

fn reps(n: usize) -> String {
    format!("{n} repetition{}", if n == 1 { "" } else { "s" })
}

/// Ratios to the best durable figure, and each role to the volume whose
/// figure is significantly better than every other candidate's. When every
/// measured volume is volatile, they compete among themselves. `names`
/// name the volumes in caveats; `precision_pct` is the precision asked of
/// each figure (a figure less precise than that says so).
pub fn rank(all: &[Scores], names: &[&str], precision_pct: Option<f64>) -> Vec<Ranking> {
    let est: Vec<[Option<Estimate>; 3]> = all
        .iter()
        .map(|s| ROLES.map(|r| estimate(r.values(s))))
        .collect();
    let any_durable = all
        .iter()
        .zip(&est)
        .any(|(s, e)| !s.volatile && (e[0].is_some() || e[1].is_some()));
    let competes = |i: usize| !(any_durable && all[i].volatile);
    let mut out: Vec<Ranking> = vec![Ranking::default(); all.len()];
    for (k, role) in ROLES.iter().enumerate() {
        let candidates: Vec<usize> = (0..all.len())
            .filter(|&i| competes(i) && role.open_to(&all[i]) && est[i][k].is_some())
            .collect();
        let better = |a: f64, b: f64| {
            if role.lower_is_better() {
                a < b
            } else {
                a > b
            }
        };
        let Some(&leader) = candidates.iter().reduce(|b, i| {
            if better(est[*i][k].unwrap().mean, est[*b][k].unwrap().mean) {
                i
            } else {
                b
            }
        }) else {
            continue;
        };
        let best = est[leader][k].unwrap().mean;
        if *role != Role::Bulk {
            for (i, e) in est.iter().enumerate() {
                let ratio = e[k].map(|e| e.mean / best);
                match role {
                    Role::Wal => out[i].wal_commit_vs_best = ratio,
                    _ => out[i].randread_vs_best = ratio,
                }
            }
        }
        // who cannot be told from the leader: not significantly worse
        let mut tied = vec![leader];
        for &i in candidates.iter().filter(|&&i| i != leader) {
            if !matches!(
                tells_apart(role.values(&all[leader]), role.values(&all[i])),
                Some((_, true))
            ) {
                tied.push(i);
            }
        }
        if tied.len() == 1 {
            out[leader].best_for.push(role.as_str());
            continue;
        }
        for &i in &tied {
            out[i].tied_for.push(role.as_str());
            let others: Vec<String> = tied
                .iter()
                .filter(|&&j| j != i)
                .map(|&j| {
                    let n = (est[i][k].unwrap().n, est[j][k].unwrap().n);
                    let test = tells_apart(role.values(&all[i]), role.values(&all[j]));
                    match test {
                        Some((p, _)) => {
                            format!("{} (Welch p = {p:.2}, {} and {})", names[j], n.0, reps(n.1))
                        }
                        None => format!(
                            "{} (no test: {} and {}; Welch's test needs 2 of each)",
                            names[j],
                            n.0,
                            reps(n.1)
                        ),
                    }
                })
                .collect();
            out[i].caveats.push(format!(
                "{}: a tie, no one is best: {} cannot be told apart from {}",
                role.as_str(),
                role.figure_name(),
                others.join(", ")
            ));
        }
    }
    // figures less precise than asked, whatever their rank: each figure as
    // the output shows it (bulk as its write and its read)
    // (without a precision asked, the suite's default stands for it: a
    // figure known to ±159 % is said to be, whatever was asked)
    let (asked, asked_said) = match precision_pct {
        Some(p) => (p, format!("{p} % asked")),
        None => (
            SUITE_PRECISION_PCT,
            format!("{SUITE_PRECISION_PCT} % is the suite's default precision"),
        ),
    };
    for (i, s) in all.iter().enumerate() {
        for (name, values) in shown(s) {
            let Some(e) = estimate(values) else { continue };
            match e.ci95_pct {
                None => out[i]
                    .caveats
                    .push(format!("{name}: measured once, its precision is unknown")),
                Some(got) if got > asked => out[i].caveats.push(format!(
                    "{name}: ±{got:.0} % over {} ({asked_said})",
                    reps(e.n)
                )),
                _ => {}
            }
        }
    }
    out
}

/// The figures of a volume as the output shows them, with their
/// repetitions: the two ranked p99s, and bulk as its sequential write and
/// read (the sum where the parts are not known).
fn shown(s: &Scores) -> Vec<(&'static str, &[f64])> {
    let mut v = vec![
        (Role::Wal.figure_name(), s.wal_commit_p99_us.as_slice()),
        (Role::Indexes.figure_name(), s.randread_p99_us.as_slice()),
    ];
    if s.seqwrite_mib_s.is_empty() && s.seqread_mib_s.is_empty() {
        v.push((Role::Bulk.figure_name(), s.bulk_mib_s.as_slice()));
    } else {
        v.push(("sequential write MiB/s", s.seqwrite_mib_s.as_slice()));
        v.push(("sequential read MiB/s", s.seqread_mib_s.as_slice()));
    }
    v
}

/// Which figures of each volume need another repetition: those less
/// precise than asked, and those of a volume tied for a role (more
/// repetitions may tell the leaders apart). The caller measures them again
/// while it has repetitions and time left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wanted {
    pub wal: bool,
    pub randread: bool,
    pub bulk: bool,
}

impl Wanted {
    pub fn any(&self) -> bool {
        self.wal || self.randread || self.bulk
    }

    fn set(&mut self, role: Role) {
        match role {
            Role::Wal => self.wal = true,
            Role::Indexes => self.randread = true,
            Role::Bulk => self.bulk = true,
        }
    }
}

pub fn wanted(all: &[Scores], precision_pct: Option<f64>) -> Vec<Wanted> {
    let names = vec![""; all.len()];
    let ranks = rank(all, &names, precision_pct);
    all.iter()
        .zip(&ranks)
        .map(|(s, r)| {
            let mut w = Wanted::default();
            let imprecise = |values: &[f64]| {
                let e = estimate(values);
                match (e.and_then(|e| e.ci95_pct), precision_pct) {
                    (Some(got), Some(asked)) => got > asked,
                    _ => e.is_some_and(|e| e.n < 2),
                }
            };
            for role in ROLES {
                let parts_imprecise = role == Role::Bulk
                    && (imprecise(&s.seqwrite_mib_s) || imprecise(&s.seqread_mib_s));
                if imprecise(role.values(s))
                    || parts_imprecise
                    || r.tied_for.contains(&role.as_str())
                {
                    w.set(role);
                }
            }
            w
        })
        .collect()
}

#[cfg(test)]
mod tests;
