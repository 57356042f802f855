//! BBR over a bottleneck on virtual time: a link of fixed rate with a
//! drop-tail queue on the way to the receiver (the shape of the
//! transport's link model), checked against draft-ietf-ccwg-bbr-06:
//! Startup finds the rate and leaves after three rounds without growth,
//! the queue stays small where a loss-based controller fills it, ProbeRTT
//! comes, loss above the threshold sets `inflight_longterm`, and pacing
//! never sends more than a send quantum at one instant. The invariants
//! of the loss simulation are checked on every step, as for every
//! controller.

mod shared;

use std::collections::VecDeque;
use std::vec::Vec;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::super::congestion::AnyController;
use super::super::congestion::bbr::BbrState;
use super::{Link, context, deliver, flush, invariants, name, transfer};
use crate::iface::Context;
use crate::socket::PollAt;
use crate::socket::tcp::{CongestionControl, Socket, SocketBuffer, State};
use crate::time::{Duration, Instant};
use crate::wire::IpAddress;

/// Octets of IP and TCP header the link carries per segment.
const HEADERS: usize = 40;

/// A rate limit with a drop-tail queue of `queue` octets.
pub(super) struct Bottleneck {
    /// Octets per second, headers included.
    rate: u64,
    queue: usize,
    /// When the link finishes sending what is queued, in nanoseconds.
    busy_until_ns: i64,
    drops: u64,
    /// The queue's length as each frame arrived.
    backlog: Vec<(Instant, usize)>,
}

impl Bottleneck {
    fn new(rate: u64, queue: usize) -> Bottleneck {
        Bottleneck {
            rate,
            queue,
            busy_until_ns: 0,
            drops: 0,
            backlog: Vec::new(),
        }
    }

    /// A frame of `payload` octets arrives at `now`: when it has left the
    /// link, or `None` if the queue is full.
    pub(super) fn admit(&mut self, now: Instant, payload: usize) -> Option<Instant> {
        let now_ns = now.total_micros() * 1000;
        let len = payload + HEADERS;
        let queued_ns = (self.busy_until_ns - now_ns).max(0);
        let queued = (queued_ns as i128 * self.rate as i128 / 1_000_000_000) as usize;
        self.backlog.push((now, queued));
        if queued + len > self.queue {
            self.drops += 1;
            return None;
        }
        let start = self.busy_until_ns.max(now_ns);
        self.busy_until_ns = start + (len as i128 * 1_000_000_000 / self.rate as i128) as i64;
        Some(Instant::from_micros((self.busy_until_ns + 999) / 1000))
    }
}

const MSS: usize = 1460;

fn socket(cc: CongestionControl) -> Socket<'static> {
    socket_with_buffers(cc, 1 << 20)
}

/// A socket with send and receive buffers of `buffer` octets each.
fn socket_with_buffers(cc: CongestionControl, buffer: usize) -> Socket<'static> {
    let mut s = Socket::new(
        SocketBuffer::new(vec![0; buffer]),
        SocketBuffer::new(vec![0; buffer]),
    );
    s.set_ack_delay(None);
    s.set_nagle_enabled(false);
    s.set_rto_min(Duration::from_millis(20));
    s.set_rto_initial(Duration::from_millis(200));
    s.set_congestion_control(cc);
    s
}

/// The path: `rate` octets per second (headers included), `rtt` of
/// propagation, a queue of `queue_bdp` bandwidth-delay products, and
/// `loss` of the frames lost at random.
struct Path {
    rate: u64,
    rtt: Duration,
    queue_bdp: f64,
    loss: f64,
}

impl Path {
    fn bdp(&self) -> usize {
        (self.rate as f64 * self.rtt.total_micros() as f64 / 1e6) as usize
    }

    /// The rate the path carries payload at, with full segments.
    fn payload_rate(&self) -> u64 {
        self.rate * MSS as u64 / (MSS + HEADERS) as u64
    }
}

/// What a run saw of the sender, step by step.
struct Trace {
    /// (time, state, BBR.max_bw, pipe) after each step, BBR only.
    states: Vec<(Instant, Option<BbrState>, u64, usize)>,
    /// The most data sent at one instant, and the send quantum then.
    bursts: Vec<(usize, usize)>,
    bottleneck: Bottleneck,
    delivered: usize,
    controller: AnyController,
}

/// Sends from A to B for `duration` of virtual time with A's buffer kept
/// full, checking the invariants on every step.
fn run(path: &Path, cc: CongestionControl, duration: Duration, seed: u64) -> Trace {
    run_rerouted(path, cc, duration, seed, None)
}

/// `run`, with the one-way delay set to `.1` from the instant `.0` on (a
/// route change).
fn run_rerouted(
    path: &Path,
    cc: CongestionControl,
    duration: Duration,
    seed: u64,
    reroute: Option<(Instant, Duration)>,
) -> Trace {
    let one_way = path.rtt / 2;
    let queue = (path.bdp() as f64 * path.queue_bdp) as usize;
    let mut link = Link {
        rng: ChaCha8Rng::seed_from_u64(seed),
        loss: path.loss,
        one_way,
        jitter: Duration::ZERO,
        frames: VecDeque::new(),
        stall: None,
        stalled_until: Instant::ZERO,
        bottleneck: Some(Bottleneck::new(path.rate, queue)),
    };
    let mut cx: Context = context();
    let (mut a, mut b) = (socket(cc), socket(cc));
    b.listen(80).unwrap();
    a.connect(&mut cx, (IpAddress::from(super::B_ADDR), 80), 49500)
        .unwrap();
    let chunk = [0x5au8; 65536];
    let mut sink = [0u8; 65536];
    let mut delivered = 0;
    let mut now = Instant::ZERO;
    let end = Instant::ZERO + duration;
    let mut trace_states = Vec::new();
    let mut bursts = Vec::new();
    while now < end {
        cx.set_now(now);
        if let Some((at, one_way)) = reroute
            && now >= at
        {
            link.one_way = one_way;
        }
        while let Some(pos) = link.frames.iter().position(|f| f.deliver_at <= now) {
            let frame = link.frames.remove(pos).unwrap();
            let s = if frame.to_b { &mut b } else { &mut a };
            deliver(&mut cx, s, &mut link, frame);
        }
        if a.state() == State::Established {
            while a.send_slice(&chunk).unwrap() > 0 {}
        }
        while b.can_recv() {
            delivered += b.recv_slice(&mut sink).unwrap();
        }
        // A's sends, counted per instant.
        let mut burst = 0;
        for _ in 0..10_000 {
            let before = invariants::Before::of(&a);
            let mut sent = None;
            let _ = a.dispatch(&mut cx, |_, _, (_, repr)| {
                link.send(now, true, &repr);
                sent = Some((repr.seq_number, repr.payload.len()));
                Ok::<(), ()>(())
            });
            invariants::check_episode(name(true), &a, &before);
            let Some((seq, len)) = sent else {
                break;
            };
            invariants::check_send(name(true), &a, &before, seq, len);
            burst += len;
        }
        if burst > 0 {
            let quantum = a.congestion_controller.inner().send_quantum();
            bursts.push((burst, quantum));
        }
        flush(&mut cx, &mut b, &mut link, false);
        let state = match &a.congestion_controller {
            AnyController::Bbr(bbr) => Some((bbr.state(), bbr.max_bw())),
            _ => None,
        };
        trace_states.push((now, state.map(|s| s.0), state.map_or(0, |s| s.1), a.pipe()));

        let mut next = link.frames.iter().map(|f| f.deliver_at).min();
        for s in [&a, &b] {
            match s.poll_at(&mut cx) {
                PollAt::Now => next = Some(now + Duration::from_micros(1)),
                PollAt::Time(t) => next = Some(next.map_or(t, |n| n.min(t))),
                PollAt::Ingress => {}
            }
        }
        now = next.map_or(now + Duration::from_millis(1), |t| t.max(now));
    }
    Trace {
        states: trace_states,
        bursts,
        bottleneck: link.bottleneck.take().unwrap(),
        delivered,
        controller: a.congestion_controller.clone(),
    }
}

fn bbr(trace: &Trace) -> &super::super::congestion::bbr::Bbr {
    match &trace.controller {
        AnyController::Bbr(bbr) => bbr,
        _ => panic!("not BBR"),
    }
}

/// The median queue, in octets, over the arrivals from `from` on.
fn median_queue(trace: &Trace, from: Instant) -> usize {
    let mut q: Vec<usize> = trace
        .bottleneck
        .backlog
        .iter()
        .filter(|(t, _)| *t >= from)
        .map(|(_, q)| *q)
        .collect();
    q.sort_unstable();
    q.get(q.len() / 2).copied().unwrap_or(0)
}

/// 20 Mbit/s, 20 ms: a BDP of 50 kB, about 34 segments.
const PATH: Path = Path {
    rate: 2_500_000,
    rtt: Duration::from_millis(20),
    queue_bdp: 4.0,
    loss: 0.0,
};

/// Startup measures the bottleneck within 10%, and leaves (for Drain)
/// three rounds after the last round whose rate grew by 25%
/// (section 5.3.1.2).
#[test]
fn startup_finds_the_bottleneck_rate_and_leaves_after_three_flat_rounds() {
    let trace = run(&PATH, CongestionControl::Bbr, Duration::from_secs(2), 1);
    let bbr = bbr(&trace);
    let (full, grew) = bbr.full_bw_rounds().expect("Startup never ended");
    assert_eq!(full - grew, 3, "full at round {full}, last growth {grew}");
    let left = trace
        .states
        .iter()
        .find(|s| s.1 != Some(BbrState::Startup))
        .expect("still in Startup");
    let rate = PATH.payload_rate();
    std::println!(
        "Startup left at {} with max_bw {} B/s; the path carries {rate} B/s",
        left.0,
        left.2
    );
    assert!(
        left.2.abs_diff(rate) * 10 <= rate,
        "max_bw {} vs {rate}",
        left.2
    );
}

/// With a queue of four BDPs, BBR keeps it short (in ProbeBW the median
/// queue is under half a BDP, so the RTT under load stays under 1.5x the
/// propagation RTT), where Cubic fills it; both deliver near the rate.
#[test]
fn queue_stays_near_one_bdp_in_flight_where_cubic_fills_the_buffer() {
    let secs = 4;
    let bdp = PATH.bdp();
    let settled = Instant::from_secs(1);
    let bbr_trace = run(&PATH, CongestionControl::Bbr, Duration::from_secs(secs), 2);
    let bbr_queue = median_queue(&bbr_trace, settled);
    let goodput = |t: &Trace| t.delivered as f64 / secs as f64 / PATH.payload_rate() as f64;
    std::println!(
        "BDP {bdp} B, queue 4 BDP: BBR's median queue {bbr_queue} B, {:.2} of the rate",
        goodput(&bbr_trace)
    );
    assert!(bbr_queue * 2 < bdp, "BBR queue {bbr_queue} of BDP {bdp}");
    assert!(goodput(&bbr_trace) > 0.85, "{}", goodput(&bbr_trace));
    #[cfg(feature = "socket-tcp-cubic")]
    {
        let cubic = run(&PATH, CongestionControl::Cubic, Duration::from_secs(secs), 2);
        let cubic_queue = median_queue(&cubic, settled);
        std::println!(
            "Cubic's median queue {cubic_queue} B, {:.2} of the rate",
            goodput(&cubic)
        );
        assert!(cubic_queue > bdp, "Cubic queue {cubic_queue} of BDP {bdp}");
    }
    // In flight after Startup: about one BDP, at most the cwnd gain's two.
    let pipes: Vec<usize> = bbr_trace
        .states
        .iter()
        .filter(|s| s.0 >= settled)
        .map(|s| s.3)
        .collect();
    let mean = pipes.iter().sum::<usize>() / pipes.len();
    assert!(mean < 2 * bdp, "mean in flight {mean} of BDP {bdp}");
}

/// Past ProbeRTTInterval (5 s) without an RTT sample as low as the
/// minimum (the route grew 4 ms longer after 1 s), BBR enters ProbeRTT
/// and lets in flight fall to half the BDP. While BBR keeps the queue
/// empty it finds its minimum again and again, and never needs ProbeRTT.
#[test]
fn probe_rtt_comes_and_drains_the_flight() {
    let longer = Some((Instant::from_secs(1), PATH.rtt / 2 + Duration::from_millis(2)));
    let trace = run_rerouted(&PATH, CongestionControl::Bbr, Duration::from_secs(7), 3, longer);
    assert!(bbr(&trace).probe_rtts() >= 1);
    let lowest = trace
        .states
        .iter()
        .filter(|s| s.1 == Some(BbrState::ProbeRtt))
        .map(|s| s.3)
        .min()
        .unwrap();
    let entered = trace
        .states
        .iter()
        .find(|s| s.1 == Some(BbrState::ProbeRtt))
        .unwrap()
        .0;
    std::println!("ProbeRTT at {entered}, in flight down to {lowest} B");
    assert!(lowest <= PATH.bdp() / 2 + 4 * MSS, "{lowest}");
    assert!(
        trace
            .states
            .iter()
            .any(|s| s.0 > entered && matches!(s.1, Some(BbrState::ProbeBwCruise | BbrState::ProbeBwDown))),
        "ProbeRTT never ended"
    );
}

/// Random loss of 5%, above BBR.LossThresh, sets the long-term bound
/// when a bandwidth probe meets it; without loss (and a queue that never
/// overflows) it stays unset.
#[test]
fn loss_above_the_threshold_sets_inflight_longterm() {
    let clean = run(&PATH, CongestionControl::Bbr, Duration::from_secs(4), 4);
    assert_eq!(clean.bottleneck.drops, 0);
    assert_eq!(bbr(&clean).inflight_longterm(), usize::MAX);
    let lossy = Path { loss: 0.05, ..PATH };
    let trace = run(&lossy, CongestionControl::Bbr, Duration::from_secs(4), 4);
    let bound = bbr(&trace).inflight_longterm();
    std::println!(
        "5% loss: inflight_longterm {bound} B (BDP {}), {:.2} of the rate delivered",
        PATH.bdp(),
        trace.delivered as f64 / 4.0 / PATH.payload_rate() as f64
    );
    assert!(bound < usize::MAX);
}

/// Pacing spreads the flight: no instant sees more data leave than the
/// send quantum the controller gave (section 5.6.3), and most instants
/// see one segment.
#[test]
fn pacing_sends_no_burst_above_the_send_quantum() {
    let trace = run(&PATH, CongestionControl::Bbr, Duration::from_secs(2), 5);
    let over: Vec<&(usize, usize)> = trace.bursts.iter().filter(|(b, q)| b > q).collect();
    assert!(over.is_empty(), "bursts above the quantum: {over:?}");
    let single = trace.bursts.iter().filter(|(b, _)| *b <= MSS).count();
    assert!(single * 2 > trace.bursts.len(), "{single} of {}", trace.bursts.len());
    // Cubic, unpaced, sends flights.
    #[cfg(feature = "socket-tcp-cubic")]
    {
        let cubic = run(&PATH, CongestionControl::Cubic, Duration::from_secs(2), 5);
        let largest = cubic.bursts.iter().map(|b| b.0).max().unwrap();
        assert!(largest > 4 * MSS, "{largest}");
    }
}

/// BBR over the lossy link of the loss simulation keeps every invariant
/// (pipe within cwnd, a cut when a loss episode begins, the peer's
/// window) and delivers everything in order.
#[test]
fn bbr_keeps_the_invariants_under_random_loss() {
    for loss in [0.0, 0.01, 0.05, 0.10] {
        for seed in 1..=8 {
            let link = Link {
                rng: ChaCha8Rng::seed_from_u64(seed),
                loss,
                one_way: super::ONE_WAY,
                jitter: Duration::ZERO,
                frames: VecDeque::new(),
                stall: None,
                stalled_until: Instant::ZERO,
                bottleneck: None,
            };
            let mut sockets = [super::socket(), super::socket()];
            for s in &mut sockets {
                s.set_congestion_control(CongestionControl::Bbr);
            }
            let [a, b] = sockets;
            let o = transfer(link, a, b, super::TOTAL, seed);
            assert!(o.finished_at < Instant::from_secs(20), "{loss} {seed}: {:?}", o.stats);
        }
    }
}
