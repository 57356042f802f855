//! Reading what the target sent back, sans-IO: stream bytes and the way the
//! stream ended go in, an [`Observation`] comes out. The first bytes must be
//! an MPA Reply; after an accepting one, FPDUs framed as it negotiated, each
//! read as an RDMAP message (TERMINATEs decoded in either the RFC 5040 or
//! the siw layout).
//!
//! The hostile side never asks for markers (no case sets M in its
//! Request), so FPDUs from the target carry none.

use core::fmt;
use core::ops::ControlFlow;

use mpa::wire::{FrameRepr, HEADER_LEN, MAX_PRIVATE_DATA};
use mpa::Deframer;
use rdmap::wire::{Body, MessageRepr, TermLayout};
use rdmap::Opcode;

/// The MPA Reply the target sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplySeen {
    pub reject: bool,
    pub rev: u8,
    pub crc: bool,
}

/// A TERMINATE the target sent, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermSeen {
    pub layer: u8,
    pub etype: u8,
    pub code: u8,
    pub layout: TermLayout,
}

impl fmt::Display for TermSeen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TERMINATE {}/{}/{:#04x} ({:?} layout)",
            self.layer, self.etype, self.code, self.layout
        )
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

/// Everything the target sent on one connection, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub reply: Option<ReplySeen>,
    pub terminates: Vec<TermSeen>,
    /// Opcodes of the other RDMAP messages (the first [`KEEP_MESSAGES`]).
    pub messages: Vec<Opcode>,
    /// All other RDMAP messages, kept or not.
    pub message_count: u64,
    /// The first thing the target sent that is not a valid Reply, FPDU or
    /// RDMAP message: the target broke the protocol itself.
    pub malformed: Option<String>,
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
    /// After an accepting Reply.
    Fpdus(Box<Deframer>),
    /// After a reject, or after something malformed: bytes are only counted.
    Done,
}

/// Builds an [`Observation`] from what arrives.
pub struct Observer {
    phase: Phase,
    obs: Observation,
}

impl Default for Observer {
    fn default() -> Self {
        Observer::new()
    }
}

impl Observer {
    pub fn new() -> Observer {
        Observer {
            phase: Phase::Reply(Vec::new()),
            obs: Observation {
                reply: None,
                terminates: Vec::new(),
                messages: Vec::new(),
                message_count: 0,
                malformed: None,
                ending: Ending::Open,
                bytes: 0,
            },
        }
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
        let mut rest = bytes;
        if let Phase::Reply(buf) = &mut self.phase {
            // Never buffer more than the largest legal frame.
            let want = (HEADER_LEN + MAX_PRIVATE_DATA + 1).saturating_sub(buf.len());
            let take = rest.len().min(want);
            buf.extend_from_slice(&rest[..take]);
            match FrameRepr::parse_bytes(buf) {
                Ok((repr, len)) => {
                    let seen = ReplySeen {
                        reject: repr.reject,
                        rev: repr.rev,
                        crc: repr.crc,
                    };
                    let kind = repr.kind;
                    // Bytes after the frame belong to the FPDU stream.
                    let after = buf.len() - len;
                    rest = &rest[take - after..];
                    if kind != mpa::wire::FrameKind::Reply {
                        self.malformed(format!("an MPA {kind} instead of a Reply"));
                        return;
                    }
                    self.obs.reply = Some(seen);
                    self.phase = if seen.reject {
                        Phase::Done
                    } else {
                        Phase::Fpdus(Box::new(Deframer::new(seen.crc, false, 65535)))
                    };
                }
                Err(mpa::wire::Error::Truncated { .. }) => return,
                Err(e) => {
                    self.malformed(format!("not an MPA Reply: {e}"));
                    return;
                }
            }
        }
        let Phase::Fpdus(deframer) = &mut self.phase else {
            return;
        };
        let obs = &mut self.obs;
        let mut bad = None;
        let fed = deframer.feed(rest, |ulpdu| {
            match MessageRepr::parse(ulpdu) {
                Ok(m) => match m.body {
                    Body::Terminate(t) => obs.terminates.push(TermSeen {
                        layer: t.control.layer,
                        etype: t.control.etype,
                        code: t.control.code,
                        layout: t.layout,
                    }),
                    _ => {
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
        if let Err(e) = fed {
            bad = bad.or(Some(format!("a broken FPDU stream: {e}")));
        }
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

    /// The observation is over.
    pub fn finish(self) -> Observation {
        self.obs
    }

    fn malformed(&mut self, what: String) {
        self.obs.malformed.get_or_insert(what);
        self.phase = Phase::Done;
    }
}
