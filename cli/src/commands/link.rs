//! `iwarp link`: put any program through the modelled wire.

use std::io::Read;
use std::net::Ipv4Addr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capture::netns::Netns;
use transport::link_model::{LinkModelConfig, Reorder};
use transport::switch::{Port, Side, Switch, TapPort};

use super::units;
use super::wire_model::{describe, PathArgs};

/// Run a userspace forwarder between two TAP devices that applies the
/// same link model as the memory link (delay, jitter, random or bursty
/// loss, a rate limit with a drop-tail queue, reordering) to every frame.
///
/// By default it makes two network namespaces, each with one TAP device
/// and an address (10.90.0.1/24 and 10.90.0.2/24), and prints how to run
/// programs in them (`ip netns exec NAME PROGRAM`); the namespaces are
/// removed when it ends. With --tap it forwards between two existing TAP
/// devices instead. It ends after --duration, or when standard input
/// closes (Ctrl-D) if the duration is 0.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    path: PathArgs,
    /// Share of frames lost in each direction (e.g. 0.01 or 1%).
    #[arg(long, value_parser = units::probability, default_value = "0")]
    loss: f64,
    /// Extra delay per frame, uniform from 0 to this (e.g. 1ms).
    #[arg(long, value_parser = units::duration)]
    jitter: Option<Duration>,
    /// Share of frames held back by --reorder-hold so later ones overtake.
    #[arg(long, value_parser = units::probability)]
    reorder: Option<f64>,
    /// How long a reordered frame is held.
    #[arg(long, value_parser = units::duration, default_value = "1ms")]
    reorder_hold: Duration,
    /// Seed of the random draws; the same seed replays the same fates.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Forward between these two existing TAP devices (LEFT,RIGHT) instead
    /// of making namespaces.
    #[arg(long, value_delimiter = ',', num_args = 2)]
    tap: Option<Vec<String>>,
    /// MTU of the TAP devices made in namespaces.
    #[arg(long, default_value_t = 1500)]
    mtu: usize,
    /// Seconds to run; 0 runs until standard input closes.
    #[arg(long, default_value_t = 0)]
    duration: u64,
}

impl Args {
    /// The model the flags describe.
    pub(crate) fn model(&self) -> Result<LinkModelConfig, String> {
        let reorder = self.reorder.map(|probability| Reorder {
            probability,
            hold: self.reorder_hold,
        });
        self.path.flags(self.loss, self.jitter, reorder).model()
    }
}

/// One end of the wire: a namespace with one TAP device joined to the
/// switch. Dropping it deletes the namespace (and the device).
#[derive(Debug)]
pub(crate) struct NamespacedHost {
    pub side: Side,
    pub ns: Netns,
    /// The TAP device's name inside `ns`.
    pub tap: String,
    pub addr: Ipv4Addr,
}

/// The hosts' addresses, left then right, in one /24.
pub(crate) const HOST_ADDRS: [Ipv4Addr; 2] =
    [Ipv4Addr::new(10, 90, 0, 1), Ipv4Addr::new(10, 90, 0, 2)];

/// Two namespaces, each with one TAP device at `mtu`, up, with its address
/// from [`HOST_ADDRS`], the left one on the switch's left side and the
/// right one on its right: two Linux hosts with `sw`'s wire between them.
pub(crate) fn namespaced_hosts(sw: &mut Switch, mtu: usize) -> Result<Vec<NamespacedHost>, String> {
    let mut hosts = Vec::new();
    for (side, addr) in [Side::Left, Side::Right].into_iter().zip(HOST_ADDRS) {
        let ns = Netns::create("link")?;
        let tap = TapPort::open("link%d", Some(ns.name()))
            .map_err(|e| format!("TAP in {}: {e}", ns.name()))?;
        let name = tap.name().to_owned();
        ns.ip(&["link", "set", &name, "mtu", &mtu.to_string(), "up"])?;
        ns.ip(&["addr", "add", &format!("{addr}/24"), "dev", &name])?;
        sw.add_port(side, Port::Tap(tap));
        hosts.push(NamespacedHost {
            side,
            ns,
            tap: name,
            addr,
        });
    }
    Ok(hosts)
}

pub fn run(args: &Args) -> ExitCode {
    match run_inner(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("iwarp link: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_inner(args: &Args) -> Result<(), String> {
    let model = args.model()?;
    let mut sw = Switch::new(&model, args.seed);
    // Kept until the end: dropping a namespace deletes it.
    let mut namespaces = Vec::new();
    match &args.tap {
        Some(names) => {
            for (name, side) in names.iter().zip([Side::Left, Side::Right]) {
                let tap = TapPort::open(name, None).map_err(|e| format!("TAP {name}: {e}"))?;
                sw.add_port(side, Port::Tap(tap));
            }
        }
        None => {
            for host in namespaced_hosts(&mut sw, args.mtu)? {
                println!(
                    "{} side: namespace {}, {} {}/24; run programs there with `ip netns exec {} PROGRAM`",
                    if host.side == Side::Left { "left" } else { "right" },
                    host.ns.name(),
                    host.tap,
                    host.addr,
                    host.ns.name()
                );
                namespaces.push(host.ns);
            }
        }
    }
    println!("wire: {}", describe(&model));
    let stop = Arc::new(AtomicBool::new(false));
    if args.duration == 0 {
        println!("forwarding until standard input closes (Ctrl-D)");
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = std::io::stdin().lock().read_to_end(&mut sink);
            stop.store(true, Ordering::Release);
        });
    } else {
        println!("forwarding for {} s", args.duration);
        let stop = Arc::clone(&stop);
        let until = Instant::now() + Duration::from_secs(args.duration);
        std::thread::spawn(move || {
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
            stop.store(true, Ordering::Release);
        });
    }
    sw.run(&stop, Duration::from_millis(50))
        .map_err(|e| format!("forwarding: {e}"))?;
    for (name, side) in [
        ("left to right", Side::Left),
        ("right to left", Side::Right),
    ] {
        let c = sw.counters(side);
        println!(
            "{name}: {} frames ({} B) in, {} lost, {} dropped by the full queue, {} delivered",
            c.frames_in,
            c.bytes_in,
            c.lost(),
            c.overflowed,
            c.delivered
        );
    }
    if sw.port_drops() + sw.held_drops() > 0 {
        println!(
            "also dropped: {} frames a full TAP device refused, {} beyond the switch's bound",
            sw.port_drops(),
            sw.held_drops()
        );
    }
    drop(namespaces);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use transport::link_model::Profile;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn model(argv: &[&str]) -> Result<LinkModelConfig, String> {
        let cli = Cli::try_parse_from(std::iter::once("link").chain(argv.iter().copied()))
            .map_err(|e| e.to_string())?;
        cli.args.model()
    }

    #[test]
    fn profiles_and_overrides() {
        let wan = model(&["--profile", "wan"]).unwrap();
        assert_eq!(wan, Profile::Wan.config());
        let m = model(&["--profile", "lan", "--rtt", "4ms", "--loss", "1%"]).unwrap();
        assert_eq!(m.delay, Duration::from_millis(2));
        assert_eq!(m.rate_bps, Some(1_000_000_000));
        assert_eq!(m.loss, 0.01);
        let m = model(&["--rate", "10mbit", "--queue", "30kb", "--jitter", "1ms"]).unwrap();
        assert_eq!(
            (m.rate_bps, m.queue_bytes),
            (Some(10_000_000), Some(30_000))
        );
        assert!(describe(&m).contains("jitter"));
    }

    #[test]
    fn a_burst_turns_the_loss_into_runs() {
        let m = model(&["--loss", "2%", "--burst", "4"]).unwrap();
        assert_eq!(m.loss, 0.0);
        let g = m.burst.unwrap();
        assert!((g.stationary_loss() - 0.02).abs() < 1e-12);
        assert!(model(&["--burst", "4"]).is_err(), "a burst needs a loss");
        assert!(model(&["--loss", "1%", "--burst", "0.5"]).is_err());
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        assert!(model(&["--profile", "moon"]).is_err());
        assert!(model(&["--rate", "0"]).is_err());
        assert!(model(&["--loss", "2"]).is_err());
        assert!(model(&["--reorder", "-1"]).is_err());
    }
}
