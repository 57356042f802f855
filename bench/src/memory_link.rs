//! Raw TCP goodput over the memory link: the figure RDMA goodput over the
//! same link configuration is divided by.
//!
//! One thread drives both hosts on the real clock; A pushes bytes to B with
//! no RDMA on top. Each byte is copied once into A's send ring (as an RDMA
//! WRITE copies from a registered region into an FPDU) and once out of B's
//! receive ring (as placement copies into the sink region), so the baseline
//! pays the same copies the RDMA path does and nothing else.

use std::time::{Duration, Instant};

use transport::link_model::QueueDelays;
use transport::memory::{MemoryLinkConfig, MemoryNet};
use transport::{StreamId, StreamState, TcpLossStats, Transport, TransportError};

const PORT: u16 = 5001;
/// Size of the source and sink buffers the bytes are copied from and to.
const CHUNK: usize = 1 << 20;

/// How the transfer loop calls the transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatch {
    /// Through the concrete host type (monomorphized).
    Static,
    /// Through `&mut dyn Transport`, as a facade holding any transport would.
    Dynamic,
}

/// One measured transfer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// Payload bytes delivered to the receiver.
    pub bytes: u64,
    /// Wall time from the established connection to the last byte read.
    pub elapsed: Duration,
    /// Frames host A sent (data plus any retransmissions).
    pub frames_sent: u64,
    /// Frames the link's impairment dropped in either direction.
    pub frames_lost: u64,
    /// The sending host's loss-recovery counters at the end of the transfer.
    pub sender_tcp: Option<TcpLossStats>,
    /// How late after falling due the receiver took each data frame, and
    /// the sender each frame coming back (see `LinkCounters::taken_late`).
    pub taken_late: [QueueDelays; 2],
}

impl Measurement {
    /// Goodput in Gbit/s (10^9 bits per second).
    pub fn gbit_per_s(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs == 0.0 {
            return 0.0;
        }
        self.bytes as f64 * 8.0 / secs / 1e9
    }
}

impl std::fmt::Display for Measurement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bytes in {:.3} s = {:.2} Gbit/s ({} frames, {} lost)",
            self.bytes,
            self.elapsed.as_secs_f64(),
            self.gbit_per_s(),
            self.frames_sent,
            self.frames_lost
        )?;
        if let Some(t) = &self.sender_tcp {
            write!(f, "; sender {t}")?;
        }
        let [data, acks] = &self.taken_late;
        if data.count() + acks.count() > 0 {
            let us = |h: &QueueDelays, q| h.quantile(q).map_or(0, |d| d.as_micros());
            write!(
                f,
                "; frames taken late: data p50 {} us, p99 {} us, ACK way p50 {} us, p99 {} us",
                us(data, 0.5),
                us(data, 0.99),
                us(acks, 0.5),
                us(acks, 0.99)
            )?;
        }
        Ok(())
    }
}

/// Pushes `bytes` from host A to host B of a fresh memory link built from
/// `cfg`, stopping early after `time_limit`.
pub fn raw_tcp_goodput(
    cfg: &MemoryLinkConfig,
    bytes: u64,
    time_limit: Duration,
) -> Result<Measurement, TransportError> {
    raw_tcp_goodput_with(cfg, bytes, time_limit, Dispatch::Static)
}

/// [`raw_tcp_goodput`] with a choice of dispatch, to measure what calling
/// through `dyn Transport` costs.
pub fn raw_tcp_goodput_with(
    cfg: &MemoryLinkConfig,
    bytes: u64,
    time_limit: Duration,
    dispatch: Dispatch,
) -> Result<Measurement, TransportError> {
    let mut net = MemoryNet::new(cfg.clone())?;
    let listener = net.b.listen(PORT)?;
    let client = net.a.connect(cfg.endpoint_b(PORT))?;
    let deadline = Instant::now() + time_limit;

    // Handshake, not timed.
    let mut server = None;
    while server.is_none() || net.a.state(client) == StreamState::Connecting {
        if Instant::now() > deadline {
            return Err(TransportError::InvalidState(net.a.state(client)));
        }
        idle_or_poll(&mut net);
        server = server.or_else(|| net.b.accept(listener));
    }
    let server = server.ok_or(TransportError::InvalidState(StreamState::Connecting))?;

    let source: Vec<u8> = (0..CHUNK).map(|i| (i % 251) as u8).collect();
    let mut sink = vec![0u8; CHUNK];
    let (mut sent, mut received) = (0u64, 0u64);
    let start = Instant::now();
    while received < bytes && Instant::now() < deadline {
        let mut fill = |buf: &mut [u8]| {
            let n = buf.len().min((bytes - sent) as usize);
            let at = (sent % CHUNK as u64) as usize;
            let n = n.min(CHUNK - at);
            buf[..n].copy_from_slice(&source[at..at + n]);
            sent += n as u64;
            n
        };
        match dispatch {
            Dispatch::Static => send_static(&mut net.a, client, &mut fill)?,
            Dispatch::Dynamic => {
                let t: &mut dyn Transport = &mut net.a;
                t.send_with(client, &mut fill)?
            }
        };
        let mut pull = |d: &[u8]| {
            let at = (received % CHUNK as u64) as usize;
            let n = d.len().min(CHUNK - at);
            sink[at..at + n].copy_from_slice(&d[..n]);
            received += n as u64;
            n
        };
        match dispatch {
            Dispatch::Static => {
                recv_static(&mut net.b, server, &mut pull)?;
            }
            Dispatch::Dynamic => {
                let t: &mut dyn Transport = &mut net.b;
                t.recv_with(server, &mut pull)?;
            }
        }
        idle_or_poll(&mut net);
    }
    let elapsed = start.elapsed();
    let (sa, sb) = (net.a.device().stats(), net.b.device().stats());
    Ok(Measurement {
        bytes: received,
        elapsed,
        frames_sent: sa.frames_sent,
        frames_lost: sa.lost + sb.lost,
        sender_tcp: net.a.tcp_loss_stats(),
        taken_late: [
            net.a.device().link_counters().taken_late,
            net.b.device().link_counters().taken_late,
        ],
    })
}

fn send_static<T: Transport>(
    t: &mut T,
    s: StreamId,
    f: &mut dyn FnMut(&mut [u8]) -> usize,
) -> Result<usize, TransportError> {
    t.send_with(s, f)
}

fn recv_static<T: Transport>(
    t: &mut T,
    s: StreamId,
    f: &mut dyn FnMut(&[u8]) -> usize,
) -> Result<usize, TransportError> {
    t.recv_with(s, f)
}

/// Polls both hosts; when nothing moved, sleeps until the next deadline
/// (bounded, so a lost wake-up costs a millisecond, not a hang).
fn idle_or_poll(net: &mut MemoryNet) {
    if !net.poll(Instant::now()) {
        let d = net
            .poll_delay(Instant::now())
            .unwrap_or(Duration::from_millis(1));
        net.wait(Some(d.min(Duration::from_millis(1))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use transport::memory::FaultConfig;

    #[test]
    fn measures_a_clean_link_at_1500_and_9000() {
        for mtu in [1500, 9000] {
            let cfg = MemoryLinkConfig::default().mtu(mtu);
            let m = raw_tcp_goodput(&cfg, 32 << 20, Duration::from_secs(60)).unwrap();
            println!("raw TCP goodput, memory link, MTU {mtu}: {m}");
            assert_eq!(m.bytes, 32 << 20);
            assert!(m.gbit_per_s() > 0.0);
            assert_eq!(m.frames_lost, 0);
        }
    }

    #[test]
    fn both_dispatches_deliver_everything() {
        let cfg = MemoryLinkConfig::default();
        for d in [Dispatch::Static, Dispatch::Dynamic] {
            let m = raw_tcp_goodput_with(&cfg, 8 << 20, Duration::from_secs(60), d).unwrap();
            println!("{d:?}: {m}");
            assert_eq!(m.bytes, 8 << 20);
        }
    }

    #[test]
    fn lossy_link_is_slower_but_complete() {
        let cfg = MemoryLinkConfig::default().faults(FaultConfig::default().loss(0.01));
        // Each loss costs the sender a recovery and now and then a
        // timeout: keep this small.
        let m = raw_tcp_goodput(&cfg, 1 << 20, Duration::from_secs(120)).unwrap();
        println!("1% loss: {m}");
        assert_eq!(m.bytes, 1 << 20);
        assert!(m.frames_lost > 0);
    }

    #[test]
    fn time_limit_stops_early() {
        let cfg = MemoryLinkConfig::default();
        let m = raw_tcp_goodput(&cfg, u64::MAX, Duration::from_millis(300)).unwrap();
        assert!(m.bytes > 0);
        assert!(m.elapsed < Duration::from_secs(5));
    }

    #[test]
    fn display_and_rate() {
        let m = Measurement {
            bytes: 125_000_000,
            elapsed: Duration::from_secs(1),
            frames_sent: 10,
            frames_lost: 1,
            sender_tcp: None,
            taken_late: Default::default(),
        };
        assert!((m.gbit_per_s() - 1.0).abs() < 1e-9);
        assert!(m.to_string().contains("1.00 Gbit/s"));
        let zero = Measurement {
            elapsed: Duration::ZERO,
            ..m
        };
        assert_eq!(zero.gbit_per_s(), 0.0);
    }
}
