//! The statistics of an experiment's report: per (layout, fillfactor,
//! clients) cell, the TPS of its measured runs summarised (mean, standard
//! deviation, Student t 95 % interval), compared with the baseline layout's
//! cell at the same fillfactor and clients (improvement in percent, Welch's
//! t-test), and a bar scaled to the best cell. Pure: the SQL side reads the
//! runs and pools the latency histograms.

use crate::stats::{bar, improvement_pct, summarize, welch, Sides, ALPHA};
use serde::{Deserialize, Serialize};

/// Width of the bar of the best cell, in characters.
pub const BAR_WIDTH: usize = 30;

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

/// One sample against another: the improvement of `tps`'s mean over
/// `base`'s, Welch's two-sided p, and whether that p is below [`ALPHA`].
/// The one rule of significance of an experiment's report, for layouts
/// against the baseline and fillfactors against the reference alike.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Versus {
    pub improvement_pct: Option<f64>,
    /// None with fewer than two runs on either side
    pub p_value: Option<f64>,
    pub significant: Option<bool>,
}

pub fn versus(base: &[f64], tps: &[f64]) -> Versus {
    let (Some(b), Some(s)) = (summarize(base), summarize(tps)) else {
        return Versus::default();
    };
    let test = welch(base, tps).filter(|w| w.p_value.is_finite());
    Versus {
        improvement_pct: improvement_pct(b.mean, s.mean),
        p_value: test.map(|w| w.p(Sides::Two)),
        significant: test.map(|w| w.significant(ALPHA, Sides::Two)),
    }
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
            let v = match (summary, base) {
                (Some(_), Some((_, Some(_)))) if is_baseline => Versus {
                    improvement_pct: Some(0.0),
                    ..Versus::default()
                },
                (Some(_), Some((b, Some(_)))) => versus(&b.tps, &cell.tps),
                _ => Versus::default(),
            };
            CellStats {
                runs: cell.tps.len(),
                tps_mean: summary.as_ref().map(|s| s.mean),
                tps_stddev: summary.as_ref().and_then(|s| s.stddev),
                tps_ci95_low: summary.as_ref().and_then(|s| s.ci95_low),
                tps_ci95_high: summary.as_ref().and_then(|s| s.ci95_high),
                improvement_pct: v.improvement_pct,
                p_value: v.p_value,
                significant: v.significant,
                bar: summary
                    .as_ref()
                    .map(|s| bar(s.mean, best, BAR_WIDTH))
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// The fillfactor the others are compared with: 100 (pgbench's and
/// PostgreSQL's default) when the experiment has it, else the largest it
/// has; None with a single fillfactor (nothing to compare).
pub fn reference_fillfactor(fillfactors: &[i32]) -> Option<i32> {
    if fillfactors.len() < 2 {
        return None;
    }
    if fillfactors.contains(&100) {
        Some(100)
    } else {
        fillfactors.iter().copied().max()
    }
}

/// Each cell against the cell of the same layout and clients at the
/// `reference` fillfactor ([`reference_fillfactor`]), by the same rule as
/// layouts against the baseline ([`versus`]). None for the reference's own
/// cells, and for every cell without a reference.
pub fn compare_fillfactors(cells: &[Cell], reference: Option<i32>) -> Vec<Option<Versus>> {
    cells
        .iter()
        .map(|cell| {
            let reference = reference.filter(|r| *r != cell.fillfactor)?;
            let base = cells.iter().find(|b| {
                b.layout == cell.layout && b.clients == cell.clients && b.fillfactor == reference
            })?;
            Some(versus(&base.tps, &cell.tps))
        })
        .collect()
}

/// What a run observed of pgbench's relations at one moment (its start or
/// its end), read from pg_class: each table's and each index's tablespace,
/// and pgbench_accounts' fillfactor (from reloptions; 100 when unset).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub tables: std::collections::BTreeMap<String, String>,
    pub indexes: std::collections::BTreeMap<String, String>,
    pub fillfactor: Option<i32>,
    /// Where pg_wal was (None: it could not be read; runs stored before
    /// storlab recorded it have none either).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal: Option<WalPlace>,
}

/// Where pg_wal is: its folder with links resolved, the filesystem's mount
/// point and type, and a tablespace whose folder is on the same filesystem
/// (same st_dev), if any ([`wal_tablespace`] chooses which).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalPlace {
    pub location: String,
    pub mount_point: String,
    pub fs_type: String,
    pub tablespace: Option<String>,
}

impl WalPlace {
    /// How a report names it: the tablespace sharing its filesystem, else
    /// the mount point.
    pub fn label(&self) -> &str {
        self.tablespace.as_deref().unwrap_or(&self.mount_point)
    }
}

/// Which tablespace names the filesystem pg_wal is on, among those whose
/// folders share it (`sharing`): the one the layout asks for when it is
/// among them; else the first by name of the DBA's own; else pg_default
/// (the data folder); None when none shares it.
pub fn wal_tablespace(sharing: &[String], preferred: Option<&str>) -> Option<String> {
    if let Some(p) = preferred.filter(|p| sharing.iter().any(|s| s == p)) {
        return Some(p.to_string());
    }
    let mut own: Vec<&String> = sharing.iter().filter(|s| !s.starts_with("pg_")).collect();
    own.sort();
    own.first()
        .map(|s| s.to_string())
        .or_else(|| sharing.iter().find(|s| *s == "pg_default").cloned())
        .or_else(|| sharing.first().cloned())
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
    /// The tablespace whose filesystem pg_wal must be on (the layout's `wal`).
    pub wal: Option<String>,
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
        if let Some(want) = &expected.wal {
            match &o.wal {
                None => why.push(format!(
                    "at its {when} where pg_wal was could not be read, and the layout wants it on {want}'s filesystem"
                )),
                Some(w) if w.tablespace.as_deref() != Some(want.as_str()) => why.push(format!(
                    "at its {when} pg_wal was on {} ({}), where the layout wants it on {want}'s filesystem",
                    w.label(),
                    w.location
                )),
                _ => {}
            }
        }
    }
    match (&start.wal, &end.wal) {
        (Some(s), Some(e)) if (&s.location, &s.mount_point) != (&e.location, &e.mount_point) => why
            .push(format!(
                "pg_wal moved from {} ({}) to {} ({}) while it ran",
                s.location, s.mount_point, e.location, e.mount_point
            )),
        (Some(s), None) => why.push(format!(
            "pg_wal was in {} at its start and could not be read at its end",
            s.location
        )),
        _ => {}
    }
    for (part, s, e) in [
        ("tables", &start.tables, &end.tables),
        ("indexes", &start.indexes, &end.indexes),
    ] {
        for (rel, ts) in s {
            match e.get(rel) {
                None => why.push(format!("{rel} was gone at its end")),
                Some(te) if te != ts => {
                    why.push(format!("{rel} was moved from {ts} to {te} while it ran"))
                }
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
pub fn placement_sentence(
    layout: Option<&str>,
    placed: Option<&Observation>,
    now: &Observation,
) -> String {
    let (Some(layout), Some(placed)) = (layout, placed) else {
        return "as pgbench -i left them or as a move left them (storlab.layout() shows where)"
            .into();
    };
    let mut since = Vec::new();
    for (was, is) in [
        (&placed.tables, &now.tables),
        (&placed.indexes, &now.indexes),
    ] {
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
        format!(
            "as layout {layout} placed them, except that since then {}",
            since.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placement_is_claimed_only_while_it_holds() {
        let mut placed = Observation::default();
        placed
            .tables
            .insert("pgbench_accounts".into(), "lab_disk".into());
        placed
            .indexes
            .insert("pgbench_accounts_pkey".into(), "lab_ram".into());
        assert_eq!(
            placement_sentence(Some("d"), Some(&placed), &placed),
            "as layout d"
        );
        let mut now = placed.clone();
        now.tables
            .insert("pgbench_accounts".into(), "lab_xfs".into());
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
            wal: None,
        }
    }

    #[test]
    fn observations_that_agree_are_pooled() {
        let want = Expected {
            tables: Some("disk".into()),
            indexes: Some("ram".into()),
            fillfactor: Some(100),
            settings: vec![("synchronous_commit".into(), "off".into())],
            wal: None,
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
            wal: None,
        };
        let s = serde_json::json!({"synchronous_commit": "off"});
        // tables where another layout left them
        let why =
            disagreement(&want, &obs("ram", "ram", 100), &obs("ram", "ram", 100), &s).unwrap();
        assert!(
            why.contains(
                "at its start pgbench_accounts was in ram, where the layout puts tables in disk"
            ),
            "{why}"
        );
        // fillfactor changed during the run (ALTER TABLE ... SET (fillfactor=50))
        let why =
            disagreement(&want, &obs("disk", "ram", 100), &obs("disk", "ram", 50), &s).unwrap();
        assert!(
            why.contains("at its end pgbench_accounts had fillfactor 50, the cell's is 100"),
            "{why}"
        );
        assert!(why.contains("changed from 100 to 50 while it ran"), "{why}");
        // the next run starts from it
        let why =
            disagreement(&want, &obs("disk", "ram", 50), &obs("disk", "ram", 50), &s).unwrap();
        assert!(
            why.contains("at its start pgbench_accounts had fillfactor 50"),
            "{why}"
        );
        // a setting its sessions did not run with
        let on = serde_json::json!({"synchronous_commit": "on"});
        let o = obs("disk", "ram", 100);
        let why = disagreement(&want, &o, &o, &on).unwrap();
        assert_eq!(
            why,
            "its sessions ran with synchronous_commit = on, the layout sets off"
        );
        // a table dropped while it ran
        let mut end = o.clone();
        end.tables.remove("pgbench_history");
        let why = disagreement(&want, &o, &end, &s).unwrap();
        assert_eq!(why, "pgbench_history was gone at its end");
        // with no expectation (a bench_start run), only start against end
        let none = Expected::default();
        assert_eq!(
            disagreement(&none, &obs("x", "y", 70), &obs("x", "y", 70), &s),
            None
        );
        let why = disagreement(&none, &obs("x", "y", 70), &obs("x", "z", 70), &s).unwrap();
        assert_eq!(
            why,
            "pgbench_accounts_pkey was moved from y to z while it ran"
        );
    }

    fn ff(layout: &str, fillfactor: i32, tps: &[f64]) -> Cell {
        Cell {
            layout: layout.into(),
            fillfactor,
            clients: 8,
            tps: tps.to_vec(),
        }
    }

    #[test]
    fn the_reference_fillfactor_is_100_else_the_largest() {
        assert_eq!(reference_fillfactor(&[70, 100, 50]), Some(100));
        assert_eq!(reference_fillfactor(&[70, 90]), Some(90));
        assert_eq!(reference_fillfactor(&[100]), None);
        assert_eq!(reference_fillfactor(&[70]), None);
    }

    // The figures of baseline_and_challenger (SciPy): [100, 110, 105] at
    // fillfactor 100 against [120, 125, 130] at fillfactor 70.
    #[test]
    fn each_fillfactor_against_the_reference_at_the_same_layout_and_clients() {
        let cells = vec![
            ff("a", 100, &[100.0, 110.0, 105.0]),
            ff("b", 100, &[]),
            ff("a", 70, &[120.0, 125.0, 130.0]),
            ff("b", 70, &[50.0, 60.0]),
            ff("a", 50, &[94.5]),
        ];
        let r = compare_fillfactors(&cells, reference_fillfactor(&[100, 70, 50]));
        assert_eq!(r[0], None, "the reference itself");
        assert_eq!(r[1], None);
        let a70 = r[2].unwrap();
        assert!(close(a70.improvement_pct, 19.047619, 1e-5));
        assert!(close(a70.p_value, 0.0080499, 1e-6));
        assert_eq!(a70.significant, Some(true));
        // b's reference has no runs: nothing known
        assert_eq!(r[3], Some(Versus::default()));
        // one run: the change, no test
        let a50 = r[4].unwrap();
        assert!(close(a50.improvement_pct, -10.0, 1e-9));
        assert_eq!(a50.p_value, None);
        assert_eq!(a50.significant, None);
        // the same rule as layouts against the baseline
        let layouts = compare(
            &[
                ff("a", 100, &[100.0, 110.0, 105.0]),
                ff("c", 100, &[120.0, 125.0, 130.0]),
            ],
            "a",
        );
        assert_eq!(layouts[1].p_value, a70.p_value);
        assert_eq!(layouts[1].significant, a70.significant);
        // one fillfactor: no column to fill
        assert!(compare_fillfactors(&cells[..2], None)
            .iter()
            .all(Option::is_none));
    }

    fn wal(location: &str, ts: Option<&str>) -> WalPlace {
        WalPlace {
            location: location.into(),
            mount_point: location
                .rsplit_once('/')
                .map_or("/", |(m, _)| m)
                .to_string(),
            fs_type: "ext4".into(),
            tablespace: ts.map(String::from),
        }
    }

    #[test]
    fn the_tablespace_named_for_wal_prefers_the_layouts_then_the_dbas() {
        let sharing: Vec<String> = ["pg_default", "pg_global", "lab_z", "lab_disk"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            wal_tablespace(&sharing, Some("lab_z")).as_deref(),
            Some("lab_z")
        );
        assert_eq!(
            wal_tablespace(&sharing, Some("lab_ram")).as_deref(),
            Some("lab_disk")
        );
        assert_eq!(wal_tablespace(&sharing, None).as_deref(), Some("lab_disk"));
        let system: Vec<String> = ["pg_global", "pg_default"].map(String::from).to_vec();
        assert_eq!(wal_tablespace(&system, None).as_deref(), Some("pg_default"));
        assert_eq!(wal_tablespace(&[], Some("lab_disk")), None);
        assert_eq!(wal("/mnt/x/wal", None).label(), "/mnt/x");
        assert_eq!(wal("/mnt/x/wal", Some("t")).label(), "t");
    }

    #[test]
    fn a_run_with_wal_elsewhere_than_its_layout_wants_is_invalid() {
        let s = serde_json::json!({});
        let want = Expected {
            wal: Some("lab_disk".into()),
            ..Expected::default()
        };
        let at = |w: Option<WalPlace>| Observation {
            wal: w,
            ..obs("disk", "disk", 100)
        };
        let here = at(Some(wal("/lab/data/pg_wal", Some("lab_disk"))));
        assert_eq!(disagreement(&want, &here, &here, &s), None);
        let ram = at(Some(wal("/ram/wal", Some("lab_ram"))));
        let why = disagreement(&want, &ram, &ram, &s).unwrap();
        assert!(why.contains("at its start pg_wal was on lab_ram (/ram/wal), where the layout wants it on lab_disk's filesystem"), "{why}");
        let unread = disagreement(&want, &at(None), &at(None), &s).unwrap();
        assert!(
            unread.contains("where pg_wal was could not be read"),
            "{unread}"
        );
        // without a `wal` in its layout, any place will do, but not two
        let none = Expected::default();
        assert_eq!(disagreement(&none, &ram, &ram, &s), None);
        let why = disagreement(&none, &here, &ram, &s).unwrap();
        assert_eq!(
            why,
            "pg_wal moved from /lab/data/pg_wal (/lab/data) to /ram/wal (/ram) while it ran"
        );
        // recorded in `observed`; older runs without it still read back
        let json = serde_json::to_value(&here).unwrap();
        assert_eq!(json["wal"]["tablespace"], "lab_disk");
        let old: Observation = serde_json::from_value(serde_json::json!(
            {"tables": {}, "indexes": {}, "fillfactor": 100}))
        .unwrap();
        assert_eq!(old.wal, None);
    }
}
