//! Pieces both hand-written SVG pictures of the bench share: the page
//! and its titles, panels with grid lines and axis titles, value axes
//! with round ticks, and text made safe for XML.

use std::fmt::Write as _;

/// The colour of reference series (the raw transport, Linux).
pub(crate) const GREY: &str = "#777777";

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Opens a picture `width` x `height`: a white page, a bold title and a
/// grey line under it (the bench's settings).
pub(crate) fn page(s: &mut String, width: f64, height: f64, title: &str, subtitle: &str) {
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
        width / 2.0,
        escape(title)
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="44" text-anchor="middle" fill="{GREY}">{}</text>"#,
        width / 2.0,
        escape(subtitle)
    );
}

/// One plotting area, in pixels.
#[derive(Clone, Copy)]
pub(crate) struct Panel {
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
}

impl Panel {
    /// The panel's frame.
    pub(crate) fn frame(&self, s: &mut String) {
        let _ = writeln!(
            s,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="black"/>"#,
            self.left, self.top, self.width, self.height
        );
    }

    /// A grid line across the panel at height `y`, labelled on the left.
    pub(crate) fn y_tick(&self, s: &mut String, y: f64, label: &str) {
        let _ = writeln!(
            s,
            r##"<line x1="{}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#dddddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            self.left,
            self.left + self.width,
            self.left - 6.0,
            y + 4.0,
            escape(label)
        );
    }

    /// A grid line down the panel at `x`, labelled below it.
    pub(crate) fn x_tick(&self, s: &mut String, x: f64, label: &str) {
        let bottom = self.top + self.height;
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{bottom:.1}" stroke="#eeeeee"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            self.top,
            bottom + 16.0,
            escape(label)
        );
    }

    /// The horizontal axis's title, under its tick labels.
    pub(crate) fn x_title(&self, s: &mut String, title: &str) {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            self.left + self.width / 2.0,
            self.top + self.height + 34.0,
            escape(title)
        );
    }

    /// The vertical axis's title, turned, `gap` pixels left of the panel.
    pub(crate) fn y_title(&self, s: &mut String, title: &str, gap: f64) {
        let (x, y) = (self.left - gap, self.top + self.height / 2.0);
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{y:.1}" text-anchor="middle" transform="rotate(-90 {x:.1} {y:.1})">{}</text>"#,
            escape(title)
        );
    }
}

/// A value range mapped onto a panel axis, linear or log10.
#[derive(Clone, Copy)]
pub(crate) struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
}

impl Axis {
    /// 0..1 along the axis; values outside are clamped.
    pub(crate) fn frac(&self, v: f64) -> f64 {
        let f = if self.log {
            let (lo, hi) = (self.lo.log10(), self.hi.log10());
            (v.max(self.lo).log10() - lo) / (hi - lo)
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        if f.is_finite() {
            f.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// A step of 1, 2 or 5 times a power of ten giving about five ticks.
pub(crate) fn nice_step(max: f64) -> f64 {
    let raw = (max / 5.0).max(1e-9);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

pub(crate) fn tick_label(v: f64) -> String {
    if v >= 1.0 || v == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_numbers() {
        assert_eq!(nice_step(20.0), 5.0);
        assert_eq!(nice_step(3.0), 1.0);
        assert_eq!(nice_step(0.9), 0.2);
    }

    #[test]
    fn axis_maps_and_clamps() {
        let lin = Axis {
            lo: 0.0,
            hi: 10.0,
            log: false,
        };
        assert_eq!(lin.frac(5.0), 0.5);
        assert_eq!(lin.frac(20.0), 1.0);
        let log = Axis {
            lo: 1.0,
            hi: 100.0,
            log: true,
        };
        assert!((log.frac(10.0) - 0.5).abs() < 1e-12);
        assert_eq!(escape("a<b&c>"), "a&lt;b&amp;c&gt;");
    }
}
