//! Errors of the DDP layer and the TERMINATE triple each one puts on the wire.
//!
//! RFC 5040 section 4.8 carries an error as Layer / Error Type / Error Code.
//! The numbers for every layer live here ([`TermCode`]'s constants) so that
//! MPA, DDP and RDMAP report with one table; RDMAP re-exports these types.
//!
//! Errors caused by the peer map to the code RFC 5041 section 7.2 names.
//! Errors caused by our own registered memory (a receive buffer that became
//! invalid, a [`Memory`](crate::memory::Memory) that refuses a checked write)
//! are local: they map to the DDP "local catastrophic" code, as siw does.

use crate::region::{OutOfRange, STag};

/// The protocol layer that detected an error (RFC 5040 section 4.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Layer {
    /// The RDMA layer (RFC 5040): opcodes, Read Requests, access rights.
    Rdmap = 0,
    /// Direct data placement (RFC 5041): STags, bounds, queues, MSNs.
    Ddp = 1,
    /// The lower layer protocol: MPA over TCP.
    Llp = 2,
}

impl Layer {
    /// The 4-bit value on the wire.
    pub const fn bits(self) -> u8 {
        self as u8
    }

    /// The layer a TERMINATE names, if it is one we know.
    pub const fn from_bits(bits: u8) -> Option<Layer> {
        match bits {
            0 => Some(Layer::Rdmap),
            1 => Some(Layer::Ddp),
            2 => Some(Layer::Llp),
            _ => None,
        }
    }
}

/// The Layer / Error Type / Error Code triple a TERMINATE carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TermCode {
    /// Which layer found the error; the peer reports it back unchanged.
    pub layer: Layer,
    /// Error type: 4 bits on the wire.
    pub etype: u8,
    /// Error code: 8 bits on the wire.
    pub code: u8,
}

impl TermCode {
    /// A triple as it goes on the wire (`etype` and `code` are not checked against the RFC
    /// tables).
    pub const fn new(layer: Layer, etype: u8, code: u8) -> Self {
        TermCode { layer, etype, code }
    }

    // RDMAP, RFC 5040 section 4.8. Etype 0: local catastrophic.
    /// An error inside this RDMAP stack, not the peer's fault.
    pub const RDMAP_CATASTROPHIC: TermCode = TermCode::new(Layer::Rdmap, 0, 0);
    // Etype 1: remote protection error.
    /// The STag of a Read Request's source or a Write's sink is not valid.
    pub const RDMAP_INVALID_STAG: TermCode = TermCode::new(Layer::Rdmap, 1, 0x00);
    /// The access falls outside the region's base and bounds.
    pub const RDMAP_BASE_BOUNDS: TermCode = TermCode::new(Layer::Rdmap, 1, 0x01);
    /// The region does not grant the access asked for.
    pub const RDMAP_ACCESS_RIGHTS: TermCode = TermCode::new(Layer::Rdmap, 1, 0x02);
    /// The STag is not associated with this stream's protection domain.
    pub const RDMAP_STAG_NOT_ASSOCIATED: TermCode = TermCode::new(Layer::Rdmap, 1, 0x03);
    /// The tagged offset plus length wraps past 2^64.
    pub const RDMAP_TO_WRAP: TermCode = TermCode::new(Layer::Rdmap, 1, 0x04);
    /// The STag named by a Send with Invalidate may not be invalidated.
    pub const RDMAP_PROTECTION_CANNOT_INVALIDATE: TermCode = TermCode::new(Layer::Rdmap, 1, 0x09);
    /// A remote protection error the RFC has no code for.
    pub const RDMAP_PROTECTION_UNSPECIFIED: TermCode = TermCode::new(Layer::Rdmap, 1, 0xff);
    // Etype 2: remote operation error.
    /// The RDMAP version is not the one this side speaks.
    pub const RDMAP_INVALID_VERSION: TermCode = TermCode::new(Layer::Rdmap, 2, 0x05);
    /// The opcode is unknown or not allowed here.
    pub const RDMAP_UNEXPECTED_OPCODE: TermCode = TermCode::new(Layer::Rdmap, 2, 0x06);
    /// The stream cannot go on; other streams are unaffected.
    pub const RDMAP_CATASTROPHIC_STREAM: TermCode = TermCode::new(Layer::Rdmap, 2, 0x07);
    /// The error takes down more than this stream.
    pub const RDMAP_CATASTROPHIC_GLOBAL: TermCode = TermCode::new(Layer::Rdmap, 2, 0x08);
    /// A Send with Invalidate named an STag that cannot be invalidated (an operation error, not
    /// a protection one).
    pub const RDMAP_OPERATION_CANNOT_INVALIDATE: TermCode = TermCode::new(Layer::Rdmap, 2, 0x09);
    /// A remote operation error the RFC has no code for.
    pub const RDMAP_OPERATION_UNSPECIFIED: TermCode = TermCode::new(Layer::Rdmap, 2, 0xff);

    // DDP, RFC 5041 section 7.2. Etype 0: local catastrophic.
    /// An error inside this DDP stack, not the peer's fault.
    pub const DDP_CATASTROPHIC: TermCode = TermCode::new(Layer::Ddp, 0, 0);
    // Etype 1: tagged buffer error.
    /// A tagged segment's STag is not valid.
    pub const DDP_T_INVALID_STAG: TermCode = TermCode::new(Layer::Ddp, 1, 0x00);
    /// A tagged segment falls outside the region's base and bounds.
    pub const DDP_T_BASE_BOUNDS: TermCode = TermCode::new(Layer::Ddp, 1, 0x01);
    /// A tagged segment's STag belongs to another protection domain.
    pub const DDP_T_STAG_NOT_ASSOCIATED: TermCode = TermCode::new(Layer::Ddp, 1, 0x02);
    /// A tagged segment's offset plus length wraps past 2^64.
    pub const DDP_T_TO_WRAP: TermCode = TermCode::new(Layer::Ddp, 1, 0x03);
    /// A tagged segment's DDP version is not 1.
    pub const DDP_T_INVALID_VERSION: TermCode = TermCode::new(Layer::Ddp, 1, 0x04);
    // Etype 2: untagged buffer error.
    /// An untagged segment names a queue number that is not enabled.
    pub const DDP_UT_INVALID_QN: TermCode = TermCode::new(Layer::Ddp, 2, 0x01);
    /// An untagged segment starts a message for which no buffer is posted.
    pub const DDP_UT_NO_BUFFER: TermCode = TermCode::new(Layer::Ddp, 2, 0x02);
    /// An untagged segment's MSN is outside the window the queue expects.
    pub const DDP_UT_MSN_RANGE: TermCode = TermCode::new(Layer::Ddp, 2, 0x03);
    /// An untagged segment's message offset is not where the message stands.
    pub const DDP_UT_INVALID_MO: TermCode = TermCode::new(Layer::Ddp, 2, 0x04);
    /// An untagged message is longer than the buffer posted for it.
    pub const DDP_UT_TOO_LONG: TermCode = TermCode::new(Layer::Ddp, 2, 0x05);
    /// An untagged segment's DDP version is not 1.
    pub const DDP_UT_INVALID_VERSION: TermCode = TermCode::new(Layer::Ddp, 2, 0x06);

    // LLP (MPA), RFC 5044 section 8 and RFC 6581 section 7. Etype 0: MPA.
    /// The TCP stream was lost (reset or closed under the connection).
    pub const LLP_TCP_STREAM_LOST: TermCode = TermCode::new(Layer::Llp, 0, 0x01);
    /// An FPDU's CRC did not match: the bytes were damaged on the way.
    pub const LLP_CRC: TermCode = TermCode::new(Layer::Llp, 0, 0x02);
    /// A marker did not point to the FPDU it should.
    pub const LLP_MARKER_MISMATCH: TermCode = TermCode::new(Layer::Llp, 0, 0x03);
    /// The MPA Request or Reply was malformed.
    pub const LLP_INVALID_REQ_REP: TermCode = TermCode::new(Layer::Llp, 0, 0x04);
    /// An error inside this MPA stack, not the peer's fault.
    pub const LLP_LOCAL_CATASTROPHIC: TermCode = TermCode::new(Layer::Llp, 0, 0x05);
    /// The IRD/ORD the peer asked for cannot be granted (RFC 6581).
    pub const LLP_INSUFFICIENT_IRD: TermCode = TermCode::new(Layer::Llp, 0, 0x06);
    /// No RTR message both sides support (RFC 6581 peer-to-peer).
    pub const LLP_NO_MATCHING_RTR: TermCode = TermCode::new(Layer::Llp, 0, 0x07);
}

/// A tagged placement was refused (RFC 5041 section 7.2, etype 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TaggedError {
    /// No valid region answers to the STag (never registered, invalidated,
    /// or registered with another key).
    #[error("invalid STag {0:#010x}")]
    InvalidStag(u32),
    /// The region belongs to another protection domain than the stream's.
    #[error("STag {0:#010x} not associated with this stream")]
    StagNotAssociated(u32),
    /// The region does not grant the access the operation needs.
    #[error("access rights violation on STag {0:#010x}")]
    AccessRights(u32),
    /// `to + len` does not fit in 64 bits.
    #[error("tagged offset wraps: STag {stag:#010x} TO {to:#x} length {len}")]
    ToWrap {
        /// The STag the segment named.
        stag: u32,
        /// The tagged offset it started at.
        to: u64,
        /// Its payload length.
        len: u64,
    },
    /// `[to, to + len)` is not inside the region.
    #[error("base or bounds violation: STag {stag:#010x} TO {to:#x} length {len}")]
    BaseBounds {
        /// The STag the segment named.
        stag: u32,
        /// The tagged offset it started at.
        to: u64,
        /// Its payload length.
        len: u64,
    },
    /// The memory refused a write that passed the bounds check: a broken
    /// [`Memory`](crate::memory::Memory), a local fault.
    #[error("registered memory refused a checked write: {0}")]
    Memory(OutOfRange),
}

impl TaggedError {
    /// The STag the error is about.
    pub fn stag(&self) -> STag {
        STag(match *self {
            TaggedError::InvalidStag(s)
            | TaggedError::StagNotAssociated(s)
            | TaggedError::AccessRights(s) => s,
            TaggedError::ToWrap { stag, .. } | TaggedError::BaseBounds { stag, .. } => stag,
            TaggedError::Memory(e) => e.stag,
        })
    }

    /// The TERMINATE triple for a tagged segment from the peer (RDMA Write,
    /// Read Response).
    ///
    /// Access rights have no DDP code; RFC 5040 section 4.8 has one at the
    /// RDMAP layer (remote protection, access rights violation), which is what
    /// we send. siw sends DDP "invalid STag" instead (siw_tagged_error), and
    /// uses the RDMAP triples only for the source of a Read Request, see
    /// [`TaggedError::rdmap_terminate`].
    pub fn terminate(&self) -> TermCode {
        match self {
            TaggedError::InvalidStag(_) => TermCode::DDP_T_INVALID_STAG,
            TaggedError::BaseBounds { .. } => TermCode::DDP_T_BASE_BOUNDS,
            TaggedError::StagNotAssociated(_) => TermCode::DDP_T_STAG_NOT_ASSOCIATED,
            TaggedError::ToWrap { .. } => TermCode::DDP_T_TO_WRAP,
            TaggedError::AccessRights(_) => TermCode::RDMAP_ACCESS_RIGHTS,
            TaggedError::Memory(_) => TermCode::DDP_CATASTROPHIC,
        }
    }

    /// The RDMAP remote protection triple for the same check done by RDMAP
    /// itself: the Data Source of an RDMA Read Request (RFC 5040 section
    /// 5.3; siw_rdmap_error).
    pub fn rdmap_terminate(&self) -> TermCode {
        match self {
            TaggedError::InvalidStag(_) => TermCode::RDMAP_INVALID_STAG,
            TaggedError::BaseBounds { .. } => TermCode::RDMAP_BASE_BOUNDS,
            TaggedError::StagNotAssociated(_) => TermCode::RDMAP_STAG_NOT_ASSOCIATED,
            TaggedError::ToWrap { .. } => TermCode::RDMAP_TO_WRAP,
            TaggedError::AccessRights(_) => TermCode::RDMAP_ACCESS_RIGHTS,
            TaggedError::Memory(_) => TermCode::RDMAP_CATASTROPHIC,
        }
    }
}

/// An untagged segment was refused (RFC 5041 section 7.2, etype 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UntaggedError {
    /// The queue number is not one the ULP enabled.
    #[error("invalid queue number {qn}")]
    InvalidQn {
        /// The queue number the segment named.
        qn: u32,
    },
    /// The segment starts the expected message but no buffer is posted.
    #[error("invalid MSN - no buffer available (queue {qn}, MSN {msn})")]
    NoBuffer {
        /// The queue the message was for.
        qn: u32,
        /// The message it would have started.
        msn: u32,
    },
    /// The MSN is not the next message of the queue.
    #[error("invalid MSN - range is not valid (queue {qn}, MSN {msn}, expected {expected})")]
    MsnRange {
        /// The queue the segment was for.
        qn: u32,
        /// The MSN it carried.
        msn: u32,
        /// The MSN the queue expected next.
        expected: u32,
    },
    /// A segment of another message arrived while message `active` of the
    /// same queue was still incomplete.
    #[error("queue {qn}: MSN {msn} interleaved with incomplete message {active}")]
    Interleaved {
        /// The queue of both messages.
        qn: u32,
        /// The MSN of the segment that interleaved.
        msn: u32,
        /// The MSN of the message still being placed.
        active: u32,
    },
    /// The MO is not the number of bytes of the message already placed.
    #[error("invalid MO {mo} (queue {qn}, MSN {msn}, expected {expected})")]
    InvalidMo {
        /// The queue the segment was for.
        qn: u32,
        /// The message it belongs to.
        msn: u32,
        /// The message offset it carried.
        mo: u32,
        /// The offset the message has reached.
        expected: u32,
    },
    /// The message does not fit the buffer it landed in.
    #[error(
        "DDP message too long for available buffer (queue {qn}, MSN {msn}: {needed} > {capacity})"
    )]
    TooLong {
        /// The queue the message was for.
        qn: u32,
        /// The message that does not fit.
        msn: u32,
        /// Bytes the message needs (placed plus this segment).
        needed: u64,
        /// Bytes the posted buffer holds.
        capacity: u64,
    },
    /// The posted buffer (ours) failed its memory check: a local error.
    #[error("posted buffer {id} of queue {qn} is not writable: {source}")]
    LocalBuffer {
        /// The queue the buffer was posted to.
        qn: u32,
        /// The handle it was posted with.
        id: u64,
        /// What the memory check found.
        source: TaggedError,
    },
}

impl UntaggedError {
    /// The TERMINATE triple (RFC 5041 section 7.2).
    ///
    /// siw reports a SEND larger than the receive buffer as "no buffer
    /// available" (siw_send_check_ntoh); RFC 5041 has a code of its own for
    /// it, "message too long", which is what we send. Interleaving shows up
    /// as a wrong MSN, so it carries the MSN range code.
    pub fn terminate(&self) -> TermCode {
        match self {
            UntaggedError::InvalidQn { .. } => TermCode::DDP_UT_INVALID_QN,
            UntaggedError::NoBuffer { .. } => TermCode::DDP_UT_NO_BUFFER,
            UntaggedError::MsnRange { .. } | UntaggedError::Interleaved { .. } => {
                TermCode::DDP_UT_MSN_RANGE
            }
            UntaggedError::InvalidMo { .. } => TermCode::DDP_UT_INVALID_MO,
            UntaggedError::TooLong { .. } => TermCode::DDP_UT_TOO_LONG,
            UntaggedError::LocalBuffer { .. } => TermCode::DDP_CATASTROPHIC,
        }
    }
}

/// Any error of the DDP layer: a malformed header, or a refused segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DdpError {
    /// The DDP version field (DV) is not 1. The header layout of another
    /// version is unknown, so this is checked before the header length.
    #[error("invalid DDP version {version} in a {} segment", if *.tagged { "tagged" } else { "untagged" })]
    InvalidVersion {
        /// Whether the segment was tagged.
        tagged: bool,
        /// The DV value it carried.
        version: u8,
    },
    /// The ULPDU is shorter than the DDP header it announces.
    #[error("DDP segment truncated: {len} bytes, header needs {needed}")]
    Truncated {
        /// The segment's length.
        len: usize,
        /// The length its header needs.
        needed: usize,
    },
    /// A header view of one model was handed a segment of the other.
    #[error("a {} header view was given a {} segment", if *.expected_tagged { "tagged" } else { "untagged" }, if *.expected_tagged { "untagged" } else { "tagged" })]
    WrongModel {
        /// Whether the view wanted a tagged segment.
        expected_tagged: bool,
    },
    /// A tagged placement error.
    #[error(transparent)]
    Tagged(#[from] TaggedError),
    /// An untagged placement error.
    #[error(transparent)]
    Untagged(#[from] UntaggedError),
}

impl DdpError {
    /// The TERMINATE triple.
    ///
    /// RFC 5041 has no code for a ULPDU too short to hold its DDP header;
    /// it is reported as a DDP catastrophic error, the code that says "this
    /// stream cannot go on". [`DdpError::WrongModel`] is a local misuse and
    /// never comes from [`parse_segment`](crate::wire::parse_segment).
    pub fn terminate(&self) -> TermCode {
        match self {
            DdpError::InvalidVersion { tagged: true, .. } => TermCode::DDP_T_INVALID_VERSION,
            DdpError::InvalidVersion { tagged: false, .. } => TermCode::DDP_UT_INVALID_VERSION,
            DdpError::Truncated { .. } | DdpError::WrongModel { .. } => TermCode::DDP_CATASTROPHIC,
            DdpError::Tagged(e) => e.terminate(),
            DdpError::Untagged(e) => e.terminate(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_bits_round_trip() {
        for l in [Layer::Rdmap, Layer::Ddp, Layer::Llp] {
            assert_eq!(Layer::from_bits(l.bits()), Some(l));
        }
        assert_eq!(Layer::from_bits(3), None);
        assert_eq!(Layer::from_bits(0xf), None);
    }

    #[test]
    fn tagged_codes_match_rfc5041_table() {
        let t = |e: TaggedError| {
            let c = e.terminate();
            (c.layer, c.etype, c.code)
        };
        assert_eq!(t(TaggedError::InvalidStag(1)), (Layer::Ddp, 1, 0));
        let bb = TaggedError::BaseBounds {
            stag: 1,
            to: 0,
            len: 1,
        };
        assert_eq!(t(bb), (Layer::Ddp, 1, 1));
        assert_eq!(t(TaggedError::StagNotAssociated(1)), (Layer::Ddp, 1, 2));
        let wrap = TaggedError::ToWrap {
            stag: 1,
            to: u64::MAX,
            len: 1,
        };
        assert_eq!(t(wrap), (Layer::Ddp, 1, 3));
        assert_eq!(t(TaggedError::AccessRights(1)), (Layer::Rdmap, 1, 2));
    }

    #[test]
    fn rdmap_codes_match_rfc5040_table() {
        let r = |e: TaggedError| e.rdmap_terminate();
        assert_eq!(
            r(TaggedError::InvalidStag(1)),
            TermCode::new(Layer::Rdmap, 1, 0)
        );
        assert_eq!(
            r(TaggedError::AccessRights(1)),
            TermCode::new(Layer::Rdmap, 1, 2)
        );
        assert_eq!(
            r(TaggedError::StagNotAssociated(1)),
            TermCode::new(Layer::Rdmap, 1, 3)
        );
        let wrap = TaggedError::ToWrap {
            stag: 1,
            to: 1,
            len: 1,
        };
        assert_eq!(r(wrap), TermCode::new(Layer::Rdmap, 1, 4));
    }

    #[test]
    fn untagged_codes_match_rfc5041_table() {
        let u = |e: UntaggedError| {
            let c = e.terminate();
            (c.layer, c.etype, c.code)
        };
        assert_eq!(u(UntaggedError::InvalidQn { qn: 9 }), (Layer::Ddp, 2, 1));
        assert_eq!(
            u(UntaggedError::NoBuffer { qn: 0, msn: 1 }),
            (Layer::Ddp, 2, 2)
        );
        let range = UntaggedError::MsnRange {
            qn: 0,
            msn: 5,
            expected: 1,
        };
        assert_eq!(u(range), (Layer::Ddp, 2, 3));
        let mo = UntaggedError::InvalidMo {
            qn: 0,
            msn: 1,
            mo: 4,
            expected: 0,
        };
        assert_eq!(u(mo), (Layer::Ddp, 2, 4));
        let long = UntaggedError::TooLong {
            qn: 0,
            msn: 1,
            needed: 65,
            capacity: 64,
        };
        assert_eq!(u(long), (Layer::Ddp, 2, 5));
    }

    #[test]
    fn version_errors_pick_the_model_code() {
        let t = DdpError::InvalidVersion {
            tagged: true,
            version: 2,
        };
        let u = DdpError::InvalidVersion {
            tagged: false,
            version: 0,
        };
        assert_eq!(t.terminate(), TermCode::new(Layer::Ddp, 1, 4));
        assert_eq!(u.terminate(), TermCode::new(Layer::Ddp, 2, 6));
    }

    #[test]
    fn wrapped_errors_keep_their_code() {
        let e: DdpError = UntaggedError::InvalidQn { qn: 3 }.into();
        assert_eq!(e.terminate(), TermCode::DDP_UT_INVALID_QN);
        let e: DdpError = TaggedError::InvalidStag(7).into();
        assert_eq!(e.terminate(), TermCode::DDP_T_INVALID_STAG);
    }
}
