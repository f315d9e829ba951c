//! What every chart shares: colours, fonts, the frame.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Colours of clearly different lightness (black, dark blue, vermilion,
/// bluish green, orange, sky blue: the Okabe-Ito set, ordered dark to
/// light), so that neighbours stay apart in grey print.
pub const PALETTE: [RGBColor; 6] = [
    RGBColor(0, 0, 0),
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
];

pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

pub const FONT: &str = "sans-serif";

pub fn caption_font() -> TextStyle<'static> {
    (FONT, 22).into_font().into()
}

pub fn label_font() -> TextStyle<'static> {
    (FONT, 15).into_font().into()
}

pub fn small_font() -> TextStyle<'static> {
    (FONT, 13).into_font().into()
}

/// Text centred above a point (a bar's top).
pub fn above() -> TextStyle<'static> {
    small_font().pos(Pos::new(HPos::Center, VPos::Bottom))
}

/// A marker per series (with the colour, the second thing that tells
/// series apart in grey): circle, triangle, cross, filled or hollow.
pub fn marker<DB: DrawingBackend, C: Clone + 'static>(
    i: usize,
    at: C,
) -> DynElement<'static, DB, C> {
    let c = colour(i);
    match i % 4 {
        0 => Circle::new(at, 4, c.filled()).into_dyn(),
        1 => TriangleMarker::new(at, 5, c.filled()).into_dyn(),
        2 => Cross::new(at, 4, c.stroke_width(2)).into_dyn(),
        _ => Circle::new(at, 4, c.stroke_width(2)).into_dyn(),
    }
}

/// Up to a tenth above the highest value, so that labels on top fit.
pub fn headroom(max: f64) -> f64 {
    if max > 0.0 {
        max * 1.15
    } else {
        1.0
    }
}

/// A standalone SVG document of the chart size, white, drawn by `draw`.
pub fn svg(
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> super::Result<()>,
) -> super::Result<String> {
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (super::WIDTH, super::HEIGHT)).into_drawing_area();
        root.fill(&WHITE)?;
        draw(&root)?;
        root.present()?;
    }
    Ok(xml_chars(svg))
}

/// The document with every character XML 1.0 forbids (C0 controls but tab,
/// newline and carriage return; U+FFFE, U+FFFF) replaced by U+FFFD: titles
/// and names come from users and stored rows, and the SVG backend escapes
/// markup (`<`, `&`) but passes control characters through, which leaves
/// a document no XML parser (nor a browser) accepts.
fn xml_chars(svg: String) -> String {
    let forbidden = |c: char| matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}');
    if !svg.contains(forbidden) {
        return svg;
    }
    svg.chars()
        .map(|c| if forbidden(c) { '\u{fffd}' } else { c })
        .collect()
}

/// The legend, framed, on a nearly opaque white ground.
pub fn legend<'a, 'b: 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, CT>,
    position: SeriesLabelPosition,
) -> super::Result<()> {
    chart
        .configure_series_labels()
        .position(position)
        .label_font(small_font())
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()?;
    Ok(())
}

/// A chart's frame: its title, margins and room for the axis labels.
pub fn frame<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    y_labels_width: u32,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(title, caption_font())
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(y_labels_width);
    builder
}
