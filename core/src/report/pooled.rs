//! Which measured runs of an experiment its report pools. A run is left
//! out when its job stored a reason (`bench_runs.invalid`: what it
//! observed disagrees with its layout), when its fillfactor is none of the
//! experiment's, and when it was measured under other conditions than the
//! runs before it: other server settings, or another set of pgbench's
//! relations (an index created mid-experiment).
//!
//! Which run of a disagreeing experiment is the odd one: the later. The
//! runs are judged in the order they were measured, each against the
//! experiment's first pooled run (and, for a setting a layout declares,
//! against its layout's first pooled run, since layouts differ in it by
//! design). Runs of different cells are compared with each other, so a
//! condition must hold across the whole experiment, not only within a cell;
//! and a run's verdict depends only on the runs before it, so it never
//! changes as more runs are measured: the job marks it when it is stored,
//! the report finds the same, and a DBA who restores the setting (or drops
//! the index) and resumes gets the odd runs measured again. A majority rule
//! would let a later run flip earlier verdicts, and has no answer for a tie.

use std::collections::{BTreeMap, BTreeSet};

/// A measured run (no warm-up, with a TPS) as stored: what decides whether
/// a report pools it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredRun {
    pub id: i64,
    pub layout: String,
    pub fillfactor: Option<i32>,
    pub clients: i32,
    pub repetition: i32,
    /// The reason stored with it (`bench_runs.invalid`).
    pub invalid: Option<String>,
    /// The settings its sessions ran with (`bench_runs.settings`; None: not
    /// recorded, as by releases before settings were read).
    pub settings: Option<BTreeMap<String, String>>,
    /// pgbench's tables and indexes at its start (`bench_runs.observed`;
    /// None: not recorded).
    pub relations: Option<BTreeSet<String>>,
}

impl StoredRun {
    /// The cell and repetition it measured.
    pub fn slot(&self) -> (Option<i32>, i32, &str, i32) {
        (self.fillfactor, self.repetition, &self.layout, self.clients)
    }
}

/// Why each run is left out of the report, in the order given (the order
/// they were measured: by id); None: pooled. `fillfactors` are the
/// experiment's, `declared` the settings any of its layouts sets (names in
/// lower case).
pub fn left_out(
    runs: &[StoredRun],
    fillfactors: &[i32],
    declared: &BTreeSet<String>,
) -> Vec<Option<String>> {
    let mut out: Vec<Option<String>> = Vec::with_capacity(runs.len());
    for (i, run) in runs.iter().enumerate() {
        if let Some(why) = &run.invalid {
            out.push(Some(why.clone()));
            continue;
        }
        if !run.fillfactor.is_some_and(|f| fillfactors.contains(&f)) {
            out.push(Some(format!(
                "fillfactor {} is none of the experiment's",
                run.fillfactor.map_or("(none)".into(), |f| f.to_string())
            )));
            continue;
        }
        // the references: the first runs judged pooled so far
        let pooled = |p: &dyn Fn(&StoredRun) -> bool| {
            runs[..i]
                .iter()
                .zip(&out)
                .find(|(r, why)| why.is_none() && p(r))
                .map(|(r, _)| r)
        };
        let mut why = Vec::new();
        if let Some(have) = &run.settings {
            let first = pooled(&|r| r.settings.is_some());
            let first_of_layout = pooled(&|r| r.settings.is_some() && r.layout == run.layout);
            for (name, value) in have {
                let (reference, whose) = if declared.contains(name) {
                    (first_of_layout, format!("layout {}'s first", run.layout))
                } else {
                    (first, "the experiment's first".to_string())
                };
                // a setting one of the two did not record is not compared
                let Some(r) = reference else { continue };
                if let Some(want) = r.settings.as_ref().and_then(|s| s.get(name)) {
                    if want != value {
                        why.push(format!(
                            "its sessions ran with {name} = {value}, where run {} ({whose}) ran with {want}",
                            r.id
                        ));
                    }
                }
            }
        }
        if let (Some(have), Some(r)) = (&run.relations, pooled(&|r| r.relations.is_some())) {
            let want = r.relations.as_ref().expect("found by it");
            let extra: Vec<&str> = have.difference(want).map(String::as_str).collect();
            let gone: Vec<&str> = want.difference(have).map(String::as_str).collect();
            if !extra.is_empty() {
                why.push(format!(
                    "at its start there {} {}, which run {} (the experiment's first) did not have",
                    if extra.len() == 1 { "was" } else { "were" },
                    extra.join(", "),
                    r.id
                ));
            }
            if !gone.is_empty() {
                why.push(format!(
                    "at its start {} {} missing, which run {} (the experiment's first) had",
                    gone.join(", "),
                    if gone.len() == 1 { "was" } else { "were" },
                    r.id
                ));
            }
        }
        out.push((!why.is_empty()).then(|| why.join("; ")));
    }
    out
}

/// What an experiment's measured runs amount to: those its report pools,
/// and those left out, told apart by whether their cell and repetition
/// has a pooled run in their place (measured again) or not (a resume
/// measures it again).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub pooled: usize,
    pub replaced: usize,
    pub open: usize,
}

impl Tally {
    /// The sentence an experiment's job `job` ends with: the runs its
    /// report pools, those `measured` in this session, the invalid runs
    /// measured again or left out (and how to measure those again), and
    /// for a sequential experiment `comparisons`: their tally and the
    /// sentence that says how each ended.
    pub fn closing(
        &self,
        job: i64,
        measured: usize,
        comparisons: Option<(String, String)>,
    ) -> String {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let mut left_out = String::new();
        if self.replaced > 0 {
            left_out.push_str(&format!(
                "; {} invalid run{} measured again (bench_runs.invalid says why)",
                self.replaced,
                plural(self.replaced)
            ));
        }
        if self.open > 0 {
            left_out.push_str(&format!(
                "; {} invalid run{} left out (bench_runs.invalid says why): storlab.experiment_resume({job}) measures {} again",
                self.open,
                plural(self.open),
                if self.open == 1 { "it" } else { "them" }
            ));
        }
        let answered = comparisons
            .map(|(tally, sentence)| format!("; comparisons: {tally} ({sentence})"))
            .unwrap_or_default();
        format!(
            "done: {} measured run{} in the report, {measured} measured in this session{left_out}{answered}; storlab.experiment_report({job}) compares them",
            self.pooled,
            plural(self.pooled)
        )
    }
}

/// A run left out is in a pooled run's place when they share repetition,
/// layout and clients, and fillfactor; one whose recorded fillfactor is
/// none of the experiment's `fillfactors` (someone changed it: the cell's
/// was not recorded) is in the place of any of them.
pub fn tally(runs: &[StoredRun], left_out: &[Option<String>], fillfactors: &[i32]) -> Tally {
    let filled: Vec<_> = runs
        .iter()
        .zip(left_out)
        .filter(|(_, why)| why.is_none())
        .map(|(r, _)| r.slot())
        .collect();
    let mut t = Tally::default();
    for (r, why) in runs.iter().zip(left_out) {
        let (ff, repetition, layout, clients) = r.slot();
        let foreign = !ff.is_some_and(|f| fillfactors.contains(&f));
        let replaced = filled.iter().any(|&(f, rep, l, c)| {
            (rep, l, c) == (repetition, layout, clients) && (f == ff || foreign)
        });
        match why {
            None => t.pooled += 1,
            Some(_) if replaced => t.replaced += 1,
            Some(_) => t.open += 1,
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: i64, layout: &str, repetition: i32, settings: &[(&str, &str)]) -> StoredRun {
        StoredRun {
            id,
            layout: layout.into(),
            fillfactor: Some(100),
            clients: 8,
            repetition,
            invalid: None,
            settings: Some(
                settings
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            relations: Some(
                ["pgbench_accounts", "pgbench_accounts_pkey"]
                    .map(String::from)
                    .into(),
            ),
        }
    }

    fn declared(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_setting_changed_mid_experiment_leaves_the_later_runs_out() {
        let on = [("synchronous_commit", "on"), ("work_mem", "4MB")];
        let off = [("synchronous_commit", "off"), ("work_mem", "4MB")];
        let runs = vec![
            run(1, "a", 1, &on),
            run(2, "b", 1, &on),
            run(3, "b", 2, &off),
            run(4, "a", 2, &off),
        ];
        let why = left_out(&runs, &[100], &declared(&[]));
        assert_eq!(why[0], None);
        assert_eq!(why[1], None);
        assert_eq!(
            why[2].as_deref(),
            Some("its sessions ran with synchronous_commit = off, where run 1 (the experiment's first) ran with on")
        );
        assert!(why[3].is_some());
        // the first run of each layout is no reference for what every
        // layout shares: b's second run is compared with run 1, not run 2
        let t = tally(&runs, &why, &[100]);
        assert_eq!(
            t,
            Tally {
                pooled: 2,
                replaced: 0,
                open: 2
            }
        );
    }

    #[test]
    fn a_setting_a_layout_declares_differs_between_layouts_by_design() {
        let runs = vec![
            run(1, "a", 1, &[("work_mem", "4MB")]),
            run(2, "b", 1, &[("work_mem", "64MB")]),
            run(3, "b", 2, &[("work_mem", "64MB")]),
            run(4, "a", 2, &[("work_mem", "4MB")]),
            // the server's default changed under layout a, which does not set it
            run(5, "a", 3, &[("work_mem", "8MB")]),
        ];
        let why = left_out(&runs, &[100], &declared(&["work_mem"]));
        assert_eq!(&why[..4], &[None, None, None, None]);
        assert_eq!(
            why[4].as_deref(),
            Some(
                "its sessions ran with work_mem = 8MB, where run 1 (layout a's first) ran with 4MB"
            )
        );
    }

    #[test]
    fn an_index_created_mid_experiment_leaves_the_later_runs_out() {
        let mut runs = vec![
            run(1, "a", 1, &[]),
            run(2, "b", 1, &[]),
            run(3, "b", 2, &[]),
        ];
        runs[2]
            .relations
            .as_mut()
            .unwrap()
            .insert("pgbench_accounts_abalance_idx".into());
        let mut gone = run(4, "a", 2, &[]);
        gone.relations = Some(["pgbench_accounts".to_string()].into());
        runs.push(gone);
        let why = left_out(&runs, &[100], &declared(&[]));
        assert_eq!(why[..2], [None, None]);
        assert_eq!(
            why[2].as_deref(),
            Some("at its start there was pgbench_accounts_abalance_idx, which run 1 (the experiment's first) did not have")
        );
        assert_eq!(
            why[3].as_deref(),
            Some("at its start pgbench_accounts_pkey was missing, which run 1 (the experiment's first) had")
        );
    }

    #[test]
    fn stored_reasons_and_unrecorded_conditions() {
        let mut first = run(1, "a", 1, &[("fsync", "on")]);
        first.invalid =
            Some("at its start pgbench_accounts had fillfactor 50, the cell's is 100".into());
        let mut old = run(2, "a", 1, &[]);
        old.settings = None;
        old.relations = None;
        let mut stray = run(4, "a", 2, &[("fsync", "on")]);
        stray.fillfactor = Some(70);
        let runs = vec![
            first,
            old,
            // the first with settings that is pooled: the reference
            run(3, "b", 1, &[("fsync", "off")]),
            stray,
            // a setting the reference did not record is not compared
            run(5, "a", 2, &[("fsync", "off"), ("io_method", "worker")]),
        ];
        let why = left_out(&runs, &[100], &declared(&[]));
        assert_eq!(
            why[0].as_deref(),
            Some("at its start pgbench_accounts had fillfactor 50, the cell's is 100")
        );
        assert_eq!(why[1], None, "nothing recorded: nothing to disagree with");
        assert_eq!(why[2], None);
        assert_eq!(
            why[3].as_deref(),
            Some("fillfactor 70 is none of the experiment's")
        );
        assert_eq!(why[4], None);
    }

    // After experiment_resume measured again the three runs a first session
    // left invalid, all six cells have a pooled run: none is open.
    #[test]
    fn invalid_runs_measured_again_are_counted_apart() {
        let mut runs: Vec<StoredRun> = (1..=6)
            .map(|i| {
                run(
                    i,
                    if i % 2 == 0 { "a" } else { "b" },
                    ((i + 1) / 2) as i32,
                    &[],
                )
            })
            .collect();
        for r in &mut runs[3..] {
            r.invalid = Some("its job's worker exited before the run finished".into());
        }
        for i in 3..6 {
            let mut again = runs[i].clone();
            again.id += 10;
            again.invalid = None;
            runs.push(again);
        }
        let why = left_out(&runs, &[100], &declared(&[]));
        assert_eq!(
            tally(&runs, &why, &[100]),
            Tally {
                pooled: 6,
                replaced: 3,
                open: 0
            }
        );
        // a run that found pgbench_accounts at fillfactor 50 (someone set
        // it) was of a cell at 100: measured again there
        runs[5].fillfactor = Some(50);
        runs[5].invalid =
            Some("at its start pgbench_accounts had fillfactor 50, the cell's is 100".into());
        let why = left_out(&runs, &[100], &declared(&[]));
        assert_eq!(tally(&runs, &why, &[100]).replaced, 3);
        // while one at another of the experiment's fillfactors is not
        runs[5].fillfactor = Some(70);
        let why = left_out(&runs, &[100, 70], &declared(&[]));
        assert_eq!(
            tally(&runs, &why, &[100, 70]),
            Tally {
                pooled: 6,
                replaced: 2,
                open: 1
            }
        );
    }

    #[test]
    fn a_closing_counts_the_pooled_runs() {
        let t = Tally {
            pooled: 1,
            replaced: 0,
            open: 0,
        };
        assert_eq!(
            t.closing(7, 1, None),
            "done: 1 measured run in the report, 1 measured in this session; storlab.experiment_report(7) compares them"
        );
        let t = Tally { pooled: 0, ..t };
        assert_eq!(
            t.closing(7, 0, None),
            "done: 0 measured runs in the report, 0 measured in this session; storlab.experiment_report(7) compares them"
        );
    }

    #[test]
    fn a_closing_says_which_invalid_runs_were_measured_again() {
        let one = Tally {
            pooled: 4,
            replaced: 1,
            open: 0,
        };
        assert_eq!(
            one.closing(7, 5, None),
            "done: 4 measured runs in the report, 5 measured in this session; 1 invalid run measured again (bench_runs.invalid says why); storlab.experiment_report(7) compares them"
        );
        let two = Tally { replaced: 2, ..one };
        assert!(two
            .closing(7, 6, None)
            .contains("; 2 invalid runs measured again (bench_runs.invalid says why);"));
    }

    #[test]
    fn a_closing_says_how_to_measure_the_runs_left_out() {
        let one = Tally {
            pooled: 3,
            replaced: 1,
            open: 1,
        };
        assert_eq!(
            one.closing(7, 5, None),
            "done: 3 measured runs in the report, 5 measured in this session; 1 invalid run measured again (bench_runs.invalid says why); 1 invalid run left out (bench_runs.invalid says why): storlab.experiment_resume(7) measures it again; storlab.experiment_report(7) compares them"
        );
        let two = Tally {
            replaced: 0,
            open: 2,
            ..one
        };
        assert_eq!(
            two.closing(7, 5, None),
            "done: 3 measured runs in the report, 5 measured in this session; 2 invalid runs left out (bench_runs.invalid says why): storlab.experiment_resume(7) measures them again; storlab.experiment_report(7) compares them"
        );
    }

    #[test]
    fn a_sequential_closing_says_how_its_comparisons_ended() {
        let t = Tally {
            pooled: 2,
            replaced: 0,
            open: 1,
        };
        assert_eq!(
            t.closing(9, 2, Some(("1 decided".into(), "b beat a".into()))),
            "done: 2 measured runs in the report, 2 measured in this session; 1 invalid run left out (bench_runs.invalid says why): storlab.experiment_resume(9) measures it again; comparisons: 1 decided (b beat a); storlab.experiment_report(9) compares them"
        );
    }
}
