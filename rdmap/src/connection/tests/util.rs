//! A deterministic pair of connections joined by in-memory byte queues, in
//! the manner of quinn-proto's `tests/util.rs`: `drive()` runs both sides
//! until neither makes progress, delivering bytes whole or in chunks cut
//! at pseudo-random points.

use std::collections::VecDeque;

use ddp::memory::{Access, PdId, RegionTable, STag};
use ddp::untagged::SharedBuffers;
use mpa::Rtr;

use crate::completion::WorkCompletion;
use crate::connection::{Connection, ConnectionConfig, Event, Negotiated, Role};
use crate::term::TermCode;
use crate::work_request::{RecvWr, SendOp, SendWr, Sge};

pub const PD: PdId = PdId(7);

/// Options both sides share.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub crc: bool,
    pub markers: bool,
    /// Initiator's IRD/ORD (the responder mirrors them).
    pub ird: u16,
    pub ord: u16,
    pub rtr: Option<Rtr>,
    pub max_fpdu: usize,
    pub sq_depth: usize,
    pub rq_depth: usize,
    /// Both sides agreed to RFC 7306.
    pub rfc7306: bool,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            crc: true,
            markers: false,
            ird: 8,
            ord: 8,
            rtr: None,
            max_fpdu: 1460,
            sq_depth: 64,
            rq_depth: 64,
            rfc7306: false,
        }
    }
}

pub fn negotiated(role: Role, s: &Setup) -> Negotiated {
    let (ird, ord) = match role {
        Role::Initiator => (s.ird, s.ord),
        Role::Responder => (s.ord, s.ird),
    };
    Negotiated {
        rev: 2,
        crc: s.crc,
        markers_tx: s.markers,
        markers_rx: s.markers,
        ird,
        ord,
        rtr: s.rtr,
        peer_private_data: Vec::new(),
        role,
        peer_ird_ord: None,
    }
}

pub fn config(role: Role, s: &Setup) -> ConnectionConfig {
    let mut c = ConnectionConfig::new(negotiated(role, s), PD, s.max_fpdu);
    c.sq_depth = s.sq_depth;
    c.rq_depth = s.rq_depth;
    c.rfc7306 = s.rfc7306;
    c
}

/// How bytes travel between the sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunking {
    /// Each side's output is delivered as produced.
    Whole,
    /// In pieces of pseudo-random size 1..=max.
    Random { seed: u64, max: usize },
}

/// One end: its connection, its registered memory, what it reported and
/// what it sent.
#[derive(Debug)]
pub struct Side {
    pub conn: Connection,
    pub mem: RegionTable,
    pub events: Vec<Event>,
    /// Every byte this side transmitted.
    pub wire: Vec<u8>,
    /// Sizes of the `poll_transmit` outputs.
    pub bursts: Vec<usize>,
    /// The shared receive pool its queue 0 draws on, if configured so.
    pub srq: Option<SharedBuffers>,
    next_index: u32,
}

impl Side {
    fn new(cfg: ConnectionConfig) -> Self {
        Side {
            conn: Connection::new(cfg),
            mem: RegionTable::new(),
            events: Vec::new(),
            wire: Vec::new(),
            bursts: Vec::new(),
            srq: None,
            next_index: 1,
        }
    }

    /// Registers `bytes` with `access` at a tagged offset that is not zero
    /// (so offset arithmetic is exercised); returns its STag.
    pub fn register(&mut self, access: Access, bytes: Vec<u8>) -> STag {
        self.register_with(access, bytes, true, PD)
    }

    pub fn register_with(
        &mut self,
        access: Access,
        bytes: Vec<u8>,
        invalidatable: bool,
        pd: PdId,
    ) -> STag {
        let index = self.next_index;
        self.next_index += 1;
        let stag = STag::new(index, 0);
        self.mem
            .register(stag, pd, base(stag), access, bytes, invalidatable);
        stag
    }

    /// The whole region as one SGE.
    pub fn sge(&self, stag: STag) -> Sge {
        let len = self.mem.bytes(stag).map_or(0, <[u8]>::len);
        Sge {
            stag,
            to: base(stag),
            len: u32::try_from(len).unwrap(),
        }
    }

    pub fn bytes(&self, stag: STag) -> &[u8] {
        self.mem.bytes(stag).expect("registered")
    }

    pub fn completions(&self) -> Vec<WorkCompletion> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Completion(c) => Some(*c),
                _ => None,
            })
            .collect()
    }

    /// `(by_peer, cause)` of the Terminated event, if any.
    pub fn terminated(&self) -> Option<(bool, TermCode)> {
        self.events.iter().find_map(|e| match e {
            Event::Terminated { by_peer, cause, .. } => Some((*by_peer, *cause)),
            _ => None,
        })
    }

    pub fn send(&mut self, wr_id: u64, sgl: Vec<Sge>) {
        self.conn
            .post_send(SendWr {
                wr_id,
                op: SendOp::Send {
                    solicited: false,
                    invalidate: None,
                },
                sgl,
                signaled: true,
                fence: false,
                inline: Vec::new(),
            })
            .unwrap();
    }

    pub fn write(&mut self, wr_id: u64, sgl: Vec<Sge>, remote: Sge) {
        self.conn
            .post_send(SendWr {
                wr_id,
                op: SendOp::Write {
                    remote_stag: remote.stag,
                    remote_to: remote.to,
                },
                sgl,
                signaled: true,
                fence: false,
                inline: Vec::new(),
            })
            .unwrap();
    }

    pub fn read(&mut self, wr_id: u64, sink: Sge, remote: Sge) {
        self.conn
            .post_send(SendWr {
                wr_id,
                op: SendOp::Read {
                    remote_stag: remote.stag,
                    remote_to: remote.to,
                },
                sgl: vec![sink],
                signaled: true,
                fence: false,
                inline: Vec::new(),
            })
            .unwrap();
    }

    pub fn recv(&mut self, wr_id: u64, sgl: Vec<Sge>) {
        self.conn.post_recv(RecvWr { wr_id, sgl }).unwrap();
    }
}

/// The tagged offset a region is registered at.
pub fn base(stag: STag) -> u64 {
    0x7f00_0000_0000 + (u64::from(stag.index()) << 24)
}

/// A pattern that differs per byte and per seed.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ ((i >> 8) as u8))
        .collect()
}

/// Walks FPDUs without markers: the lengths must tile the buffer exactly.
pub fn fpdu_lengths(mut buf: &[u8]) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let len = usize::from(u16::from_be_bytes([*buf.first()?, *buf.get(1)?]));
        let fpdu = (2 + len).div_ceil(4) * 4 + 4;
        buf = buf.get(fpdu..)?;
        out.push(fpdu);
    }
    Some(out)
}

/// Two connected sides: `a` the MPA initiator, `b` the responder.
#[derive(Debug)]
pub struct Pair {
    pub a: Side,
    pub b: Side,
    pub setup: Setup,
    pub chunking: Chunking,
    /// Room offered to each `poll_transmit`.
    pub tx_room: usize,
    a_to_b: VecDeque<u8>,
    b_to_a: VecDeque<u8>,
    rng: u64,
    tx_buf: Vec<u8>,
}

impl Pair {
    pub fn new(setup: Setup) -> Self {
        Pair::with_configs(
            setup,
            config(Role::Initiator, &setup),
            config(Role::Responder, &setup),
        )
    }

    pub fn with_configs(setup: Setup, a: ConnectionConfig, b: ConnectionConfig) -> Self {
        Pair {
            a: Side::new(a),
            b: Side::new(b),
            setup,
            chunking: Chunking::Whole,
            tx_room: 64 * 1024,
            a_to_b: VecDeque::new(),
            b_to_a: VecDeque::new(),
            rng: 0x9e37_79b9_7f4a_7c15,
            tx_buf: vec![0; 256 * 1024],
        }
    }

    pub fn chunked(mut self, seed: u64, max: usize) -> Self {
        self.chunking = Chunking::Random { seed, max };
        self.rng = seed | 1;
        self
    }

    fn next_rand(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Puts raw bytes on the wire towards `b` (crafted frames).
    pub fn inject_to_b(&mut self, bytes: &[u8]) {
        self.a_to_b.extend(bytes);
    }

    pub fn inject_to_a(&mut self, bytes: &[u8]) {
        self.b_to_a.extend(bytes);
    }

    /// One round: each side transmits once and receives what is queued.
    /// Returns whether anything happened.
    pub fn step(&mut self) -> bool {
        let mut progress = false;
        for dir in [true, false] {
            let (tx, queue) = if dir {
                (&mut self.a, &mut self.a_to_b)
            } else {
                (&mut self.b, &mut self.b_to_a)
            };
            let room = self.tx_room.min(self.tx_buf.len());
            self.tx_buf[..room].fill(0xa5);
            let n = tx.conn.poll_transmit(&tx.mem, &mut self.tx_buf[..room]);
            while let Some(stag) = tx.conn.take_local_invalidate() {
                tx.mem.deregister(stag);
                progress = true;
            }
            assert!(n <= room, "wrote past the offered room");
            assert!(
                self.tx_buf[n..room].iter().all(|&b| b == 0xa5),
                "bytes touched beyond the reported length"
            );
            if n > 0 {
                progress = true;
                if !self.setup.markers {
                    assert!(
                        fpdu_lengths(&self.tx_buf[..n]).is_some(),
                        "poll_transmit output is not whole FPDUs"
                    );
                }
                tx.wire.extend_from_slice(&self.tx_buf[..n]);
                tx.bursts.push(n);
                queue.extend(&self.tx_buf[..n]);
            }
        }
        for dir in [true, false] {
            loop {
                let pending = if dir {
                    self.a_to_b.len()
                } else {
                    self.b_to_a.len()
                };
                if pending == 0 {
                    break;
                }
                let take = match self.chunking {
                    Chunking::Whole => pending,
                    Chunking::Random { max, .. } => {
                        1 + (self.next_rand() % max.max(1) as u64) as usize
                    }
                }
                .min(pending);
                let (rx, queue) = if dir {
                    (&mut self.b, &mut self.a_to_b)
                } else {
                    (&mut self.a, &mut self.b_to_a)
                };
                let chunk: Vec<u8> = queue.iter().take(take).copied().collect();
                let used = rx
                    .conn
                    .handle_bytes_shared(&mut rx.mem, rx.srq.as_mut(), &chunk);
                assert!(used <= chunk.len(), "consumed more than given");
                queue.drain(..used);
                if used > 0 {
                    progress = true;
                }
                if used < chunk.len() {
                    break;
                }
            }
        }
        for side in [&mut self.a, &mut self.b] {
            while let Some(e) = side.conn.poll_event() {
                side.events.push(e);
                progress = true;
            }
        }
        progress
    }

    /// Runs until neither side makes progress; panics on livelock.
    pub fn drive(&mut self) {
        for _ in 0..1_000_000 {
            if !self.step() {
                return;
            }
        }
        panic!("no quiescence after 1,000,000 rounds");
    }
}
