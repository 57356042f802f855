//! `iwarp bench --profile P --loss-sweep 0,1,2,5,10`: goodput against
//! random loss on one modelled wire, for RDMA Write over this stack's
//! TCP with Reno, Cubic and BBR, and for Linux kernel TCP with Cubic and
//! BBR, each flow alone on the wire at each loss rate (the same model,
//! windows and minimum RTO as the single-flow wire). `--plot` draws it
//! ([`super::loss_plot`]).

use std::time::Duration;

use transport::link_model::LinkModelConfig;
use verbs::transport::CongestionControl;

use super::case::Op;
use super::share::FlowKind;
use super::wire::{self, linux_buffer_max, rto_min, warm_up, window_bytes};
use super::wire_linux::LinuxWire;
use super::wire_report::WireSetup;
use super::Args;
use crate::commands::wire_model::describe;

/// The flows measured at every loss rate, in the order drawn.
pub(crate) const SERIES: [FlowKind; 5] = [
    FlowKind::Rdma(CongestionControl::Reno),
    FlowKind::Rdma(CongestionControl::Cubic),
    FlowKind::Rdma(CongestionControl::Bbr),
    FlowKind::Linux("cubic"),
    FlowKind::Linux("bbr"),
];

/// The most loss rates one sweep runs.
pub(crate) const MAX_RATES: usize = 20;

/// One flow at one loss rate.
#[derive(Debug, Clone)]
pub(crate) struct Point {
    pub loss_percent: f64,
    pub flow: FlowKind,
    /// Goodput in Gbit/s, or why there is none.
    pub gbps: Result<f64, String>,
}

/// Checks the sweep's loss rates: percentages, at most [`MAX_RATES`].
pub(crate) fn check_rates(rates: &[f64]) -> Result<(), String> {
    if rates.len() > MAX_RATES {
        return Err(format!("--loss-sweep takes at most {MAX_RATES} rates"));
    }
    if let Some(r) = rates.iter().find(|r| !(0.0..100.0).contains(*r)) {
        return Err(format!("--loss-sweep {r}: a percentage from 0 up to 100"));
    }
    Ok(())
}

/// Runs every flow of [`SERIES`] alone on `model` at each of `rates`
/// (percent, replacing the model's own loss); RDMA writes messages of
/// `size`. Linux flows need root; without it their points carry the
/// error and the RDMA points are still measured.
pub(crate) fn run(
    args: &Args,
    model: &LinkModelConfig,
    rates: &[f64],
    size: usize,
) -> Result<Vec<Point>, String> {
    check_rates(rates)?;
    let window = window_bytes(model);
    let duration = Duration::from_secs_f64(args.duration);
    let mut points = Vec::new();
    for &loss_percent in rates {
        let model = LinkModelConfig {
            loss: loss_percent / 100.0,
            ..model.clone()
        };
        model.validate().map_err(|e| e.to_string())?;
        let setup = WireSetup {
            model: model.clone(),
            mtu: args.mtu,
            window,
            rto_min: rto_min(),
            congestion: "per flow",
            warm_up: warm_up(&model),
            duration,
            linux: None,
        };
        let mut linux = None;
        for flow in SERIES {
            eprintln!("loss {loss_percent}%: {}", flow.name());
            let gbps = match flow {
                FlowKind::Rdma(cc) => wire::rdma_flows(args, &setup, 1, cc, &[(Op::Write, size)])
                    .map(|f| f.first().map_or(0.0, |f| f.gbps)),
                FlowKind::Linux(cc) => linux
                    .get_or_insert_with(|| {
                        LinuxWire::new(
                            &model,
                            0x5eed,
                            args.mtu,
                            setup.rto_min,
                            linux_buffer_max(window),
                        )
                    })
                    .as_mut()
                    .map_err(|e| e.clone())
                    .and_then(|l| l.flow(cc, setup.warm_up, duration))
                    .map(|f| f.gbps),
            };
            points.push(Point {
                loss_percent,
                flow,
                gbps,
            });
        }
    }
    Ok(points)
}

/// The sweep as a table (a row per loss rate, a column per flow), or as
/// a JSON array of points.
pub(crate) fn render(points: &[Point], model: &LinkModelConfig, json: bool) -> String {
    if json {
        let rows: Vec<String> = points
            .iter()
            .map(|p| {
                let value = match &p.gbps {
                    Ok(g) => format!(r#""gbps":{g:.4}"#),
                    Err(e) => format!(r#""error":{:?}"#, e),
                };
                format!(
                    r#"{{"loss_percent":{},"flow":"{}",{value}}}"#,
                    p.loss_percent,
                    p.flow.name()
                )
            })
            .collect();
        return format!("[{}]", rows.join(","));
    }
    let mut out = title(model) + "\n";
    out += &format!("{:>7}", "loss %");
    for flow in SERIES {
        out += &format!(" {:>12}", flow.name());
    }
    out += "   (Gbit/s)\n";
    let mut errors = Vec::new();
    for rate in rates_of(points) {
        out += &format!("{rate:>7}");
        for flow in SERIES {
            let cell = match points
                .iter()
                .find(|p| p.loss_percent == rate && p.flow == flow)
                .map(|p| &p.gbps)
            {
                Some(Ok(g)) => format!("{g:.3}"),
                Some(Err(e)) => {
                    errors.push(format!("{rate}% {}: {e}", flow.name()));
                    "error".into()
                }
                None => "-".into(),
            };
            out += &format!(" {cell:>12}");
        }
        out += "\n";
    }
    for e in errors {
        out += &format!("  {e}\n");
    }
    out
}

/// The wire the sweep ran on, in words (each point adds its own loss).
pub(crate) fn title(model: &LinkModelConfig) -> String {
    format!("goodput against random loss: {}", describe(model))
}

/// The loss rates of `points`, in the order first met.
pub(crate) fn rates_of(points: &[Point]) -> Vec<f64> {
    let mut rates: Vec<f64> = Vec::new();
    for p in points {
        if !rates.contains(&p.loss_percent) {
            rates.push(p.loss_percent);
        }
    }
    rates
}

/// Made-up points for the tests of the sweep and its picture: every
/// series at each of `rates`, falling with loss.
#[cfg(test)]
pub(crate) fn made_up(rates: &[f64]) -> Vec<Point> {
    let mut points = Vec::new();
    for &r in rates {
        for (i, flow) in SERIES.into_iter().enumerate() {
            points.push(Point {
                loss_percent: r,
                flow,
                gbps: Ok((i + 1) as f64 / (1.0 + r)),
            });
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_percentages_and_bounded() {
        assert!(check_rates(&[0.0, 1.0, 10.0]).is_ok());
        assert!(check_rates(&[100.0]).is_err());
        assert!(check_rates(&[-1.0]).is_err());
        assert!(check_rates(&[1.0; MAX_RATES + 1]).is_err());
    }

    #[test]
    fn the_table_has_a_row_per_rate_and_a_column_per_flow() {
        let mut points = made_up(&[0.0, 5.0]);
        points[3].gbps = Err("needs root".into());
        let text = render(&points, &LinkModelConfig::default(), false);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].contains("rdma-reno") && lines[1].contains("linux-bbr"));
        assert!(lines[2].trim_start().starts_with('0'), "{text}");
        assert!(lines[3].trim_start().starts_with('5'), "{text}");
        assert!(text.contains("error") && text.contains("0% linux-cubic: needs root"));
        let json = render(&points, &LinkModelConfig::default(), true);
        assert_eq!(json.matches("loss_percent").count(), 10);
        assert!(json.contains(r#""error":"needs root""#));
    }

    /// Every RDMA series moves bytes at 0 and 5% loss on a small path
    /// (Linux's points need root and are not asserted here).
    #[test]
    fn a_short_sweep_measures_every_rdma_series() {
        use clap::Parser;
        #[derive(Debug, Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        let cli = Cli::try_parse_from(["bench", "--duration", "0.3", "--no-baseline"]).unwrap();
        let model = LinkModelConfig {
            delay: Duration::from_millis(1),
            rate_bps: Some(100_000_000),
            queue_bytes: Some(25_000),
            ..LinkModelConfig::default()
        };
        let points: Vec<Point> = run(&cli.args, &model, &[0.0, 5.0], 64 << 10)
            .unwrap()
            .into_iter()
            .filter(|p| matches!(p.flow, FlowKind::Rdma(_)))
            .collect();
        assert_eq!(points.len(), 6);
        for p in &points {
            let g = p.gbps.as_ref().expect("RDMA runs without root");
            assert!(*g > 0.0, "{p:?}");
        }
    }
}
