//! Flows that share one bottleneck: how the wire's rate is split.
//!
//! Every flow crosses one [`Switch`]: its senders on the left, its
//! receivers on the right, so all of them meet in the same queue of the
//! same modelled path. An RDMA flow is a stream of Writes between two
//! smoltcp hosts on memory ports; a Linux flow is one kernel TCP stream
//! between two namespaces whose TAP devices are ports of the same switch.
//! The flows start together, run a warm-up (slow start is not fairness),
//! then are measured over the same window.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use verbs::transport::link_model::LinkModelConfig;
use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::transport::switch::{Port, Side, Switch};
use verbs::transport::CongestionControl;
use verbs::CrcPolicy;

use super::case::{Case, Endpoints, Op};
use super::linux_stream::stream;
use super::wire::{linux_buffer_max, rto_min, window_bytes, RX_BATCH};
use super::wire_linux::LinuxHosts;
use super::ProgressModel;
use crate::commands::link::HOST_ADDRS;

/// Port each flow's server listens on (each on its own address).
const PORT: u16 = 7472;
/// Longest the switch sleeps before it looks at its stop flag.
const SWITCH_TICK: Duration = Duration::from_millis(5);

/// One flow across the shared bottleneck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlowKind {
    /// A stream of RDMA Writes over this stack's TCP with this controller.
    Rdma(CongestionControl),
    /// One Linux kernel TCP stream with this controller.
    Linux(&'static str),
}

impl FlowKind {
    /// `rdma` (Cubic), `rdma-reno`, `rdma-cubic`, `rdma-bbr`,
    /// `linux-cubic` or `linux-bbr`.
    pub(crate) fn parse(s: &str) -> Result<FlowKind, String> {
        match s {
            "rdma" | "rdma-cubic" => Ok(FlowKind::Rdma(CongestionControl::Cubic)),
            "rdma-reno" => Ok(FlowKind::Rdma(CongestionControl::Reno)),
            "rdma-bbr" => Ok(FlowKind::Rdma(CongestionControl::Bbr)),
            "linux-cubic" => Ok(FlowKind::Linux("cubic")),
            "linux-bbr" => Ok(FlowKind::Linux("bbr")),
            _ => Err(format!(
                "{s:?}: a flow is rdma, rdma-reno, rdma-cubic, rdma-bbr, linux-cubic or linux-bbr"
            )),
        }
    }

    pub(crate) fn name(self) -> String {
        match self {
            FlowKind::Rdma(cc) => format!("rdma-{}", cc.name()),
            FlowKind::Linux(cc) => format!("linux-{cc}"),
        }
    }
}

/// What one flow moved in the measured window.
#[derive(Debug, Clone)]
pub(crate) struct FlowResult {
    pub kind: FlowKind,
    pub gbps: f64,
}

/// The flows' split of the bottleneck.
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    pub flows: Vec<FlowResult>,
    /// Frames the left-to-right model dropped (random and queue overflow)
    /// over frames offered to it, for the whole run.
    pub drop_share: f64,
}

impl Shared {
    /// Jain's fairness index of the flows' goodputs: 1 when equal, 1/n
    /// when one flow takes everything.
    pub(crate) fn jain(&self) -> f64 {
        jain(&self.flows.iter().map(|f| f.gbps).collect::<Vec<_>>())
    }

    /// Each flow's goodput over an equal share of what all of them moved.
    pub(crate) fn share_of_fair(&self) -> Vec<f64> {
        let total: f64 = self.flows.iter().map(|f| f.gbps).sum();
        let fair = total / self.flows.len().max(1) as f64;
        self.flows
            .iter()
            .map(|f| if fair > 0.0 { f.gbps / fair } else { 0.0 })
            .collect()
    }
}

/// Jain's index of `x`: (sum x)^2 / (n * sum x^2).
pub(crate) fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    if squares == 0.0 {
        return 0.0;
    }
    sum * sum / (x.len() as f64 * squares)
}

/// Runs `flows` together across one switch whose path is `model`: `warm`
/// unmeasured, then `measure` measured; RDMA flows write `message` bytes
/// at a time. Linux flows need root (network namespaces).
pub(crate) fn run(
    flows: &[FlowKind],
    model: &LinkModelConfig,
    mtu: usize,
    message: usize,
    crc: CrcPolicy,
    warm: Duration,
    measure: Duration,
) -> Result<Shared, String> {
    model.validate().map_err(|e| e.to_string())?;
    let mut switch = Switch::new(model, 0x5eed);
    // As on the single-flow wire: rings of one BDP and the queue, the
    // same minimum RTO on both stacks, and a poll that catches up.
    let window = window_bytes(model);
    let base = MemoryLinkConfig::default();
    let tuning = base
        .tuning
        .clone()
        .rx_buffer(window)
        .tx_buffer(window)
        .rto_min(rto_min());
    let cfg = base
        .clone()
        .mtu(mtu)
        .queue_frames((4 * window / mtu.max(576)).max(base.queue_frames))
        .rx_batch(RX_BATCH);
    // Messages in flight per flow: the path's bandwidth-delay product and
    // its queue, twice over, so no flow is limited by its own posting.
    let in_flight = 2 * (model.bdp_bytes().unwrap_or(0) as usize + model.queue_bytes.unwrap_or(0));
    let depth = (in_flight / message.max(1) + 2).min(64);
    let linux = if flows.iter().any(|f| matches!(f, FlowKind::Linux(_))) {
        Some(LinuxHosts::on(
            &mut switch,
            mtu,
            rto_min(),
            linux_buffer_max(window),
        )?)
    } else {
        None
    };
    let mut rdma = Vec::new();
    for (i, kind) in flows.iter().enumerate() {
        if let FlowKind::Rdma(cc) = *kind {
            let ip = |side: u8| Ipv4Addr::new(10, 86, 0, 2 * i as u8 + side);
            let cfg = cfg.clone().tuning(tuning.clone().congestion(cc));
            let (client, client_port) =
                MemoryLink::host_and_port(&cfg, ip(1)).map_err(|e| e.to_string())?;
            let (server, server_port) =
                MemoryLink::host_and_port(&cfg, ip(2)).map_err(|e| e.to_string())?;
            switch.add_port(Side::Left, Port::Memory(client_port));
            switch.add_port(Side::Right, Port::Memory(server_port));
            rdma.push((
                client,
                server,
                SocketAddr::V4(SocketAddrV4::new(ip(2), PORT)),
            ));
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let forwarder = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || switch.run(&stop, SWITCH_TICK).map(|()| switch))
    };
    let start = Arc::new(Barrier::new(flows.len()));
    let mut rdma = rdma.into_iter();
    let workers: Vec<_> = flows
        .iter()
        .enumerate()
        .map(|(i, kind)| -> thread::JoinHandle<Result<f64, String>> {
            let start = Arc::clone(&start);
            match *kind {
                FlowKind::Rdma(_) => {
                    let (client, server, addr) = rdma.next().expect("one host pair per RDMA flow");
                    thread::spawn(move || {
                        let ep = Endpoints::connect(
                            Box::new(client),
                            Box::new(server),
                            addr,
                            crc,
                            false,
                        );
                        // Every flow reaches the start, whatever happened.
                        start.wait();
                        let ep = ep?;
                        let _progress = [
                            ep.client.spawn_progress_thread(),
                            ep.server.spawn_progress_thread(),
                        ];
                        let case = |duration| Case {
                            op: Op::Write,
                            size: message,
                            duration,
                            depth: Some(depth),
                            progress: ProgressModel::Thread,
                        };
                        case(warm).run_bandwidth(&ep)?;
                        let m = case(measure).run_bandwidth(&ep)?;
                        ep.close();
                        Ok(m.bytes as f64 * 8.0 / m.elapsed.as_secs_f64() / 1e9)
                    })
                }
                FlowKind::Linux(cc) => {
                    let hosts = linux.as_ref().expect("hosts made for Linux flows");
                    let sender = hosts.hosts[0].ns.name().to_owned();
                    let receiver = hosts.hosts[1].ns.name().to_owned();
                    thread::spawn(move || {
                        start.wait();
                        let server = SocketAddr::from((HOST_ADDRS[1], PORT + 1 + i as u16));
                        stream(&sender, &receiver, cc, server, warm, measure)
                    })
                }
            }
        })
        .collect();
    let results: Vec<_> = workers
        .into_iter()
        .map(|w| w.join().map_err(|_| "a flow panicked".to_string())?)
        .collect();
    stop.store(true, Ordering::Release);
    let switch = forwarder
        .join()
        .map_err(|_| "the switch panicked".to_string())?
        .map_err(|e| format!("switch: {e}"))?;
    drop(linux);
    let c = switch.counters(Side::Left);
    let flows = flows
        .iter()
        .zip(results)
        .map(|(&kind, r)| r.map(|gbps| FlowResult { kind, gbps }))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Shared {
        flows,
        drop_share: c.dropped() as f64 / c.frames_in.max(1) as f64,
    })
}

/// The split as a table, or as one JSON object.
pub(crate) fn render(s: &Shared, model: &LinkModelConfig, json: bool) -> String {
    let shares = s.share_of_fair();
    if json {
        let flows: Vec<String> = s
            .flows
            .iter()
            .zip(&shares)
            .map(|(f, share)| {
                format!(
                    r#"{{"flow":"{}","gbps":{:.4},"share_of_fair":{:.3}}}"#,
                    f.kind.name(),
                    f.gbps,
                    share
                )
            })
            .collect();
        return format!(
            r#"{{"shared_bottleneck":{{"rtt_ms":{:.3},"rate_bps":{},"queue_bytes":{},"loss":{},"flows":[{}],"jain":{:.4},"drop_share":{:.5}}}}}"#,
            (2 * model.delay).as_secs_f64() * 1e3,
            model.rate_bps.map_or("null".into(), |r| r.to_string()),
            model.queue_bytes.map_or("null".into(), |q| q.to_string()),
            model.loss,
            flows.join(","),
            s.jain(),
            s.drop_share
        );
    }
    let mut out = format!(
        "shared bottleneck: RTT {:?}, rate {}, queue {}, random loss {:.2}%\n",
        2 * model.delay,
        model.rate_bps.map_or("unlimited".into(), |r| format!(
            "{:.0} Mbit/s",
            r as f64 / 1e6
        )),
        model
            .queue_bytes
            .map_or("unbounded".into(), |q| format!("{q} B")),
        model.loss * 100.0
    );
    out += &format!(
        "{:<6} {:<12} {:>10} {:>14}\n",
        "flow", "kind", "Gbit/s", "x fair share"
    );
    for (i, (f, share)) in s.flows.iter().zip(&shares).enumerate() {
        out += &format!(
            "{:<6} {:<12} {:>10.3} {:>14.2}\n",
            i + 1,
            f.kind.name(),
            f.gbps,
            share
        );
    }
    out += &format!(
        "Jain fairness index {:.3}; the path dropped {:.2}% of frames\n",
        s.jain(),
        s.drop_share * 100.0
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_is_one_for_equal_flows_and_one_over_n_for_a_hog() {
        assert!((jain(&[2.0, 2.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[3.0, 0.0]) - 0.5).abs() < 1e-12);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        // (1 + 3)^2 / (2 * (1 + 9)) = 0.8
        assert!((jain(&[1.0, 3.0]) - 0.8).abs() < 1e-12);
        assert_eq!(jain(&[0.0, 0.0]), 0.0);
    }

    #[test]
    fn share_of_fair_divides_by_the_mean() {
        let s = Shared {
            flows: vec![
                FlowResult {
                    kind: FlowKind::Rdma(CongestionControl::Cubic),
                    gbps: 0.3,
                },
                FlowResult {
                    kind: FlowKind::Rdma(CongestionControl::Cubic),
                    gbps: 0.1,
                },
            ],
            drop_share: 0.0,
        };
        let r = s.share_of_fair();
        assert!(
            (r[0] - 1.5).abs() < 1e-12 && (r[1] - 0.5).abs() < 1e-12,
            "{r:?}"
        );
        let model = LinkModelConfig::default();
        let text = render(&s, &model, false);
        assert!(text.contains("Jain fairness index 0.800"), "{text}");
        let json = render(&s, &model, true);
        assert!(json.contains(r#""jain":0.8000"#) && json.contains(r#""share_of_fair":1.500"#));
    }

    #[test]
    fn flows_parse_by_name() {
        let cubic = FlowKind::Rdma(CongestionControl::Cubic);
        assert_eq!(FlowKind::parse("rdma"), Ok(cubic));
        assert_eq!(
            FlowKind::parse("rdma-bbr"),
            Ok(FlowKind::Rdma(CongestionControl::Bbr))
        );
        assert_eq!(FlowKind::parse("linux-bbr"), Ok(FlowKind::Linux("bbr")));
        assert_eq!(
            FlowKind::parse("linux-cubic")
                .map(FlowKind::name)
                .as_deref(),
            Ok("linux-cubic")
        );
        assert!(FlowKind::parse("udp").is_err());
    }

    /// Two RDMA flows on a small path share it and both move bytes; the
    /// split itself is a measurement the bench prints, not asserted here.
    #[test]
    fn two_rdma_flows_cross_one_switch() {
        let model = LinkModelConfig {
            delay: Duration::from_micros(500),
            rate_bps: Some(200_000_000),
            queue_bytes: Some(25_000),
            ..LinkModelConfig::default()
        };
        let s = run(
            &[FlowKind::Rdma(CongestionControl::Cubic); 2],
            &model,
            1500,
            64 << 10,
            CrcPolicy::Required,
            Duration::from_millis(200),
            Duration::from_secs(1),
        )
        .expect("runs");
        assert_eq!(s.flows.len(), 2);
        assert!(s.flows.iter().all(|f| f.gbps > 0.0), "{s:?}");
        assert!((0.0..=1.0).contains(&s.jain()) && (0.0..1.0).contains(&s.drop_share));
    }
}
