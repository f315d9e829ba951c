//! Bar charts: an experiment's cells, and tablespaces side by side.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::style::{
    above, caption_font, colour, frame, headroom, label_font, legend, small_font, svg,
};
use super::{ChartError, Result};
use crate::sequential::Decision;

/// One cell of an experiment's report.
#[derive(Debug, Clone)]
pub struct ExperimentBar {
    pub layout: String,
    pub fillfactor: i32,
    pub clients: i32,
    pub tps_mean: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// against the baseline at the same fillfactor and clients (0 for it)
    pub improvement_pct: Option<f64>,
    /// NULL for the baseline itself, and with one repetition
    pub significant: Option<bool>,
    /// where pg_wal was for its runs (experiment_report's `wal`)
    pub wal: Option<String>,
    /// against the reference fillfactor at the same layout and clients
    /// (NULL for the reference itself, and with one fillfactor)
    pub ff_improvement_pct: Option<f64>,
    pub ff_significant: Option<bool>,
    /// A sequential experiment's decision for this layout (None for its
    /// baseline and in a fixed experiment); `sequential` says which it was
    pub decision: Option<Decision>,
    pub sequential: bool,
}

/// What is written on a bar: the improvement, "n.s." when Welch's test
/// does not find it significant, "baseline" for the baseline. In a
/// sequential experiment its decision says instead ("+1.0 % equivalent",
/// "+99.4 % undecided"; a difference stands alone, as a significant one
/// does): the fixed-sample test is not valid after its stop.
pub fn bar_note(b: &ExperimentBar, is_baseline: bool) -> String {
    if is_baseline {
        return "baseline".into();
    }
    if b.sequential {
        return match (b.improvement_pct, b.decision) {
            (Some(i), Some(Decision::Different)) => format!("{i:+.1} %"),
            (Some(i), Some(d)) => format!("{i:+.1} % {}", d.as_str()),
            (Some(i), None) => format!("{i:+.1} %"),
            (None, _) => String::new(),
        };
    }
    match (b.improvement_pct, b.significant) {
        (Some(i), Some(false)) => format!("{i:+.1} % n.s."),
        (Some(i), _) => format!("{i:+.1} %"),
        (None, _) => String::new(),
    }
}

/// What a bar adds, with several fillfactors, about its own fillfactor: its
/// change against the reference fillfactor (`reference`) at the same
/// layout and clients, "n.s." as in [`bar_note`].
pub fn fillfactor_note(b: &ExperimentBar, reference: Option<i32>) -> Option<String> {
    let reference = reference.filter(|r| *r != b.fillfactor)?;
    let i = b.ff_improvement_pct?;
    // a sequential experiment's fillfactors are outside its design: no test
    let ns = if b.sequential {
        " untested"
    } else if b.ff_significant == Some(false) {
        " n.s."
    } else {
        ""
    };
    Some(format!("vs ff {reference}: {i:+.1} %{ns}"))
}

/// TPS per layout, grouped by (fillfactor, clients), each bar with its 95 %
/// confidence interval and its improvement over the baseline; with several
/// fillfactors, each bar also says its change against the reference
/// fillfactor (100, else the largest); when layouts differ in where pg_wal
/// was, the legend names each layout's WAL place.
pub fn experiment(title: &str, bars: &[ExperimentBar]) -> Result<String> {
    let bars: Vec<&ExperimentBar> = bars.iter().filter(|b| b.tps_mean.is_some()).collect();
    if bars.is_empty() {
        return Err(ChartError(
            "the experiment has no measured runs to chart yet".into(),
        ));
    }
    // layouts keep their colour across groups; the first is the baseline
    let mut layouts: Vec<&str> = Vec::new();
    for b in &bars {
        if !layouts.contains(&b.layout.as_str()) {
            layouts.push(&b.layout);
        }
    }
    let mut groups: Vec<(i32, i32)> = bars.iter().map(|b| (b.fillfactor, b.clients)).collect();
    groups.sort();
    groups.dedup();
    let several_fillfactors = groups.iter().any(|g| g.0 != groups[0].0);
    let mut fillfactors: Vec<i32> = groups.iter().map(|g| g.0).collect();
    fillfactors.dedup();
    let reference = crate::report::experiment::reference_fillfactor(&fillfactors);
    // each layout's WAL place, named in the legend when they differ
    let wal_of = |layout: &str| {
        bars.iter()
            .find(|b| b.layout == layout && b.wal.is_some())
            .and_then(|b| b.wal.clone())
    };
    let mut places: Vec<Option<String>> = layouts.iter().map(|l| wal_of(l)).collect();
    let labels: Vec<String> = {
        let differ = places.windows(2).any(|w| w[0] != w[1]);
        layouts
            .iter()
            .zip(places.drain(..))
            .map(|(l, w)| match w {
                Some(w) if differ => format!("{l} (WAL on {w})"),
                _ => l.to_string(),
            })
            .collect()
    };
    let max = bars
        .iter()
        .map(|b| b.ci_high.or(b.tps_mean).unwrap_or(0.0))
        .fold(0.0, f64::max);
    let n = layouts.len() as f64;

    svg(|root| {
        let mut chart = frame(root, title, 72)
            // room above the bars for their notes and, on the right, the legend
            .build_cartesian_2d(0f64..groups.len() as f64, 0f64..headroom(max) * 1.2)?;
        let group_label = |x: &f64| {
            let g = x.floor() as usize;
            match groups.get(g) {
                Some((ff, c)) if (x - g as f64 - 0.5).abs() < 1e-6 => {
                    let clients = if *c == 1 {
                        "1 client".to_string()
                    } else {
                        format!("{c} clients")
                    };
                    if several_fillfactors {
                        format!("fillfactor {ff}, {clients}")
                    } else {
                        clients
                    }
                }
                _ => String::new(),
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(groups.len() * 2 + 1)
            .x_label_formatter(&group_label)
            .y_desc("TPS (transactions per second)")
            .x_desc(if several_fillfactors {
                "fillfactor and clients"
            } else {
                "clients"
            })
            .axis_desc_style(label_font())
            .label_style(small_font())
            .draw()?;
        for (li, layout) in layouts.iter().enumerate() {
            let colour = colour(li);
            let mine: Vec<&&ExperimentBar> = bars.iter().filter(|b| b.layout == *layout).collect();
            let x0 = |b: &ExperimentBar| {
                let g = groups
                    .iter()
                    .position(|g| *g == (b.fillfactor, b.clients))
                    .unwrap_or(0) as f64;
                g + 0.1 + 0.8 * li as f64 / n
            };
            let width = 0.8 / n;
            chart
                .draw_series(mine.iter().map(|b| {
                    let x = x0(b);
                    Rectangle::new(
                        [
                            (x + width * 0.08, 0.0),
                            (x + width * 0.92, b.tps_mean.unwrap_or(0.0)),
                        ],
                        colour.filled(),
                    )
                }))?
                .label(labels[li].as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 16, y + 6)], colour.filled())
                });
            // the 95 % interval as a whisker: black on a white halo, so that
            // it shows on a dark bar too
            for (pen, halo) in [
                (WHITE.stroke_width(5), true),
                (BLACK.stroke_width(2), false),
            ] {
                let cap = if halo { 0.17 } else { 0.15 };
                chart.draw_series(mine.iter().filter_map(|b| {
                    let (lo, hi) = (b.ci_low?, b.ci_high?);
                    let x = x0(b) + width / 2.0;
                    let w = width * cap;
                    Some(PathElement::new(
                        vec![
                            (x - w, lo),
                            (x + w, lo),
                            (x, lo),
                            (x, hi),
                            (x - w, hi),
                            (x + w, hi),
                        ],
                        pen,
                    ))
                }))?;
            }
            chart.draw_series(mine.iter().map(|b| {
                let top = b.ci_high.or(b.tps_mean).unwrap_or(0.0);
                Text::new(
                    bar_note(b, li == 0),
                    (x0(b) + width / 2.0, top + max * 0.01),
                    above(),
                )
            }))?;
            // the change against the reference fillfactor, a line higher
            chart.draw_series(mine.iter().filter_map(|b| {
                let top = b.ci_high.or(b.tps_mean).unwrap_or(0.0);
                Some(Text::new(
                    fillfactor_note(b, reference)?,
                    (x0(b) + width / 2.0, top + max * 0.07),
                    above(),
                ))
            }))?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        Ok(())
    })
}

/// The newest standard-suite figures of one tablespace (or pg_wal).
#[derive(Debug, Clone, PartialEq)]
pub struct TablespaceFigures {
    pub tablespace: String,
    pub randread_p99_us: Option<f64>,
    pub wal_commit_p99_us: Option<f64>,
    /// sequential read plus write
    pub seq_mib_s: Option<f64>,
}

/// Three panels, one bar per tablespace in each: 8 kB random read p99 and
/// WAL commit p99 (lower is better), sequential throughput (higher is).
pub fn tablespaces(title: &str, rows: &[TablespaceFigures]) -> Result<String> {
    if rows.is_empty() {
        return Err(ChartError(
            "no whole standard suite is stored yet: compare_tablespaces() or profile() measures one".into(),
        ));
    }
    svg(|root| {
        let root = root.titled(title, caption_font())?;
        let panels = root.split_evenly((1, 3));
        let figures: [(&str, fn(&TablespaceFigures) -> Option<f64>); 3] = [
            ("8 kB random read p99 (µs)", |r| r.randread_p99_us),
            ("WAL commit p99 (µs)", |r| r.wal_commit_p99_us),
            ("sequential read + write (MiB/s)", |r| r.seq_mib_s),
        ];
        for (panel, (desc, figure)) in panels.iter().zip(figures) {
            panel_bars(panel, rows, desc, figure)?;
        }
        Ok(())
    })
}

/// Room for the names down the side of a bar panel: about 7 px a character
/// of the small font, at least 90 px and at most half the panel, so that a
/// fleet chart's "server/tablespace" names are not cut at the left edge.
fn name_area(rows: &[TablespaceFigures], panel_width: u32) -> u32 {
    let longest = rows
        .iter()
        .map(|r| r.tablespace.chars().count())
        .max()
        .unwrap_or(0) as u32;
    (longest * 7 + 12).clamp(90, (panel_width / 2).max(90))
}

fn panel_bars(
    area: &DrawingArea<SVGBackend, Shift>,
    rows: &[TablespaceFigures],
    desc: &str,
    figure: fn(&TablespaceFigures) -> Option<f64>,
) -> Result<()> {
    // bars lie across, names down the side: tablespace names are long
    let max = rows.iter().filter_map(figure).fold(0.0, f64::max);
    let n = rows.len();
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(name_area(rows, area.dim_in_pixel().0))
        .caption(desc, label_font())
        .build_cartesian_2d(0f64..headroom(max) * 1.1, 0f64..n as f64)?;
    // the first row at the top
    let name = |y: &f64| {
        let i = y.floor() as usize;
        match rows.get(n.saturating_sub(i + 1)) {
            Some(r) if (y - i as f64 - 0.5).abs() < 1e-6 => r.tablespace.clone(),
            _ => String::new(),
        }
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n * 2 + 1)
        .y_label_formatter(&name)
        .x_labels(4)
        .x_desc(desc)
        .axis_desc_style(small_font())
        .label_style(small_font())
        .draw()?;
    let row_y = |i: usize| (n - i - 1) as f64;
    chart.draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
        let v = figure(r)?;
        Some(Rectangle::new(
            [(0.0, row_y(i) + 0.15), (v, row_y(i) + 0.85)],
            colour(i).filled(),
        ))
    }))?;
    chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
        let text = figure(r).map_or("not measured".to_string(), |v| format!("{v:.0}"));
        let x = figure(r).unwrap_or(0.0) + max * 0.02;
        Text::new(
            text,
            (x, row_y(i) + 0.5),
            small_font().pos(Pos::new(HPos::Left, VPos::Center)),
        )
    }))?;
    Ok(())
}

#[cfg(test)]
mod name_area_tests {
    use super::{name_area, TablespaceFigures};

    fn named(names: &[&str]) -> Vec<TablespaceFigures> {
        names
            .iter()
            .map(|n| TablespaceFigures {
                tablespace: n.to_string(),
                randread_p99_us: Some(1.0),
                wal_commit_p99_us: None,
                seq_mib_s: None,
            })
            .collect()
    }

    #[test]
    fn short_names_keep_the_usual_room() {
        assert_eq!(name_area(&named(&["pg_default", "lab_ram"]), 320), 90);
    }

    #[test]
    fn a_fleet_name_gets_room_for_itself_up_to_half_the_panel() {
        let room = name_area(&named(&["old_array/pg_default"]), 320);
        assert!(room >= 20 * 7, "{room}");
        assert_eq!(name_area(&named(&[&"x".repeat(60)]), 320), 160);
    }
}
