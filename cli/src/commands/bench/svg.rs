//! Pieces both hand-written SVG pictures of the bench share: value axes
//! with round ticks, and text made safe for XML.

/// The colour of reference series (the raw transport, Linux).
pub(crate) const GREY: &str = "#777777";

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
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
