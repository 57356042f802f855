//! How each fuzz target reads its input, written the other way round: a
//! structured choice becomes the bytes the target decodes back into it.
//! The layouts mirror the `fuzzing` modules of mpa, ddp and rdmap; tests
//! pin them against the byte strings those modules' own tests use.

use std::time::Duration;

use mpa::{CrcPolicy, InitiatorConfig, ReplyParams, ResponderConfig, Rtr, RtrSet};

fn crc_code(p: CrcPolicy) -> u8 {
    match p {
        CrcPolicy::Off => 0,
        CrcPolicy::Preferred => 1,
        CrcPolicy::Required => 2,
        CrcPolicy::Never => 3,
    }
}

fn rtr_code(set: RtrSet) -> u8 {
    u8::from(set.send) | u8::from(set.write) << 1 | u8::from(set.read) << 2
}

/// The Initiator half of an `mpa_startup` input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitiatorChoice {
    pub rev1: bool,
    pub crc: CrcPolicy,
    pub markers_rx: bool,
    pub markers_tx: bool,
    /// Offered RTR kinds; peer-to-peer is requested when rev 2 and non-empty.
    pub peer_to_peer: Option<RtrSet>,
    /// 14-bit values.
    pub ird: u16,
    pub ord: u16,
    /// Private data length (below 64).
    pub private_data: u8,
    pub accept_rev1_reply: bool,
}

impl InitiatorChoice {
    fn encode(&self, out: &mut Vec<u8>) {
        let flags = u8::from(self.rev1) << 7
            | crc_code(self.crc)
            | u8::from(self.markers_rx) << 2
            | u8::from(self.markers_tx) << 3
            | u8::from(self.peer_to_peer.is_some()) << 4
            | u8::from(self.accept_rev1_reply) << 5;
        out.push(flags);
        out.push(self.peer_to_peer.map_or(0, rtr_code));
        out.extend_from_slice(&self.ird.to_be_bytes());
        out.extend_from_slice(&self.ord.to_be_bytes());
        out.push(self.private_data);
    }

    /// The configuration the target builds from these bytes.
    pub fn config(&self) -> InitiatorConfig {
        let rev = if self.rev1 { 1 } else { 2 };
        InitiatorConfig {
            rev,
            crc: self.crc,
            markers_rx: self.markers_rx,
            markers_tx: self.markers_tx,
            ird: self.ird & 0x3fff,
            ord: self.ord & 0x3fff,
            peer_to_peer: self.peer_to_peer.filter(|s| rev == 2 && !s.is_empty()),
            private_data: vec![0x5a; usize::from(self.private_data) % 64],
            reply_timeout: Duration::from_secs(10),
            accept_rev1_reply: self.accept_rev1_reply,
        }
    }
}

/// The Responder half of an `mpa_startup` input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponderChoice {
    pub rev1: bool,
    pub crc: CrcPolicy,
    pub markers_rx: bool,
    pub markers_tx: bool,
    pub rtr: RtrSet,
}

impl ResponderChoice {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(
            u8::from(self.rev1) << 7
                | crc_code(self.crc)
                | u8::from(self.markers_rx) << 2
                | u8::from(self.markers_tx) << 3,
        );
        out.push(rtr_code(self.rtr));
    }

    pub fn config(&self) -> ResponderConfig {
        ResponderConfig {
            max_rev: if self.rev1 { 1 } else { 2 },
            crc: self.crc,
            markers_rx: self.markers_rx,
            markers_tx: self.markers_tx,
            rtr: self.rtr,
            request_timeout: Duration::from_secs(5),
        }
    }
}

/// An `mpa_startup` input: both configurations, the chunk size the peer's
/// stream is cut into, the Responder's answer, then the stream itself (fed
/// to an Initiator and to a Responder alike).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartupInput {
    pub initiator: InitiatorChoice,
    pub responder: ResponderChoice,
    /// Chunks of `chunk + 1` bytes.
    pub chunk: u8,
    pub reply_ird: u16,
    pub reply_ord: u16,
    /// Reply private data length (below 32).
    pub reply_private_data: u8,
    pub stream: Vec<u8>,
}

impl StartupInput {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(15 + self.stream.len());
        self.initiator.encode(&mut out);
        self.responder.encode(&mut out);
        out.push(self.chunk);
        out.extend_from_slice(&self.reply_ird.to_be_bytes());
        out.extend_from_slice(&self.reply_ord.to_be_bytes());
        out.push(self.reply_private_data);
        out.extend_from_slice(&self.stream);
        out
    }

    pub fn reply_params(&self) -> ReplyParams {
        ReplyParams {
            ird: self.reply_ird & 0x3fff,
            ord: self.reply_ord & 0x3fff,
            private_data: vec![0xa5; usize::from(self.reply_private_data) % 32],
        }
    }
}

/// An `mpa_deframer` input: framing, chunking, the ULPDU cap, where in the
/// stream the bytes start (for marker positions), which bit the CRC part
/// flips, then the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeframerInput {
    pub crc: bool,
    pub markers: bool,
    /// Chunks of `chunk + 1` bytes.
    pub chunk: u8,
    pub max_ulpdu: u16,
    /// Stream offset in 4-byte words.
    pub start_words: u16,
    pub flip: u16,
    pub stream: Vec<u8>,
}

impl DeframerInput {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.stream.len());
        out.push(u8::from(self.crc) | u8::from(self.markers) << 1);
        out.push(self.chunk);
        out.extend_from_slice(&self.max_ulpdu.to_be_bytes());
        out.extend_from_slice(&self.start_words.to_be_bytes());
        out.extend_from_slice(&self.flip.to_be_bytes());
        out.extend_from_slice(&self.stream);
        out
    }
}

/// An `rdmap_connection` input: the fuzzed Responder's framing, RTR and
/// IRD, a seed for the chunk sizes, then the peer's FPDU stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionInput {
    pub crc: bool,
    pub markers: bool,
    pub rtr: Option<Rtr>,
    /// 0..=3.
    pub ird: u8,
    pub chunk_seed: u8,
    pub stream: Vec<u8>,
}

impl ConnectionInput {
    pub fn config_byte(&self) -> u8 {
        let rtr = match self.rtr {
            None => 0,
            Some(Rtr::Send) => 1,
            Some(Rtr::Write) => 2,
            Some(Rtr::Read) => 3,
        };
        u8::from(self.crc) | u8::from(self.markers) << 1 | rtr << 2 | (self.ird & 3) << 4
    }

    /// The sizes of the first `n` chunks the target cuts the stream into
    /// with `seed` (its linear congruential generator, 1 to 300 bytes).
    pub fn chunk_sizes(seed: u8, n: usize) -> Vec<usize> {
        let mut rng = u32::from(seed) | 1;
        (0..n)
            .map(|_| {
                rng = rng.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                1 + (rng >> 16) as usize % 300
            })
            .collect()
    }

    /// The first chunk seed whose first chunk length lies in `range`.
    /// The fuzzed connection sends its own work (a Read among it) only
    /// after the call that delivered the peer's first FPDU: a first chunk
    /// that ends within the second FPDU lets a Read Response aimed at that
    /// Read arrive after it.
    pub fn seed_with_first_chunk_in(range: core::ops::Range<usize>) -> Option<u8> {
        (0..=u8::MAX).find(|&s| range.contains(&Self::chunk_sizes(s, 1)[0]))
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(2 + self.stream.len());
        out.push(self.config_byte());
        out.push(self.chunk_seed);
        out.extend_from_slice(&self.stream);
        out
    }
}

/// Where a `ddp_placement` region sits in the tagged-offset space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegionBase {
    Zero,
    /// `0x1000 * (index + 1)`.
    Page,
    /// Ends at the top of the 64-bit space.
    Top,
    Exact(u64),
}

/// One of the three regions a `ddp_placement` script registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionSpec {
    /// The region is `32 + extra` bytes (`extra` below 32).
    pub extra: u8,
    pub base: RegionBase,
    /// `None`: every right; `Some(bits)`: `Access::from_bits_truncate(bits)`
    /// (`bits` below 64).
    pub access: Option<u8>,
    /// In another protection domain than the queue pair.
    pub foreign: bool,
}

impl RegionSpec {
    /// 63 bytes at `0x1000 * (index + 1)`, every right, the QP's PD.
    pub const PLAIN: RegionSpec = RegionSpec {
        extra: 31,
        base: RegionBase::Page,
        access: None,
        foreign: false,
    };

    /// The region's size in bytes.
    pub fn size(&self) -> usize {
        32 + usize::from(self.extra % 32)
    }
}

/// Operations a `ddp_placement` script can hold at most.
pub const MAX_PLACEMENT_OPS: usize = 256;

/// A `ddp_placement` input: three regions, then up to
/// [`MAX_PLACEMENT_OPS`] operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementScript {
    bytes: Vec<u8>,
    ops: usize,
}

/// The largest payload of one tagged (31) and one untagged (23) operation.
pub const MAX_TAGGED_PAYLOAD: usize = 31;
pub const MAX_UNTAGGED_PAYLOAD: usize = 23;

impl PlacementScript {
    pub fn new(regions: [RegionSpec; 3]) -> PlacementScript {
        let mut bytes = Vec::new();
        for r in regions {
            bytes.push(r.extra % 32);
            match r.base {
                RegionBase::Zero => bytes.push(0),
                RegionBase::Page => bytes.push(1),
                RegionBase::Top => bytes.push(2),
                RegionBase::Exact(b) => {
                    bytes.push(3);
                    bytes.extend_from_slice(&b.to_be_bytes());
                }
            }
            bytes.push(r.access.map_or(1, |bits| (bits % 64) << 2));
            bytes.push(if r.foreign { 0 } else { 1 });
        }
        PlacementScript { bytes, ops: 0 }
    }

    /// False once the script is full (later operations are dropped).
    fn op(&mut self) -> bool {
        self.ops += 1;
        self.ops <= MAX_PLACEMENT_OPS
    }

    /// A tagged placement into `region` (0..3) at `offset` (below 64)
    /// from its base, needing remote (or else local) write rights.
    /// The payload is cut to [`MAX_TAGGED_PAYLOAD`].
    pub fn tagged(&mut self, region: u8, offset: u8, payload: &[u8], remote: bool) -> &mut Self {
        if self.op() {
            let p = &payload[..payload.len().min(MAX_TAGGED_PAYLOAD)];
            self.bytes
                .extend_from_slice(&[0, region % 3, 0, offset % 64, p.len() as u8]);
            self.bytes.extend_from_slice(p);
            self.bytes.push(u8::from(!remote));
        }
        self
    }

    /// A tagged placement under an arbitrary 16-bit STag and 64-bit offset.
    pub fn tagged_raw(&mut self, stag: u16, to: u64, payload: &[u8]) -> &mut Self {
        if self.op() {
            let p = &payload[..payload.len().min(MAX_TAGGED_PAYLOAD)];
            self.bytes.extend_from_slice(&[1, 3]);
            self.bytes.extend_from_slice(&stag.to_be_bytes());
            self.bytes.push(2);
            self.bytes.extend_from_slice(&to.to_be_bytes());
            self.bytes.push(p.len() as u8);
            self.bytes.extend_from_slice(p);
            self.bytes.push(0);
        }
        self
    }

    /// An untagged segment on queue `qn` (0..4) with the expected MSN and
    /// the next message offset. The payload is cut to
    /// [`MAX_UNTAGGED_PAYLOAD`].
    pub fn untagged(&mut self, qn: u8, payload: &[u8], last: bool) -> &mut Self {
        if self.op() {
            let p = &payload[..payload.len().min(MAX_UNTAGGED_PAYLOAD)];
            self.bytes
                .extend_from_slice(&[3, 4 + qn % 4, 0, 0, p.len() as u8]);
            self.bytes.extend_from_slice(p);
            self.bytes.push(u8::from(last));
        }
        self
    }

    /// An untagged segment one MSN ahead of the expected one.
    pub fn untagged_skipping(&mut self, qn: u8, payload: &[u8]) -> &mut Self {
        if self.op() {
            let p = &payload[..payload.len().min(MAX_UNTAGGED_PAYLOAD)];
            self.bytes
                .extend_from_slice(&[4, 4 + qn % 4, 6, 0, p.len() as u8]);
            self.bytes.extend_from_slice(p);
            self.bytes.push(1);
        }
        self
    }

    /// Posts a receive buffer on queue 0: up to three `(region, offset
    /// below 20, length below 16)` elements.
    pub fn post(&mut self, sges: &[(u8, u8, u8)]) -> &mut Self {
        if self.op() {
            let sges = &sges[..sges.len().min(3)];
            self.bytes.extend_from_slice(&[5, sges.len() as u8]);
            for &(region, off, len) in sges {
                self.bytes
                    .extend_from_slice(&[region % 3, off % 20, len % 16]);
            }
        }
        self
    }

    pub fn deregister(&mut self, region: u8) -> &mut Self {
        if self.op() {
            self.bytes.extend_from_slice(&[7, (region % 3) << 2]);
        }
        self
    }

    pub fn ops(&self) -> usize {
        self.ops.min(MAX_PLACEMENT_OPS)
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}
