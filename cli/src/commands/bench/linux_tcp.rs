//! Linux kernel TCP over the same loss and MTU: the figure to hold RDMA
//! goodput against on a lossy link, where smoltcp's own raw TCP collapses
//! and a ratio to it says nothing, and on the TAP transport, where it says
//! what the kernel's own TCP makes of the same MTU.
//!
//! Two private network namespaces joined by a veth pair at the bench's MTU,
//! each dropping the TCP packets it sends at the bench's loss rate
//! (nftables, output hook), one bulk stream between kernel sockets for the
//! duration. On a lossy link segmentation offloads are turned off on the
//! veths where ethtool can, so a dropped packet is one MTU-sized frame, not
//! a 64 KiB TSO burst; the report says when they could not be. Without
//! loss they stay on, as Linux sets them (and as the TAP transport uses
//! the kernel's).

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use verbs::transport::tap::netns::in_netns;

use super::nft_loss::{self, Hook};
use capture::netns::Netns;

const SENDER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 3, 1);
const RECEIVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 3, 2);
const PORT: u16 = 7472;
/// Unmeasured time for slow start, as the other baselines warm up.
const WARM_UP: Duration = Duration::from_millis(300);
const CHUNK: usize = 256 * 1024;

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

/// Kernel TCP goodput over the veth pair.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LinuxTcp {
    pub gbps: f64,
    pub offloads: Offloads,
}

/// Measures one bulk stream for `duration` over a veth pair at `mtu` that
/// drops `loss` (a fraction) of the TCP packets each way. The namespaces
/// go away on every path out, errors included.
pub(crate) fn measure(mtu: usize, loss: f64, duration: Duration) -> Result<LinuxTcp, String> {
    let sender = Netns::create("bench-linux")?;
    let receiver = Netns::create("bench-linux")?;
    sender.ip(&[
        "link",
        "add",
        "lt0",
        "type",
        "veth",
        "peer",
        "name",
        "lt1",
        "netns",
        receiver.name(),
    ])?;
    let mut offloads_off = true;
    for (ns, dev, addr) in [
        (&sender, "lt0", SENDER_ADDR),
        (&receiver, "lt1", RECEIVER_ADDR),
    ] {
        ns.ip(&["link", "set", dev, "mtu", &mtu.to_string()])?;
        ns.ip(&["addr", "add", &format!("{addr}/24"), "dev", dev])?;
        if loss > 0.0 {
            offloads_off &= offloads_off_on(ns.name(), dev);
        }
        ns.ip(&["link", "set", dev, "up"])?;
        ns.ip(&["link", "set", "lo", "up"])?;
        if loss > 0.0 {
            nft_loss::install(ns.name(), Hook::Output, loss)?;
        }
    }
    let gbps = stream(sender.name(), receiver.name(), duration)?;
    let offloads = match (loss > 0.0, offloads_off) {
        (false, _) => Offloads::Default,
        (true, true) => Offloads::Off,
        (true, false) => Offloads::StillOn,
    };
    Ok(LinuxTcp { gbps, offloads })
}

/// `ethtool -K DEV tso off gso off gro off` inside `ns`; false if it failed.
fn offloads_off_on(ns: &str, dev: &str) -> bool {
    Command::new("ip")
        .args(["netns", "exec", ns, "ethtool", "-K", dev])
        .args(["tso", "off", "gso", "off", "gro", "off"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// One bulk stream from `sender_ns` to `receiver_ns`; goodput over
/// `duration` after the warm-up, in Gbit/s.
fn stream(sender_ns: &str, receiver_ns: &str, duration: Duration) -> Result<f64, String> {
    let server = SocketAddr::from((RECEIVER_ADDR, PORT));
    let listener = in_netns(receiver_ns, || TcpListener::bind(server))
        .and_then(|r| r)
        .map_err(|e| format!("Linux TCP listen in {receiver_ns}: {e}"))?;
    let client = in_netns(sender_ns, || {
        TcpStream::connect_timeout(&server, Duration::from_secs(5))
    })
    .and_then(|r| r)
    .map_err(|e| format!("Linux TCP connect from {sender_ns}: {e}"))?;
    let (accepted, _) = listener
        .accept()
        .map_err(|e| format!("Linux TCP accept: {e}"))?;
    let received = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let stopper = client
        .try_clone()
        .map_err(|e| format!("Linux TCP socket: {e}"))?;
    std::thread::scope(|s| {
        s.spawn(|| drain(accepted, &received, &stop));
        s.spawn(|| fill(client, &stop));
        std::thread::sleep(WARM_UP);
        let (start, first) = (Instant::now(), received.load(Ordering::Relaxed));
        std::thread::sleep(duration);
        let bytes = received.load(Ordering::Relaxed) - first;
        let secs = start.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        // Wakes a sender blocked on a full window; the receiver then sees
        // the end of the stream (or a reset) and returns.
        let _ = stopper.shutdown(Shutdown::Both);
        Ok(bytes as f64 * 8.0 / secs / 1e9)
    })
}

fn fill(mut socket: TcpStream, stop: &AtomicBool) {
    let data: Vec<u8> = (0..CHUNK).map(|i| (i % 251) as u8).collect();
    while !stop.load(Ordering::Relaxed) {
        if socket.write_all(&data).is_err() {
            break;
        }
    }
}

fn drain(mut socket: TcpStream, received: &AtomicU64, stop: &AtomicBool) {
    // Reads time out now and then, so the end of the measurement ends this
    // even while the stream's last segments wait for retransmission.
    let _ = socket.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buf = vec![0u8; CHUNK];
    loop {
        match socket.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                received.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
            Err(_) => break,
        }
    }
}
