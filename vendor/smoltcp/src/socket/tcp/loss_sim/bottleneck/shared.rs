//! Several flows through one bottleneck on virtual time: each flow is a
//! pair of sockets with its own lossy link, and every flow's data meets
//! the others' in the same drop-tail queue. Frames are kept in one map
//! ordered by arrival, so a path of thousands of frames in flight costs
//! a logarithm per frame, not a scan.

use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::vec::Vec;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::super::super::congestion::AnyController;
use super::super::super::congestion::bbr::Bbr;
use super::super::{Frame, Link, context, deliver, flush};
use super::{Bottleneck, Path, socket_with_buffers};
use crate::iface::Context;
use crate::socket::PollAt;
use crate::socket::tcp::{CongestionControl, Socket, State};
use crate::time::{Duration, Instant};
use crate::wire::IpAddress;

/// One flow: A sends to B, starting at `start`.
pub(super) struct Flow {
    a: Socket<'static>,
    b: Socket<'static>,
    link: Link,
    start: Instant,
    connected: bool,
    /// Octets B has read.
    delivered: usize,
}

/// What the flows moved, sampled every `interval`.
pub(super) struct Shared {
    pub interval: Duration,
    /// Per sample, each flow's cumulative octets read.
    pub samples: Vec<Vec<usize>>,
    pub drops: u64,
    /// Each flow's controller at the end.
    pub controllers: Vec<AnyController>,
}

impl Shared {
    /// Each flow's goodput, octets per second, between `from` and `to`
    /// (rounded down to samples).
    pub fn goodput(&self, from: Instant, to: Instant) -> Vec<f64> {
        let index = |t: Instant| {
            ((t.total_micros() as u64 / self.interval.total_micros()) as usize)
                .min(self.samples.len() - 1)
        };
        let (i, j) = (index(from), index(to));
        let secs = (j - i) as f64 * self.interval.total_micros() as f64 / 1e6;
        (0..self.samples[j].len())
            .map(|f| (self.samples[j][f] - self.samples[i][f]) as f64 / secs)
            .collect()
    }

    pub fn bbr(&self, flow: usize) -> &Bbr {
        match &self.controllers[flow] {
            AnyController::Bbr(bbr) => bbr,
            _ => panic!("flow {flow} is not BBR"),
        }
    }
}

/// Jain's fairness index: 1 when all are equal, 1/n when one takes all.
pub(super) fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    if squares == 0.0 {
        return 0.0;
    }
    sum * sum / (x.len() as f64 * squares)
}

/// Runs one flow per entry of `flows` (its controller and start) over
/// `path` for `duration`, every sender's buffer kept full, checking the
/// loss simulation's invariants on every step of every socket.
/// `observe` sees every flow's sender at each sample.
pub(super) fn run(
    path: &Path,
    flows: &[(CongestionControl, Instant)],
    duration: Duration,
    seed: u64,
    mut observe: impl FnMut(Instant, &[&Socket<'static>]),
) -> Shared {
    let queue = (path.bdp() as f64 * path.queue_bdp) as usize;
    let mut bottleneck = Some(Bottleneck::new(path.rate, queue));
    // Room for the path's BDP and its queue, with some to spare.
    let buffer = ((path.bdp() + queue) * 2).next_power_of_two();
    let mut cx: Context = context();
    let mut flows: Vec<Flow> = flows
        .iter()
        .enumerate()
        .map(|(i, &(cc, start))| {
            let (a, mut b) = (
                socket_with_buffers(cc, buffer),
                socket_with_buffers(cc, buffer),
            );
            b.listen(80 + i as u16).unwrap();
            Flow {
                a,
                b,
                link: Link {
                    rng: ChaCha8Rng::seed_from_u64(seed.wrapping_add(i as u64)),
                    loss: path.loss,
                    one_way: path.rtt / 2,
                    jitter: Duration::ZERO,
                    frames: VecDeque::new(),
                    stall: None,
                    stalled_until: Instant::ZERO,
                    bottleneck: None,
                },
                start,
                connected: false,
                delivered: 0,
            }
        })
        .collect();
    // In flight, by arrival and then by the order they were sent.
    let mut in_flight: BTreeMap<(Instant, u64), (usize, Frame)> = BTreeMap::new();
    let mut sent = 0u64;
    let interval = Duration::from_millis(10);
    let mut samples = Vec::new();
    let mut next_sample = Instant::ZERO;
    let chunk = [0x5au8; 65536];
    let mut sink = [0u8; 65536];
    let mut now = Instant::ZERO;
    let end = Instant::ZERO + duration;
    while now < end {
        cx.set_now(now);
        while next_sample <= now {
            samples.push(flows.iter().map(|f| f.delivered).collect());
            let senders: Vec<&Socket<'static>> = flows.iter().map(|f| &f.a).collect();
            observe(next_sample, &senders);
            next_sample += interval;
        }
        while let Some(entry) = in_flight.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let (i, frame) = entry.remove();
            let f = &mut flows[i];
            std::mem::swap(&mut f.link.bottleneck, &mut bottleneck);
            let s = if frame.to_b { &mut f.b } else { &mut f.a };
            deliver(&mut cx, s, &mut f.link, frame);
            std::mem::swap(&mut f.link.bottleneck, &mut bottleneck);
        }
        for (i, f) in flows.iter_mut().enumerate() {
            if now < f.start {
                continue;
            }
            if !f.connected {
                f.a.connect(
                    &mut cx,
                    (IpAddress::from(super::super::B_ADDR), 80 + i as u16),
                    49500 + i as u16,
                )
                .unwrap();
                f.connected = true;
            }
            if f.a.state() == State::Established {
                while f.a.send_slice(&chunk).unwrap() > 0 {}
            }
            while f.b.can_recv() {
                f.delivered += f.b.recv_slice(&mut sink).unwrap();
            }
            std::mem::swap(&mut f.link.bottleneck, &mut bottleneck);
            flush(&mut cx, &mut f.a, &mut f.link, true);
            flush(&mut cx, &mut f.b, &mut f.link, false);
            std::mem::swap(&mut f.link.bottleneck, &mut bottleneck);
        }
        let mut next = Some(next_sample);
        for (i, f) in flows.iter_mut().enumerate() {
            for frame in f.link.frames.drain(..) {
                sent += 1;
                in_flight.insert((frame.deliver_at, sent), (i, frame));
            }
            if now < f.start {
                next = next.map(|n| n.min(f.start));
                continue;
            }
            for s in [&f.a, &f.b] {
                match s.poll_at(&mut cx) {
                    PollAt::Now => next = Some(now + Duration::from_micros(1)),
                    PollAt::Time(t) => next = next.map(|n| n.min(t)),
                    PollAt::Ingress => {}
                }
            }
        }
        if let Some((&(t, _), _)) = in_flight.first_key_value() {
            next = next.map(|n| n.min(t));
        }
        now = next.map_or(now + Duration::from_millis(1), |t| t.max(now));
    }
    samples.push(flows.iter().map(|f| f.delivered).collect());
    Shared {
        interval,
        samples,
        drops: bottleneck.map_or(0, |b| b.drops),
        controllers: flows
            .iter()
            .map(|f| f.a.congestion_controller.clone())
            .collect(),
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// The wan profile's round trip (20 ms) with a queue of one BDP, at a
    /// tenth of its rate (100 Mbit/s) so that seconds of it run quickly:
    /// a BDP of 250 kB, about 170 segments.
    const WAN_TENTH: Path = Path {
        rate: 12_500_000,
        rtt: Duration::from_millis(20),
        queue_bdp: 1.0,
        loss: 0.0,
    };

    /// Two BBR flows start together on the wan-like path. Both Startups
    /// overflow the queue, and recovery ends in timeouts; the samples of
    /// what was resent then carry a flight of a segment or two and must
    /// not become the long-term bound. From the second second on the two
    /// share the path fairly (Jain's index at least 0.95), each moves at
    /// least a third of the rate and together they fill it, and
    /// `inflight_longterm`, once set, stays above an eighth of the BDP.
    #[test]
    fn two_bbr_flows_on_a_wan_path_share_it_fairly() {
        let path = WAN_TENTH;
        let mut lowest_longterm = usize::MAX;
        let started = Instant::from_secs(1);
        let r = run(
            &path,
            &[(CongestionControl::Bbr, Instant::ZERO); 2],
            Duration::from_secs(5),
            1,
            |now, senders| {
                for s in senders {
                    if let AnyController::Bbr(b) = &s.congestion_controller
                        && now >= started
                    {
                        lowest_longterm = lowest_longterm.min(b.inflight_longterm());
                    }
                }
            },
        );
        let rate = path.payload_rate() as f64;
        let g = r.goodput(Instant::from_secs(2), Instant::from_secs(5));
        let shares: Vec<f64> = g.iter().map(|x| x / rate).collect();
        std::println!(
            "two BBR flows, 20 ms, 100 Mbit/s, 1 BDP queue, seconds 2-5: {shares:.2?} of the rate, Jain {:.3}, {} drops; lowest inflight_longterm {lowest_longterm} B (BDP {})",
            jain(&g),
            r.drops,
            path.bdp()
        );
        assert!(shares.iter().sum::<f64>() >= 0.8, "{shares:?}");
        assert!(shares.iter().all(|s| *s >= 1.0 / 3.0), "{shares:?}");
        assert!(jain(&g) >= 0.95, "{shares:?}");
        assert!(lowest_longterm >= path.bdp() / 8, "{lowest_longterm}");
        for flow in 0..2 {
            assert!(r.bbr(flow).inflight_longterm() >= path.bdp() / 8);
        }
    }

    #[test]
    fn jain_index_is_one_for_equal_shares_and_one_over_n_for_a_hog() {
        assert!((jain(&[2.0, 2.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[3.0, 0.0]) - 0.5).abs() < 1e-12);
        assert_eq!(jain(&[0.0, 0.0]), 0.0);
    }
}
