//! The statistics of an experiment's report: per (layout, fillfactor,
//! clients) cell, the TPS of its measured runs summarised (mean, standard
//! deviation, Student t 95 % interval), compared with the baseline layout's
//! cell at the same fillfactor and clients (improvement in percent, Welch's
//! t-test), and a bar scaled to the best cell. Pure: the SQL side reads the
//! runs and pools the latency histograms.

use super::stats::{bar, improvement_pct, summarize, welch};

/// Width of the bar of the best cell, in characters.
pub const BAR_WIDTH: usize = 30;

/// p below this: the difference is called significant.
pub const ALPHA: f64 = 0.05;

/// One cell's measured runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub layout: String,
    pub fillfactor: i32,
    pub clients: i32,
    /// TPS of each measured run (warm-ups excluded)
    pub tps: Vec<f64>,
}

/// What the report says about one cell. Figures that cannot be known (a
/// CI from one run, a test against a baseline without runs) are None.
#[derive(Debug, Clone, PartialEq)]
pub struct CellStats {
    pub runs: usize,
    pub tps_mean: Option<f64>,
    pub tps_stddev: Option<f64>,
    pub tps_ci95_low: Option<f64>,
    pub tps_ci95_high: Option<f64>,
    /// against the baseline's mean; 0 for the baseline itself
    pub improvement_pct: Option<f64>,
    /// Welch's two-sided p; None for the baseline itself and with fewer
    /// than two runs on either side
    pub p_value: Option<f64>,
    pub significant: Option<bool>,
    pub bar: String,
}

/// The statistics of every cell, in the order given; `baseline` names the
/// layout the others are compared with.
pub fn compare(cells: &[Cell], baseline: &str) -> Vec<CellStats> {
    let summaries: Vec<_> = cells.iter().map(|c| summarize(&c.tps)).collect();
    let best = summaries
        .iter()
        .flatten()
        .map(|s| s.mean)
        .fold(0.0_f64, f64::max);
    cells
        .iter()
        .zip(&summaries)
        .map(|(cell, summary)| {
            let base = cells.iter().zip(&summaries).find(|(b, _)| {
                b.layout == baseline && b.fillfactor == cell.fillfactor && b.clients == cell.clients
            });
            let is_baseline = cell.layout == baseline;
            let (improvement, p_value) = match (summary, base) {
                (Some(_), Some(_)) if is_baseline => (Some(0.0), None),
                (Some(s), Some((b, Some(bs)))) => (
                    improvement_pct(bs.mean, s.mean),
                    welch(&b.tps, &cell.tps)
                        .map(|w| w.p_value)
                        .filter(|p| p.is_finite()),
                ),
                _ => (None, None),
            };
            CellStats {
                runs: cell.tps.len(),
                tps_mean: summary.as_ref().map(|s| s.mean),
                tps_stddev: summary.as_ref().and_then(|s| s.stddev),
                tps_ci95_low: summary.as_ref().and_then(|s| s.ci95_low),
                tps_ci95_high: summary.as_ref().and_then(|s| s.ci95_high),
                improvement_pct: improvement,
                p_value,
                significant: p_value.map(|p| p < ALPHA),
                bar: summary
                    .as_ref()
                    .map(|s| bar(s.mean, best, BAR_WIDTH))
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// What a run observed of pgbench's relations at one moment (its start or
/// its end), read from pg_class: each table's and each index's tablespace,
/// and pgbench_accounts' fillfactor (from reloptions; 100 when unset).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Observation {
    pub tables: std::collections::BTreeMap<String, String>,
    pub indexes: std::collections::BTreeMap<String, String>,
    pub fillfactor: Option<i32>,
}

/// What a run of an experiment's cell should have observed: its layout's
/// tablespaces, the fillfactor of the cell, and each declared session
/// setting as the server spells the declared value (name, value).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expected {
    pub tables: Option<String>,
    pub indexes: Option<String>,
    pub fillfactor: Option<i32>,
    pub settings: Vec<(String, String)>,
}

/// Why a run's observations disagree with each other or with what its cell
/// should have (None: they agree, and the run may be pooled). `settings`
/// holds what its pgbench sessions ran with. A run whose start and end
/// differ measured two states, and is never pooled either.
pub fn disagreement(
    expected: &Expected,
    start: &Observation,
    end: &Observation,
    settings: &serde_json::Value,
) -> Option<String> {
    let mut why = Vec::new();
    for (when, o) in [("start", start), ("end", end)] {
        for (part, rels, want) in [
            ("tables", &o.tables, &expected.tables),
            ("indexes", &o.indexes, &expected.indexes),
        ] {
            if let Some(want) = want {
                for (rel, ts) in rels {
                    if ts != want {
                        why.push(format!(
                            "at its {when} {rel} was in {ts}, where the layout puts {part} in {want}"
                        ));
                    }
                }
            }
        }
        if let (Some(want), Some(have)) = (expected.fillfactor, o.fillfactor) {
            if want != have {
                why.push(format!(
                    "at its {when} pgbench_accounts had fillfactor {have}, the cell's is {want}"
                ));
            }
        }
    }
    for (part, s, e) in [
        ("tables", &start.tables, &end.tables),
        ("indexes", &start.indexes, &end.indexes),
    ] {
        for (rel, ts) in s {
            match e.get(rel) {
                None => why.push(format!("{rel} was gone at its end")),
                Some(te) if te != ts => why.push(format!(
                    "{rel} was moved from {ts} to {te} while it ran"
                )),
                _ => {}
            }
        }
        for rel in e.keys().filter(|r| !s.contains_key(*r)) {
            why.push(format!("{rel} ({part}) appeared while it ran"));
        }
    }
    if start.fillfactor != end.fillfactor {
        why.push(format!(
            "pgbench_accounts' fillfactor changed from {} to {} while it ran",
            start.fillfactor.map_or("none".into(), |f| f.to_string()),
            end.fillfactor.map_or("none".into(), |f| f.to_string())
        ));
    }
    for (name, want) in &expected.settings {
        let have = settings.get(name).and_then(|v| v.as_str());
        if have != Some(want.as_str()) {
            why.push(format!(
                "its sessions ran with {name} = {}, the layout sets {want}",
                have.unwrap_or("(unread)")
            ));
        }
    }
    // one reason once (a relation out of place at start and end says both)
    why.dedup();
    (!why.is_empty()).then(|| why.join("; "))
}

/// Where pgbench's relations are, said from what was observed: `placed`
/// is what was seen right after `layout` was applied (None: no layout was
/// applied completely), `now` what is seen now. A relation moved (or
/// gone) since is named: the sentence never claims a placement that no
/// longer holds.
pub fn placement_sentence(layout: Option<&str>, placed: Option<&Observation>, now: &Observation) -> String {
    let (Some(layout), Some(placed)) = (layout, placed) else {
        return "as pgbench -i left them or as a move left them (storlab.layout() shows where)".into();
    };
    let mut since = Vec::new();
    for (was, is) in [(&placed.tables, &now.tables), (&placed.indexes, &now.indexes)] {
        for (rel, ts) in was {
            match is.get(rel) {
                None => since.push(format!("{rel} is gone")),
                Some(t) if t != ts => since.push(format!("{rel} was moved to {t}")),
                _ => {}
            }
        }
    }
    if since.is_empty() {
        format!("as layout {layout}")
    } else {
        format!("as layout {layout} placed them, except that since then {}", since.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placement_is_claimed_only_while_it_holds() {
        let mut placed = Observation::default();
        placed.tables.insert("pgbench_accounts".into(), "lab_disk".into());
        placed.indexes.insert("pgbench_accounts_pkey".into(), "lab_ram".into());
        assert_eq!(placement_sentence(Some("d"), Some(&placed), &placed), "as layout d");
        let mut now = placed.clone();
        now.tables.insert("pgbench_accounts".into(), "lab_xfs".into());
        let s = placement_sentence(Some("d"), Some(&placed), &now);
        assert!(s.contains("pgbench_accounts was moved to lab_xfs"), "{s}");
        assert!(!s.ends_with("as layout d"), "{s}");
        let s = placement_sentence(Some("d"), None, &now);
        assert!(!s.contains("layout d"), "{s}");
    }

    fn cell(layout: &str, clients: i32, tps: &[f64]) -> Cell {
        Cell {
            layout: layout.into(),
            fillfactor: 100,
            clients,
            tps: tps.to_vec(),
        }
    }

    fn close(a: Option<f64>, b: f64, tol: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() <= tol)
    }

    // Expected figures computed independently with SciPy:
    //   a = [100, 110, 105]; b = [120, 125, 130]
    //   numpy.mean(a) 105, numpy.std(a, ddof=1) 5
    //   scipy.stats.t.interval(0.95, 2, loc=105, scale=scipy.stats.sem(a))
    //     = (92.579311, 117.420689)
    //   scipy.stats.ttest_ind(b, a, equal_var=False).pvalue = 0.0080499 (t 4.899, df 4)
    //   100 * (125 - 105) / 105 = 19.047619
    #[test]
    fn baseline_and_challenger() {
        let cells = vec![
            cell("a", 8, &[100.0, 110.0, 105.0]),
            cell("b", 8, &[120.0, 125.0, 130.0]),
        ];
        let r = compare(&cells, "a");
        assert_eq!(r[0].runs, 3);
        assert!(close(r[0].tps_mean, 105.0, 1e-9));
        assert!(close(r[0].tps_stddev, 5.0, 1e-9));
        assert!(close(r[0].tps_ci95_low, 92.579311, 1e-5));
        assert!(close(r[0].tps_ci95_high, 117.420689, 1e-5));
        assert_eq!(r[0].improvement_pct, Some(0.0));
        assert_eq!(r[0].p_value, None);
        assert_eq!(r[0].significant, None);
        assert!(close(r[1].improvement_pct, 19.047619, 1e-5));
        assert!(close(r[1].p_value, 0.0080499, 1e-6));
        assert_eq!(r[1].significant, Some(true));
        // the best cell has the whole bar, the other its share
        assert_eq!(r[1].bar.chars().count(), BAR_WIDTH);
        assert_eq!(r[0].bar, bar(105.0, 125.0, BAR_WIDTH));
    }

    #[test]
    fn one_run_has_no_interval_and_no_test() {
        let cells = vec![cell("a", 8, &[100.0]), cell("b", 8, &[90.0])];
        let r = compare(&cells, "a");
        assert_eq!(r[1].tps_stddev, None);
        assert_eq!(r[1].tps_ci95_low, None);
        assert_eq!(r[1].p_value, None);
        assert_eq!(r[1].significant, None);
        assert!(close(r[1].improvement_pct, -10.0, 1e-9));
    }

    #[test]
    fn compared_within_the_same_clients_only() {
        let cells = vec![
            cell("a", 1, &[10.0, 11.0]),
            cell("a", 8, &[100.0, 101.0]),
            cell("b", 1, &[20.0, 22.0]),
            cell("b", 8, &[100.0, 101.0]),
        ];
        let r = compare(&cells, "a");
        assert!(close(r[2].improvement_pct, 100.0, 1e-9));
        assert!(close(r[3].improvement_pct, 0.0, 1e-9));
        // equal samples: no evidence of a difference
        assert!(r[3].p_value.is_some_and(|p| p > 0.99));
        assert_eq!(r[3].significant, Some(false));
    }

    #[test]
    fn a_baseline_without_runs_leaves_the_comparison_unknown() {
        let cells = vec![cell("a", 8, &[]), cell("b", 8, &[100.0, 110.0])];
        let r = compare(&cells, "a");
        assert_eq!(r[0].tps_mean, None);
        assert_eq!(r[0].improvement_pct, None);
        assert_eq!(r[0].bar, "");
        assert_eq!(r[1].improvement_pct, None);
        assert_eq!(r[1].p_value, None);
    }

    fn obs(tables: &str, indexes: &str, ff: i32) -> Observation {
        Observation {
            tables: [("pgbench_accounts", tables), ("pgbench_history", tables)]
                .into_iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            indexes: [("pgbench_accounts_pkey".to_string(), indexes.to_string())]
                .into_iter()
                .collect(),
            fillfactor: Some(ff),
        }
    }

    #[test]
    fn observations_that_agree_are_pooled() {
        let want = Expected {
            tables: Some("disk".into()),
            indexes: Some("ram".into()),
            fillfactor: Some(100),
            settings: vec![("synchronous_commit".into(), "off".into())],
        };
        let s = serde_json::json!({"synchronous_commit": "off", "work_mem": "4MB"});
        let o = obs("disk", "ram", 100);
        assert_eq!(disagreement(&want, &o, &o, &s), None);
    }

    #[test]
    fn a_run_whose_observations_disagree_says_why() {
        let want = Expected {
            tables: Some("disk".into()),
            indexes: Some("ram".into()),
            fillfactor: Some(100),
            settings: vec![("synchronous_commit".into(), "off".into())],
        };
        let s = serde_json::json!({"synchronous_commit": "off"});
        // tables where another layout left them
        let why = disagreement(&want, &obs("ram", "ram", 100), &obs("ram", "ram", 100), &s).unwrap();
        assert!(why.contains("at its start pgbench_accounts was in ram, where the layout puts tables in disk"), "{why}");
        // fillfactor changed during the run (ALTER TABLE ... SET (fillfactor=50))
        let why = disagreement(&want, &obs("disk", "ram", 100), &obs("disk", "ram", 50), &s).unwrap();
        assert!(why.contains("at its end pgbench_accounts had fillfactor 50, the cell's is 100"), "{why}");
        assert!(why.contains("changed from 100 to 50 while it ran"), "{why}");
        // the next run starts from it
        let why = disagreement(&want, &obs("disk", "ram", 50), &obs("disk", "ram", 50), &s).unwrap();
        assert!(why.contains("at its start pgbench_accounts had fillfactor 50"), "{why}");
        // a setting its sessions did not run with
        let on = serde_json::json!({"synchronous_commit": "on"});
        let o = obs("disk", "ram", 100);
        let why = disagreement(&want, &o, &o, &on).unwrap();
        assert_eq!(why, "its sessions ran with synchronous_commit = on, the layout sets off");
        // a table dropped while it ran
        let mut end = o.clone();
        end.tables.remove("pgbench_history");
        let why = disagreement(&want, &o, &end, &s).unwrap();
        assert_eq!(why, "pgbench_history was gone at its end");
        // with no expectation (a bench_start run), only start against end
        let none = Expected::default();
        assert_eq!(disagreement(&none, &obs("x", "y", 70), &obs("x", "y", 70), &s), None);
        let why = disagreement(&none, &obs("x", "y", 70), &obs("x", "z", 70), &s).unwrap();
        assert_eq!(why, "pgbench_accounts_pkey was moved from y to z while it ran");
    }
}
