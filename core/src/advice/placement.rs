//! Where indexes (or temp files) should go.
//!
//! 1. An experiment whose layout placed them elsewhere than its baseline
//!    and won significantly (the report's Welch test on the runs): the
//!    largest such gain.
//! 2. Else the probes. The candidates are the tablespaces on another
//!    volume than the one they are on now (a tablespace on the same
//!    filesystem or device is the same storage: its figures differ from
//!    the current one's by noise alone); indexes must survive a reboot,
//!    temp files may live on RAM. The best candidate (lowest 8 kB random
//!    read p99 for indexes, highest sequential read + write throughput
//!    for temp files, averaged over its repeated probes) is advised only
//!    when Welch's test on the repeated figures of both tablespaces says
//!    the difference is significant ([`stats::Welch::significant`] at
//!    [`stats::ALPHA`], two-sided). With fewer than [`MIN_REPEATS`]
//!    probes on either side, the advice says it cannot tell yet and gives
//!    the call that measures more.

use serde_json::{json, Value};

use super::figures::{ByTablespace, Context, Experiment, Figures};
use super::{Advice, COMPARE_CALL};
use crate::sequential::Decision;
use crate::sql_text::literal;
use crate::stats::{self, Sides, ALPHA};

/// Probes of each tablespace, at least, that a difference is tested on.
pub const MIN_REPEATS: usize = 3;

/// What is being placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Indexes,
    Temp,
}

impl Purpose {
    /// The topic, and the key of an experiment's placement.
    pub fn topic(self) -> &'static str {
        match self {
            Purpose::Indexes => "indexes",
            Purpose::Temp => "temp",
        }
    }

    /// What is placed, in a sentence.
    fn noun(self) -> &'static str {
        match self {
            Purpose::Indexes => "indexes",
            Purpose::Temp => "temp files",
        }
    }

    /// The figure of each repeated probe (newest first), and the newest
    /// standard-suite figure's probes when there are no repeats: indexes'
    /// 8 kB random read p99 (us), temp files' sequential read + write
    /// MiB/s (the i-th newest read with the i-th newest write).
    fn series(self, f: &Figures) -> (Vec<f64>, Vec<i64>) {
        let repeats = |w: &str| {
            f.repeats
                .get(w)
                .filter(|r| !r.is_empty())
                .cloned()
                .or_else(|| f.workloads.get(w).map(|p| vec![p.clone()]))
                .unwrap_or_default()
        };
        match self {
            Purpose::Indexes => {
                let r = repeats("randread");
                (
                    r.iter().map(|p| p.p99_us).collect(),
                    r.iter().map(|p| p.id).collect(),
                )
            }
            Purpose::Temp => {
                let (r, w) = (repeats("seqread"), repeats("seqwrite"));
                let pairs: Vec<_> = r.iter().zip(&w).collect();
                (
                    pairs.iter().map(|(r, w)| r.mib_s + w.mib_s).collect(),
                    pairs.iter().flat_map(|(r, w)| [r.id, w.id]).collect(),
                )
            }
        }
    }

    /// Is `a` better than `b`?
    fn better(self, a: f64, b: f64) -> bool {
        match self {
            Purpose::Indexes => a < b,
            Purpose::Temp => a > b,
        }
    }

    fn figure_said(self, x: f64) -> String {
        match self {
            Purpose::Indexes => format!("{x:.0} us"),
            Purpose::Temp => format!("{x:.0} MiB/s"),
        }
    }

    fn figure_name(self) -> &'static str {
        match self {
            Purpose::Indexes => "8 kB random read p99",
            Purpose::Temp => "sequential read + write throughput",
        }
    }

    /// Where they are now.
    fn current(self, ctx: &Context) -> &str {
        match self {
            Purpose::Indexes => &ctx.index_tablespace,
            Purpose::Temp => &ctx.temp_tablespace,
        }
    }
}

/// Are two tablespaces on one volume: the same mount point, or the same
/// block device? (tmpfs mounts all name the device "tmpfs": only a
/// /dev/ path names one device.)
pub fn same_volume(a: &Figures, b: &Figures) -> bool {
    let same = |x: &Option<String>, y: &Option<String>| matches!((x, y), (Some(x), Some(y)) if !x.is_empty() && x == y);
    same(&a.mount, &b.mount)
        || (same(&a.device, &b.device)
            && a.device.as_deref().is_some_and(|d| d.starts_with("/dev/")))
}

/// Repeated probes of `tablespaces` for `purpose`: the call that stores
/// [`MIN_REPEATS`] more of each, with the standard suite's block sizes
/// (each repetition's call names its repetition, so that the planner
/// cannot evaluate it once for all of them).
pub fn measure_more_call(purpose: Purpose, tablespaces: &[&str]) -> String {
    let names: Vec<String> = tablespaces.iter().map(|t| literal(t)).collect();
    let (workloads, block) = match purpose {
        Purpose::Indexes => ("'{randread}'", 8192),
        Purpose::Temp => ("'{seqread,seqwrite}'", 131072),
    };
    format!(
        "SELECT p.* FROM pg_catalog.unnest(ARRAY[{}]::name[]) AS t, pg_catalog.unnest({workloads}::text[]) AS w, pg_catalog.generate_series(1, {MIN_REPEATS}) AS r, LATERAL storlab.probe(t, w, block_size => {block}, duration => '1 second', label => pg_catalog.concat('repetition ', r)) AS p",
        names.join(", ")
    )
}

/// What temp files on volatile storage cost: a reboot empties it, and the
/// tablespace's folder goes with everything in it. PostgreSQL does not make
/// it again: until someone does, temporary tables and parallel spills fail
/// ("could not create directory", seen on 18), and a plain sort's spill
/// falls back to the database's default tablespace without a word. The
/// advice says so, and how to have the folder made at boot.
fn volatile_temp(ts: &str, f: &Figures) -> String {
    let on = match (&f.device, &f.mount) {
        (Some(d), Some(m)) => format!("{d} at {m}"),
        (Some(d), None) => d.clone(),
        (None, Some(m)) => m.clone(),
        (None, None) => "volatile storage".into(),
    };
    let folder = f.location.as_deref().unwrap_or("the tablespace's folder");
    format!(
        " Beware: {ts} is {on}, which a reboot empties, its folder {folder} included, and PostgreSQL does not make it again: until someone does, CREATE TEMP TABLE fails and so does every parallel query that spills (could not create directory), while other spills quietly go to the database's default tablespace. Make it at each boot before PostgreSQL starts, owned by postgres with mode 0700 (systemd-tmpfiles: d {folder} 0700 postgres postgres), and size it for the largest sort or hash that spills: it is RAM."
    )
}

/// The statement that puts them on `ts`.
pub fn statement(purpose: Purpose, ts: &str, ctx: &Context) -> String {
    match purpose {
        Purpose::Indexes => format!(
            "SELECT * FROM storlab.apply_layout(NULL, {}, {})",
            literal(ts),
            literal(ctx.pgbench_schema.as_deref().unwrap_or("public"))
        ),
        Purpose::Temp => format!(
            "ALTER DATABASE {} SET temp_tablespaces = {}",
            ctx.quoted_database,
            literal(ts)
        ),
    }
}

/// Did this layout beat its baseline? In a sequential experiment its
/// decision says (different, with the whole repeated confidence interval
/// above 0): the fixed-sample p of a run that stopped early is not valid.
/// In a fixed experiment, Welch's test at the report's level.
fn won(c: &super::Cell) -> bool {
    match c.decision {
        Some(d) => d == Decision::Different && c.seq_ci_low_pct.is_some_and(|lo| lo > 0.0),
        None => c.significant == Some(true) && c.improvement_pct.is_some_and(|i| i > 0.0),
    }
}

/// The evidence of a win, as the advice states it.
fn evidence(c: &super::Cell) -> String {
    match c.decision {
        Some(_) => format!(
            "sequential: different after {} repetitions, repeated 95 % CI {:+.1} to {:+.1} %",
            c.decided_after.unwrap_or(0),
            c.seq_ci_low_pct.unwrap_or(f64::NAN),
            c.seq_ci_high_pct.unwrap_or(f64::NAN)
        ),
        None => format!("Welch p = {:.4}", c.p_value.unwrap_or(f64::NAN)),
    }
}

/// An experiment's layout that placed them elsewhere than its baseline and
/// won significantly, the largest gain.
fn experiment_won(purpose: Purpose, experiments: &[Experiment], ctx: &Context) -> Option<Advice> {
    let what = purpose.topic();
    let (e, c, ts) = experiments
        .iter()
        .flat_map(|e| e.cells.iter().map(move |c| (e, c)))
        .filter(|(_, c)| won(c))
        .filter_map(|(e, c)| {
            let base = &e.layouts.first()?.1;
            let layout = &e.layouts.iter().find(|l| l.0 == c.layout)?.1;
            let mine = layout.get(what)?.as_str()?;
            // a layout that also changed its sessions' settings
            // (synchronous_commit off...) may have won by them, not by
            // where it put these relations: no evidence for the placement
            let same_settings = layout.get("settings") == base.get("settings");
            (Some(mine) != base.get(what).and_then(Value::as_str) && same_settings)
                .then_some((e, c, mine))
        })
        .max_by(|a, b| {
            a.1.improvement_pct
                .unwrap_or(0.0)
                .total_cmp(&b.1.improvement_pct.unwrap_or(0.0))
        })?;
    let gain = format!(
        "TPS {:+.1} % ({}) at {} clients, fillfactor {}, in experiment {} \"{}\"",
        c.improvement_pct.unwrap_or(0.0),
        evidence(c),
        c.clients,
        c.fillfactor,
        e.id,
        e.name
    );
    Some(Advice::new(
        what,
        Some(ts),
        format!("{what} on {ts}: the experiment's layout \"{}\" put them there and beat its baseline significantly (evidence: an experiment)", c.layout),
        Some(statement(purpose, ts, ctx)),
        Some(gain),
        {
            let mut j = json!({"experiment": e.id, "layout": c.layout, "clients": c.clients, "fillfactor": c.fillfactor,
                               "improvement_pct": c.improvement_pct, "p_value": c.p_value});
            if let Some(d) = c.decision {
                j["decision"] = json!(d.as_str());
                j["decided_after"] = json!(c.decided_after);
                j["seq_ci_pct"] = json!([c.seq_ci_low_pct, c.seq_ci_high_pct]);
            }
            j
        },
    ))
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// The indexes or temp row.
pub fn advise(
    purpose: Purpose,
    figures: &ByTablespace,
    experiments: &[Experiment],
    ctx: &Context,
) -> Advice {
    if let Some(won) = experiment_won(purpose, experiments, ctx) {
        return won;
    }
    let what = purpose.topic();
    let allowed =
        |ts: &str, f: &Figures| ts != "pg_wal" && (purpose == Purpose::Temp || !f.volatile);
    let measured: Vec<(&str, &Figures, Vec<f64>, Vec<i64>)> = figures
        .iter()
        .filter(|(ts, f)| allowed(ts, f))
        .filter_map(|(ts, f)| {
            let (xs, ids) = purpose.series(f);
            (!xs.is_empty()).then_some((ts.as_str(), f, xs, ids))
        })
        .collect();
    if measured.is_empty() {
        return Advice::measure_first(
            what,
            "the tablespaces' random and sequential I/O",
            COMPARE_CALL,
        );
    }
    let current = purpose.current(ctx);
    let now = figures.get(current);
    let candidates: Vec<_> = measured
        .iter()
        .filter(|(ts, f, _, _)| *ts != current && now.is_none_or(|now| !same_volume(now, f)))
        .collect();
    let Some((ts, f, xs, ids)) = candidates.iter().copied().min_by(|a, b| {
        let (a, b) = (mean(&a.2), mean(&b.2));
        if purpose.better(a, b) {
            std::cmp::Ordering::Less
        } else if purpose.better(b, a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }) else {
        let same: Vec<&str> = measured
            .iter()
            .map(|m| m.0)
            .filter(|t| *t != current)
            .collect();
        return Advice::new(
            what,
            Some(current),
            format!(
                "{} stay on {current}: no other {}tablespace measured is on another volume{}",
                purpose.noun(),
                if purpose == Purpose::Indexes {
                    "durable "
                } else {
                    ""
                },
                if same.is_empty() {
                    String::new()
                } else {
                    format!(
                        " ({} share{} its filesystem or device: the same storage)",
                        same.join(", "),
                        if same.len() == 1 { "s" } else { "" }
                    )
                }
            ),
            None,
            None,
            json!({"current": current, "same_volume": same}),
        );
    };
    let (now_xs, now_ids) = now.map(|n| purpose.series(n)).unwrap_or_default();
    let figure = purpose.figure_name();
    let mut evidence = json!({
        "current": current, "candidate": ts,
        "probes": ids, "current_probes": now_ids,
        "figures": xs, "current_figures": now_xs,
    });
    let noun = purpose.noun();
    // looking worse already: nothing to test (the figures say so)
    if !now_xs.is_empty() && !purpose.better(mean(xs), mean(&now_xs)) {
        return Advice::new(
            what,
            Some(current),
            format!(
                "{noun} stay on {current}: no tablespace on another volume measured better ({figure} {} on {current} over {} probe{}, the best elsewhere {} on {ts} over {})",
                purpose.figure_said(mean(&now_xs)),
                now_xs.len(),
                if now_xs.len() == 1 { "" } else { "s" },
                purpose.figure_said(mean(xs)),
                xs.len(),
            ),
            None,
            None,
            evidence,
        );
    }
    if now_xs.len() < MIN_REPEATS || xs.len() < MIN_REPEATS {
        let now_said = if now_xs.is_empty() {
            "no figures".to_string()
        } else {
            format!(
                "{} over {} probe{}",
                purpose.figure_said(mean(&now_xs)),
                now_xs.len(),
                if now_xs.len() == 1 { "" } else { "s" }
            )
        };
        return Advice::new(
            what,
            None,
            format!(
                "cannot tell yet whether {noun} would be better on {ts} ({figure} {} over {} probe{}) than where they are, on {current} ({now_said}): Welch's test needs {MIN_REPEATS} probes of each; measure more (the statement), then ask again",
                purpose.figure_said(mean(xs)),
                xs.len(),
                if xs.len() == 1 { "" } else { "s" },
            ),
            Some(measure_more_call(purpose, &[current, ts])),
            None,
            evidence,
        );
    }
    let Some(w) = stats::welch(xs, &now_xs) else {
        unreachable!("both sides have at least {MIN_REPEATS} figures")
    };
    evidence["p_value"] = json!(w.p_value);
    let (m, now_m) = (mean(xs), mean(&now_xs));
    let compared = format!(
        "{figure} {} on {ts}, {} on {current}, over {} and {} probes (Welch p = {:.4})",
        purpose.figure_said(m),
        purpose.figure_said(now_m),
        xs.len(),
        now_xs.len(),
        w.p_value
    );
    if !(w.significant(ALPHA, Sides::Two) && purpose.better(m, now_m)) {
        return Advice::new(
            what,
            Some(current),
            format!("{noun} stay on {current}: no tablespace on another volume is significantly better ({compared})"),
            None,
            None,
            evidence,
        );
    }
    let ram = if purpose == Purpose::Temp && f.volatile {
        volatile_temp(ts, f)
    } else {
        String::new()
    };
    Advice::new(
        what,
        Some(ts),
        format!("{noun} on {ts}: the best {figure} of the {}tablespaces on another volume than {current}, significantly better; evidence: probes only, no experiment placed {noun} differently and won.{ram}", if purpose == Purpose::Indexes { "durable " } else { "" }),
        Some(statement(purpose, ts, ctx)),
        Some(compared),
        evidence,
    )
}

#[cfg(test)]
mod tests {
    use super::super::figures::{Cell, Probe};
    use super::*;

    fn volume(mount: &str, device: &str) -> Figures {
        Figures {
            volatile: device == "tmpfs",
            mount: Some(mount.into()),
            device: Some(device.into()),
            ..Figures::default()
        }
    }

    /// A tablespace with randread p99s (newest first), ids from `id`.
    fn reads(mut f: Figures, id: i64, p99s: &[f64]) -> Figures {
        let probes: Vec<Probe> = p99s
            .iter()
            .enumerate()
            .map(|(i, p)| Probe {
                id: id + i as i64,
                mean_us: p / 2.0,
                p50_us: p / 2.0,
                p99_us: *p,
                mib_s: 100.0,
            })
            .collect();
        f.workloads.insert("randread".into(), probes[0].clone());
        f.repeats.insert("randread".into(), probes);
        f
    }

    fn streams(mut f: Figures, id: i64, mib_s: &[f64]) -> Figures {
        for (k, w) in ["seqread", "seqwrite"].iter().enumerate() {
            let probes: Vec<Probe> = mib_s
                .iter()
                .enumerate()
                .map(|(i, m)| Probe {
                    id: id + 100 * k as i64 + i as i64,
                    mib_s: m / 2.0,
                    ..Probe::default()
                })
                .collect();
            f.workloads.insert(w.to_string(), probes[0].clone());
            f.repeats.insert(w.to_string(), probes);
        }
        f
    }

    fn ctx() -> Context {
        Context {
            quoted_database: "lab".into(),
            pgbench_schema: Some("bench".into()),
            ..Context::default()
        }
    }

    #[test]
    fn volumes() {
        let root = volume("/", "/dev/vda1");
        assert!(same_volume(&root, &volume("/", "/dev/vda1")));
        assert!(
            same_volume(&root, &volume("/", "overlay")),
            "one mount point"
        );
        assert!(
            same_volume(&root, &volume("/srv", "/dev/vda1")),
            "one device"
        );
        assert!(!same_volume(&root, &volume("/srv", "/dev/vdb")));
        assert!(
            !same_volume(&volume("/dev/shm", "tmpfs"), &volume("/run", "tmpfs")),
            "tmpfs names no device"
        );
        assert!(
            !same_volume(&Figures::default(), &Figures::default()),
            "unknown is not the same"
        );
    }

    #[test]
    fn no_figures_measure_first() {
        for p in [Purpose::Indexes, Purpose::Temp] {
            let a = advise(p, &ByTablespace::new(), &[], &ctx());
            assert_eq!(
                a.advice,
                "nothing measured yet: the tablespaces' random and sequential I/O; measure first"
            );
            assert_eq!(a.statement.as_deref(), Some(COMPARE_CALL));
        }
        // RAM only: nowhere durable for indexes
        let figures = ByTablespace::from([(
            "lab_ram".into(),
            reads(volume("/dev/shm", "tmpfs"), 1, &[5.0]),
        )]);
        assert!(advise(Purpose::Indexes, &figures, &[], &ctx())
            .advice
            .starts_with("nothing measured yet"));
    }

    /// `make demo`'s case: lab_disk is a folder on pg_default's
    /// filesystem, with a better p99 from one probe (63 vs 75 us).
    #[test]
    fn a_tablespace_on_the_same_volume_is_no_candidate() {
        let figures = ByTablespace::from([
            (
                "pg_default".into(),
                reads(volume("/", "/dev/vda1"), 1, &[75.0]),
            ),
            (
                "lab_disk".into(),
                reads(volume("/", "/dev/vda1"), 2, &[63.0]),
            ),
            (
                "lab_ram".into(),
                reads(volume("/dev/shm", "tmpfs"), 3, &[2.0]),
            ),
        ]);
        let a = advise(Purpose::Indexes, &figures, &[], &ctx());
        assert_eq!(a.target.as_deref(), Some("pg_default"));
        assert_eq!(a.statement, None);
        assert_eq!(a.advice, "indexes stay on pg_default: no other durable tablespace measured is on another volume (lab_disk shares its filesystem or device: the same storage)");
        // even with many probes that differ significantly
        let figures = ByTablespace::from([
            (
                "pg_default".into(),
                reads(volume("/", "/dev/vda1"), 1, &[75.0, 76.0, 74.0]),
            ),
            (
                "lab_disk".into(),
                reads(volume("/", "/dev/vda1"), 4, &[63.0, 62.0, 64.0]),
            ),
        ]);
        assert_eq!(
            advise(Purpose::Indexes, &figures, &[], &ctx())
                .target
                .as_deref(),
            Some("pg_default")
        );
    }

    #[test]
    fn one_probe_each_cannot_tell_and_says_how_to_measure_more() {
        let figures = ByTablespace::from([
            (
                "pg_default".into(),
                reads(volume("/", "/dev/vda1"), 1, &[75.0]),
            ),
            (
                "lab_xfs".into(),
                reads(volume("/mnt/xfs", "/dev/loop1"), 2, &[63.0, 60.0]),
            ),
        ]);
        let a = advise(Purpose::Indexes, &figures, &[], &ctx());
        assert_eq!(a.target, None);
        assert_eq!(a.advice, "cannot tell yet whether indexes would be better on lab_xfs (8 kB random read p99 62 us over 2 probes) than where they are, on pg_default (75 us over 1 probe): Welch's test needs 3 probes of each; measure more (the statement), then ask again");
        assert_eq!(a.statement.as_deref(), Some("SELECT p.* FROM pg_catalog.unnest(ARRAY['pg_default', 'lab_xfs']::name[]) AS t, pg_catalog.unnest('{randread}'::text[]) AS w, pg_catalog.generate_series(1, 3) AS r, LATERAL storlab.probe(t, w, block_size => 8192, duration => '1 second', label => pg_catalog.concat('repetition ', r)) AS p"));
        assert_eq!(a.evidence["probes"], json!([2, 3]));
        assert_eq!(a.evidence["current_probes"], json!([1]));
        // where they are now has no figures at all
        let mut ctx = ctx();
        ctx.index_tablespace = "lab_btrfs".into();
        let a = advise(Purpose::Indexes, &figures, &[], &ctx);
        assert!(
            a.advice
                .contains("than where they are, on lab_btrfs (no figures)"),
            "{}",
            a.advice
        );
        assert!(a
            .statement
            .unwrap()
            .contains("ARRAY['lab_btrfs', 'lab_xfs']"));
    }

    #[test]
    fn a_significant_difference_moves_them() {
        let figures = ByTablespace::from([
            (
                "pg_default".into(),
                reads(volume("/", "/dev/vda1"), 1, &[75.0, 77.0, 73.0]),
            ),
            (
                "lab_xfs".into(),
                reads(volume("/mnt/xfs", "/dev/loop1"), 4, &[63.0, 62.0, 64.0]),
            ),
        ]);
        let a = advise(Purpose::Indexes, &figures, &[], &ctx());
        assert_eq!(a.target.as_deref(), Some("lab_xfs"));
        assert_eq!(
            a.statement.as_deref(),
            Some("SELECT * FROM storlab.apply_layout(NULL, 'lab_xfs', 'bench')")
        );
        let p = a.evidence["p_value"].as_f64().unwrap();
        assert!(p < ALPHA, "{p}");
        assert_eq!(a.expected_gain.unwrap(), format!("8 kB random read p99 63 us on lab_xfs, 75 us on pg_default, over 3 and 3 probes (Welch p = {p:.4})"));
    }

    #[test]
    fn noise_or_worse_stays() {
        // overlapping figures: not significant
        let figures = ByTablespace::from([
            (
                "pg_default".into(),
                reads(volume("/", "/dev/vda1"), 1, &[75.0, 60.0, 90.0]),
            ),
            (
                "lab_xfs".into(),
                reads(volume("/mnt/xfs", "/dev/loop1"), 4, &[63.0, 80.0, 58.0]),
            ),
        ]);
        let a = advise(Purpose::Indexes, &figures, &[], &ctx());
        assert_eq!(a.target.as_deref(), Some("pg_default"));
        assert_eq!(a.statement, None);
        assert!(a.advice.starts_with("indexes stay on pg_default: no tablespace on another volume is significantly better (8 kB random read p99 67 us on lab_xfs, 75 us on pg_default, over 3 and 3 probes (Welch p = "), "{}", a.advice);
        // worse by the figures there are, too few to test: stays, nothing to measure
        let figures = ByTablespace::from([
            (
                "pg_default".into(),
                reads(volume("/", "/dev/vda1"), 1, &[270.0]),
            ),
            (
                "lab_ext4".into(),
                reads(volume("/mnt/ext4", "/dev/loop2"), 4, &[3934.0]),
            ),
        ]);
        let a = advise(Purpose::Indexes, &figures, &[], &ctx());
        assert_eq!(a.target.as_deref(), Some("pg_default"));
        assert_eq!(a.statement, None);
        assert_eq!(a.advice, "indexes stay on pg_default: no tablespace on another volume measured better (8 kB random read p99 270 us on pg_default over 1 probe, the best elsewhere 3934 us on lab_ext4 over 1)");
        // significantly worse: stays too
        let figures = ByTablespace::from([
            (
                "pg_default".into(),
                reads(volume("/", "/dev/vda1"), 1, &[63.0, 62.0, 64.0]),
            ),
            (
                "lab_xfs".into(),
                reads(volume("/mnt/xfs", "/dev/loop1"), 4, &[75.0, 77.0, 73.0]),
            ),
        ]);
        assert_eq!(
            advise(Purpose::Indexes, &figures, &[], &ctx())
                .target
                .as_deref(),
            Some("pg_default")
        );
        // ties: identical figures, not better: where they are
        let figures = ByTablespace::from([
            (
                "pg_default".into(),
                reads(volume("/", "/dev/vda1"), 1, &[70.0, 70.0, 70.0]),
            ),
            (
                "lab_xfs".into(),
                reads(volume("/mnt/xfs", "/dev/loop1"), 4, &[70.0, 70.0, 70.0]),
            ),
        ]);
        let a = advise(Purpose::Indexes, &figures, &[], &ctx());
        assert_eq!(a.target.as_deref(), Some("pg_default"));
        assert!(a.advice.starts_with(
            "indexes stay on pg_default: no tablespace on another volume measured better"
        ));
        // two candidates that tie with each other: the first by name is tested
        let figures = ByTablespace::from([
            (
                "pg_default".into(),
                reads(volume("/", "/dev/vda1"), 1, &[75.0, 77.0, 73.0]),
            ),
            (
                "lab_b".into(),
                reads(volume("/mnt/b", "/dev/loop2"), 4, &[63.0, 62.0, 64.0]),
            ),
            (
                "lab_a".into(),
                reads(volume("/mnt/a", "/dev/loop1"), 7, &[63.0, 62.0, 64.0]),
            ),
        ]);
        assert_eq!(
            advise(Purpose::Indexes, &figures, &[], &ctx())
                .target
                .as_deref(),
            Some("lab_a")
        );
    }

    #[test]
    fn temp_files_may_go_to_ram_when_significantly_faster() {
        let figures = ByTablespace::from([
            (
                "pg_default".into(),
                streams(volume("/", "/dev/vda1"), 1, &[800.0, 810.0, 790.0]),
            ),
            (
                "lab_ram".into(),
                streams(
                    Figures {
                        location: Some("/dev/shm/x/PG_15_202209061".into()),
                        ..volume("/dev/shm", "tmpfs")
                    },
                    10,
                    &[22000.0, 21900.0, 22100.0],
                ),
            ),
        ]);
        let mut ctx = ctx();
        ctx.quoted_database = "\"my db\"".into();
        let a = advise(Purpose::Temp, &figures, &[], &ctx);
        assert_eq!(a.target.as_deref(), Some("lab_ram"));
        assert_eq!(
            a.statement.as_deref(),
            Some("ALTER DATABASE \"my db\" SET temp_tablespaces = 'lab_ram'")
        );
        assert!(a.advice.starts_with("temp files on lab_ram: the best sequential read + write throughput of the tablespaces on another volume than pg_default, significantly better; evidence: probes only"), "{}", a.advice);
        // volatile storage: what a reboot does to it, and the remedy
        assert!(a.advice.contains(" Beware: lab_ram is tmpfs at /dev/shm, which a reboot empties, its folder /dev/shm/x/PG_15_202209061 included, and PostgreSQL does not make it again: until someone does, CREATE TEMP TABLE fails and so does every parallel query that spills"), "{}", a.advice);
        assert!(a
            .advice
            .ends_with("(systemd-tmpfiles: d /dev/shm/x/PG_15_202209061 0700 postgres postgres), and size it for the largest sort or hash that spills: it is RAM."), "{}", a.advice);
        // each repetition pairs a read with a write: both ids named
        assert_eq!(a.evidence["probes"], json!([10, 110, 11, 111, 12, 112]));
        // one pair each: cannot tell, and the call measures both workloads
        let figures = ByTablespace::from([
            (
                "pg_default".into(),
                streams(volume("/", "/dev/vda1"), 1, &[800.0]),
            ),
            (
                "lab_ram".into(),
                streams(volume("/dev/shm", "tmpfs"), 10, &[22000.0]),
            ),
        ]);
        let a = advise(Purpose::Temp, &figures, &[], &ctx);
        assert_eq!(a.target, None);
        assert!(a.advice.starts_with("cannot tell yet whether temp files would be better on lab_ram (sequential read + write throughput 22000 MiB/s over 1 probe) than where they are, on pg_default (800 MiB/s over 1 probe)"), "{}", a.advice);
        assert!(a
            .statement
            .unwrap()
            .contains("unnest('{seqread,seqwrite}'::text[]) AS w"));
    }

    #[test]
    fn an_experiment_that_won_decides_first() {
        let layouts = vec![
            (
                "base".to_string(),
                json!({"tables": "lab_disk", "indexes": "lab_disk", "temp": null}),
            ),
            (
                "fast".to_string(),
                json!({"tables": "lab_disk", "indexes": "lab_ram", "temp": null}),
            ),
            (
                "slow".to_string(),
                json!({"tables": "lab_disk", "indexes": "lab_xfs", "temp": null}),
            ),
        ];
        let cell = |layout: &str, pct: f64, significant: bool| Cell {
            layout: layout.into(),
            fillfactor: 100,
            clients: 8,
            improvement_pct: Some(pct),
            p_value: Some(if significant { 0.001 } else { 0.3 }),
            significant: Some(significant),
            ..Cell::default()
        };
        let e = Experiment {
            id: 7,
            name: "ix".into(),
            layouts,
            sequential: false,
            cells: vec![
                cell("base", 0.0, false),
                cell("fast", 20.0, true),
                cell("slow", 40.0, false),
            ],
        };
        let a = advise(
            Purpose::Indexes,
            &ByTablespace::new(),
            std::slice::from_ref(&e),
            &ctx(),
        );
        assert_eq!(
            a.target.as_deref(),
            Some("lab_ram"),
            "the significant win, not the larger noise"
        );
        assert_eq!(a.expected_gain.as_deref(), Some("TPS +20.0 % (Welch p = 0.0010) at 8 clients, fillfactor 100, in experiment 7 \"ix\""));
        // temp was the same in every layout: the probes decide
        assert!(advise(
            Purpose::Temp,
            &ByTablespace::new(),
            std::slice::from_ref(&e),
            &ctx()
        )
        .advice
        .starts_with("nothing measured yet"));

        // a sequential experiment: its decision, not the fixed-sample p of
        // runs that stopped early. "fast" is only open (p 0.001 after
        // optional stopping proves nothing); "slow" was decided different
        let mut seq = e.clone();
        let decided = |c: &mut Cell, d: Decision, lo: f64, hi: f64| {
            c.decision = Some(d);
            c.decided_after = Some(3);
            c.seq_ci_low_pct = Some(lo);
            c.seq_ci_high_pct = Some(hi);
        };
        decided(&mut seq.cells[1], Decision::Open, -2.0, 45.0);
        decided(&mut seq.cells[2], Decision::Different, 12.0, 70.0);
        let a = advise(
            Purpose::Indexes,
            &ByTablespace::new(),
            &[seq.clone()],
            &ctx(),
        );
        assert_eq!(a.target.as_deref(), Some("lab_xfs"), "{a:?}");
        assert_eq!(a.expected_gain.as_deref(), Some("TPS +40.0 % (sequential: different after 3 repetitions, repeated 95 % CI +12.0 to +70.0 %) at 8 clients, fillfactor 100, in experiment 7 \"ix\""));
        assert_eq!(a.evidence["decision"], "different");
        // different, but slower: no win; equivalent: no win
        decided(&mut seq.cells[2], Decision::Different, -70.0, -12.0);
        decided(&mut seq.cells[1], Decision::Equivalent, -2.0, 2.0);
        let a = advise(Purpose::Indexes, &ByTablespace::new(), &[seq], &ctx());
        assert_ne!(a.target.as_deref(), Some("lab_xfs"));
        assert_ne!(a.target.as_deref(), Some("lab_ram"));

        // a layout that also changed its sessions' settings may have won
        // by them: its win is no evidence for where it put the indexes
        let mut confounded = e.clone();
        confounded.layouts[1].1["settings"] = json!([["synchronous_commit", "off"]]);
        let a = advise(
            Purpose::Indexes,
            &ByTablespace::new(),
            &[confounded],
            &ctx(),
        );
        assert_ne!(a.target.as_deref(), Some("lab_ram"), "{a:?}");
    }
}
