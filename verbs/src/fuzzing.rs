//! The property the `verbs_engine` fuzz target checks
//! (`fuzz/fuzz_targets/verbs_engine.rs`), also run over seeds and seeded
//! mutations by the integration tests.
//!
//! A whole verbs endpoint (device, engine, connection manager, queue pair)
//! on the memory link, on virtual time, accepts a connection from a peer
//! that completes a valid MPA start-up and then sends the fuzzer's bytes as
//! its FPDU stream, then closes. The endpoint has registered regions of
//! every access kind, posted receives, and a Read of its own outstanding.
//!
//! Checks: no panic; nothing is placed outside a posted buffer or into a
//! region the peer may not write (guard bytes and protected regions keep
//! their contents); every work request completes exactly once, with the
//! length it may have; and the run ends within a bounded number of rounds.
//!
//! Input: byte 0 picks CRC (bit 0), peer-to-peer with any RTR (bit 1),
//! receives posted to a shared receive queue instead of the queue pair
//! (bit 2: then those left posted when the run ends are not flushed, and
//! every receive must have completed once or be handed back by
//! `SharedReceiveQueue::destroy`, never both) and the endpoint's IRD
//! (bits 4-5, plus one); byte 1 seeds the sizes of the
//! chunks the stream is sent in ([`chunk_sizes`]), one chunk per round of
//! progress; the rest is the stream. STags and tagged
//! offsets are allocated at run time, so the stream names them with
//! placeholders the peer replaces before sending (see [`PLACEHOLDER_STAG`]
//! and [`PLACEHOLDER_TO`]); with CRC off the fuzzer then reaches placement
//! without computing CRCs.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mpa::{CrcPolicy, InitiatorConfig, RtrSet, Startup, StartupEvent};

use crate::cm::{AcceptParams, CmEvent, DisconnectReason, ListenOptions, MpaOptions};
use crate::cq::{WcOpcode, WcStatus, WorkCompletion};
use crate::mr::MemoryRegion;
use crate::qp::{wr, QpInit, QpState};
use crate::srq::SrqInit;
use crate::transport::memory::{MemoryLink, MemoryLinkConfig};
use crate::transport::{StreamId, StreamState, Transport};
use crate::{Access, Device, STag};

/// Port the endpoint listens on.
const PORT: u16 = 7174;
/// Bytes of each region.
pub const REGION: usize = 256;
/// Guard byte around posted buffers.
const GUARD: u8 = 0xa5;
/// Receives posted, each of [`SLOT`] bytes in the receive region.
pub const RECVS: u64 = 4;
/// Bytes of each posted receive (and of the endpoint's own Read).
pub const SLOT: usize = 48;
/// Where the first slot starts in its region (guard bytes before it).
const SLOT_START: usize = 16;
/// Progress rounds a run may take, start-up and close included.
const MAX_ROUNDS: usize = 50_000;
/// The peer's STag the endpoint's own Read reads from.
pub const PEER_SOURCE: STag = STag(0x0000_7701);
/// Work request id of the endpoint's own Read.
const READ_ID: u64 = 100;

/// A 4-octet STag placeholder: `@ST` and a region number (1 remote-write
/// window, 2 remote-read region, 3 region without access, 4 the sink of
/// the endpoint's own Read, 5 the receive buffers), replaced by that
/// region's STag.
pub const PLACEHOLDER_STAG: [u8; 3] = *b"@ST";
/// An 8-octet tagged offset placeholder: `@TO`, a region number, two zero
/// octets and a 16-bit offset, replaced by the region's address plus the
/// offset.
pub const PLACEHOLDER_TO: [u8; 3] = *b"@TO";

/// What a run left behind, for tests that check an input reaches what it
/// should.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Every completion, in order.
    pub completions: Vec<WorkCompletion>,
    /// How the connection ended, if it did.
    pub ended: Option<DisconnectReason>,
    /// Octets of the remote-write window the peer changed.
    pub window_changed: usize,
    /// Stream octets the peer sent after start-up.
    pub sent: usize,
    /// Receives a shared receive queue still held at the end (bit 2).
    pub handed_back: Vec<u64>,
    pub rounds: usize,
}

/// The fuzz target's property: see the module documentation.
pub fn engine(data: &[u8]) {
    run(data);
}

/// [`engine`], returning what the run left behind.
pub fn engine_outcome(data: &[u8]) -> Outcome {
    run(data)
}

/// The endpoint's regions.
struct Regions {
    window: MemoryRegion,
    readable: MemoryRegion,
    none: MemoryRegion,
    sink: MemoryRegion,
    rx: MemoryRegion,
}

impl Regions {
    fn by_number(&self, n: u8) -> Option<&MemoryRegion> {
        match n {
            1 => Some(&self.window),
            2 => Some(&self.readable),
            3 => Some(&self.none),
            4 => Some(&self.sink),
            5 => Some(&self.rx),
            _ => None,
        }
    }
}

fn fill(seed: u8) -> Vec<u8> {
    (0..REGION)
        .map(|i| (i as u8).wrapping_mul(7) ^ seed)
        .collect()
}

/// The stream with every placeholder replaced.
fn resolve(stream: &[u8], regions: &Regions) -> Vec<u8> {
    let mut out = stream.to_vec();
    let mut i = 0;
    while i + 4 <= out.len() {
        let region = out.get(i + 3).and_then(|&n| regions.by_number(n));
        match (&out[i..i + 3], region) {
            (p, Some(r)) if p == PLACEHOLDER_STAG => {
                out[i..i + 4].copy_from_slice(&r.rkey().0.to_be_bytes());
                i += 4;
            }
            (p, Some(r)) if p == PLACEHOLDER_TO && i + 8 <= out.len() => {
                let offset = u64::from(u16::from_be_bytes([out[i + 6], out[i + 7]]));
                let to = r.addr().wrapping_add(offset);
                out[i..i + 8].copy_from_slice(&to.to_be_bytes());
                i += 8;
            }
            _ => i += 1,
        }
    }
    out
}

/// Chunk sizes from a one-octet seed: the first chunk is the seed's value
/// (so a seed can end it exactly after the first FPDU: the endpoint, as
/// Responder, sends nothing before the Initiator's first FPDU, and its Read
/// must be out before a Read Response can answer it); the others 1 to 1500
/// octets from a linear congruential generator. Seed 0: 1500-octet chunks
/// from the generator throughout.
pub fn chunk_sizes(seed: u8, n: usize) -> Vec<usize> {
    let mut c = Chunks::new(seed);
    (0..n).map(|_| c.next()).collect()
}

struct Chunks {
    first: Option<usize>,
    state: u32,
}

impl Chunks {
    fn new(seed: u8) -> Chunks {
        Chunks {
            first: (seed != 0).then_some(usize::from(seed)),
            state: u32::from(seed),
        }
    }

    fn next(&mut self) -> usize {
        if let Some(n) = self.first.take() {
            return n;
        }
        self.state = self.state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        1 + (self.state >> 16) as usize % 1500
    }
}

/// The peer: a raw stream on the other end of the link.
struct Peer {
    host: Box<dyn Transport>,
    stream: Option<StreamId>,
    startup: Option<Startup>,
    established: bool,
}

impl Peer {
    /// Moves the start-up along; true once it completed.
    fn start_up(&mut self, now: Instant) -> bool {
        let (Some(s), Some(st)) = (self.stream, self.startup.as_mut()) else {
            return self.established;
        };
        if self.host.state(s) == StreamState::Connecting {
            return false;
        }
        if st.has_transmit() {
            let _ = self.host.send_with(s, &mut |b| st.transmit_into(b));
        }
        if !st.is_finished() {
            let _ = self
                .host
                .recv_with(s, &mut |b| st.handle_bytes(b, now).unwrap_or(0));
        }
        while let Some(ev) = st.poll_event() {
            match ev {
                StartupEvent::Established(_) => self.established = true,
                // Both ends are this crate's, with compatible policies.
                other => panic!("MPA start-up between our own ends failed: {other:?}"),
            }
        }
        self.established
    }

    /// Reads and drops what the endpoint sends (keeps its window open).
    fn drain(&mut self) {
        if let Some(s) = self.stream {
            let _ = self.host.recv_with(s, &mut |b| b.len());
        }
    }
}

fn run(data: &[u8]) -> Outcome {
    let (&opts, rest) = data.split_first().unwrap_or((&0, &[][..]));
    let (&chunk_seed, stream) = rest.split_first().unwrap_or((&0, &[][..]));
    let crc = opts & 1 != 0;
    let p2p = opts & 2 != 0;
    let shared = opts & 4 != 0;
    let ird = 1 + u16::from((opts >> 4) & 3);

    let cfg = MemoryLinkConfig::default().seed(u64::from(opts) << 8 | u64::from(chunk_seed));
    let (peer_host, host) = MemoryLink::pair(&cfg).expect("a default memory link");
    let device = Device::new(Box::new(host));
    let start = Instant::now();
    let mut now = start;
    device.use_virtual_clock(start);
    let pd = device.alloc_pd();
    let cq = device.create_cq(64);
    let srq = shared.then(|| {
        device
            .create_srq(&pd, SrqInit::new(RECVS as usize, 1))
            .expect("a shared receive queue")
    });
    let init = match &srq {
        Some(srq) => QpInit::new(&cq).with_srq(srq),
        None => QpInit::new(&cq),
    };
    let qp = device.create_qp(&pd, init).expect("a queue pair");
    let reg = |bytes: Vec<u8>, access| pd.register_vec(bytes, access).expect("a region");
    let regions = Regions {
        window: reg(fill(1), Access::REMOTE_WRITE | Access::LOCAL_WRITE),
        readable: reg(fill(2), Access::REMOTE_READ),
        none: reg(fill(3), Access::NONE),
        sink: reg(vec![GUARD; REGION], Access::LOCAL_WRITE),
        rx: reg(vec![GUARD; REGION], Access::LOCAL_WRITE),
    };
    let policy = if crc {
        CrcPolicy::Required
    } else {
        CrcPolicy::Off
    };
    let rtr = if p2p { RtrSet::ALL } else { RtrSet::EMPTY };
    let listen = ListenOptions {
        mpa: MpaOptions {
            crc: policy,
            p2p: rtr,
            timeout: Duration::from_secs(5),
            ..MpaOptions::default()
        },
        backlog: Some(1),
    };
    let listener = device.listen(PORT, listen).expect("listen");
    let mut peer = Peer {
        host: Box::new(peer_host),
        stream: None,
        startup: Some(
            Startup::initiator(
                InitiatorConfig {
                    crc: policy,
                    peer_to_peer: p2p.then_some(RtrSet::ALL),
                    ird: 4,
                    ord: 4,
                    ..InitiatorConfig::default()
                },
                start,
            )
            .expect("a valid initiator"),
        ),
        established: false,
    };
    peer.stream = Some(
        peer.host
            .connect(cfg.endpoint_b(PORT))
            .expect("connect on the link"),
    );

    let mut posted: HashMap<u64, (WcOpcode, usize)> = HashMap::new();
    let mut outcome = Outcome::default();
    let mut stream_bytes: Option<Vec<u8>> = None;
    let mut fed = 0;
    let mut closed = false;
    let mut chunks = Chunks::new(chunk_seed);
    let mut accepted = false;
    let mut up = false;
    // The stream starts a few rounds after the endpoint posted its work,
    // so its Read is on the wire before a Read Response can answer it.
    let mut feed_from = usize::MAX;
    loop {
        outcome.rounds += 1;
        assert!(
            outcome.rounds <= MAX_ROUNDS,
            "not over after {MAX_ROUNDS} rounds: fed {fed} of {} octets, queue pair {:?}, {} completions",
            stream_bytes.as_ref().map_or(0, Vec::len),
            qp.state(),
            outcome.completions.len()
        );
        let mut busy = peer.host.poll(now);
        busy |= device.progress_at(now);
        if !accepted {
            if let Some(req) = listener.try_request() {
                req.accept(
                    &qp,
                    AcceptParams {
                        ird,
                        ord: 1,
                        private_data: Vec::new(),
                    },
                )
                .expect("accept");
                accepted = true;
            }
        }
        if !up {
            match qp.try_event() {
                Some(CmEvent::Established(_)) => {
                    up = true;
                    feed_from = outcome.rounds + 3;
                    for k in 0..RECVS {
                        let sge = regions
                            .rx
                            .sge(SLOT_START + k as usize * SLOT, SLOT)
                            .expect("slot inside the region");
                        match &srq {
                            Some(srq) => srq.post_recv(wr::recv(k, vec![sge])),
                            None => qp.post_recv(wr::recv(k, vec![sge])),
                        }
                        .expect("post a receive");
                        posted.insert(k, (WcOpcode::Recv, SLOT));
                    }
                    let sink = regions.sink.sge(SLOT_START, SLOT).expect("inside");
                    qp.post_send(wr::read(READ_ID, sink, PEER_SOURCE, 0x1000))
                        .expect("post a Read");
                    posted.insert(READ_ID, (WcOpcode::RdmaRead, SLOT));
                }
                Some(other) => panic!("start-up between our own ends failed: {other:?}"),
                None => {}
            }
        }
        if peer.start_up(now) && up && outcome.rounds >= feed_from {
            let bytes = stream_bytes.get_or_insert_with(|| resolve(stream, &regions));
            if let (Some(s), false) = (peer.stream, closed) {
                if fed < bytes.len() {
                    let want = chunks.next().min(bytes.len() - fed);
                    let n = peer
                        .host
                        .send_with(s, &mut |b| {
                            let n = want.min(b.len());
                            b[..n].copy_from_slice(&bytes[fed..fed + n]);
                            n
                        })
                        .unwrap_or(0);
                    fed += n;
                    busy |= n > 0;
                } else {
                    peer.host.close(s);
                    closed = true;
                }
                // A stream the endpoint reset or closed takes no more.
                if matches!(peer.host.state(s), StreamState::Closed | StreamState::Reset) {
                    closed = true;
                }
            }
        }
        // A peer with bytes still to send is not idle: time only jumps
        // once it has said everything (else the endpoint's timers, such
        // as the wait for the first FPDU, would fire in between).
        busy |= up && !closed;
        peer.drain();
        while let Some(wc) = cq.poll_one().expect("poll the completion queue") {
            outcome.completions.push(wc);
            busy = true;
        }
        if let Some(CmEvent::Disconnected { reason }) = qp.try_event() {
            outcome.ended = Some(reason);
        }
        // Receives still posted to a shared receive queue never complete.
        let unconsumed = srq
            .as_ref()
            .map_or(0, |s| s.query().map_or(0, |a| a.posted));
        let all_done = up && outcome.completions.len() + unconsumed >= posted.len();
        if all_done && qp.state() == QpState::Error {
            break;
        }
        if !busy {
            let d = match (device.poll_delay_at(now), peer.host.poll_delay(now)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            now += match d {
                Some(d) if d.is_zero() => Duration::from_micros(100),
                Some(d) => d,
                None => Duration::from_millis(1),
            };
        }
    }
    outcome.sent = fed;
    drop(qp);
    let handed_back = match srq {
        Some(srq) => srq.destroy().expect("no queue pair uses it any more"),
        None => Vec::new(),
    };

    // Every work request completed once, within what it may report.
    let mut seen = HashMap::new();
    for wc in &outcome.completions {
        let (opcode, max) = posted
            .get(&wc.wr_id)
            .unwrap_or_else(|| panic!("a completion of nothing posted: {wc:?}"));
        assert!(
            seen.insert(wc.wr_id, ()).is_none(),
            "completed twice: {wc:?}"
        );
        assert_eq!(wc.opcode, *opcode, "{wc:?}");
        if wc.status == WcStatus::Success {
            assert!(wc.byte_len as usize <= *max, "longer than posted: {wc:?}");
        }
    }
    for id in &handed_back {
        assert!(
            posted.get(id).is_some_and(|p| p.0 == WcOpcode::Recv),
            "handed back a receive never posted: {id}"
        );
        assert!(!seen.contains_key(id), "completed and handed back: {id}");
    }
    assert_eq!(
        seen.len() + handed_back.len(),
        posted.len(),
        "every work request completed (or, shared, was handed back)"
    );
    // Nothing placed outside posted buffers or where the peer may not write.
    let slots = SLOT_START..SLOT_START + RECVS as usize * SLOT;
    regions.rx.with_bytes(|b| {
        let outside = b
            .iter()
            .enumerate()
            .find(|(i, &x)| !slots.contains(i) && x != GUARD);
        assert!(
            outside.is_none(),
            "receive region written outside its slots: {outside:?}"
        );
    });
    regions.sink.with_bytes(|b| {
        let outside = b
            .iter()
            .enumerate()
            .find(|(i, &x)| !(SLOT_START..SLOT_START + SLOT).contains(i) && x != GUARD);
        assert!(
            outside.is_none(),
            "Read sink written outside the Read: {outside:?}"
        );
    });
    assert!(
        regions.readable.with_bytes(|b| b == fill(2)),
        "read-only region written"
    );
    assert!(
        regions.none.with_bytes(|b| b == fill(3)),
        "region without access written"
    );
    outcome.handed_back = handed_back;
    outcome.window_changed = regions
        .window
        .with_bytes(|b| b.iter().zip(fill(1)).filter(|(a, b)| *a != b).count());
    outcome
}
