//! SVG charts of stored results, drawn with plotters' SVG backend (text is
//! left to the viewer as `<text>` elements: no fonts needed here). Pure:
//! each chart takes plain figures and returns a standalone SVG document;
//! `ops::chart` in the extension reads the figures from storlab's tables.
//!
//! - `experiment`: TPS per layout with 95 % CI whiskers, the improvement
//!   over the baseline written on each bar (marked "n.s." where Welch's
//!   test does not find it significant);
//! - `run`: TPS and latency over time, on two axes;
//! - `percentiles`: a probe's latency against percentile, the percentile
//!   axis in "nines" (50, 90, 99, 99.9 ... evenly apart), latency log-scaled;
//! - `profile`: IOPS against workers, a line per tablespace and workload;
//! - `tablespaces`: the newest standard-suite figures side by side, one
//!   panel per figure.
//!
//! `data` shapes what they draw (series, labels, titles) from stored rows.
//!
//! Colours differ in lightness as well as hue and every line has its own
//! marker, so that series stay apart printed in grey.

mod bars;
pub mod data;
mod lines;
mod style;

pub use bars::{experiment, fillfactor_note, tablespaces, ExperimentBar, TablespaceFigures};
pub use lines::{depths, percentiles, profile, run, ProgressPoint, Series};

/// Why a chart could not be drawn.
#[derive(Debug, PartialEq)]
pub struct ChartError(pub String);

impl std::fmt::Display for ChartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<E: std::error::Error + Send + Sync> From<plotters::drawing::DrawingAreaErrorKind<E>>
    for ChartError
{
    fn from(e: plotters::drawing::DrawingAreaErrorKind<E>) -> Self {
        ChartError(format!("drawing the chart: {e}"))
    }
}

pub type Result<T> = std::result::Result<T, ChartError>;

/// The size of every chart, in SVG user units (pixels).
pub const WIDTH: u32 = 960;
pub const HEIGHT: u32 = 540;

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(svg: &str) -> String {
        // the text of every <text> element, one per line
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                t.split_once('>')
                    .and_then(|(_, rest)| rest.split_once("</text>"))
            })
            .map(|(inner, _)| inner.trim().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn well_formed(svg: &str) {
        // STORLAB_CHART_DIR=/tmp/c cargo test ... chart: keep them to look at
        if let Ok(dir) = std::env::var("STORLAB_CHART_DIR") {
            let n = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
            let _ = std::fs::write(format!("{dir}/{n}.svg"), svg);
        }
        assert!(svg.starts_with("<svg"), "{}", &svg[..60.min(svg.len())]);
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    }

    fn bar(
        layout: &str,
        clients: i32,
        tps: f64,
        improvement: Option<f64>,
        significant: Option<bool>,
    ) -> ExperimentBar {
        ExperimentBar {
            layout: layout.into(),
            fillfactor: 100,
            clients,
            tps_mean: Some(tps),
            ci_low: Some(tps * 0.95),
            ci_high: Some(tps * 1.05),
            improvement_pct: improvement,
            significant,
            wal: None,
            ff_improvement_pct: None,
            ff_significant: None,
            decision: None,
            sequential: false,
        }
    }

    #[test]
    fn an_experiment_chart_names_each_bar_and_its_improvement() {
        let bars = vec![
            bar("baseline", 4, 1000.0, Some(0.0), None),
            bar("ram", 4, 1200.0, Some(20.0), Some(true)),
            bar("disk", 4, 1010.0, Some(1.0), Some(false)),
        ];
        let svg = experiment("study 1", &bars).unwrap();
        well_formed(&svg);
        let t = texts(&svg);
        for want in [
            "study 1",
            "TPS",
            "+20.0 %",
            "+1.0 % n.s.",
            "baseline",
            "ram",
            "disk",
        ] {
            assert!(t.contains(want), "{want} missing from:\n{t}");
        }
    }

    #[test]
    fn an_experiment_chart_says_each_fillfactor_against_100_and_where_wal_was() {
        let at =
            |layout: &str, ff: i32, tps: f64, wal: &str, ff_i: Option<f64>, ff_s: Option<bool>| {
                ExperimentBar {
                    fillfactor: ff,
                    wal: Some(wal.into()),
                    ff_improvement_pct: ff_i,
                    ff_significant: ff_s,
                    ..bar(layout, 4, tps, Some(0.0), None)
                }
            };
        let bars = vec![
            at("r6", 100, 1000.0, "lab_r6", None, None),
            at("r1", 100, 1100.0, "lab_r1", None, None),
            at("r6", 70, 1200.0, "lab_r6", Some(20.0), Some(true)),
            at("r1", 70, 1090.0, "lab_r1", Some(-0.9), Some(false)),
        ];
        let t = texts(&experiment("ff", &bars).unwrap());
        for want in [
            "vs ff 100: +20.0 %",
            "vs ff 100: -0.9 % n.s.",
            "r6 (WAL on lab_r6)",
            "r1 (WAL on lab_r1)",
        ] {
            assert!(t.contains(want), "{want} missing from:\n{t}");
        }
        // the same WAL place for every layout: the legend does not repeat it
        let same: Vec<ExperimentBar> = bars
            .iter()
            .cloned()
            .map(|b| ExperimentBar {
                wal: Some("lab_disk".into()),
                ..b
            })
            .collect();
        let t = texts(&experiment("ff", &same).unwrap());
        assert!(!t.contains("WAL on"), "{t}");
        assert_eq!(
            fillfactor_note(&bars[0], Some(100)),
            None,
            "the reference has no note"
        );
    }

    #[test]
    fn a_sequential_experiments_bars_say_their_decision() {
        use crate::sequential::Decision;
        let seq = |layout: &str, i: f64, d: Option<Decision>| ExperimentBar {
            decision: d,
            sequential: true,
            // a fixed-sample "significant" that the stop makes invalid
            ..bar(layout, 4, 1000.0 * (1.0 + i / 100.0), Some(i), Some(true))
        };
        let bars = vec![
            seq("baseline", 0.0, None),
            seq("fast", 40.0, Some(Decision::Different)),
            seq("twin", 1.0, Some(Decision::Equivalent)),
            seq("noisy", 99.4, Some(Decision::Undecided)),
        ];
        let t = texts(&experiment("seq", &bars).unwrap());
        for want in ["+40.0 %", "+1.0 % equivalent", "+99.4 % undecided"] {
            assert!(t.contains(want), "{want} missing from:\n{t}");
        }
        assert!(!t.contains("+40.0 % different"), "{t}");
        let ff = ExperimentBar {
            fillfactor: 70,
            ff_improvement_pct: Some(16.0),
            ff_significant: Some(true),
            ..seq("baseline", 0.0, None)
        };
        assert_eq!(
            fillfactor_note(&ff, Some(100)).as_deref(),
            Some("vs ff 100: +16.0 % untested")
        );
    }

    #[test]
    fn charts_without_figures_are_refused_not_drawn_empty() {
        assert!(experiment("x", &[]).is_err());
        assert!(run("x", &[]).is_err());
        assert!(percentiles("x", &[]).is_err());
        assert!(profile("x", &[]).is_err());
        assert!(tablespaces("x", &[]).is_err());
        let no_tps = vec![ExperimentBar {
            tps_mean: None,
            ..bar("a", 1, 1.0, None, None)
        }];
        assert!(experiment("x", &no_tps).is_err());
    }

    #[test]
    fn a_run_chart_has_two_axes() {
        let p: Vec<ProgressPoint> = (1..=10)
            .map(|t| ProgressPoint {
                t_s: t,
                tps: Some(100.0 + t as f64),
                lat_ms: Some(2.0),
            })
            .collect();
        let svg = run("run 7", &p).unwrap();
        well_formed(&svg);
        let t = texts(&svg);
        for want in ["run 7", "time (s)", "TPS", "latency (ms)"] {
            assert!(t.contains(want), "{want} missing from:\n{t}");
        }
    }

    #[test]
    fn the_percentile_axis_is_labelled_in_nines() {
        let s = Series {
            label: "randread".into(),
            points: vec![
                (50.0, 100.0),
                (90.0, 150.0),
                (99.0, 400.0),
                (99.9, 900.0),
                (99.99, 2000.0),
                (99.999, 5000.0),
            ],
        };
        let svg = percentiles("probe 3", &[s]).unwrap();
        well_formed(&svg);
        let t = texts(&svg);
        for want in ["probe 3", "percentile", "latency (µs)", "99.9", "99.999"] {
            assert!(t.contains(want), "{want} missing from:\n{t}");
        }
        assert!((lines::nines(99.9) - 3.0).abs() < 1e-9);
        assert!((lines::nines(90.0) - 1.0).abs() < 1e-9);
        assert_eq!(lines::percentile_label(3.0), "99.9");
        assert_eq!(lines::percentile_label(0.0), "0");
        assert_eq!(lines::from_log(2.0), "100");
        assert_eq!(lines::from_log(1.8), "63");
        assert_eq!(lines::from_log(0.0), "1.0");
        assert_eq!(lines::from_log(-0.5), "0.3");
    }

    #[test]
    fn a_profile_has_a_legend_entry_per_series() {
        let series = vec![
            Series {
                label: "lab_ram randread".into(),
                points: vec![(1.0, 50_000.0), (4.0, 150_000.0)],
            },
            Series {
                label: "lab_disk randread".into(),
                points: vec![(1.0, 5_000.0), (4.0, 12_000.0)],
            },
        ];
        let svg = profile("profile", &series).unwrap();
        well_formed(&svg);
        let t = texts(&svg);
        for want in [
            "profile",
            "workers",
            "IOPS",
            "lab_ram randread",
            "lab_disk randread",
        ] {
            assert!(t.contains(want), "{want} missing from:\n{t}");
        }
    }

    #[test]
    fn the_tablespaces_chart_has_a_panel_per_figure() {
        let rows = vec![
            TablespaceFigures {
                tablespace: "lab_ram".into(),
                randread_p99_us: Some(20.0),
                wal_commit_p99_us: None,
                seq_mib_s: Some(4000.0),
            },
            TablespaceFigures {
                tablespace: "pg_wal".into(),
                randread_p99_us: None,
                wal_commit_p99_us: Some(900.0),
                seq_mib_s: None,
            },
        ];
        let svg = tablespaces("compared", &rows).unwrap();
        well_formed(&svg);
        let t = texts(&svg);
        for want in [
            "compared",
            "8 kB random read p99 (µs)",
            "WAL commit p99 (µs)",
            "sequential read + write (MiB/s)",
            "lab_ram",
            "pg_wal",
        ] {
            assert!(t.contains(want), "{want} missing from:\n{t}");
        }
    }

    #[test]
    fn titles_are_escaped() {
        let svg = profile(
            "a < b & \"c\"",
            &[Series {
                label: "x<y".into(),
                points: vec![(1.0, 1.0)],
            }],
        )
        .unwrap();
        assert!(svg.contains("a &lt; b &amp;"), "{}", texts(&svg));
        assert!(!svg.contains("x<y"));
    }

    #[test]
    fn control_characters_xml_forbids_never_reach_the_document() {
        let svg = profile(
            "bell\u{1} vtab\u{b} esc\u{1b} end",
            &[Series {
                label: "ts\u{0}x".into(),
                points: vec![(1.0, 1.0)],
            }],
        )
        .unwrap();
        well_formed(&svg);
        let bad: Vec<char> = svg
            .chars()
            .filter(|&c| {
                (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || c == '\u{fffe}' || c == '\u{ffff}'
            })
            .collect();
        assert!(bad.is_empty(), "{bad:?} in the SVG");
        assert!(
            svg.contains("bell\u{fffd} vtab\u{fffd} esc\u{fffd} end"),
            "{}",
            texts(&svg)
        );
    }
}
