//! What every chart shares: colours, fonts, the frame.

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
pub fn marker<DB: DrawingBackend, C: Clone + 'static>(i: usize, at: C) -> DynElement<'static, DB, C> {
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
