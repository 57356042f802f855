//! Linux kernel TCP over the same loss and MTU: the figure to hold RDMA
//! goodput against on a lossy link, where smoltcp's own raw TCP collapses
//! and a ratio to it says nothing, and on the TAP transport, where it says
//! what the kernel's own TCP makes of the same MTU.
//!
//! Three private network namespaces: a sender and a receiver, each joined
//! by a veth pair at the bench's MTU to a router between them, which drops
//! TCP packets it forwards at the bench's loss rate (nftables, forward
//! hook), both ways. A drop there is a network loss, as on the memory link
//! and on the TAP transport's bridge; a drop on a sender's own output hook
//! is not (the kernel sends the same segment again on its next transmit).
//! One bulk stream between kernel sockets for the duration, once per
//! congestion controller, each pinned on its socket (`TCP_CONGESTION`).
//! The routes carry the smoltcp side's minimum RTO (`rto_min`), so both
//! TCPs wait alike before a timeout. On a lossy link segmentation offloads
//! are turned off on the veths where ethtool can, so a dropped packet is
//! one MTU-sized frame, not a 64 KiB TSO burst; the report says when they
//! could not be. Without loss they stay on, as Linux sets them (and as the
//! TAP transport uses the kernel's).

use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::Duration;

use verbs::transport::tap::netns::in_netns;

use super::nft_loss::{self, Hook};
use capture::netns::Netns;

const SENDER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 3, 1);
const SENDER_GW: Ipv4Addr = Ipv4Addr::new(10, 77, 3, 254);
const RECEIVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 4, 1);
const RECEIVER_GW: Ipv4Addr = Ipv4Addr::new(10, 77, 4, 254);
const PORT: u16 = 7472;
/// Unmeasured time for slow start, as the other baselines warm up.
const WARM_UP: Duration = Duration::from_millis(300);

/// The congestion controllers measured, in order: Linux's loss-based
/// default and its model-based one.
pub(crate) const CONTROLLERS: [&str; 2] = ["cubic", "bbr"];

/// TSO, GSO and GRO on the veths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offloads {
    /// Turned off (a lossy link).
    Off,
    /// A lossy link, but ethtool could not turn them off.
    StillOn,
    /// Left as Linux sets them (no loss).
    Default,
}

/// Kernel TCP goodput through the router, per congestion controller.
#[derive(Debug, Clone)]
pub(crate) struct LinuxTcp {
    /// Goodput with Cubic, in Gbit/s.
    pub gbps: f64,
    /// Goodput with BBR, or why it could not be measured (no tcp_bbr).
    pub bbr_gbps: Result<f64, String>,
    pub offloads: Offloads,
    /// The routes' minimum RTO.
    pub rto_min: Duration,
}

/// Measures one bulk stream per controller for `duration` through a
/// router at `mtu` that drops `loss` (a fraction) of the TCP packets it
/// forwards each way, with `rto_min` on the routes. The namespaces go away
/// on every path out, errors included.
pub(crate) fn measure(
    mtu: usize,
    loss: f64,
    rto_min: Duration,
    duration: Duration,
) -> Result<LinuxTcp, String> {
    let sender = Netns::create("bench-linux")?;
    let router = Netns::create("bench-linux")?;
    let receiver = Netns::create("bench-linux")?;
    let mut offloads_off = true;
    for (host, dev, rdev, addr, gw, far) in [
        (&sender, "lt0", "lr0", SENDER_ADDR, SENDER_GW, RECEIVER_ADDR),
        (
            &receiver,
            "lt1",
            "lr1",
            RECEIVER_ADDR,
            RECEIVER_GW,
            SENDER_ADDR,
        ),
    ] {
        host.ip(&[
            "link",
            "add",
            dev,
            "type",
            "veth",
            "peer",
            "name",
            rdev,
            "netns",
            router.name(),
        ])?;
        for (ns, d, a) in [(host, dev, addr), (&router, rdev, gw)] {
            ns.ip(&["link", "set", d, "mtu", &mtu.to_string()])?;
            ns.ip(&["addr", "add", &format!("{a}/24"), "dev", d])?;
            if loss > 0.0 {
                offloads_off &= offloads_off_on(ns.name(), d);
            }
            ns.ip(&["link", "set", d, "up"])?;
        }
        host.ip(&["link", "set", "lo", "up"])?;
        let rto = format!("{}ms", rto_min.as_millis().max(1));
        host.ip(&[
            "route",
            "add",
            &format!("{far}/32"),
            "via",
            &gw.to_string(),
            "rto_min",
            &rto,
        ])?;
    }
    enable_forwarding(router.name())?;
    if loss > 0.0 {
        nft_loss::install(router.name(), Hook::Forward, loss)?;
    }
    let gbps = stream(sender.name(), receiver.name(), CONTROLLERS[0], duration)?;
    let bbr_gbps = stream(sender.name(), receiver.name(), CONTROLLERS[1], duration);
    let offloads = match (loss > 0.0, offloads_off) {
        (false, _) => Offloads::Default,
        (true, true) => Offloads::Off,
        (true, false) => Offloads::StillOn,
    };
    Ok(LinuxTcp {
        gbps,
        bbr_gbps,
        offloads,
        rto_min,
    })
}

/// Turns on IPv4 forwarding in `ns` (its `/proc/sys/net` is the one of
/// the thread that opens it).
fn enable_forwarding(ns: &str) -> Result<(), String> {
    in_netns(ns, || std::fs::write("/proc/sys/net/ipv4/ip_forward", "1"))
        .and_then(|r| r)
        .map_err(|e| format!("IPv4 forwarding in {ns}: {e}"))
}

/// `ethtool -K DEV tso off gso off gro off` inside `ns`; false if it failed.
pub(crate) fn offloads_off_on(ns: &str, dev: &str) -> bool {
    Command::new("ip")
        .args(["netns", "exec", ns, "ethtool", "-K", dev])
        .args(["tso", "off", "gso", "off", "gro", "off"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// One bulk stream from `sender_ns` to the receiver in `receiver_ns`
/// with congestion controller `cc` on both sockets; goodput over
/// `duration` after the warm-up, in Gbit/s.
fn stream(sender_ns: &str, receiver_ns: &str, cc: &str, duration: Duration) -> Result<f64, String> {
    let server = SocketAddr::from((RECEIVER_ADDR, PORT));
    super::linux_stream::stream(sender_ns, receiver_ns, cc, server, WARM_UP, duration)
}
