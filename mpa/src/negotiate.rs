//! What start-up settles (RFC 5044 section 7.1, RFC 6581),
//! as pure functions from configuration and frames to decisions, so each
//! rule can be tested without a state machine around it.
//!
//! - CRC: C in the Reply is the decision. A Responder must set C when the
//!   Request did; either side may turn it on.
//! - Markers, per direction: M in a frame asks the *other* side to insert
//!   markers in what it sends.
//! - Revision: the Responder answers with the Request's revision, or its own
//!   highest if lower. With rev 2 and the enhanced bit, the first four bytes
//!   of private data are the IRD/ORD block.
//! - IRD/ORD: each side's ORD is limited by the other's IRD. A Reply whose
//!   ORD exceeds the Initiator's IRD fails with "insufficient IRD".
//! - Peer-to-peer: the Responder keeps the A bit and picks exactly one RTR
//!   kind of those offered, WRITE first, then READ, then SEND (siw's order);
//!   when none is offered, its own first choice (siw sends WRITE).

use core::time::Duration;

use crate::error::{ConfigError, StartupError};
use crate::framing::{Deframer, Framer, FramingConfig};
use crate::wire::{
    FrameKind, FrameRepr, IrdOrd, Rtr, RtrSet, IRD_ORD_LEN, IRD_ORD_MAX, MAX_PRIVATE_DATA,
};

/// The highest MPA revision there is (RFC 6581).
const MAX_REV: u8 = 2;

/// Which end of the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Sent the MPA Request (the active side, rdma_connect).
    Initiator,
    /// Sent the MPA Reply (the passive side, rdma_accept).
    Responder,
}

/// How this side treats FPDU CRC32c.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CrcPolicy {
    /// Do not ask for CRC, use it when the peer does (RFC 5044 requires
    /// every implementation to support it). siw's default build.
    Off,
    /// Ask for CRC; if a non-compliant Responder answers without it, go on
    /// without.
    #[default]
    Preferred,
    /// Ask for CRC and refuse a peer that does not use it (siw's
    /// `mpa_crc_required`; Chelsio always uses CRC).
    Required,
    /// Never use CRC: refuse a peer that asks for it (siw's
    /// `mpa_crc_strict` without `mpa_crc_required`). Not RFC-compliant;
    /// for interoperability tests.
    Never,
}

impl CrcPolicy {
    /// Whether this side sets C in its own frame.
    pub const fn asks(self) -> bool {
        matches!(self, CrcPolicy::Preferred | CrcPolicy::Required)
    }
}

/// The Initiator's wishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitiatorConfig {
    /// MPA revision to request: 2 (RFC 6581, with IRD/ORD) or 1.
    pub rev: u8,
    /// CRC policy.
    pub crc: CrcPolicy,
    /// Ask the Responder to insert markers in the FPDUs we receive.
    pub markers_rx: bool,
    /// Insert markers in what we send if the Responder asks (this crate
    /// supports markers; siw does not and refuses such peers).
    pub markers_tx: bool,
    /// Inbound RDMA READ depth we advertise (at most 0x3fff).
    pub ird: u16,
    /// Outbound RDMA READ depth we want (at most 0x3fff); the Reply's IRD
    /// may lower it.
    pub ord: u16,
    /// Peer-to-peer mode and the RTR kinds we can send; `None` for the
    /// client/server model. Needs rev 2.
    pub peer_to_peer: Option<RtrSet>,
    /// Private data for the Request: at most 508 bytes with rev 2 (512
    /// minus the IRD/ORD block), 512 with rev 1. siw refuses a PD_Length
    /// over 256 and sends at most 255: for siw peers keep PD_Length within
    /// 255, that is 251 bytes next to the IRD/ORD block.
    pub private_data: Vec<u8>,
    /// How long to wait for the Reply (siw: 10 s).
    pub reply_timeout: Duration,
    /// Go on with rev 1 when a rev-2 Request is answered with rev 1 (no
    /// IRD/ORD then). siw as Initiator fails instead; so does this by default.
    pub accept_rev1_reply: bool,
}

impl Default for InitiatorConfig {
    fn default() -> Self {
        InitiatorConfig {
            rev: 2,
            crc: CrcPolicy::default(),
            markers_rx: false,
            markers_tx: true,
            ird: 16,
            ord: 16,
            peer_to_peer: None,
            private_data: Vec::new(),
            reply_timeout: Duration::from_secs(10),
            accept_rev1_reply: false,
        }
    }
}

/// The Responder's policy, applied to every Request before the application
/// sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponderConfig {
    /// Highest MPA revision spoken: 2 or 1.
    pub max_rev: u8,
    /// CRC policy.
    pub crc: CrcPolicy,
    /// Ask the Initiator to insert markers in the FPDUs we receive.
    pub markers_rx: bool,
    /// Insert markers in what we send if the Initiator asks.
    pub markers_tx: bool,
    /// RTR kinds we accept in peer-to-peer mode; empty refuses peer-to-peer
    /// Requests.
    pub rtr: RtrSet,
    /// How long to wait for the Request (siw: 5 s).
    pub request_timeout: Duration,
}

impl Default for ResponderConfig {
    fn default() -> Self {
        ResponderConfig {
            max_rev: 2,
            crc: CrcPolicy::default(),
            markers_rx: false,
            markers_tx: true,
            rtr: RtrSet::ALL,
            request_timeout: Duration::from_secs(5),
        }
    }
}

/// What the Responder's application answers to a Request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplyParams {
    /// Inbound RDMA READ depth we advertise (at most 0x3fff).
    pub ird: u16,
    /// Outbound RDMA READ depth we want; limited by the Initiator's IRD.
    pub ord: u16,
    /// Private data for the Reply (at most 508 bytes with rev 2, 512 with
    /// rev 1; keep it within 251 next to the IRD/ORD block for siw peers).
    pub private_data: Vec<u8>,
}

/// The outcome of start-up: how both directions of FPDUs work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    /// The MPA revision in use.
    pub rev: u8,
    /// CRC32c on FPDUs, both directions.
    pub crc: bool,
    /// We insert markers in what we send (the peer asked with M).
    pub markers_tx: bool,
    /// The peer inserts markers in what it sends (we asked with M).
    pub markers_rx: bool,
    /// Our IRD, as advertised.
    pub ird: u16,
    /// The ORD we may use: ours, limited by the peer's IRD.
    pub ord: u16,
    /// The peer-to-peer RTR in use: the Initiator sends it as its first
    /// FPDU, the Responder waits for it before sending.
    pub rtr: Option<Rtr>,
    /// The peer's private data, without the IRD/ORD block.
    pub peer_private_data: Vec<u8>,
    /// Our role.
    pub role: Role,
    /// The peer's IRD/ORD block, when rev 2 carried one.
    pub peer_ird_ord: Option<IrdOrd>,
}

impl Negotiated {
    /// Framing of what we send, with FPDUs of at most `max_fpdu` octets.
    pub fn tx_framing(&self, max_fpdu: usize) -> FramingConfig {
        FramingConfig {
            crc: self.crc,
            markers: self.markers_tx,
            max_fpdu,
        }
    }

    /// Framing of what we receive, accepting FPDUs of up to `max_fpdu`.
    pub fn rx_framing(&self, max_fpdu: usize) -> FramingConfig {
        FramingConfig {
            crc: self.crc,
            markers: self.markers_rx,
            max_fpdu,
        }
    }

    /// A framer for what we send, at the start of the FPDU stream.
    pub fn framer(&self) -> Framer {
        Framer::new(self.crc, self.markers_tx)
    }

    /// A deframer for what we receive, accepting ULPDUs up to `max_ulpdu`.
    pub fn deframer(&self, max_ulpdu: usize) -> Deframer {
        Deframer::new(self.crc, self.markers_rx, max_ulpdu)
    }
}

fn check_ird_ord(ird: u16, ord: u16) -> Result<(), ConfigError> {
    for v in [ird, ord] {
        if v > IRD_ORD_MAX {
            return Err(ConfigError::IrdOrdOutOfRange(v));
        }
    }
    Ok(())
}

fn check_private_data(len: usize, enhanced: bool) -> Result<(), ConfigError> {
    let max = if enhanced {
        MAX_PRIVATE_DATA - IRD_ORD_LEN
    } else {
        MAX_PRIVATE_DATA
    };
    if len > max {
        return Err(ConfigError::PrivateDataTooLong { len, max });
    }
    Ok(())
}

/// Validates an Initiator configuration.
pub(crate) fn check_initiator(cfg: &InitiatorConfig) -> Result<(), ConfigError> {
    if !(1..=2).contains(&cfg.rev) {
        return Err(ConfigError::BadRev(cfg.rev));
    }
    check_ird_ord(cfg.ird, cfg.ord)?;
    if let Some(kinds) = cfg.peer_to_peer {
        if cfg.rev < 2 {
            return Err(ConfigError::PeerToPeerNeedsRev2);
        }
        if kinds.is_empty() {
            return Err(ConfigError::NoRtrKind);
        }
    }
    check_private_data(cfg.private_data.len(), cfg.rev == 2)
}

/// Validates a Responder configuration.
pub(crate) fn check_responder(cfg: &ResponderConfig) -> Result<(), ConfigError> {
    if !(1..=2).contains(&cfg.max_rev) {
        return Err(ConfigError::BadRev(cfg.max_rev));
    }
    Ok(())
}

/// The Request an Initiator with `cfg` sends.
pub(crate) fn request(cfg: &InitiatorConfig) -> FrameRepr<'_> {
    let enhanced = (cfg.rev == 2).then(|| IrdOrd {
        ird: cfg.ird,
        ord: cfg.ord,
        peer_to_peer: cfg.peer_to_peer.is_some(),
        rtr: cfg.peer_to_peer.unwrap_or(RtrSet::EMPTY),
    });
    FrameRepr {
        kind: FrameKind::Request,
        markers: cfg.markers_rx,
        crc: cfg.crc.asks(),
        reject: false,
        rev: cfg.rev,
        enhanced,
        private_data: &cfg.private_data,
        reserved: 0,
    }
}

/// Private data as the application sees it: a block that is not an IRD/ORD
/// block in the revision in use goes back in front.
fn plain_private_data(repr: &FrameRepr<'_>, enhanced_in_use: bool) -> Vec<u8> {
    let mut pd = Vec::with_capacity(repr.pd_length());
    if let (Some(block), false) = (repr.enhanced, enhanced_in_use) {
        // Cannot fail: a parsed block re-encodes.
        pd.extend_from_slice(&block.to_bytes().unwrap_or_default());
    }
    pd.extend_from_slice(repr.private_data);
    pd
}

/// What a Responder settled on for a Request it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestDecision {
    pub rev: u8,
    pub crc: bool,
    /// The Initiator asked for markers (we send them).
    pub markers_tx: bool,
    /// The IRD/ORD block, when rev 2 with the enhanced bit is in use.
    pub peer_ird_ord: Option<IrdOrd>,
    pub rtr: Option<Rtr>,
    pub private_data: Vec<u8>,
    /// The Request's markers and CRC bits, for the event.
    pub request_markers: bool,
    pub request_crc: bool,
}

/// A Request the Responder refuses: the error, and whether a Reject reply
/// (R set) goes back. Malformed Requests get none, only a close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub error: StartupError,
    pub reject_reply: Option<RejectShape>,
}

/// The header fields of a Reject reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RejectShape {
    pub rev: u8,
    pub crc: bool,
    pub enhanced: bool,
}

impl RejectShape {
    pub fn reply<'a>(&self, private_data: &'a [u8]) -> FrameRepr<'a> {
        FrameRepr {
            kind: FrameKind::Reply,
            markers: false,
            crc: self.crc,
            reject: true,
            rev: self.rev,
            enhanced: self.enhanced.then(IrdOrd::default),
            private_data,
            reserved: 0,
        }
    }
}

/// Applies the Responder's policy to a Request.
pub(crate) fn evaluate_request(
    cfg: &ResponderConfig,
    req: &FrameRepr<'_>,
) -> Result<RequestDecision, Refusal> {
    let malformed = |error| Refusal {
        error,
        reject_reply: None,
    };
    if req.kind != FrameKind::Request {
        return Err(malformed(StartupError::UnexpectedFrame {
            expected: FrameKind::Request,
            received: req.kind,
        }));
    }
    if req.rev == 0 {
        return Err(malformed(StartupError::BadRev { rev: req.rev }));
    }
    if req.rev > MAX_REV {
        // RFC 5044 section 7.1: a receiver that cannot interoperate at the
        // Request's revision closes (siw drops it). A Reject reply at our
        // own revision says why first.
        return Err(Refusal {
            error: StartupError::BadRev { rev: req.rev },
            reject_reply: Some(RejectShape {
                rev: cfg.max_rev,
                crc: cfg.crc.asks(),
                enhanced: false,
            }),
        });
    }
    let rev = req.rev.min(cfg.max_rev);
    let enhanced = rev == 2 && req.enhanced.is_some();
    let peer_ird_ord = if enhanced { req.enhanced } else { None };
    let crc = req.crc || cfg.crc.asks();
    let refuse = |error| Refusal {
        error,
        reject_reply: Some(RejectShape {
            rev,
            crc: crc && cfg.crc != CrcPolicy::Never,
            enhanced,
        }),
    };
    if req.markers && !cfg.markers_tx {
        return Err(refuse(StartupError::MarkersRefused));
    }
    if req.crc && cfg.crc == CrcPolicy::Never {
        return Err(refuse(StartupError::CrcRefused));
    }
    let rtr = match peer_ird_ord {
        Some(block) if block.peer_to_peer => {
            let candidates = if block.rtr.is_empty() {
                cfg.rtr
            } else {
                block.rtr.intersection(cfg.rtr)
            };
            match candidates.preferred() {
                Some(rtr) => Some(rtr),
                None => return Err(refuse(StartupError::NoMatchingRtr)),
            }
        }
        _ => None,
    };
    Ok(RequestDecision {
        rev,
        crc,
        markers_tx: req.markers,
        peer_ird_ord,
        rtr,
        private_data: plain_private_data(req, enhanced),
        request_markers: req.markers,
        request_crc: req.crc,
    })
}

/// The Reply to an accepted Request, and the outcome for the Responder.
pub(crate) fn reply<'a>(
    cfg: &ResponderConfig,
    decision: &RequestDecision,
    params: &'a ReplyParams,
) -> Result<(FrameRepr<'a>, Negotiated), ConfigError> {
    check_ird_ord(params.ird, params.ord)?;
    let enhanced = decision.peer_ird_ord.is_some();
    check_private_data(params.private_data.len(), enhanced)?;
    let ord = match decision.peer_ird_ord {
        Some(peer) => params.ord.min(peer.ird),
        None => params.ord,
    };
    let block = decision.peer_ird_ord.map(|_| IrdOrd {
        ird: params.ird,
        ord,
        peer_to_peer: decision.rtr.is_some(),
        rtr: decision.rtr.map_or(RtrSet::EMPTY, RtrSet::only),
    });
    let repr = FrameRepr {
        kind: FrameKind::Reply,
        markers: cfg.markers_rx,
        crc: decision.crc,
        reject: false,
        rev: decision.rev,
        enhanced: block,
        private_data: &params.private_data,
        reserved: 0,
    };
    let negotiated = Negotiated {
        rev: decision.rev,
        crc: decision.crc,
        markers_tx: decision.markers_tx,
        markers_rx: cfg.markers_rx,
        ird: params.ird,
        ord,
        rtr: decision.rtr,
        peer_private_data: decision.private_data.clone(),
        role: Role::Responder,
        peer_ird_ord: decision.peer_ird_ord,
    };
    Ok((repr, negotiated))
}

/// How a Reply ends start-up for the Initiator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReplyOutcome {
    /// Accepted; FPDUs may flow.
    Established(Negotiated),
    /// R was set.
    Rejected { private_data: Vec<u8> },
    /// Refused; `partial` holds what was settled when the Reply itself was
    /// well formed (for framing a TERMINATE).
    Failed {
        error: StartupError,
        partial: Option<Negotiated>,
    },
}

/// Applies the Initiator's configuration to a Reply.
pub(crate) fn evaluate_reply(cfg: &InitiatorConfig, rep: &FrameRepr<'_>) -> ReplyOutcome {
    let fail = |error| ReplyOutcome::Failed {
        error,
        partial: None,
    };
    if rep.kind != FrameKind::Reply {
        return fail(StartupError::UnexpectedFrame {
            expected: FrameKind::Reply,
            received: rep.kind,
        });
    }
    if rep.reject {
        let enhanced = rep.rev == 2 && cfg.rev == 2;
        return ReplyOutcome::Rejected {
            private_data: plain_private_data(rep, enhanced),
        };
    }
    if rep.rev == 0 || rep.rev > cfg.rev || (rep.rev < cfg.rev && !cfg.accept_rev1_reply) {
        return fail(StartupError::BadRev { rev: rep.rev });
    }
    let enhanced = rep.rev == 2;
    if enhanced && rep.enhanced.is_none() {
        return fail(StartupError::MissingIrdOrd);
    }
    if rep.markers && !cfg.markers_tx {
        return fail(StartupError::MarkersRefused);
    }
    if !rep.crc && cfg.crc == CrcPolicy::Required {
        return fail(StartupError::CrcRequired);
    }
    if rep.crc && cfg.crc == CrcPolicy::Never {
        return fail(StartupError::CrcRefused);
    }
    let peer = if enhanced { rep.enhanced } else { None };
    let mut negotiated = Negotiated {
        rev: rep.rev,
        crc: rep.crc,
        markers_tx: rep.markers,
        markers_rx: cfg.markers_rx,
        ird: cfg.ird,
        ord: peer.map_or(cfg.ord, |p| cfg.ord.min(p.ird)),
        rtr: None,
        peer_private_data: plain_private_data(rep, enhanced),
        role: Role::Initiator,
        peer_ird_ord: peer,
    };
    if let Some(p) = peer {
        if p.ord > cfg.ird {
            return ReplyOutcome::Failed {
                error: StartupError::InsufficientIrd {
                    our_ird: cfg.ird,
                    peer_ord: p.ord,
                },
                partial: Some(negotiated),
            };
        }
    }
    if let Some(offered) = cfg.peer_to_peer {
        let granted = match peer {
            Some(p) if p.peer_to_peer => p.rtr.intersection(offered),
            _ => RtrSet::EMPTY,
        };
        match granted.preferred() {
            Some(rtr) => negotiated.rtr = Some(rtr),
            None => {
                return ReplyOutcome::Failed {
                    error: StartupError::NoMatchingRtr,
                    partial: Some(negotiated),
                }
            }
        }
    }
    ReplyOutcome::Established(negotiated)
}
