//! Reading what the target sent back, sans-IO: stream bytes and the way the
//! stream ended go in, an [`Observation`] comes out. The first bytes must be
//! an MPA Reply; after an accepting one, FPDUs framed as it negotiated, each
//! read as an RDMAP message (TERMINATEs decoded in either the RFC 5040 or
//! the siw layout).
//!
//! A target that refuses a Request may answer with a TERMINATE and no
//! Reply at all (RFC 6581 section 7 lets a Responder send one for an
//! invalid Request): bytes that do not start with an MPA key are read as
//! FPDUs, with CRC if the first one's CRC field checks, without it if the
//! field is zero (as a peer with CRC off sends it).
//!
//! The hostile side asks for markers only when told to
//! ([`Observer::expect_markers`]), and then reads them out of the target's
//! FPDUs after start-up.

use core::fmt;
use core::ops::ControlFlow;

use mpa::framing::markers;
use mpa::wire::{FrameRepr, HEADER_LEN, MAX_PRIVATE_DATA};
use mpa::Deframer;
use rdmap::wire::terminate::is_known_cause;
use rdmap::wire::{Body, MessageRepr, ReadRequestRepr, TermControl, TermLayout};
use rdmap::Opcode;

/// The MPA Reply the target sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplySeen {
    /// The target refused the connection (Reply with the Reject bit).
    pub reject: bool,
    /// The MPA revision it answered with.
    pub rev: u8,
    /// Whether FPDUs carry CRCs from here on (the Reply's C bit).
    pub crc: bool,
}

/// A TERMINATE the target sent, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermSeen {
    /// Layer: 0 RDMAP, 1 DDP, 2 LLP (MPA).
    pub layer: u8,
    /// The error type within the layer.
    pub etype: u8,
    /// The error code.
    pub code: u8,
    /// The layout it was read in.
    pub layout: TermLayout,
    /// The reading in the other layout, when the control word does not
    /// tell them apart (no M/D/R flag and both triples equally plausible):
    /// siw's layout swaps the layer and type nibbles, so `0/2/0x05` sent
    /// by siw reads as `2/0/0x05` by the RFC.
    pub other: Option<(u8, u8, u8)>,
}

impl TermSeen {
    /// Every reading of the TERMINATE: the chosen one, and the other
    /// layout's where the word is ambiguous.
    pub fn readings(&self) -> impl Iterator<Item = (u8, u8, u8)> + '_ {
        core::iter::once((self.layer, self.etype, self.code)).chain(self.other)
    }
}

impl fmt::Display for TermSeen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TERMINATE {}/{}/{:#04x} ({:?} layout)",
            self.layer, self.etype, self.code, self.layout
        )?;
        if let Some((l, e, c)) = self.other {
            write!(f, " or {l}/{e}/{c:#04x} (the other layout)")?;
        }
        Ok(())
    }
}

/// How the stream from the target ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// An orderly close (FIN).
    Fin,
    /// A reset (RST).
    Reset,
    /// Still open when the observation stopped.
    Open,
}

/// Most messages other than TERMINATEs kept by name; the rest are counted.
const KEEP_MESSAGES: usize = 16;
/// Octets of a Send's payload kept.
pub const KEEP_PAYLOAD: usize = 64;

/// Everything the target sent on one connection, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// The MPA Reply, if one came.
    pub reply: Option<ReplySeen>,
    /// Every TERMINATE, in order.
    pub terminates: Vec<TermSeen>,
    /// Opcodes of the other RDMAP messages (the first `KEEP_MESSAGES`).
    pub messages: Vec<Opcode>,
    /// All other RDMAP messages, kept or not.
    pub message_count: u64,
    /// Payloads of the first Sends (the application's adverts), each cut
    /// at [`KEEP_PAYLOAD`] octets; only last segments count.
    pub sends: Vec<Vec<u8>>,
    /// Sends (last segments) seen in all.
    pub send_count: u64,
    /// The first Read Requests the target sent.
    pub read_requests: Vec<ReadRequestRepr>,
    /// Read Requests seen in all.
    pub read_request_count: u64,
    /// Tagged messages completed (last segments of Writes and Read
    /// Responses).
    pub tagged_count: u64,
    /// The first thing the target sent that is not a valid Reply, FPDU or
    /// RDMAP message: the target broke the protocol itself.
    pub malformed: Option<String>,
    /// How the connection ended.
    pub ending: Ending,
    /// Stream bytes received.
    pub bytes: u64,
}

impl fmt::Display for Observation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reply {
            None => f.write_str("no Reply")?,
            Some(r) if r.reject => write!(f, "Reply with R (rev {})", r.rev)?,
            Some(r) => write!(f, "Reply (rev {}, crc {})", r.rev, r.crc)?,
        }
        for t in &self.terminates {
            write!(f, ", {t}")?;
        }
        if self.message_count > 0 {
            write!(
                f,
                ", {} other message(s) {:?}",
                self.message_count, self.messages
            )?;
        }
        if let Some(m) = &self.malformed {
            write!(f, ", malformed: {m}")?;
        }
        f.write_str(match self.ending {
            Ending::Fin => ", FIN",
            Ending::Reset => ", RST",
            Ending::Open => ", still open",
        })
    }
}

enum Phase {
    /// Collecting the Reply (bounded by the largest legal frame).
    Reply(Vec<u8>),
    /// No MPA key: collecting the first FPDU (bounded by the largest one)
    /// to learn whether CRC is on.
    Unframed(Vec<u8>),
    /// After an accepting Reply, or once the framing is known.
    Fpdus(Box<Deframer>),
    /// After a reject, or after something malformed: bytes are only counted.
    Done,
}

/// The largest FPDU without markers.
const MAX_FPDU: usize = markers::content_len(markers::MAX_ULPDU);

/// Builds an [`Observation`] from what arrives.
pub struct Observer {
    phase: Phase,
    obs: Observation,
    /// Whether the target puts markers in its FPDUs (we asked with M).
    markers: bool,
}

impl Default for Observer {
    fn default() -> Self {
        Observer::new()
    }
}

impl Observer {
    /// An observer before the target's first byte.
    pub fn new() -> Observer {
        Observer {
            markers: false,
            phase: Phase::Reply(Vec::new()),
            obs: Observation {
                reply: None,
                terminates: Vec::new(),
                messages: Vec::new(),
                message_count: 0,
                sends: Vec::new(),
                send_count: 0,
                read_requests: Vec::new(),
                read_request_count: 0,
                tagged_count: 0,
                malformed: None,
                ending: Ending::Open,
                bytes: 0,
            },
        }
    }

    /// The target's FPDUs after start-up carry markers (our Request or
    /// Reply set M). Bytes sent in place of a Reply are read without.
    pub fn expect_markers(&mut self, on: bool) {
        self.markers = on;
    }

    /// For the Responder's side of a connection: start-up completed with
    /// our own Reply (recorded as `seen`), so everything the target sends
    /// from here on is FPDUs.
    pub fn established(&mut self, seen: ReplySeen) {
        self.obs.reply = Some(seen);
        self.phase = Phase::Fpdus(Box::new(Deframer::new(seen.crc, self.markers, 65535)));
    }

    /// What has been seen so far.
    pub fn observation(&self) -> &Observation {
        &self.obs
    }

    /// The Reply, once it is complete.
    pub fn reply(&self) -> Option<ReplySeen> {
        self.obs.reply
    }

    /// Bytes from the target, in any cuts of the stream.
    pub fn on_bytes(&mut self, bytes: &[u8]) {
        self.obs.bytes += bytes.len() as u64;
        match &mut self.phase {
            Phase::Reply(buf) => {
                // Never buffer more than the largest legal frame.
                let want = (HEADER_LEN + MAX_PRIVATE_DATA + 1).saturating_sub(buf.len());
                let take = bytes.len().min(want);
                buf.extend_from_slice(&bytes[..take]);
                match FrameRepr::parse_bytes(buf) {
                    Ok((repr, len)) => {
                        let seen = ReplySeen {
                            reject: repr.reject,
                            rev: repr.rev,
                            crc: repr.crc,
                        };
                        if repr.kind != mpa::wire::FrameKind::Reply {
                            let kind = repr.kind;
                            self.malformed(format!("an MPA {kind} instead of a Reply"));
                            return;
                        }
                        // Bytes after the frame belong to the FPDU stream.
                        let after = buf.len() - len;
                        let rest = &bytes[take - after..];
                        self.obs.reply = Some(seen);
                        if seen.reject {
                            self.phase = Phase::Done;
                        } else {
                            let mut d = Box::new(Deframer::new(seen.crc, self.markers, 65535));
                            let bad = read_fpdus(&mut d, rest, &mut self.obs);
                            self.phase = Phase::Fpdus(d);
                            if let Some(m) = bad {
                                self.malformed(m);
                            }
                        }
                    }
                    Err(mpa::wire::Error::Truncated { .. }) => {}
                    Err(mpa::wire::Error::BadKey) => {
                        let mut so_far = std::mem::take(buf);
                        so_far.extend_from_slice(&bytes[take..]);
                        self.phase = Phase::Unframed(Vec::new());
                        self.unframed(&so_far);
                    }
                    Err(e) => self.malformed(format!("not an MPA Reply: {e}")),
                }
            }
            Phase::Unframed(_) => self.unframed(bytes),
            Phase::Fpdus(d) => {
                if let Some(m) = read_fpdus(d, bytes, &mut self.obs) {
                    self.malformed(m);
                }
            }
            Phase::Done => {}
        }
    }

    /// FPDUs with no Reply before them: the first whole one says whether
    /// its CRC field is checked.
    fn unframed(&mut self, bytes: &[u8]) {
        let Phase::Unframed(buf) = &mut self.phase else {
            return;
        };
        let take = bytes.len().min(MAX_FPDU.saturating_sub(buf.len()));
        buf.extend_from_slice(&bytes[..take]);
        let Some(&[hi, lo]) = buf.first_chunk::<2>() else {
            return;
        };
        let total = markers::content_len(usize::from(u16::from_be_bytes([hi, lo])));
        let Some((computed, field)) = buf.get(..total).and_then(markers::crc_of_unmarked) else {
            return;
        };
        let crc = if computed == field {
            true
        } else if field == 0 {
            false
        } else {
            self.malformed("neither an MPA Reply nor an FPDU".into());
            return;
        };
        let so_far = std::mem::take(buf);
        let mut d = Box::new(Deframer::new(crc, false, 65535));
        let mut bad = read_fpdus(&mut d, &so_far, &mut self.obs);
        if bad.is_none() {
            bad = read_fpdus(&mut d, &bytes[take..], &mut self.obs);
        }
        self.phase = Phase::Fpdus(d);
        if let Some(m) = bad {
            self.malformed(m);
        }
    }

    /// The target closed its direction (FIN).
    pub fn on_fin(&mut self) {
        self.obs.ending = Ending::Fin;
    }

    /// The target reset the connection.
    pub fn on_reset(&mut self) {
        self.obs.ending = Ending::Reset;
    }

    /// The observation is over. A target that closed with part of a
    /// Reply or FPDU unsent sent something malformed.
    pub fn finish(mut self) -> Observation {
        if self.obs.ending != Ending::Open {
            let partial = match &self.phase {
                Phase::Reply(b) | Phase::Unframed(b) => !b.is_empty(),
                Phase::Fpdus(d) => !d.is_idle(),
                Phase::Done => false,
            };
            if partial {
                self.malformed("the stream ended inside a Reply or FPDU".into());
            }
        }
        self.obs
    }

    fn malformed(&mut self, what: String) {
        self.obs.malformed.get_or_insert(what);
        self.phase = Phase::Done;
    }
}

/// The other layout's reading of `c`, when nothing in the word tells the
/// two apart.
fn other_reading(c: &TermControl, layout: TermLayout) -> Option<(u8, u8, u8)> {
    let word = c.encode(layout);
    let other = match layout {
        TermLayout::Rfc5040 => TermLayout::Siw,
        TermLayout::Siw => TermLayout::Rfc5040,
    };
    let o = TermControl::decode(word, other);
    let flagless = !(c.m || c.d || c.r || o.m || o.d || o.r);
    let same_weight = is_known_cause(c.layer, c.etype, c.code)
        == is_known_cause(o.layer, o.etype, o.code)
        && c.reserved == 0
        && o.reserved == 0;
    let differs = (o.layer, o.etype) != (c.layer, c.etype);
    (flagless && same_weight && differs).then_some((o.layer, o.etype, o.code))
}

/// Feeds `bytes` to `deframer`, recording each TERMINATE and other message
/// in `obs`; says what was wrong if something is not a valid FPDU or RDMAP
/// message.
fn read_fpdus(deframer: &mut Deframer, bytes: &[u8], obs: &mut Observation) -> Option<String> {
    let mut bad = None;
    let fed = deframer.feed(bytes, |ulpdu| {
        match MessageRepr::parse(ulpdu) {
            Ok(m) => match m.body {
                Body::Terminate(t) => obs.terminates.push(TermSeen {
                    layer: t.control.layer,
                    etype: t.control.etype,
                    code: t.control.code,
                    layout: t.layout,
                    other: other_reading(&t.control, t.layout),
                }),
                body => {
                    let last = m.ddp.last();
                    match (m.opcode(), body) {
                        (Opcode::ReadRequest, Body::ReadRequest(r)) => {
                            if obs.read_requests.len() < KEEP_MESSAGES {
                                obs.read_requests.push(r);
                            }
                            obs.read_request_count += 1;
                        }
                        (
                            Opcode::Send
                            | Opcode::SendInvalidate
                            | Opcode::SendSolicited
                            | Opcode::SendSolicitedInvalidate,
                            Body::Data(d),
                        ) if last => {
                            if obs.sends.len() < KEEP_MESSAGES {
                                obs.sends.push(d[..d.len().min(KEEP_PAYLOAD)].to_vec());
                            }
                            obs.send_count += 1;
                        }
                        (Opcode::RdmaWrite | Opcode::ReadResponse, _) if last => {
                            obs.tagged_count += 1;
                        }
                        _ => {}
                    }
                    if obs.messages.len() < KEEP_MESSAGES {
                        obs.messages.push(m.opcode());
                    }
                    obs.message_count += 1;
                }
            },
            Err(e) => {
                bad = Some(format!("an FPDU that is not RDMAP: {e}"));
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    match fed {
        Err(e) => bad.or(Some(format!("a broken FPDU stream: {e}"))),
        Ok(_) => bad,
    }
}
