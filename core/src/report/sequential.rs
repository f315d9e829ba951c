//! Where a sequential experiment's comparisons stand, from its stored runs:
//! each layout against the baseline at each fillfactor and clients
//! ([`crate::sequential::verdict`]), which runs the job may skip because
//! their comparisons are decided, and the sentence storlab.experiments shows
//! while it runs. Pure: the job and experiment_report read the runs.

use std::collections::BTreeMap;

use crate::request::experiment::{Experiment, Step};
use crate::sequential::{verdict, Decision, Verdict};

/// The measured, valid runs of each (layout, fillfactor, clients) cell, as
/// (repetition, TPS).
pub type Runs = BTreeMap<(String, i32, i32), Vec<(i32, f64)>>;

/// One layout against the baseline at one fillfactor and clients.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub layout: String,
    pub fillfactor: i32,
    pub clients: i32,
    pub verdict: Verdict,
}

/// Every comparison of a sequential experiment (none for a fixed one),
/// looked at up to repetition `done`.
pub fn comparisons(e: &Experiment, runs: &Runs, done: u32) -> Vec<Comparison> {
    let Some(design) = &e.stop else {
        return Vec::new();
    };
    let none = Vec::new();
    let cell =
        |layout: &str, f: i32, c: i32| runs.get(&(layout.to_string(), f, c)).unwrap_or(&none);
    let mut out = Vec::new();
    for &fillfactor in &e.fillfactors {
        for &clients in &e.clients {
            let base = cell(&e.layouts[0].name, fillfactor, clients);
            for layout in &e.layouts[1..] {
                out.push(Comparison {
                    layout: layout.name.clone(),
                    fillfactor,
                    clients,
                    verdict: verdict(
                        design,
                        e.comparisons(),
                        base,
                        cell(&layout.name, fillfactor, clients),
                        done,
                    ),
                });
            }
        }
    }
    out
}

/// Whether the job skips a run: its comparison was decided at an earlier
/// look (for the baseline: every comparison of its fillfactor and
/// clients). `compared` are the comparisons looked at up to the
/// repetition before the step's.
pub fn skip(e: &Experiment, compared: &[Comparison], step: Step) -> bool {
    let Step::Run {
        fillfactor,
        layout,
        clients,
        ..
    } = step
    else {
        return false;
    };
    if e.stop.is_none() {
        return false;
    }
    let mut same = compared
        .iter()
        .filter(|c| c.fillfactor == fillfactor && c.clients == clients);
    if layout == 0 {
        same.all(|c| c.verdict.decision.decided())
    } else {
        let name = &e.layouts[layout].name;
        same.any(|c| &c.layout == name && c.verdict.decision.decided())
    }
}

/// Would the job run anything more: a run it has no valid result for,
/// whose comparison the looks before its repetition leave open? (A
/// finished sequential experiment that stopped when answered has none:
/// resuming it would do nothing.)
pub fn runs_left(e: &Experiment, runs: &Runs) -> bool {
    e.steps().into_iter().any(|step| {
        let Step::Run {
            fillfactor,
            repetition,
            layout,
            clients,
        } = step
        else {
            return false;
        };
        let measured = runs
            .get(&(e.layouts[layout].name.clone(), fillfactor, clients))
            .is_some_and(|r| r.iter().any(|(rep, _)| *rep == repetition));
        !measured && !skip(e, &comparisons(e, runs, repetition as u32 - 1), step)
    })
}

/// The comparisons as storlab.experiments shows them: the open ones
/// first, then the undecided ones, then each decided one with its look,
/// e.g. "open: B at 8 clients; decided: C at 8 clients different after
/// repetition 2".
pub fn sentence(e: &Experiment, compared: &[Comparison]) -> String {
    let name = |c: &Comparison| {
        let plural = if c.clients == 1 { "" } else { "s" };
        let mut s = format!("{} at {} client{plural}", c.layout, c.clients);
        if e.fillfactors.len() > 1 {
            s.push_str(&format!(", fillfactor {}", c.fillfactor));
        }
        s
    };
    let named = |d: Decision| -> Vec<String> {
        compared
            .iter()
            .filter(|c| c.verdict.decision == d)
            .map(name)
            .collect()
    };
    let (open, undecided) = (named(Decision::Open), named(Decision::Undecided));
    let decided: Vec<String> = compared
        .iter()
        .filter(|c| c.verdict.decision.decided())
        .map(|c| {
            format!(
                "{} {} after repetition {}",
                name(c),
                c.verdict.decision.as_str(),
                c.verdict.look.unwrap_or(0)
            )
        })
        .collect();
    let mut parts = Vec::new();
    if !open.is_empty() {
        parts.push(format!("open: {}", open.join(", ")));
    }
    if !undecided.is_empty() {
        parts.push(format!("undecided: {}", undecided.join(", ")));
    }
    if !decided.is_empty() {
        parts.push(format!("decided: {}", decided.join(", ")));
    }
    parts.join("; ")
}

/// The decision experiment_report shows for a comparison: "open" while
/// repetitions are left, "undecided" once none are.
pub fn decision_of(
    compared: &[Comparison],
    layout: &str,
    fillfactor: i32,
    clients: i32,
) -> Option<Verdict> {
    compared
        .iter()
        .find(|c| c.layout == layout && c.fillfactor == fillfactor && c.clients == clients)
        .map(|c| c.verdict)
}

/// The repetitions the runs reach (the highest with any run).
pub fn reached(runs: &Runs) -> u32 {
    runs.values()
        .flatten()
        .map(|(r, _)| (*r).max(0) as u32)
        .max()
        .unwrap_or(0)
}

/// Counts of each decision, for the job's closing line.
pub fn tally(compared: &[Comparison]) -> String {
    let count = |d: Decision| compared.iter().filter(|c| c.verdict.decision == d).count();
    let mut parts = Vec::new();
    for d in [
        Decision::Different,
        Decision::Equivalent,
        Decision::Undecided,
        Decision::Open,
    ] {
        let n = count(d);
        if n > 0 {
            parts.push(format!("{n} {}", d.as_str()));
        }
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::experiment::Args;

    fn experiment(layouts: &[&str], clients: Vec<i32>) -> Experiment {
        let l: serde_json::Map<String, serde_json::Value> = layouts
            .iter()
            .map(|n| (n.to_string(), serde_json::json!({})))
            .collect();
        let layouts = serde_json::Value::Object(l);
        let options =
            serde_json::json!({"stop": "sequential", "max_repetitions": 4, "baseline": "A"});
        Experiment::new(Args {
            name: "seq".into(),
            layouts: &layouts,
            script: "tpcb-like".into(),
            clients,
            jobs: 1,
            duration_us: 10_000_000,
            repetitions: 3,
            warmup_us: 0,
            scale: 1,
            fillfactors: vec![100],
            options: &options,
            max_duration_s: 3600,
        })
        .unwrap()
    }

    fn runs(cells: &[(&str, i32, &[f64])]) -> Runs {
        cells
            .iter()
            .map(|(l, c, tps)| {
                (
                    (l.to_string(), 100, *c),
                    tps.iter()
                        .enumerate()
                        .map(|(i, t)| (i as i32 + 1, *t))
                        .collect(),
                )
            })
            .collect()
    }

    #[test]
    fn decided_layouts_are_skipped_and_the_baseline_runs_while_any_is_open() {
        let e = experiment(&["A", "B", "C"], vec![8]);
        assert_eq!(
            e.repetitions, 4,
            "the maximum is the experiment's repetitions"
        );
        assert_eq!(e.comparisons(), 2);
        let r = runs(&[
            ("A", 8, &[1000.0, 1001.0]),
            ("B", 8, &[500.0, 501.0]),
            ("C", 8, &[1000.0, 1100.0]),
        ]);
        let c = comparisons(&e, &r, 2);
        assert_eq!(c[0].verdict.decision, Decision::Different);
        assert_eq!(c[1].verdict.decision, Decision::Open);
        let step = |layout| Step::Run {
            fillfactor: 100,
            repetition: 3,
            layout,
            clients: 8,
        };
        assert!(!skip(&e, &c, step(0)), "the baseline: C is open");
        assert!(skip(&e, &c, step(1)), "B is decided");
        assert!(!skip(&e, &c, step(2)));
        assert!(!c.iter().all(|c| c.verdict.decision.decided()));
        assert_eq!(
            sentence(&e, &c),
            "open: C at 8 clients; decided: B at 8 clients different after repetition 2"
        );
        assert_eq!(tally(&c), "1 different, 1 open");
        assert_eq!(reached(&r), 2);
        // steps that are not runs are never skipped
        assert!(!skip(&e, &c, Step::Init { fillfactor: 100 }));
    }

    #[test]
    fn runs_are_left_only_where_a_comparison_is_open() {
        let e = experiment(&["A", "B"], vec![8]);
        // decided after 2: nothing left, though 2 of 4 repetitions ran
        let decided = runs(&[("A", 8, &[1000.0, 1001.0]), ("B", 8, &[500.0, 501.0])]);
        assert!(!runs_left(&e, &decided));
        // open after 2 (a cancelled experiment): repetitions 3 and 4 left
        let open = runs(&[("A", 8, &[1000.0, 1100.0]), ("B", 8, &[1050.0, 990.0])]);
        assert!(runs_left(&e, &open));
        // a run of repetition 1 missing (invalid): it is measured again
        let mut hole = decided.clone();
        hole.get_mut(&("B".to_string(), 100, 8)).unwrap().remove(0);
        assert!(runs_left(&e, &hole));
        // undecided at the maximum: nothing left
        let all = runs(&[
            ("A", 8, &[1000.0, 1100.0, 950.0, 1050.0]),
            ("B", 8, &[1020.0, 900.0, 1110.0, 990.0]),
        ]);
        assert!(!runs_left(&e, &all));
    }

    #[test]
    fn a_fixed_experiment_has_no_comparisons_and_skips_nothing() {
        let mut e = experiment(&["A", "B"], vec![8]);
        e.stop = None;
        let r = runs(&[("A", 8, &[1000.0, 1001.0]), ("B", 8, &[500.0, 501.0])]);
        let c = comparisons(&e, &r, 2);
        assert!(c.is_empty());
        assert_eq!(sentence(&e, &c), "");
        assert!(!skip(
            &e,
            &c,
            Step::Run {
                fillfactor: 100,
                repetition: 3,
                layout: 1,
                clients: 8
            }
        ));
    }

    #[test]
    fn undecided_once_the_maximum_is_done() {
        let e = experiment(&["A", "B"], vec![8]);
        let r = runs(&[
            ("A", 8, &[1000.0, 1100.0, 950.0, 1050.0]),
            ("B", 8, &[1020.0, 900.0, 1110.0, 990.0]),
        ]);
        assert_eq!(comparisons(&e, &r, 3)[0].verdict.decision, Decision::Open);
        let c = comparisons(&e, &r, 4);
        assert_eq!(c[0].verdict.decision, Decision::Undecided);
        assert_eq!(sentence(&e, &c), "undecided: B at 8 clients");
        assert_eq!(c[0].verdict.look, Some(4));
        assert_eq!(decision_of(&c, "B", 100, 8), Some(c[0].verdict));
        assert_eq!(decision_of(&c, "A", 100, 8), None);
    }
}
