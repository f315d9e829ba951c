//! Line charts: a run over time, a probe's percentiles, a profile.

use plotters::prelude::*;

use super::style::{colour, frame, headroom, label_font, legend, marker, small_font, svg};
use super::{ChartError, Result};

/// One second of a run, from storlab.bench_progress.
#[derive(Debug, Clone)]
pub struct ProgressPoint {
    pub t_s: i32,
    pub tps: Option<f64>,
    pub lat_ms: Option<f64>,
}

/// A named line of (x, y) points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// TPS (left axis) and average latency (right axis) over the run's seconds.
pub fn run(title: &str, points: &[ProgressPoint]) -> Result<String> {
    if points.iter().all(|p| p.tps.is_none()) {
        return Err(ChartError("the run has no progress rows to chart".into()));
    }
    let t_max = points.iter().map(|p| p.t_s).max().unwrap_or(1).max(1) as f64;
    let tps_max = points.iter().filter_map(|p| p.tps).fold(0.0, f64::max);
    let lat_max = points.iter().filter_map(|p| p.lat_ms).fold(0.0, f64::max);
    svg(|root| {
        let mut chart = frame(root, title, 72)
            .right_y_label_area_size(72)
            .build_cartesian_2d(0f64..t_max, 0f64..headroom(tps_max))?
            .set_secondary_coord(0f64..t_max, 0f64..headroom(lat_max));
        chart
            .configure_mesh()
            .x_desc("time (s), whole seconds")
            .y_desc("TPS (transactions per second)")
            .axis_desc_style(label_font())
            .label_style(small_font())
            .draw()?;
        chart
            .configure_secondary_axes()
            .y_desc("latency (ms), average per second")
            .axis_desc_style(label_font())
            .label_style(small_font())
            .draw()?;
        let tps: Vec<(f64, f64)> = points
            .iter()
            .filter_map(|p| Some((p.t_s as f64, p.tps?)))
            .collect();
        let lat: Vec<(f64, f64)> = points
            .iter()
            .filter_map(|p| Some((p.t_s as f64, p.lat_ms?)))
            .collect();
        let (c0, c1) = (colour(1), colour(2));
        chart
            .draw_series(LineSeries::new(tps.clone(), c0.stroke_width(2)))?
            .label("TPS")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c0.stroke_width(2)));
        chart.draw_series(tps.iter().map(|&p| marker(1, p)))?;
        chart
            .draw_secondary_series(LineSeries::new(lat.clone(), c1.stroke_width(2)))?
            .label("latency (ms)")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c1.stroke_width(2)));
        chart.draw_secondary_series(lat.iter().map(|&p| marker(2, p)))?;
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        Ok(())
    })
}

/// A percentile as "nines": 90 -> 1, 99 -> 2, 99.9 -> 3, so that the tail
/// gets as much room as the body.
pub fn nines(percentile: f64) -> f64 {
    -(1.0 - percentile / 100.0).log10()
}

/// The percentile at a position on the nines axis, as people write it.
pub fn percentile_label(n: f64) -> String {
    if n <= 0.0 {
        return "0".into();
    }
    let p = 100.0 * (1.0 - 10f64.powf(-n));
    let digits = (n.ceil() as usize).saturating_sub(2);
    format!("{p:.digits$}")
}

/// Latency against percentile (50 .. 99.999), one line per series; the
/// latency axis is logarithmic, as tails span orders of magnitude.
pub fn percentiles(title: &str, series: &[Series]) -> Result<String> {
    let (all, lo, hi) = positive(series, "the probe has no latency samples to chart")?;
    let x_max = all
        .iter()
        .map(|p| nines(p.0))
        .fold(0.0, f64::max)
        .ceil()
        .max(1.0);
    svg(|root| {
        let mut chart = frame(root, title, 80)
            .build_cartesian_2d(0f64..x_max, log_range(lo, hi, series.len()))?;
        chart
            .configure_mesh()
            .x_labels(x_max as usize + 1)
            .x_label_formatter(&|n| percentile_label(*n))
            .y_labels(10)
            .y_label_formatter(&|y| from_log(*y))
            .x_desc("percentile (%), evenly spaced per nine")
            .y_desc("latency (µs)")
            .axis_desc_style(label_font())
            .label_style(small_font())
            .draw()?;
        draw_lines(&mut chart, series, |(p, v)| (nines(p), v.log10()))?;
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        Ok(())
    })
}

/// IOPS against the number of workers, a line per series (tablespace and
/// workload); IOPS log-scaled, as RAM and disks differ a hundredfold.
pub fn profile(title: &str, series: &[Series]) -> Result<String> {
    let (all, lo, hi) = positive(series, "no tablespace was profiled at more than one worker count yet (storlab.profile measures that)")?;
    let w_max = all.iter().map(|p| p.0).fold(1.0, f64::max);
    svg(|root| {
        let mut chart = frame(root, title, 80)
            .build_cartesian_2d(0.5f64..(w_max + 0.5), log_range(lo, hi, series.len()))?;
        chart
            .configure_mesh()
            .x_labels(w_max as usize + 1)
            .x_label_formatter(&|w| {
                if w.fract() == 0.0 {
                    format!("{w:.0}")
                } else {
                    String::new()
                }
            })
            .y_labels(10)
            .y_label_formatter(&|y| from_log(*y))
            .x_desc("workers")
            .y_desc("IOPS (operations per second; commits for wal)")
            .axis_desc_style(label_font())
            .label_style(small_font())
            .draw()?;
        draw_lines(&mut chart, series, |(w, v)| (w, v.log10()))?;
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        Ok(())
    })
}

/// IOPS by queue depth, one line per series: the x axis in powers of two
/// (1, 2, 4 ... 256), the y axis logarithmic, as storage engineers draw
/// fio's depth sweeps.
pub fn depths(title: &str, series: &[Series]) -> Result<String> {
    let (all, lo, hi) = positive(
        series,
        "no tablespace was profiled at more than one queue depth yet (storlab.profile(iodepths => '{1,8,32}') measures that)",
    )?;
    let d_max = all.iter().map(|p| p.0).fold(2.0, f64::max).log2().ceil();
    svg(|root| {
        let mut chart = frame(root, title, 80)
            .build_cartesian_2d(-0.3f64..(d_max + 0.3), log_range(lo, hi, series.len()))?;
        chart
            .configure_mesh()
            .x_labels(d_max as usize + 1)
            .x_label_formatter(&|x| {
                if x.fract() == 0.0 && *x >= 0.0 {
                    format!("{:.0}", 2f64.powf(*x))
                } else {
                    String::new()
                }
            })
            .y_labels(10)
            .y_label_formatter(&|y| from_log(*y))
            .x_desc("requests in flight per worker (iodepth)")
            .y_desc("IOPS")
            .axis_desc_style(label_font())
            .label_style(small_font())
            .draw()?;
        draw_lines(&mut chart, series, |(d, v)| (d.log2(), v.log10()))?;
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        Ok(())
    })
}

/// The points of every series that a log axis can show (y above 0), with
/// their lowest and highest y; none is an error saying `none`.
fn positive(series: &[Series], none: &str) -> Result<(Vec<(f64, f64)>, f64, f64)> {
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|p| p.1 > 0.0)
        .collect();
    if all.is_empty() {
        return Err(ChartError(none.into()));
    }
    let lo = all.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let hi = all.iter().map(|p| p.1).fold(0.0, f64::max);
    Ok((all, lo, hi))
}

/// Values spanning orders of magnitude are drawn as their logarithm on a
/// linear axis, labelled with the values themselves: plotters' own log axis
/// labels only powers of ten, none at all within one decade.
fn log_range(lo: f64, hi: f64, legend_entries: usize) -> std::ops::Range<f64> {
    let (bottom, top) = ((lo * 0.8).log10(), (hi * 1.25).log10());
    // the top of the plot is left to the legend (16 px an entry of some
    // 430): no line runs under it
    let share = ((16 * legend_entries + 24) as f64 / 430.0).min(0.6);
    bottom..top + (top - bottom).max(0.5) * share / (1.0 - share)
}

/// The value at a position on a log axis, to two significant digits.
pub fn from_log(y: f64) -> String {
    let v = 10f64.powf(y);
    let magnitude = 10f64.powf(v.log10().floor() - 1.0);
    let rounded = (v / magnitude).round() * magnitude;
    if rounded >= 10.0 {
        format!("{rounded:.0}")
    } else {
        format!("{rounded:.1}")
    }
}

type LogChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

fn draw_lines<'a, 'b: 'a>(
    chart: &mut LogChart<'a, 'b>,
    series: &[Series],
    at: impl Fn((f64, f64)) -> (f64, f64),
) -> Result<()> {
    for (i, s) in series.iter().enumerate() {
        let c = colour(i);
        let points: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|p| p.1 > 0.0)
            .map(|&p| at(p))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))?
            .label(s.label.as_str())
            .legend(move |(x, y)| {
                EmptyElement::at((x + 10, y))
                    + PathElement::new(vec![(-10, 0), (10, 0)], c.stroke_width(2))
                    + marker(i, (0, 0))
            });
        chart.draw_series(points.iter().map(|&p| marker(i, p)))?;
    }
    Ok(())
}
