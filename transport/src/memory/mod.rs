//! Two smoltcp hosts joined by an in-process Ethernet link.
//!
//! [`MemoryLink::pair`] gives two [`MemoryHost`]s, each a full
//! [`Transport`]. They can be driven from one thread
//! (poll one, then the other; [`MemoryNet`] does this) or each from its own
//! thread, where [`Transport::wait`] sleeps on a
//! condition variable until the peer sends. Frames pass through a seeded
//! [`FaultConfig`]: the same seed and the same sequence of `poll` instants
//! replay the same run exactly, which makes virtual time (advancing `now`
//! by `poll_delay` instead of sleeping) a deterministic simulator.
//!
//! The impairments are the shared [`LinkModel`](crate::link_model::LinkModel)'s:
//! delay, jitter, random and bursty loss, a rate limit with a drop-tail
//! queue and reordering, applied by the sending end as each frame leaves.
//! The model only stamps each frame with its delivery instant; the lane
//! keeps frames in that order, so no timer thread is needed. A path with
//! delay wants a rate too (see [`FaultConfig::rate_bps`]) and rings of at
//! least one bandwidth-delay product.
//!
//! `cargo run --release -p iwarp-bench --example long_path` measures how much
//! of the rate raw TCP gets on a long path.

mod device;
mod fault;
mod link;
mod port;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::{Duration, Instant};

use smoltcp::wire::{EthernetAddress, Ipv4Cidr};

pub use device::{LinkStats, MemoryDevice};
pub use fault::FaultConfig;
pub use port::MemoryPort;

use super::smol::SmolStack;
use super::{TcpTuning, Transport, TransportError};

/// Largest IP MTU the link carries (the IPv4 total-length limit).
pub const MAX_MTU: usize = 65535;
/// Smallest IP MTU every IPv4 host must accept.
pub const MIN_MTU: usize = 576;

/// TCP send and receive ring size on a default memory link.
///
/// The link has no propagation delay (unless [`FaultConfig::latency`] adds
/// some), so the window only has to cover one turn of the two hosts, and
/// the ring is also how much a turn moves: every byte is written into the
/// send ring, copied into frames, into the peer's receive ring and out
/// again within one turn, so a ring that stays in the core's cache makes
/// every one of those copies cheaper. Measured on a 1.25 MiB-L2 core,
/// 128 KiB rings carry 20–40 % more bytes per CPU-second than 1 MiB rings,
/// for raw TCP and RDMA alike, at MTU 1500 and 9000. With added latency,
/// goodput is bounded by ring / round-trip time: raise the rings with it.
pub const MEMORY_LINK_RING: usize = 128 * 1024;

/// A smoltcp host on one end of a memory link.
pub type MemoryHost = SmolStack<MemoryDevice>;

/// How a memory link is built.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MemoryLinkConfig {
    /// IP MTU of both ends (Ethernet frames are 14 bytes longer).
    pub mtu: usize,
    /// Impairments applied in both directions.
    pub faults: FaultConfig,
    /// Seeds the impairments, TCP initial sequence numbers and ports.
    pub seed: u64,
    /// Frames each direction holds, queued or in flight, before dropping
    /// new ones: a bound on memory, not a model of a queue (that is
    /// [`FaultConfig::queue_bytes`]). A window of 8 MiB at MTU 1500 is
    /// about 5,800 frames.
    pub queue_frames: usize,
    /// Socket settings of both hosts. The default is
    /// [`TcpTuning::default`] with [`MEMORY_LINK_RING`]-byte rings and
    /// a minimum RTO of [`TcpTuning::MEMORY_LINK_RTO_MIN`]: round trips on
    /// the link take microseconds, so Linux's 200 ms floor would turn each
    /// timeout into thousands of idle round trips.
    pub tuning: TcpTuning,
    /// Address of host A (host B is the next one); both in a /24.
    pub addr_a: Ipv4Addr,
    /// Frames a host takes off the link per poll when more than one is
    /// already due. 1 (the default) takes one arrival instant per poll,
    /// so on virtual time every frame a rate limit spaces out is answered
    /// on its own. A host driven in real time by a thread that can fall
    /// behind (a loaded machine, a long path at a high rate) wants more,
    /// or it pays a whole poll per frame while the backlog grows.
    pub rx_batch: usize,
}

crate::setters::setters!(MemoryLinkConfig {
    mtu: usize,
    faults: FaultConfig,
    seed: u64,
    queue_frames: usize,
    tuning: TcpTuning,
    addr_a: Ipv4Addr,
    rx_batch: usize,
});

impl Default for MemoryLinkConfig {
    fn default() -> Self {
        MemoryLinkConfig {
            mtu: 1500,
            faults: FaultConfig::default(),
            seed: 0x1dea_5eed,
            queue_frames: 16384,
            tuning: TcpTuning {
                rx_buffer: MEMORY_LINK_RING,
                tx_buffer: MEMORY_LINK_RING,
                rto_min: TcpTuning::MEMORY_LINK_RTO_MIN,
                ..TcpTuning::default()
            },
            addr_a: Ipv4Addr::new(10, 77, 0, 1),
            rx_batch: 1,
        }
    }
}

impl MemoryLinkConfig {
    /// Host B's address: the one after `addr_a`.
    pub fn addr_b(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr_a).wrapping_add(1))
    }

    /// `addr_b:port`, where host B's listeners are reached from host A.
    pub fn endpoint_b(&self, port: u16) -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(self.addr_b(), port))
    }

    /// `addr_a:port`, where host A's listeners are reached from host B.
    pub fn endpoint_a(&self, port: u16) -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(self.addr_a, port))
    }
}

/// Builds memory links.
#[derive(Debug)]
pub struct MemoryLink;

impl MemoryLink {
    /// Two hosts, A at `cfg.addr_a` and B at the next address, joined by one
    /// link. Both are `Send`: each may move to its own thread.
    pub fn pair(cfg: &MemoryLinkConfig) -> Result<(MemoryHost, MemoryHost), TransportError> {
        check_mtu(cfg)?;
        let (a, b) = (cfg.addr_a, cfg.addr_b());
        if Ipv4Cidr::new(a, 24).network() != Ipv4Cidr::new(b, 24).network() {
            return Err(TransportError::BadAddress("addr_a is the last of its /24"));
        }
        let wire = Arc::new(Wire::new(cfg.queue_frames));
        let host = |lane: usize, addr: Ipv4Addr| {
            // Distinct, documented streams per end, all from the one seed.
            let seed = cfg.seed ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(lane as u64 + 1));
            let mac = EthernetAddress([0x02, 0, 0, 0, 0, lane as u8 + 1]);
            host_on(cfg, &wire, lane, mac, addr, seed)
        };
        Ok((host(0, a)?, host(1, b)?))
    }
}

impl MemoryLink {
    /// One host at `addr` whose link ends in a [`MemoryPort`], for a switch
    /// to join to other ports. The host's MAC address is made from `addr`,
    /// so hosts of distinct addresses on one switch never share one.
    /// `cfg.faults` applies to what the host sends; leave it clean and let
    /// the switch impair frames.
    pub fn host_and_port(
        cfg: &MemoryLinkConfig,
        addr: Ipv4Addr,
    ) -> Result<(MemoryHost, MemoryPort), TransportError> {
        check_mtu(cfg)?;
        let wire = Arc::new(Wire::new(cfg.queue_frames));
        let seed = cfg.seed ^ u64::from(u32::from(addr)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let [a, b, c, d] = addr.octets();
        let mac = EthernetAddress([0x02, 0x01, a, b, c, d]);
        let host = host_on(cfg, &wire, port::HOST_LANE, mac, addr, seed)?;
        Ok((host, MemoryPort::new(wire)))
    }
}

fn check_mtu(cfg: &MemoryLinkConfig) -> Result<(), TransportError> {
    if (MIN_MTU..=MAX_MTU).contains(&cfg.mtu) {
        Ok(())
    } else {
        Err(TransportError::BadAddress("MTU outside 576..=65535"))
    }
}

/// A host at `addr` on lane `lane` of `wire`, with `cfg`'s MTU, faults,
/// receive batch and tuning.
fn host_on(
    cfg: &MemoryLinkConfig,
    wire: &Arc<Wire>,
    lane: usize,
    mac: EthernetAddress,
    addr: Ipv4Addr,
    seed: u64,
) -> Result<MemoryHost, TransportError> {
    let mut dev = MemoryDevice::new(Arc::clone(wire), lane, cfg.mtu, cfg.faults.clone(), seed);
    dev.set_rx_batch(cfg.rx_batch);
    SmolStack::new(
        dev,
        mac,
        Ipv4Cidr::new(addr, 24),
        None,
        cfg.tuning.clone(),
        seed,
    )
}

use link::Wire;

/// Both hosts of a memory link, driven from one thread.
#[derive(Debug)]
pub struct MemoryNet {
    /// The first host (address `addr_a`).
    pub a: MemoryHost,
    /// The second host (address `addr_b()`).
    pub b: MemoryHost,
    cfg: MemoryLinkConfig,
}

impl MemoryNet {
    /// Both hosts on a fresh link.
    pub fn new(cfg: MemoryLinkConfig) -> Result<Self, TransportError> {
        let (a, b) = MemoryLink::pair(&cfg)?;
        Ok(MemoryNet { a, b, cfg })
    }

    /// The link's settings.
    pub fn config(&self) -> &MemoryLinkConfig {
        &self.cfg
    }

    /// Polls A then B until neither makes progress (at most `64` rounds, so
    /// a livelock cannot hang the caller). True if anything happened.
    pub fn poll(&mut self, now: Instant) -> bool {
        let mut any = false;
        for _ in 0..64 {
            let a = self.a.poll(now);
            let b = self.b.poll(now);
            if !(a || b) {
                break;
            }
            any = true;
        }
        any
    }

    /// The sooner of both hosts' delays.
    pub fn poll_delay(&mut self, now: Instant) -> Option<Duration> {
        match (self.a.poll_delay(now), self.b.poll_delay(now)) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        }
    }

    /// Sleeps for `timeout`: with both hosts in this thread nothing else can
    /// make progress meanwhile. `None` returns at once instead of hanging.
    pub fn wait(&mut self, timeout: Option<Duration>) {
        if let Some(t) = timeout {
            std::thread::sleep(t);
        }
    }

    /// Runs on virtual time from `*now` until `done` holds, jumping the clock
    /// to each next deadline instead of sleeping. Gives up after `max_steps`
    /// polls or `max_virtual` of simulated time; returns whether `done` held.
    pub fn run_virtual(
        &mut self,
        now: &mut Instant,
        max_steps: usize,
        max_virtual: Duration,
        mut done: impl FnMut(&mut MemoryNet) -> bool,
    ) -> bool {
        let start = *now;
        for _ in 0..max_steps {
            if done(self) {
                return true;
            }
            if self.poll(*now) {
                continue;
            }
            if done(self) {
                return true;
            }
            let step = match self.poll_delay(*now) {
                // Nothing moved although something is due: nudge the clock so
                // millisecond timers inside smoltcp can fire.
                Some(d) if d.is_zero() => Duration::from_micros(100),
                Some(d) => d,
                None => Duration::from_millis(1),
            };
            *now += step;
            if now.saturating_duration_since(start) > max_virtual {
                return false;
            }
        }
        done(self)
    }
}

#[cfg(test)]
mod path_tests;
#[cfg(test)]
mod tests;
