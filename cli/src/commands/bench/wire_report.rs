//! The report of a run on a modelled wire: the settings both sides ran
//! with, one row per flow, and the single-flow targets read off
//! each round. Text and JSON carry the same fields.

use std::fmt::Write;
use std::time::Duration;

use transport::link_model::{LinkCounters, LinkModelConfig, QueueDelays};
use transport::TcpLossStats;

use super::case::Op;
use super::report::human_size;
use super::wire_linux::{share, LinuxFlow};
use crate::commands::wire_model::describe;

/// How the Linux side was set up, or why it could not be.
#[derive(Debug, Clone)]
pub(crate) struct LinuxSetup {
    pub offloads_off: bool,
    pub rto_min: Result<Duration, String>,
    pub buffer_max: Result<usize, String>,
}

/// What both sides ran with.
#[derive(Debug, Clone)]
pub(crate) struct WireSetup {
    pub model: LinkModelConfig,
    pub mtu: usize,
    /// smoltcp's rings (Linux's buffers are allowed twice as much).
    pub window: usize,
    pub rto_min: Duration,
    /// The RDMA flow's congestion controller, by name.
    pub congestion: &'static str,
    pub warm_up: Duration,
    pub duration: Duration,
    /// `None` with `--no-baseline`.
    pub linux: Option<Result<LinuxSetup, String>>,
}

/// What one RDMA case measured on the modelled wire.
#[derive(Debug, Clone)]
pub(crate) struct RdmaFlow {
    pub op: Op,
    pub size: usize,
    pub gbps: f64,
    /// Goodput per CPU-second of this process (both ends, and the link).
    pub cpu_gbps: Option<f64>,
    /// The TCP under RDMA, both ends, over the warm-up and the case.
    pub tcp: TcpLossStats,
    /// The link in the data direction over the same span.
    pub link: LinkCounters,
    /// How late the thread driving both hosts was (boxed: histograms).
    pub driving: Box<Driving>,
}

/// How late the thread driving both RDMA hosts was, over a flow's span.
#[derive(Debug, Clone, Default)]
pub(crate) struct Driving {
    /// How late the frames of the other direction (ACKs, Read Requests)
    /// were taken after they fell due; the data direction's is
    /// `RdmaFlow::link.taken_late`.
    pub acks_taken_late: QueueDelays,
    /// How much later than asked the thread's sleeps ended.
    pub woke_late: QueueDelays,
}

impl Driving {
    /// Median and 99th percentile in µs of the data frames' lateness (from
    /// `data`, the data direction's counters), the ACK-way frames' and the
    /// sleeps'.
    pub(crate) fn late_us(&self, data: &LinkCounters) -> [Option<f64>; 6] {
        let us = |h: &QueueDelays, q| h.quantile(q).map(|d| d.as_secs_f64() * 1e6);
        [
            us(&data.taken_late, 0.5),
            us(&data.taken_late, 0.99),
            us(&self.acks_taken_late, 0.5),
            us(&self.acks_taken_late, 0.99),
            us(&self.woke_late, 0.5),
            us(&self.woke_late, 0.99),
        ]
    }
}

/// `p50 X us, p99 Y us` of `h`, or `none` when it counted nothing.
pub(crate) fn lateness(h: &QueueDelays) -> String {
    let us = |q| h.quantile(q).map_or(0, |d: Duration| d.as_micros());
    if h.count() == 0 {
        "none".into()
    } else {
        format!("p50 {} us, p99 {} us", us(0.5), us(0.99))
    }
}

/// One flow's outcome, in the order they ran.
#[derive(Debug, Clone)]
pub(crate) enum Flow {
    Rdma {
        round: usize,
        flow: RdmaFlow,
    },
    Linux {
        round: usize,
        flow: Result<LinuxFlow, String>,
    },
}

/// The fields of one row, text and JSON alike.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RowFields {
    pub round: usize,
    /// `rdma write`, `linux cubic`, ...
    pub flow: String,
    /// Message size (RDMA only).
    pub size: Option<usize>,
    pub gbps: Option<f64>,
    pub vs_linux_cubic: Option<f64>,
    pub vs_linux_bbr: Option<f64>,
    pub cpu_gbps: Option<f64>,
    /// Resent over sent: octets for smoltcp, segments for Linux.
    pub resent_share: Option<f64>,
    pub timeouts: Option<u64>,
    /// Frames offered to the wire in the data direction, and those it
    /// dropped (random and burst loss, queue overflow; for Linux also
    /// frames a TAP device dropped because the forwarder fell behind).
    pub link_frames: Option<u64>,
    pub link_dropped: Option<u64>,
    pub link_drop_share: Option<f64>,
    /// The round trip the median data frame saw, in ms: the path's
    /// propagation both ways plus the median wait in the bottleneck's
    /// queue (the only queue on the path).
    pub rtt_p50_ms: Option<f64>,
    /// How late the thread driving the hosts was, in µs, as median and
    /// 99th percentile of data frames taken, ACK-way frames taken and
    /// sleeps ended (see [`Driving`]); for Linux only the first two, how
    /// late the switch's forwarder wrote data frames out.
    pub driving_late_us: Option<[Option<f64>; 6]>,
    /// Why the flow has no figures.
    pub error: Option<String>,
}

pub(crate) struct WireReport {
    pub setup: WireSetup,
    pub flows: Vec<Flow>,
}

/// The round trip of the median frame in `link` (the data direction of
/// `model`), in ms; `None` when no frame went through its queue.
pub(crate) fn loaded_rtt_ms(model: &LinkModelConfig, link: &LinkCounters) -> Option<f64> {
    let wait = link.queue_delay.median()?;
    Some((model.delay * 2 + wait).as_secs_f64() * 1e3)
}

impl WireReport {
    fn linux_of(&self, round: usize, cc: &str) -> Option<&LinuxFlow> {
        self.flows.iter().find_map(|f| match f {
            Flow::Linux {
                round: r,
                flow: Ok(l),
            } if *r == round && l.cc == cc => Some(l),
            _ => None,
        })
    }

    pub(crate) fn rows(&self) -> Vec<RowFields> {
        self.flows
            .iter()
            .map(|f| match f {
                Flow::Rdma { round, flow } => {
                    let vs = |cc| {
                        self.linux_of(*round, cc)
                            .filter(|l| l.gbps > 0.0)
                            .map(|l| flow.gbps / l.gbps)
                    };
                    RowFields {
                        round: *round,
                        flow: format!("rdma {}", flow.op),
                        size: Some(flow.size),
                        gbps: Some(flow.gbps),
                        vs_linux_cubic: vs("cubic"),
                        vs_linux_bbr: vs("bbr"),
                        cpu_gbps: flow.cpu_gbps,
                        resent_share: Some(flow.tcp.resent_share()),
                        timeouts: Some(flow.tcp.timeouts),
                        link_frames: Some(flow.link.frames_in),
                        link_dropped: Some(flow.link.dropped()),
                        link_drop_share: Some(flow.link.dropped_share()),
                        rtt_p50_ms: loaded_rtt_ms(&self.setup.model, &flow.link),
                        driving_late_us: Some(flow.driving.late_us(&flow.link)),
                        error: None,
                    }
                }
                Flow::Linux { round, flow } => match flow {
                    Ok(l) => {
                        let dropped = l.link.dropped() + l.port_drops + l.device_drops;
                        RowFields {
                            round: *round,
                            flow: format!("linux {}", l.cc),
                            size: None,
                            gbps: Some(l.gbps),
                            vs_linux_cubic: None,
                            vs_linux_bbr: None,
                            cpu_gbps: None,
                            resent_share: Some(l.resent_share()),
                            timeouts: Some(l.timeouts),
                            link_frames: Some(l.link.frames_in),
                            link_dropped: Some(dropped),
                            link_drop_share: Some(share(dropped, l.link.frames_in)),
                            rtt_p50_ms: loaded_rtt_ms(&self.setup.model, &l.link),
                            // The forwarder's lateness writing data frames
                            // out; the Linux hosts have no driving thread.
                            driving_late_us: Some({
                                let [p50, p99, ..] = Driving::default().late_us(&l.link);
                                [p50, p99, None, None, None, None]
                            }),
                            error: None,
                        }
                    }
                    Err(e) => RowFields {
                        round: *round,
                        flow: "linux".into(),
                        size: None,
                        gbps: None,
                        vs_linux_cubic: None,
                        vs_linux_bbr: None,
                        cpu_gbps: None,
                        resent_share: None,
                        timeouts: None,
                        link_frames: None,
                        link_dropped: None,
                        link_drop_share: None,
                        rtt_p50_ms: None,
                        driving_late_us: None,
                        error: Some(e.clone()),
                    },
                },
            })
            .collect()
    }

    /// Lines describing the setup.
    fn header(&self) -> String {
        let s = &self.setup;
        let mut out = format!(
            "iwarp bench on a modelled wire: {}, MTU {}, each direction\n",
            describe(&s.model),
            s.mtu
        );
        let _ = writeln!(
            out,
            "RDMA: smoltcp ({}) on the memory link, rings {} B, minimum RTO {} ms",
            s.congestion,
            s.window,
            s.rto_min.as_millis()
        );
        match &s.linux {
            None => out += "Linux: skipped (--no-baseline)\n",
            Some(Err(e)) => {
                let _ = writeln!(out, "Linux: missing ({e})");
            }
            Some(Ok(l)) => {
                let _ = writeln!(
                    out,
                    "Linux: two namespaces whose TAP devices this process joins through the same model; \
                     TCP_CONGESTION pinned per socket; {}; {}; {}",
                    if l.offloads_off {
                        "TSO/GSO/GRO off"
                    } else {
                        "TSO/GSO/GRO could not be turned off"
                    },
                    match &l.rto_min {
                        Ok(d) if *d == s.rto_min => format!(
                            "route rto_min {} ms, the same minimum RTO as smoltcp's",
                            d.as_millis()
                        ),
                        Ok(d) => format!(
                            "route rto_min {} ms, NOT smoltcp's {} ms",
                            d.as_millis(),
                            s.rto_min.as_millis()
                        ),
                        Err(e) => format!(
                            "minimum RTO NOT matched, Linux keeps its own ({e})"
                        ),
                    },
                    match &l.buffer_max {
                        Ok(b) => format!("socket buffers up to {b} B"),
                        Err(e) => format!("Linux's own socket buffer limits ({e})"),
                    }
                );
            }
        }
        let _ = writeln!(
            out,
            "one flow at a time: {:.1} s unmeasured warm-up, then {:.1} s measured; resent, timeouts and drops count both",
            s.warm_up.as_secs_f64(),
            s.duration.as_secs_f64()
        );
        out
    }

    pub(crate) fn table(&self) -> String {
        let mut out = self.header();
        let _ = writeln!(
            out,
            "\n{:>5} {:<12} {:>8} {:>9} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12} {:>10}",
            "round",
            "flow",
            "size",
            "Gbit/s",
            "vs Lx cubic",
            "vs Lx bbr",
            "Gb/cpu-s",
            "resent %",
            "timeouts",
            "drop %",
            "resent/drop",
            "RTT p50 ms"
        );
        let f = |x: Option<f64>, w: usize, d: usize| {
            x.map_or_else(|| format!("{:>w$}", "-"), |x| format!("{x:>w$.d$}"))
        };
        for r in self.rows() {
            if let Some(e) = &r.error {
                let _ = writeln!(out, "{:>5} {:<12} missing: {e}", r.round, r.flow);
                continue;
            }
            let ratio = match (r.resent_share, r.link_drop_share) {
                (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                _ => None,
            };
            let _ = writeln!(
                out,
                "{:>5} {:<12} {:>8} {} {} {} {} {} {:>9} {} {} {}",
                r.round,
                r.flow,
                r.size.map_or("-".into(), human_size),
                f(r.gbps, 9, 3),
                f(r.vs_linux_cubic, 11, 3),
                f(r.vs_linux_bbr, 9, 3),
                f(r.cpu_gbps, 9, 3),
                f(r.resent_share.map(|x| x * 100.0), 9, 3),
                r.timeouts.map_or("-".into(), |t| t.to_string()),
                f(r.link_drop_share.map(|x| x * 100.0), 9, 3),
                f(ratio, 12, 2),
                f(r.rtt_p50_ms, 10, 1),
            );
        }
        for f in &self.flows {
            if let Flow::Rdma { round, flow } = f {
                let _ = writeln!(
                    out,
                    "round {round} rdma {} {} TCP (both ends): {}",
                    flow.op,
                    human_size(flow.size),
                    flow.tcp
                );
                let _ = writeln!(
                    out,
                    "round {round} rdma {} {} driving: data frames taken late {}, ACK-way frames {}; sleeps ended late {} ({} sleeps)",
                    flow.op,
                    human_size(flow.size),
                    lateness(&flow.link.taken_late),
                    lateness(&flow.driving.acks_taken_late),
                    lateness(&flow.driving.woke_late),
                    flow.driving.woke_late.count(),
                );
            }
        }
        out += "\nresent % = resent over sent: octets for smoltcp, segments for Linux (RetransSegs/OutSegs);\n";
        out += "drop % = frames the wire dropped in the data direction (random, burst, queue overflow) over frames offered\n";
        out +=
            "       (Linux: also frames its TAP devices dropped while the forwarder fell behind)\n";
        out += "RTT p50 = the path's propagation both ways plus the median data frame's wait in the bottleneck\n";
        out += "       queue, over the warm-up and the measured span\n";
        for f in &self.flows {
            if let Flow::Linux { round, flow: Ok(l) } = f {
                let _ = writeln!(
                    out,
                    "round {round} linux {} forwarder: data frames written to the TAP device late {}",
                    l.cc,
                    lateness(&l.link.taken_late)
                );
                if l.device_drops + l.port_drops > 0 {
                    let _ = writeln!(
                        out,
                        "round {round} linux {}: {} frames lost at the TAP devices, beside {} the model dropped: the forwarder fell behind",
                        l.cc,
                        l.device_drops + l.port_drops,
                        l.link.dropped()
                    );
                }
            }
        }
        for line in self.targets() {
            out += &line;
            out.push('\n');
        }
        out
    }

    /// The single-flow targets, per RDMA row against its round's Cubic.
    pub(crate) fn targets(&self) -> Vec<String> {
        let rows = self.rows();
        let mut out = Vec::new();
        for r in rows.iter().filter(|r| r.flow.starts_with("rdma")) {
            let Some(cubic) = rows
                .iter()
                .find(|c| c.round == r.round && c.flow == "linux cubic")
            else {
                continue;
            };
            let met = |ok: bool| if ok { "met" } else { "NOT met" };
            let mut line = format!(
                "round {} {} {}:",
                r.round,
                r.flow,
                r.size.map_or("-".into(), human_size)
            );
            if let Some(v) = r.vs_linux_cubic {
                let _ = write!(line, " goodput {v:.2}x Cubic (>= 0.9 {});", met(v >= 0.9));
            }
            match (r.resent_share, r.link_drop_share) {
                (Some(a), Some(b)) if b > 0.0 => {
                    let _ = write!(
                        line,
                        " resent {:.2}x the drop share (<= 1.2 {});",
                        a / b,
                        met(a <= 1.2 * b)
                    );
                }
                (Some(a), _) => {
                    let _ = write!(line, " nothing dropped, resent {:.3}%;", a * 100.0);
                }
                _ => {}
            }
            if let (Some(t), Some(ct)) = (r.timeouts, cubic.timeouts) {
                let bound = 1.5 * ct as f64 + 2.0;
                let _ = write!(
                    line,
                    " timeouts {t} vs Cubic's {ct} (<= {bound:.1} {})",
                    met(t as f64 <= bound)
                );
            }
            out.push(line);
        }
        out
    }

    pub(crate) fn json(&self) -> String {
        let n = |x: Option<f64>| {
            x.filter(|x| x.is_finite())
                .map_or("null".into(), |x| format!("{x:.6}"))
        };
        let u = |x: Option<u64>| x.map_or("null".into(), |x| x.to_string());
        let items: Vec<String> = self
            .rows()
            .iter()
            .map(|r| {
                let late = r.driving_late_us.unwrap_or_default();
                format!(
                    "{{\"kind\":\"wire\",\"round\":{},\"flow\":\"{}\",\"size\":{},\"gbps\":{},\"vs_linux_cubic\":{},\"vs_linux_bbr\":{},\"cpu_gbps\":{},\"resent_share\":{},\"timeouts\":{},\"link_frames\":{},\"link_dropped\":{},\"link_drop_share\":{},\"error\":{},\"rtt_p50_ms\":{},\"data_late_p50_us\":{},\"data_late_p99_us\":{},\"ack_late_p50_us\":{},\"ack_late_p99_us\":{},\"sleep_late_p50_us\":{},\"sleep_late_p99_us\":{},\"rtt_ms\":{},\"rate_bps\":{},\"queue_bytes\":{},\"mtu\":{},\"rto_min_ms\":{}}}",
                    r.round,
                    r.flow,
                    u(r.size.map(|s| s as u64)),
                    n(r.gbps),
                    n(r.vs_linux_cubic),
                    n(r.vs_linux_bbr),
                    n(r.cpu_gbps),
                    n(r.resent_share),
                    u(r.timeouts),
                    u(r.link_frames),
                    u(r.link_dropped),
                    n(r.link_drop_share),
                    r.error.as_deref().map_or("null".into(), super::report::json_string),
                    n(r.rtt_p50_ms),
                    n(late[0]),
                    n(late[1]),
                    n(late[2]),
                    n(late[3]),
                    n(late[4]),
                    n(late[5]),
                    n(Some((self.setup.model.delay * 2).as_secs_f64() * 1e3)),
                    u(self.setup.model.rate_bps),
                    u(self.setup.model.queue_bytes.map(|q| q as u64)),
                    self.setup.mtu,
                    self.setup.rto_min.as_millis(),
                )
            })
            .collect();
        format!("[{}]", items.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loaded_rtt_is_the_propagation_plus_the_median_wait() {
        let model = LinkModelConfig {
            delay: Duration::from_millis(10),
            ..LinkModelConfig::default()
        };
        let mut link = LinkCounters::default();
        assert_eq!(loaded_rtt_ms(&model, &link), None);
        for wait in [0, 5, 30] {
            link.queue_delay.record(Duration::from_millis(wait));
        }
        let rtt = loaded_rtt_ms(&model, &link).unwrap();
        assert!((rtt - 25.0).abs() < 0.5, "{rtt}");
    }

    #[test]
    fn lateness_reads_the_median_and_the_tail() {
        let mut h = QueueDelays::default();
        assert_eq!(lateness(&h), "none");
        for _ in 0..98 {
            h.record(Duration::from_micros(64));
        }
        h.record(Duration::from_millis(4));
        h.record(Duration::from_millis(4));
        // Read back to the histogram's resolution (an eighth of an octave).
        let text = lateness(&h);
        assert!(text.starts_with("p50 68 us"), "{text}");
        assert!(text.ends_with("p99 3968 us"), "{text}");
    }
}
