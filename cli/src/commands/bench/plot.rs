//! `--plot FILE.svg`: goodput and latency against message size, the stack
//! beside the raw transport, as one SVG picture written by hand (two
//! panels, a log2 size axis, one colour per operation, the raw transport
//! in grey).

use std::fmt::Write as _;

use super::baseline::{Baseline, SmallBaseline};
use super::case::Op;
use super::report::{human_size, Row};
use super::svg::{escape, nice_step, page, tick_label, Axis, Panel, GREY};

const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 470.0;
/// Each panel's plotting area.
const PANEL_W: f64 = 380.0;
const PANEL_H: f64 = 300.0;
const TOP: f64 = 70.0;
const LEFT: [f64; 2] = [80.0, 580.0];

/// What the picture shows.
pub(crate) struct Plot<'a> {
    pub rows: &'a [Row],
    pub baseline: Option<Baseline>,
    pub small: Option<&'a SmallBaseline>,
    /// The bench's settings, as the table's first line says them.
    pub title: String,
    /// What the raw transport is called ("smoltcp raw", "kernel raw").
    pub raw: &'static str,
}

fn colour(op: Op) -> &'static str {
    match op {
        Op::Write => "#1f77b4",
        Op::Read => "#d62728",
        Op::Send => "#2ca02c",
        Op::WriteImm => "#9467bd",
        Op::SendImm => "#8c564b",
        Op::FetchAdd => "#e377c2",
        Op::CmpSwap => "#7f7f7f",
    }
}

impl Plot<'_> {
    pub(crate) fn svg(&self) -> String {
        let mut sizes: Vec<usize> = self.rows.iter().map(|r| r.size.max(1)).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let x = Axis {
            lo: sizes.first().copied().unwrap_or(64) as f64,
            hi: sizes.last().copied().unwrap_or(1 << 20).max(2) as f64,
            log: true,
        };
        let x = if x.hi <= x.lo {
            Axis {
                hi: x.lo * 2.0,
                ..x
            }
        } else {
            x
        };

        let bulk = self.baseline.map(|b| b.gbps);
        let records = self
            .small
            .map(|s| s.msgs_per_s * s.record as f64 * 8.0 / 1e9);
        let max_gbps = self
            .rows
            .iter()
            .map(|r| r.gbps)
            .chain(bulk)
            .chain(records)
            .fold(0.0f64, f64::max);
        let step = nice_step(max_gbps.max(0.1));
        let goodput = Axis {
            lo: 0.0,
            hi: (max_gbps / step).ceil().max(1.0) * step,
            log: false,
        };
        let lat: Vec<f64> = self
            .rows
            .iter()
            .map(|r| r.lat_us_p50)
            .chain(self.small.map(|s| s.rtt_us_p50))
            .chain(
                self.small
                    .iter()
                    .flat_map(|s| s.latency.iter().map(|l| l.1)),
            )
            .filter(|v| *v > 0.0)
            .collect();
        let lat_lo = lat.iter().copied().fold(f64::INFINITY, f64::min);
        let lat_hi = lat.iter().copied().fold(0.0f64, f64::max);
        let latency = Axis {
            lo: 10f64.powf(lat_lo.max(0.01).log10().floor()),
            hi: 10f64.powf(lat_hi.max(0.1).log10().ceil()).max(10.0),
            log: true,
        };
        let latency = if latency.hi <= latency.lo {
            Axis {
                hi: latency.lo * 10.0,
                ..latency
            }
        } else {
            latency
        };

        let mut s = String::new();
        page(
            &mut s,
            WIDTH,
            HEIGHT,
            &format!("iwarp bench: RDMA beside {} TCP", self.raw),
            &self.title,
        );

        // Panel frames, grid and ticks.
        let gticks: Vec<f64> = (0..)
            .map(|i| i as f64 * step)
            .take_while(|v| *v <= goodput.hi + step / 2.0)
            .collect();
        let mut lticks = Vec::new();
        let mut v = latency.lo;
        while v <= latency.hi * 1.0001 {
            lticks.push(v);
            v *= 10.0;
        }
        let panels = [
            (LEFT[0], goodput, "goodput, Gbit/s", &gticks),
            (
                LEFT[1],
                latency,
                "latency p50, µs (one at a time, log scale)",
                &lticks,
            ),
        ];
        for (left, axis, label, ticks) in panels {
            let panel = Panel {
                left,
                top: TOP,
                width: PANEL_W,
                height: PANEL_H,
            };
            panel.frame(&mut s);
            for &t in ticks.iter() {
                panel.y_tick(&mut s, TOP + PANEL_H * (1.0 - axis.frac(t)), &tick_label(t));
            }
            for &size in &sizes {
                panel.x_tick(
                    &mut s,
                    left + PANEL_W * x.frac(size as f64),
                    &human_size(size),
                );
            }
            panel.x_title(&mut s, "message size");
            panel.y_title(&mut s, label, 52.0);
        }

        // The raw transport: bulk goodput as a dashed line, the small
        // records and their round trip as grey squares.
        let point = |left: f64, axis: Axis, size: f64, v: f64| {
            (
                left + PANEL_W * x.frac(size),
                TOP + PANEL_H * (1.0 - axis.frac(v)),
            )
        };
        if let Some(g) = bulk {
            let y = TOP + PANEL_H * (1.0 - goodput.frac(g));
            let _ = writeln!(
                s,
                r#"<line x1="{}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="{GREY}" stroke-width="2" stroke-dasharray="6 4"/>"#,
                LEFT[0],
                LEFT[0] + PANEL_W
            );
        }
        if let (Some(small), Some(g)) = (self.small, records) {
            let (px, py) = point(LEFT[0], goodput, small.record as f64, g);
            let _ = writeln!(s, "{}", square(px, py));
        }
        // Its round trips, a message there and a record back, dashed too.
        if let Some(small) = self.small {
            let mut lat = small.latency.clone();
            lat.sort_by_key(|l| l.0);
            let pts: Vec<String> = lat
                .iter()
                .map(|&(size, us)| {
                    let (a, b) = point(LEFT[1], latency, size.max(1) as f64, us);
                    format!("{a:.1},{b:.1}")
                })
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{GREY}" stroke-width="2" stroke-dasharray="6 4"/>"#,
                pts.join(" ")
            );
        }

        // One line per operation in each panel.
        for op in [Op::Write, Op::Read, Op::Send] {
            let mut rows: Vec<&Row> = self.rows.iter().filter(|r| r.op == op).collect();
            if rows.is_empty() {
                continue;
            }
            rows.sort_by_key(|r| r.size);
            for (left, axis, value) in [
                (LEFT[0], goodput, (|r: &Row| r.gbps) as fn(&Row) -> f64),
                (LEFT[1], latency, |r: &Row| r.lat_us_p50),
            ] {
                let pts: Vec<(f64, f64)> = rows
                    .iter()
                    .map(|r| point(left, axis, r.size.max(1) as f64, value(r)))
                    .collect();
                let path: Vec<String> = pts.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
                let _ = writeln!(
                    s,
                    r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>"#,
                    path.join(" "),
                    colour(op)
                );
                for (a, b) in pts {
                    let _ = writeln!(
                        s,
                        r#"<circle cx="{a:.1}" cy="{b:.1}" r="3" fill="{}"/>"#,
                        colour(op)
                    );
                }
            }
        }

        // Legend: the operations on one row, the raw transport below.
        let y = HEIGHT - 42.0;
        let mut lx = LEFT[0];
        for op in [Op::Write, Op::Read, Op::Send] {
            if !self.rows.iter().any(|r| r.op == op) {
                continue;
            }
            let _ = writeln!(
                s,
                r#"<line x1="{lx}" y1="{y}" x2="{}" y2="{y}" stroke="{}" stroke-width="2"/><text x="{}" y="{}">RDMA {op}</text>"#,
                lx + 24.0,
                colour(op),
                lx + 30.0,
                y + 4.0
            );
            lx += 120.0;
        }
        let (y, mut lx) = (HEIGHT - 18.0, LEFT[0]);
        if bulk.is_some() {
            let _ = writeln!(
                s,
                r#"<line x1="{lx}" y1="{y}" x2="{}" y2="{y}" stroke="{GREY}" stroke-width="2" stroke-dasharray="6 4"/><text x="{}" y="{}">{} TCP (bulk; round trip)</text>"#,
                lx + 24.0,
                lx + 30.0,
                y + 4.0,
                escape(self.raw)
            );
            lx += 260.0;
        }
        if let Some(small) = self.small {
            let _ = writeln!(
                s,
                r#"{}<text x="{}" y="{}">{} TCP, {}-byte records</text>"#,
                square(lx + 12.0, y),
                lx + 30.0,
                y + 4.0,
                escape(self.raw),
                small.record
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

fn square(x: f64, y: f64) -> String {
    format!(
        r#"<rect x="{:.1}" y="{:.1}" width="9" height="9" fill="{GREY}"/>"#,
        x - 4.5,
        y - 4.5
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::bench::case::Measured;
    use crate::commands::bench::link::TransportKind;
    use std::time::Duration;

    fn row(op: Op, size: usize, gbit: f64, lat_us: u64) -> Row {
        let m = Measured {
            bytes: (gbit * 1e9 / 8.0) as u64,
            messages: 1000,
            elapsed: Duration::from_secs(1),
            cpu: None,
            latencies: vec![Duration::from_micros(lat_us)],
            undisturbed: None,
        };
        Row::new(op, size, TransportKind::Memory, &m, None)
    }

    #[test]
    fn every_row_becomes_a_point_in_each_panel() {
        let rows = [
            row(Op::Write, 64, 1.0, 2),
            row(Op::Write, 65536, 15.0, 30),
            row(Op::Read, 64, 0.8, 3),
        ];
        let svg = Plot {
            rows: &rows,
            baseline: Some(Baseline {
                gbps: 20.0,
                cpu_gbps: None,
                tcp: None,
                runs_cpu_gbps: [None, None],
            }),
            small: None,
            title: "a <title> & more".into(),
            raw: "smoltcp raw",
        }
        .svg();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<circle").count(), 2 * rows.len());
        assert_eq!(svg.matches("<polyline").count(), 4, "two ops, two panels");
        assert!(svg.contains("a &lt;title&gt; &amp; more"));
        assert!(svg.contains("stroke-dasharray"), "the raw goodput line");
        assert!(svg.contains(">64 KiB<"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    }

    #[test]
    fn a_higher_goodput_is_drawn_higher() {
        let rows = [row(Op::Send, 64, 1.0, 2), row(Op::Send, 4096, 10.0, 4)];
        let svg = Plot {
            rows: &rows,
            baseline: None,
            small: None,
            title: String::new(),
            raw: "kernel raw",
        }
        .svg();
        let ys: Vec<f64> = svg
            .lines()
            .filter(|l| l.starts_with("<circle"))
            .filter_map(|l| l.split("cy=\"").nth(1)?.split('"').next()?.parse().ok())
            .collect();
        // Goodput panel first: the 4 KiB point sits above (smaller y).
        assert!(ys[1] < ys[0], "{ys:?}");
        // Latency panel: 4 µs above 2 µs too.
        assert!(ys[3] < ys[2], "{ys:?}");
    }
}
