//! `iwarp bench --profile ...`: RDMA and Linux TCP across one modelled
//! wire, one flow at a time.
//!
//! The RDMA flow runs on the memory link with the model in both
//! directions; Linux Cubic and then BBR run between two namespaces whose
//! TAP devices a switch in this process joins through the same model at
//! the same settings (see [`super::wire_linux`]). Both TCPs get the same
//! MTU, the same minimum RTO and windows of the same size; the report
//! states each. `--rounds` repeats the sequence, so a slow spell of the
//! machine shows as a round that disagrees, not as a bias of one side.

use std::time::Duration;

use transport::link_model::{LinkCounters, LinkModelConfig};
use verbs::transport::memory::{FaultConfig, MemoryLink, MemoryLinkConfig};
use verbs::transport::{CongestionControl, TcpLossStats, TcpTuning, Transport};
use verbs::{CrcPolicy, Device};

use super::case::{Case, Endpoints, Op};
use super::link::{TransportKind, PORT};
use super::wire_linux::{LinuxFlow, LinuxWire};
use super::wire_report::{self, Flow, RdmaFlow, WireReport, WireSetup};
use super::{Args, OnOff, ProgressModel};
use crate::commands::wire_model::PathArgs;

/// Frames a memory-link host takes per poll once it has fallen behind
/// (Linux's NAPI budget).
pub(crate) const RX_BATCH: usize = 64;

/// The most rounds `--rounds` runs.
const MAX_ROUNDS: usize = 100;

/// Flags of the modelled wire (with `--loss` and `--jitter-us`, which
/// come on top of any profile).
#[derive(Debug, Clone, clap::Args)]
pub struct WireArgs {
    #[command(flatten)]
    path: PathArgs,
    /// On a modelled wire, how many times to run RDMA, Linux Cubic and
    /// Linux BBR one after another.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
}

impl WireArgs {
    /// The wire the flags describe, with `loss_percent` and `jitter` on
    /// top; `None` when no flag asks for a modelled wire.
    pub(crate) fn model(
        &self,
        loss_percent: f64,
        jitter: Duration,
    ) -> Result<Option<LinkModelConfig>, String> {
        let flags = self.path.flags(loss_percent / 100.0, Some(jitter), None);
        if !flags.any() {
            if self.rounds != 1 {
                return Err(
                    "--rounds needs a modelled wire (--profile, --rtt, --rate, --queue or --burst)"
                        .into(),
                );
            }
            return Ok(None);
        }
        if !(1..=MAX_ROUNDS).contains(&self.rounds) {
            return Err(format!("--rounds is between 1 and {MAX_ROUNDS}"));
        }
        flags.model().map(Some)
    }
}

/// smoltcp's TCP rings for `model`: room for a window of one
/// bandwidth-delay product plus a full queue, as a power of two (the
/// memory link's default without a rate). A window much larger than
/// that only lets slow start overshoot the queue further.
pub(crate) fn window_bytes(model: &LinkModelConfig) -> usize {
    let default = verbs::transport::memory::MEMORY_LINK_RING;
    let Some(bdp) = model.bdp_bytes() else {
        return default;
    };
    let queue = model.queue_bytes.unwrap_or(0) as u64;
    let want = (bdp + queue).clamp(default as u64, 64 << 20);
    want.next_power_of_two() as usize
}

/// Linux's socket buffer limit for a window of `window` bytes: it
/// advertises about half its receive buffer (the rest pays for the
/// buffers' overhead), so twice the window.
pub(crate) fn linux_buffer_max(window: usize) -> usize {
    2 * window
}

/// The unmeasured start of every flow: slow start is over by then on
/// every profile (twenty round trips, at least half a second).
pub(crate) fn warm_up(model: &LinkModelConfig) -> Duration {
    (model.delay * 2 * 20).clamp(Duration::from_millis(500), Duration::from_secs(5))
}

/// The minimum RTO on both sides: Linux's default, which its routes can
/// carry and smoltcp can be set to.
pub(crate) fn rto_min() -> Duration {
    TcpTuning::default().rto_min
}

pub(crate) fn run(args: &Args, wire: &WireArgs, model: LinkModelConfig) -> Result<(), String> {
    if args.transport != TransportKind::Memory {
        return Err(
            "a modelled wire runs RDMA on the memory link: leave --transport memory".into(),
        );
    }
    if args.corrupt > 0.0 {
        return Err("--corrupt has no counterpart on the Linux side of a modelled wire".into());
    }
    if args.ops.iter().any(|op| op.is_atomic()) {
        return Err("a modelled wire measures streams: --ops write, read or send".into());
    }
    let window = window_bytes(&model);
    let setup = WireSetup {
        model: model.clone(),
        mtu: args.mtu,
        window,
        rto_min: rto_min(),
        congestion: CongestionControl::from(args.cc).name(),
        warm_up: warm_up(&model),
        duration: Duration::from_secs_f64(args.duration),
        linux: None,
    };
    let mut linux = if args.no_baseline {
        None
    } else {
        Some(LinuxWire::new(
            &model,
            0x5eed,
            args.mtu,
            setup.rto_min,
            linux_buffer_max(window),
        ))
    };
    let setup = WireSetup {
        linux: linux.as_ref().map(|l| match l {
            Ok(w) => Ok(wire_report::LinuxSetup {
                offloads_off: w.offloads_off,
                rto_min: w.rto_min.clone(),
                buffer_max: w.buffer_max.clone(),
            }),
            Err(e) => Err(e.clone()),
        }),
        ..setup
    };
    let mut flows = Vec::new();
    for round in 1..=wire.rounds {
        eprintln!("round {round}: RDMA on the memory link");
        let cases: Vec<(Op, usize)> = args
            .ops
            .iter()
            .flat_map(|&op| args.sizes.iter().map(move |&size| (op, size)))
            .collect();
        for f in rdma_flows(args, &setup, round, args.cc.into(), &cases)? {
            flows.push(Flow::Rdma { round, flow: f });
        }
        if let Some(Ok(l)) = linux.as_mut() {
            for cc in super::linux_tcp::CONTROLLERS {
                eprintln!("round {round}: Linux {cc} through the switch");
                let f: Result<LinuxFlow, String> = l.flow(cc, setup.warm_up, setup.duration);
                flows.push(Flow::Linux { round, flow: f });
            }
        }
    }
    drop(linux);
    let report = WireReport { setup, flows };
    if args.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.table());
    }
    Ok(())
}

/// Each of `cases` (op and size) on a fresh memory link with the model,
/// its TCP under `cc`.
pub(crate) fn rdma_flows(
    args: &Args,
    setup: &WireSetup,
    round: usize,
    cc: CongestionControl,
    cases: &[(Op, usize)],
) -> Result<Vec<RdmaFlow>, String> {
    let base = MemoryLinkConfig::default();
    let tuning = base
        .tuning
        .clone()
        .rx_buffer(setup.window)
        .tx_buffer(setup.window)
        .rto_min(setup.rto_min)
        .congestion(cc);
    let cfg = base
        .clone()
        .mtu(args.mtu)
        .faults(FaultConfig::from_link_model(&setup.model))
        .seed(base.seed ^ round as u64)
        // Bound on frames held: two windows of full frames, and their ACKs.
        .queue_frames((4 * setup.window / args.mtu.max(576)).max(base.queue_frames))
        // Driven in real time by one thread that a loaded machine can hold
        // back: let it catch up a NAPI budget of frames per poll.
        .rx_batch(RX_BATCH)
        .tuning(tuning);
    let (a, b) = MemoryLink::pair(&cfg).map_err(|e| format!("memory link: {e}"))?;
    let crc = if args.crc == OnOff::On {
        CrcPolicy::Required
    } else {
        CrcPolicy::Off
    };
    let ep = Endpoints::connect(
        Box::new(a),
        Box::new(b),
        cfg.endpoint_b(PORT),
        crc,
        args.markers == OnOff::On,
    )?;
    // `--progress thread`: each host gets its progress thread, as in the
    // bench's other modes. The cases then only sleep on their completion
    // queues; without the threads a blocked poll drove the client alone,
    // the server never answered, and the first Write was flushed when
    // the client's TCP gave up (its user timeout) after seven timeouts.
    let _progress: Vec<_> = match args.progress {
        ProgressModel::Caller => Vec::new(),
        ProgressModel::Thread => vec![
            ep.client.spawn_progress_thread(),
            ep.server.spawn_progress_thread(),
        ],
    };
    let mut out = Vec::new();
    for &(op, size) in cases {
        // Read data flows from the server.
        let data_from = if op == Op::Read {
            &ep.server
        } else {
            &ep.client
        };
        let tcp_before = tcp_stats(&ep);
        let link_before = link_counters(data_from)?;
        let case = |duration| Case {
            op,
            size,
            duration,
            depth: args.depth,
            progress: args.progress,
        };
        // A case that fails says what its TCP went through.
        let failed = |e: String| {
            let tcp = tcp_stats(&ep).since(&tcp_before);
            format!("{e}\n  TCP under RDMA (both ends) until then: {tcp}")
        };
        case(setup.warm_up).run(&ep).map_err(failed)?;
        let m = case(setup.duration).run(&ep).map_err(failed)?;
        let secs = m.elapsed.as_secs_f64().max(1e-9);
        let bits = m.bytes as f64 * 8.0;
        out.push(RdmaFlow {
            op,
            size,
            gbps: bits / secs / 1e9,
            cpu_gbps: m
                .cpu
                .map(|c| c.as_secs_f64())
                .filter(|c| *c > 0.0)
                .map(|c| bits / c / 1e9),
            tcp: tcp_stats(&ep).since(&tcp_before),
            link: link_counters(data_from)?.since(&link_before),
        });
    }
    ep.close();
    Ok(out)
}

fn tcp_stats(ep: &Endpoints) -> TcpLossStats {
    let mut sum = TcpLossStats::default();
    for d in [&ep.client, &ep.server] {
        if let Some(s) = d.with_transport(|t| t.tcp_loss_stats()) {
            sum.merge(&s);
        }
    }
    sum
}

fn link_counters(d: &Device) -> Result<LinkCounters, String> {
    d.with_transport(|t: &mut dyn Transport| t.link_counters())
        .ok_or_else(|| "the memory link keeps no link counters".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use transport::link_model::Profile;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        wire: WireArgs,
    }

    fn model(argv: &[&str], loss_percent: f64) -> Result<Option<LinkModelConfig>, String> {
        let cli = Cli::try_parse_from(std::iter::once("bench").chain(argv.iter().copied()))
            .map_err(|e| e.to_string())?;
        cli.wire.model(loss_percent, Duration::ZERO)
    }

    #[test]
    fn flags_compose_a_profile_with_loss_on_top() {
        assert_eq!(model(&[], 1.0), Ok(None), "no wire flag: no modelled wire");
        let wan = model(&["--profile", "wan"], 0.0).unwrap().unwrap();
        assert_eq!(wan, Profile::Wan.config());
        let m = model(
            &["--profile", "lan", "--rtt", "4ms", "--queue", "30kb"],
            1.0,
        )
        .unwrap()
        .unwrap();
        assert_eq!(m.delay, Duration::from_millis(2));
        assert_eq!(m.rate_bps, Some(1_000_000_000));
        assert_eq!(m.queue_bytes, Some(30_000));
        assert_eq!(m.loss, 0.01, "--loss is a percent, on top of the profile");
        let m = model(&["--rate", "10mbit", "--burst", "3"], 2.0)
            .unwrap()
            .unwrap();
        assert_eq!(m.loss, 0.0);
        assert!((m.burst.unwrap().stationary_loss() - 0.02).abs() < 1e-12);
        assert_eq!(m.delay, Duration::ZERO);
    }

    #[test]
    fn bad_wire_flags_are_errors() {
        assert!(model(&["--profile", "moon"], 0.0).is_err());
        assert!(model(&["--rate", "0"], 0.0).is_err());
        assert!(
            model(&["--burst", "3"], 0.0).is_err(),
            "a burst needs a loss"
        );
        assert!(
            model(&["--rounds", "2"], 0.0).is_err(),
            "rounds need a wire"
        );
        assert!(model(&["--profile", "lan", "--rounds", "0"], 0.0).is_err());
        assert!(model(&["--profile", "lan", "--rounds", "2"], 0.0).is_ok());
    }

    #[test]
    fn windows_cover_a_bdp_and_a_queue() {
        assert_eq!(window_bytes(&Profile::Lan.config()), 256 << 10);
        assert_eq!(window_bytes(&Profile::Wan.config()), 8 << 20);
        assert_eq!(window_bytes(&Profile::LossyWan.config()), 1 << 20);
        assert_eq!(linux_buffer_max(8 << 20), 16 << 20);
        assert_eq!(
            window_bytes(&LinkModelConfig::default()),
            verbs::transport::memory::MEMORY_LINK_RING
        );
        for p in Profile::ALL {
            let c = p.config();
            let w = window_bytes(&c) as u64;
            assert!(w >= c.bdp_bytes().unwrap() + c.queue_bytes.unwrap() as u64);
        }
    }

    #[derive(Debug, Parser)]
    struct BenchCli {
        #[command(flatten)]
        args: Args,
    }

    /// `--progress thread` on a modelled, lossy wire: the progress threads
    /// drive both hosts and every Write completes. Without them nothing
    /// drove the server: the client's TCP timed out seven times, gave up
    /// after its user timeout, and the first Write came back flushed.
    #[test]
    fn threaded_progress_on_a_lossy_wire_completes_writes() {
        let argv = [
            "bench",
            "--profile",
            "lan",
            "--loss",
            "1",
            "--progress",
            "thread",
            "--ops",
            "write",
            "--sizes",
            "64k",
            "--no-baseline",
        ];
        let args = BenchCli::try_parse_from(argv).expect("bench flags").args;
        let model = args
            .wire
            .model(args.loss, Duration::ZERO)
            .expect("a wire")
            .expect("a modelled wire");
        let setup = WireSetup {
            window: window_bytes(&model),
            model,
            mtu: args.mtu,
            rto_min: rto_min(),
            congestion: CongestionControl::Cubic.name(),
            warm_up: Duration::from_millis(100),
            duration: Duration::from_millis(400),
            linux: None,
        };
        let flows = rdma_flows(
            &args,
            &setup,
            1,
            CongestionControl::Cubic,
            &[(Op::Write, 64 << 10)],
        )
        .expect("every Write completes");
        assert_eq!(flows.len(), 1);
        assert!(flows[0].gbps > 0.0, "{:?}", flows[0].gbps);
    }

    #[test]
    fn warm_up_outlasts_slow_start() {
        assert_eq!(warm_up(&Profile::Lan.config()), Duration::from_millis(500));
        assert_eq!(warm_up(&Profile::Wan.config()), Duration::from_millis(500));
        assert_eq!(
            warm_up(&Profile::LossyWan.config()),
            Duration::from_millis(800)
        );
    }
}
