//! Two MPA endpoints over an in-memory TCP-like pipe that delivers bytes in
//! order but cut at random points: start-up, then FPDUs both ways sized to a
//! random MSS, with every combination of CRC, markers and peer-to-peer.

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use mpa::{
    CrcPolicy, Deframer, Framer, InitiatorConfig, Negotiated, ReplyParams, ResponderConfig, RtrSet,
    Startup, StartupEvent,
};
use proptest::prelude::*;

/// A small deterministic generator for segment sizes and payloads.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One direction of the pipe: bytes in order, read in random cuts.
#[derive(Default)]
struct Pipe {
    bytes: VecDeque<u8>,
}

impl Pipe {
    fn read(&mut self, rng: &mut Rng, mss: usize) -> Vec<u8> {
        let n = (1 + rng.below(mss)).min(self.bytes.len());
        self.bytes.drain(..n).collect()
    }
}

/// An endpoint: start-up, then framing.
struct End {
    startup: Startup,
    /// Bytes received but not yet consumed (start-up leaves FPDUs here).
    pending: Vec<u8>,
    framing: Option<(Framer, Deframer)>,
    negotiated: Option<Negotiated>,
    received: Vec<Vec<u8>>,
    failed: bool,
}

impl End {
    fn new(startup: Startup) -> End {
        End {
            startup,
            pending: Vec::new(),
            framing: None,
            negotiated: None,
            received: Vec::new(),
            failed: false,
        }
    }

    fn on_bytes(&mut self, bytes: &[u8], now: Instant) {
        self.pending.extend_from_slice(bytes);
        if self.framing.is_none() && !self.failed {
            match self.startup.handle_bytes(&self.pending, now) {
                Ok(n) => {
                    self.pending.drain(..n);
                }
                Err(_) => self.failed = true,
            }
            self.take_events();
        }
        if let Some((_, deframer)) = &mut self.framing {
            let received = &mut self.received;
            let n = deframer
                .feed(&self.pending, |u| {
                    received.push(u.to_vec());
                    ControlFlow::Continue(())
                })
                .expect("a clean stream deframes");
            self.pending.drain(..n);
        }
    }

    fn take_events(&mut self) {
        while let Some(ev) = self.startup.poll_event() {
            match ev {
                StartupEvent::RequestReceived { .. } => {
                    self.startup
                        .accept(
                            ReplyParams {
                                ird: 4,
                                ord: 4,
                                private_data: b"reply".to_vec(),
                            },
                            Instant::now(),
                        )
                        .expect("accept");
                }
                StartupEvent::Established(n) => {
                    self.framing = Some((n.framer(), n.deframer(65535)));
                    self.negotiated = Some(n);
                }
                StartupEvent::Rejected { .. } | StartupEvent::Failed(_) => self.failed = true,
            }
        }
    }

    fn send_startup(&mut self, pipe: &mut Pipe) {
        let mut out = Vec::new();
        self.startup.poll_transmit(&mut out);
        pipe.bytes.extend(out);
    }
}

fn run(icfg: InitiatorConfig, rcfg: ResponderConfig, seed: u64, mss: usize, messages: usize) {
    let now = Instant::now();
    let mut rng = Rng(seed | 1);
    let mut a = End::new(Startup::initiator(icfg, now).expect("config"));
    let mut b = End::new(Startup::responder(rcfg, now).expect("config"));
    let (mut ab, mut ba) = (Pipe::default(), Pipe::default());
    let mut sent_ab: Vec<Vec<u8>> = Vec::new();
    let mut sent_ba: Vec<Vec<u8>> = Vec::new();
    let mut rounds = 0;
    loop {
        rounds += 1;
        assert!(rounds < 100_000, "livelock");
        a.send_startup(&mut ab);
        b.send_startup(&mut ba);
        // Each established side sends its share of messages; the responder
        // only after the initiator's first FPDU arrived (RFC 5044).
        let b_may_send = !b.received.is_empty();
        for (end, pipe, sent, may_send) in [
            (&mut a, &mut ab, &mut sent_ab, true),
            (&mut b, &mut ba, &mut sent_ba, b_may_send),
        ] {
            let Some((framer, _)) = &mut end.framing else {
                continue;
            };
            if !may_send || sent.len() >= messages || rng.below(3) == 0 {
                continue;
            }
            let max = framer.max_ulpdu(mss);
            let len = 14 + rng.below(max - 14 + 1);
            let ulpdu: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let mut out = vec![0u8; framer.fpdu_len(len)];
            let n = framer
                .frame(&ulpdu[..14], &ulpdu[14..], &mut out)
                .expect("fits");
            assert!(n <= mss);
            pipe.bytes.extend(&out[..n]);
            sent.push(ulpdu);
        }
        let bytes = ab.read(&mut rng, mss);
        b.on_bytes(&bytes, now);
        let bytes = ba.read(&mut rng, mss);
        a.on_bytes(&bytes, now);
        assert!(!a.failed && !b.failed, "start-up failed");
        let done = sent_ab.len() == messages
            && sent_ba.len() == messages
            && ab.bytes.is_empty()
            && ba.bytes.is_empty();
        if done {
            break;
        }
    }
    assert_eq!(b.received, sent_ab);
    assert_eq!(a.received, sent_ba);
    let (na, nb) = (a.negotiated.expect("a"), b.negotiated.expect("b"));
    assert_eq!(na.peer_private_data, b"reply");
    assert_eq!(na.markers_tx, nb.markers_rx);
    assert_eq!(na.rtr, nb.rtr);
}

#[test]
fn defaults_over_an_ethernet_mss() {
    run(
        InitiatorConfig::default(),
        ResponderConfig::default(),
        7,
        1460,
        200,
    );
}

#[test]
fn markers_both_ways_over_a_small_mss() {
    let icfg = InitiatorConfig {
        markers_rx: true,
        ..InitiatorConfig::default()
    };
    let rcfg = ResponderConfig {
        markers_rx: true,
        ..ResponderConfig::default()
    };
    run(icfg, rcfg, 11, 536, 300);
}

#[test]
fn jumbo_mss_without_crc() {
    let icfg = InitiatorConfig {
        crc: CrcPolicy::Off,
        ..InitiatorConfig::default()
    };
    let rcfg = ResponderConfig {
        crc: CrcPolicy::Off,
        ..ResponderConfig::default()
    };
    run(icfg, rcfg, 13, 9000, 100);
}

#[test]
fn start_up_timer_with_a_silent_peer() {
    let now = Instant::now();
    let mut s = Startup::initiator(InitiatorConfig::default(), now).expect("config");
    let mut t = now;
    // A caller's loop: sleep to the deadline, then handle it; bounded.
    for _ in 0..10 {
        match s.poll_timeout() {
            Some(deadline) => {
                t = deadline;
                s.handle_timeout(t);
            }
            None => break,
        }
    }
    assert_eq!(t - now, Duration::from_secs(10));
    assert!(s.is_finished() && !s.is_established());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_configurations_and_cuts(
        seed in any::<u64>(),
        mss in 64usize..4000,
        imark in any::<bool>(),
        rmark in any::<bool>(),
        icrc in 0u8..3,
        rcrc in 0u8..3,
        p2p in proptest::option::of(1u8..8),
        rev in 1u8..=2,
    ) {
        let crc = |c: u8| [CrcPolicy::Off, CrcPolicy::Preferred, CrcPolicy::Required][usize::from(c)];
        let rtr = p2p.filter(|_| rev == 2).map(|b| RtrSet {
            send: b & 1 != 0,
            write: b & 2 != 0,
            read: b & 4 != 0,
        });
        let icfg = InitiatorConfig {
            rev,
            crc: crc(icrc),
            markers_rx: imark,
            peer_to_peer: rtr,
            ..InitiatorConfig::default()
        };
        let rcfg = ResponderConfig {
            crc: crc(rcrc),
            markers_rx: rmark,
            rtr: RtrSet::ALL,
            ..ResponderConfig::default()
        };
        run(icfg, rcfg, seed, mss, 40);
    }
}
