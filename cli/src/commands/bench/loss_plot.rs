//! `--plot FILE.svg` with `--loss-sweep`: goodput against the loss rate,
//! one line per flow of the sweep, drawn by hand as SVG. Goodput is on a
//! log scale: a loss-based controller falls by orders of magnitude while
//! a model-based one keeps most of the rate, and both must stay legible.

use std::fmt::Write as _;

use super::loss_sweep::{rates_of, Point, SERIES};
use super::share::FlowKind;
use super::svg::{nice_step, page, tick_label, Axis, Panel, GREY};

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 500.0;
const LEFT: f64 = 90.0;
const TOP: f64 = 70.0;
const PANEL_W: f64 = 520.0;
const PANEL_H: f64 = 330.0;
/// Goodput below this (Gbit/s) sits on the axis floor.
const FLOOR_GBPS: f64 = 0.001;

/// What the picture shows.
pub(crate) struct LossPlot<'a> {
    pub points: &'a [Point],
    /// The wire, as the table's first line says it.
    pub title: String,
}

/// RDMA in colour, solid; Linux dashed, in darker tones.
fn style(flow: FlowKind) -> (&'static str, &'static str) {
    match flow {
        FlowKind::Rdma(cc) => match cc.name() {
            "reno" => ("#2ca02c", ""),
            "cubic" => ("#1f77b4", ""),
            _ => ("#d62728", ""),
        },
        FlowKind::Linux("cubic") => (GREY, r#" stroke-dasharray="6 4""#),
        FlowKind::Linux(_) => ("#000000", r#" stroke-dasharray="6 4""#),
    }
}

impl LossPlot<'_> {
    pub(crate) fn svg(&self) -> String {
        let rates = rates_of(self.points);
        let max_rate = rates.iter().copied().fold(0.0f64, f64::max);
        let step = nice_step(max_rate.max(1.0));
        let x = Axis {
            lo: 0.0,
            hi: (max_rate / step).ceil().max(1.0) * step,
            log: false,
        };
        let max_gbps = self
            .points
            .iter()
            .filter_map(|p| p.gbps.as_ref().ok().copied())
            .fold(FLOOR_GBPS, f64::max);
        let y = Axis {
            lo: FLOOR_GBPS,
            hi: 10f64.powf(max_gbps.log10().ceil()).max(FLOOR_GBPS * 10.0),
            log: true,
        };
        let at = |loss: f64, gbps: f64| {
            (
                LEFT + PANEL_W * x.frac(loss),
                TOP + PANEL_H * (1.0 - y.frac(gbps)),
            )
        };

        let mut s = String::new();
        page(
            &mut s,
            WIDTH,
            HEIGHT,
            "iwarp bench: goodput against random loss",
            &self.title,
        );
        let panel = Panel {
            left: LEFT,
            top: TOP,
            width: PANEL_W,
            height: PANEL_H,
        };
        panel.frame(&mut s);
        // Decades of goodput, and the loss rates measured.
        let mut v = y.lo;
        while v <= y.hi * 1.0001 {
            let (_, py) = at(0.0, v);
            panel.y_tick(&mut s, py, &tick_label(v));
            v *= 10.0;
        }
        for &rate in &rates {
            let (px, _) = at(rate, y.lo);
            panel.x_tick(&mut s, px, &tick_label(rate));
        }
        panel.x_title(&mut s, "random loss each way, %");
        panel.y_title(&mut s, "goodput, Gbit/s (log scale)", 60.0);

        // One line per flow, through the points it has; the legend on the
        // right.
        for (i, flow) in SERIES.into_iter().enumerate() {
            let mut pts: Vec<(f64, f64)> = self
                .points
                .iter()
                .filter(|p| p.flow == flow)
                .filter_map(|p| Some((p.loss_percent, *p.gbps.as_ref().ok()?)))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (colour, dash) = style(flow);
            let ly = TOP + 10.0 + 22.0 * i as f64;
            let lx = LEFT + PANEL_W + 16.0;
            let _ = writeln!(
                s,
                r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="2"{dash}/><text x="{}" y="{}">{}</text>"#,
                lx + 24.0,
                lx + 30.0,
                ly + 4.0,
                flow.name()
            );
            if pts.is_empty() {
                continue;
            }
            let line: Vec<String> = pts
                .iter()
                .map(|&(l, g)| {
                    let (a, b) = at(l, g);
                    format!("{a:.1},{b:.1}")
                })
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>"#,
                line.join(" ")
            );
            for &(l, g) in &pts {
                let (a, b) = at(l, g);
                let _ = writeln!(
                    s,
                    r#"<circle cx="{a:.1}" cy="{b:.1}" r="3" fill="{colour}"/>"#
                );
            }
        }
        s.push_str("</svg>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::bench::loss_sweep::made_up;
    use verbs::transport::CongestionControl;

    /// The polyline of `flow`'s series, as (x, y) pairs.
    fn series(svg: &str, flow: FlowKind) -> Vec<(f64, f64)> {
        let (colour, dash) = style(flow);
        let line = svg
            .lines()
            .find(|l| {
                l.starts_with("<polyline")
                    && l.contains(&format!(r#"stroke="{colour}" stroke-width="2"{dash}/>"#))
            })
            .unwrap_or_else(|| panic!("no line for {}", flow.name()));
        let pts = line.split('"').nth(1).unwrap();
        pts.split(' ')
            .map(|p| {
                let (a, b) = p.split_once(',').unwrap();
                (a.parse().unwrap(), b.parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn five_series_with_a_point_per_rate() {
        let rates = [0.0, 1.0, 2.0, 5.0, 10.0];
        let pts = made_up(&rates);
        let svg = LossPlot {
            points: &pts,
            title: "wan <20 ms> & 1 Gbit/s".into(),
        }
        .svg();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), SERIES.len());
        assert_eq!(svg.matches("<circle").count(), SERIES.len() * rates.len());
        for flow in SERIES {
            assert_eq!(series(&svg, flow).len(), rates.len(), "{}", flow.name());
            assert!(svg.contains(&format!(">{}<", flow.name())));
        }
        assert!(svg.contains("wan &lt;20 ms&gt; &amp; 1 Gbit/s"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    }

    #[test]
    fn more_loss_is_further_right_and_less_goodput_lower() {
        let pts = made_up(&[0.0, 5.0, 10.0]);
        let svg = LossPlot {
            points: &pts,
            title: String::new(),
        }
        .svg();
        let bbr = series(&svg, FlowKind::Rdma(CongestionControl::Bbr));
        assert!(bbr[0].0 < bbr[1].0 && bbr[1].0 < bbr[2].0, "{bbr:?}");
        // Goodput falls with loss: y grows downwards.
        assert!(bbr[0].1 < bbr[1].1 && bbr[1].1 < bbr[2].1, "{bbr:?}");
    }

    #[test]
    fn a_failed_point_is_left_out_and_zero_sits_on_the_floor() {
        let mut pts = made_up(&[0.0, 5.0]);
        pts[3].gbps = Err("needs root".into());
        pts[0].gbps = Ok(0.0);
        let svg = LossPlot {
            points: &pts,
            title: String::new(),
        }
        .svg();
        assert_eq!(series(&svg, FlowKind::Linux("cubic")).len(), 1);
        let reno = series(&svg, FlowKind::Rdma(CongestionControl::Reno));
        assert_eq!(reno.len(), 2);
        assert!((reno[0].1 - (TOP + PANEL_H)).abs() < 0.1, "{reno:?}");
        assert_eq!(svg.matches("<circle").count(), 9);
    }
}
