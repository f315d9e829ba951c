//! A fillfactor for tables updated like pgbench's: from experiments that
//! compared fillfactors, the one that beat the experiment's highest one
//! significantly (Welch's test on the baseline layout's runs at the same
//! clients), the largest gain, with the space it costs.

use serde_json::{json, Value};

use super::figures::{Cell, Context, Experiment};
use super::{percent, Advice};
use crate::sql_text::ident;
use crate::stats;

/// The call that compares fillfactors.
pub const COMPARE_FILLFACTORS_CALL: &str =
    "SELECT storlab.experiment_start('fillfactor', '{\"here\": {}}', fillfactors => '{100,90,70}')";

/// The fillfactor row.
pub fn advise(experiments: &[Experiment], ctx: &Context) -> Advice {
    let compared_any: Vec<&Experiment> = experiments
        .iter()
        .filter(|e| {
            let mut ffs: Vec<i32> = e.cells.iter().map(|c| c.fillfactor).collect();
            ffs.sort();
            ffs.dedup();
            ffs.len() > 1
        })
        .collect();
    // a sequential experiment stopped when its layouts were decided: its
    // fillfactors' runs are as many as that stop left, and a Welch test on
    // them is not the test of a design (neither fixed nor sequential)
    let compared: Vec<&Experiment> = compared_any
        .iter()
        .copied()
        .filter(|e| !e.sequential)
        .collect();
    if compared.is_empty() {
        let why = if compared_any.is_empty() {
            "no experiment compared fillfactors".to_string()
        } else {
            format!(
                "only sequential experiments compared fillfactors ({}): they stop when their layouts are decided, which is no test of the fillfactors; compare them in a fixed experiment",
                compared_any.iter().map(|e| e.id.to_string()).collect::<Vec<_>>().join(", ")
            )
        };
        return Advice::measure_first("fillfactor", &why, COMPARE_FILLFACTORS_CALL);
    }
    let mut best: Option<(f64, Value, String)> = None;
    for e in &compared {
        let Some((base, _)) = e.layouts.first() else {
            continue;
        };
        let top = e.cells.iter().map(|c| c.fillfactor).max().unwrap_or(100);
        for c in e
            .cells
            .iter()
            .filter(|c| c.layout == *base && c.fillfactor != top)
        {
            let top_cell = e
                .cells
                .iter()
                .find(|x| x.layout == *base && x.fillfactor == top && x.clients == c.clients);
            let (a, b) = (&c.tps, top_cell.map(|t| t.tps.as_slice()).unwrap_or(&[]));
            let (Some(w), Some(sa), Some(sb)) =
                (stats::welch(a, b), stats::summarize(a), stats::summarize(b))
            else {
                continue;
            };
            let (ma, mb) = (sa.mean, sb.mean);
            if !(w.significant(stats::ALPHA, stats::Sides::Two) && ma > mb) {
                continue;
            }
            let Some(gain) = stats::improvement_pct(mb, ma) else {
                continue;
            };
            if best.as_ref().is_some_and(|b| b.0 >= gain) {
                continue;
            }
            let space = |f: fn(&Cell) -> Option<i64>| {
                stats::improvement_pct(f(top_cell?)? as f64, f(c)? as f64)
            };
            let (logical, stored) = (space(|x| x.logical_bytes), space(|x| x.stored_bytes));
            best = Some((
                gain,
                json!({"experiment": e.id, "layout": base, "clients": c.clients, "fillfactor": c.fillfactor,
                       "against_fillfactor": top, "tps_mean": ma, "against_tps_mean": mb, "p_value": w.p_value,
                       "logical_bytes_change_pct": logical, "stored_bytes_change_pct": stored}),
                format!(
                    "TPS {gain:+.1} % (Welch p = {:.4}) at {} clients in experiment {} \"{}\"; space: logical {}, stored {}",
                    w.p_value,
                    c.clients,
                    e.id,
                    e.name,
                    percent(logical),
                    percent(stored)
                ),
            ));
        }
    }
    match best {
        Some((_, evidence, gain)) => {
            let ff = evidence["fillfactor"].as_i64().unwrap_or(0);
            let statement = ctx.pgbench_schema.as_deref().map(|schema| {
                format!(
                    "ALTER TABLE {}.pgbench_accounts SET (fillfactor = {ff})",
                    ident(schema)
                )
            });
            Advice::new(
                "fillfactor",
                Some(&ff.to_string()),
                format!(
                    "fillfactor {ff} for tables updated like pgbench's: it beat {} significantly; it applies to pages written from now on (a rewrite, e.g. VACUUM FULL, repacks the old ones)",
                    evidence["against_fillfactor"]
                ),
                statement,
                Some(gain),
                evidence,
            )
        }
        None => Advice::new(
            "fillfactor",
            None,
            format!(
                "no fillfactor beat the highest one significantly in the experiments that compared them ({}): keep the default",
                compared.iter().map(|e| e.id.to_string()).collect::<Vec<_>>().join(", ")
            ),
            None,
            None,
            json!({"experiments": compared.iter().map(|e| e.id).collect::<Vec<_>>()}),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(layout: &str, fillfactor: i32, tps: &[f64], logical: Option<i64>) -> Cell {
        Cell {
            layout: layout.into(),
            fillfactor,
            clients: 8,
            tps: tps.to_vec(),
            logical_bytes: logical,
            ..Cell::default()
        }
    }

    /// sql/recommend.sql's experiment 9003.
    fn experiment(ff70: &[f64]) -> Experiment {
        Experiment {
            id: 9003,
            name: "advice figures".into(),
            layouts: vec![("base".into(), json!({})), ("fast".into(), json!({}))],
            sequential: false,
            cells: vec![
                cell("base", 100, &[100.0, 110.0, 105.0], Some(1000)),
                cell("fast", 100, &[140.0, 150.0, 145.0], None),
                cell("base", 70, ff70, Some(1400)),
                cell("fast", 70, &[150.0, 155.0, 160.0], None),
            ],
        }
    }

    #[test]
    fn a_sequential_experiments_fillfactors_are_no_evidence() {
        // its stop was decided by the layouts: a Welch test on the
        // fillfactors' runs it happened to leave is no test of a design
        let mut e = experiment(&[120.0, 125.0, 130.0]);
        e.sequential = true;
        let a = advise(&[e], &Context::default());
        assert_eq!(a.target, None);
        assert!(
            a.advice
                .contains("only sequential experiments compared fillfactors (9003)"),
            "{}",
            a.advice
        );
        assert_eq!(a.statement.as_deref(), Some(COMPARE_FILLFACTORS_CALL));
    }

    #[test]
    fn no_experiment_compared_fillfactors() {
        let a = advise(&[], &Context::default());
        assert_eq!(
            a.advice,
            "nothing measured yet: no experiment compared fillfactors; measure first"
        );
        assert_eq!(a.statement.as_deref(), Some(COMPARE_FILLFACTORS_CALL));
        // one fillfactor only: nothing compared either
        let mut e = experiment(&[120.0]);
        e.cells.retain(|c| c.fillfactor == 100);
        assert_eq!(
            advise(&[e], &Context::default()).statement.as_deref(),
            Some(COMPARE_FILLFACTORS_CALL)
        );
    }

    #[test]
    fn a_significantly_better_fillfactor_with_its_space() {
        let ctx = Context {
            pgbench_schema: Some("my schema".into()),
            ..Context::default()
        };
        let a = advise(&[experiment(&[120.0, 125.0, 130.0])], &ctx);
        assert_eq!(a.target.as_deref(), Some("70"));
        assert_eq!(
            a.expected_gain.as_deref(),
            Some("TPS +19.0 % (Welch p = 0.0080) at 8 clients in experiment 9003 \"advice figures\"; space: logical +40 %, stored unknown")
        );
        assert_eq!(
            a.statement.as_deref(),
            Some("ALTER TABLE \"my schema\".pgbench_accounts SET (fillfactor = 70)")
        );
        // without pgbench's tables: no statement to run
        let a = advise(&[experiment(&[120.0, 125.0, 130.0])], &Context::default());
        assert_eq!(a.statement, None);
    }

    #[test]
    fn noise_one_run_or_worse_keeps_the_default() {
        for ff70 in [
            &[100.0, 115.0, 104.0][..],
            &[120.0][..],
            &[90.0, 91.0, 92.0][..],
        ] {
            let a = advise(&[experiment(ff70)], &Context::default());
            assert_eq!(a.target, None, "{ff70:?}");
            assert_eq!(a.advice, "no fillfactor beat the highest one significantly in the experiments that compared them (9003): keep the default");
            assert_eq!(a.evidence, json!({"experiments": [9003]}));
        }
    }
}
