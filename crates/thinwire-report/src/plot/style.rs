//! The one look of every figure: sizes, fonts, colors, tick labels, and the
//! chart and grid styling all charts share.

use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::err;

/// Width of every figure, in pixels.
pub const WIDTH: u32 = 960;
/// Height of single-panel figures, in pixels.
pub const HEIGHT: u32 = 460;
/// Height of one panel of a multi-panel figure, in pixels.
pub const PANEL_HEIGHT: u32 = 330;
/// Height of a multi-panel figure's title band, in pixels.
pub const TITLE_HEIGHT: u32 = 44;
/// Font family of all text.
pub const FONT: &str = "sans-serif";
/// Dash and gap lengths (pixels) of the lines of models.
pub const DASH: i32 = 7;
/// See [`DASH`].
pub const GAP: i32 = 4;

/// Color of the light grid lines.
pub const GRID: RGBColor = RGBColor(235, 235, 235);
/// Color of guide lines: reference levels, leader lines.
pub const GUIDE: RGBColor = RGBColor(150, 150, 150);
/// Color of secondary text and of the legend's layer swatches.
pub const MUTED: RGBColor = RGBColor(110, 110, 110);

/// A qualitative palette whose first hues stay apart for color-blind readers (mostly
/// Okabe-Ito; neighbours in the order are clearly different hues).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(230, 159, 0),   // orange
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(200, 40, 40),   // red
    RGBColor(120, 70, 170),  // purple
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(140, 86, 75),   // brown
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(120, 120, 120), // grey
    RGBColor(170, 170, 0),   // olive
];

/// The color of the `index`-th series (a protocol, a transport): the palette, then (for
/// more series than it has colors) hues spread by the golden angle.
pub fn series_color(index: usize) -> RGBColor {
    if let Some(c) = PALETTE.get(index) {
        return *c;
    }
    let k = index - PALETTE.len();
    let hue = (k as f64 * 0.618_033_988_75 + 0.1).fract();
    let lightness = if k % 2 == 0 { 0.40 } else { 0.55 };
    hsl_to_rgb(hue, 0.65, lightness)
}

/// HSL (all in `0..1`) to RGB.
fn hsl_to_rgb(h: f64, s: f64, l: f64) -> RGBColor {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let hp = h * 6.0;
    let x = c * (1.0 - (hp % 2.0 - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let to = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    RGBColor(to(r), to(g), to(b))
}

/// `#rrggbb` of a color, for HTML swatches.
pub fn css_color(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// Approximate rendered width in pixels of `text` at the given plotters font size (SVG
/// text is `size / 1.24` px; an average glyph is about 0.6 em wide).
pub fn text_width(text: &str, size: f64) -> i32 {
    (text.chars().count() as f64 * size / 1.24 * 0.6).ceil() as i32
}

/// Formats a tick value of a log axis: `1`, `0.1`, `0.01`, `1e-3`, `1e-4`…
pub fn log_tick(v: f64) -> String {
    if v >= 0.01 {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        let e = v.log10().round() as i32;
        let m = v / 10f64.powi(e);
        if (m - 1.0).abs() < 1e-6 {
            format!("1e{e}")
        } else {
            format!("{m:.0}e{e}")
        }
    }
}

/// Formats a linear tick value without spurious decimals.
pub fn num_tick(v: f64) -> String {
    if v == 0.0 {
        return "0".to_owned();
    }
    let a = v.abs();
    let s = if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else if a >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.1e}")
    };
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// Text sizes and label areas of a panel.
#[derive(Debug, Clone, Copy)]
pub struct PanelStyle {
    /// Caption font size.
    pub caption: u32,
    /// Axis description font size.
    pub desc: u32,
    /// Tick label font size.
    pub label: u32,
    /// Height of the x label area.
    pub x_area: u32,
    /// Width of the y label area.
    pub y_area: u32,
}

/// A single-panel figure.
pub const SINGLE: PanelStyle = PanelStyle {
    caption: 22,
    desc: 16,
    label: 14,
    x_area: 48,
    y_area: 64,
};

/// A panel of a multi-panel figure.
pub const MULTI: PanelStyle = PanelStyle {
    caption: 17,
    desc: 14,
    label: 13,
    x_area: 42,
    y_area: 58,
};

/// A chart drawn into an SVG, over the coordinates that the ranges `X` and `Y` give.
pub type Chart<'a, 'b, X, Y> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<<X as AsRangedCoord>::CoordDescType, <Y as AsRangedCoord>::CoordDescType>,
>;

/// A chart on `area` with the caption and label areas of `st`, `margin`
/// pixels around it, over `x` by `y`.
pub fn chart<'a, 'b, X: AsRangedCoord, Y: AsRangedCoord>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    caption: &str,
    st: PanelStyle,
    margin: u32,
    x: X,
    y: Y,
) -> Result<Chart<'a, 'b, X, Y>, String> {
    ChartBuilder::on(area)
        .caption(caption, (FONT, st.caption))
        .margin(margin)
        .x_label_area_size(st.x_area)
        .y_label_area_size(st.y_area)
        .build_cartesian_2d(x, y)
        .map_err(err)
}

/// The grid and axes of `chart` in the fonts of `st`, with light grid lines;
/// the caller adds descriptions and formatters, then draws.
pub fn mesh<'a, 'b, X, Y, DB>(
    chart: &'b mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    st: PanelStyle,
) -> MeshStyle<'a, 'b, X, Y, DB>
where
    X: Ranged + ValueFormatter<X::ValueType>,
    Y: Ranged + ValueFormatter<Y::ValueType>,
    DB: DrawingBackend,
{
    let mut mesh = chart.configure_mesh();
    mesh.axis_desc_style((FONT, st.desc))
        .label_style((FONT, st.label))
        .light_line_style(GRID);
    mesh
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_formats() {
        assert_eq!(log_tick(1.0), "1");
        assert_eq!(log_tick(0.1), "0.1");
        assert_eq!(log_tick(0.001), "1e-3");
        assert_eq!(num_tick(250.0), "250");
        assert_eq!(num_tick(0.25), "0.25");
        assert_eq!(num_tick(2.5), "2.5");
    }
}
