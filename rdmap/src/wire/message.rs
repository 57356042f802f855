//! One DDP segment read as RDMAP: the DDP header (whose ULP fields carry the
//! RDMAP control byte and, for Send with Invalidate, the STag), then the
//! Read Request, Terminate, Immediate Data or Atomic header, or data.

use ddp::memory::STag;
use ddp::wire::{
    parse_segment, SegmentRepr, TaggedHeader, TaggedRepr, UntaggedHeader, UntaggedRepr,
    DDP_VERSION, TAGGED_HEADER_LEN, UNTAGGED_HEADER_LEN,
};
use ddp::DdpError;

use super::atomic::{
    AtomicRequest, AtomicRequestRepr, AtomicResponse, AtomicResponseRepr, REQUEST_LEN, RESPONSE_LEN,
};
use super::immediate::{ImmediateData, ImmediateDataRepr, HEADER_LEN as IMMEDIATE_LEN};
use super::read_request::{ReadRequest, ReadRequestRepr, HEADER_LEN as READ_REQUEST_LEN};
use super::terminate::TerminateRepr;
use super::{Control, EmitError, WireError};
use crate::opcode::Opcode;

/// What follows the DDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body<'a> {
    /// RDMA Write, Read Response, the Sends: the payload is data.
    Data(&'a [u8]),
    /// An RDMA Read Request's header.
    ReadRequest(ReadRequestRepr),
    /// A Terminate's header and what it attaches.
    Terminate(TerminateRepr<'a>),
    /// RFC 7306 Immediate Data (with Solicited Event).
    Immediate(ImmediateDataRepr),
    /// RFC 7306 Atomic Operation Request.
    AtomicRequest(AtomicRequestRepr),
    /// RFC 7306 Atomic Operation Response.
    AtomicResponse(AtomicResponseRepr),
}

/// One RDMAP message segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageRepr<'a> {
    /// The DDP header of the segment.
    pub ddp: SegmentRepr,
    /// What follows it.
    pub body: Body<'a>,
}

/// A segment that carries data, read by [`MessageRepr::parse_data`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataSegment<'a> {
    /// An RDMA Write or Read Response segment and its payload.
    Tagged(TaggedRepr, &'a [u8]),
    /// A segment of one of the four Sends and its payload.
    Send(UntaggedRepr, &'a [u8]),
}

/// Why a ULPDU is not an RDMAP message segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The DDP layer refused the segment.
    #[error(transparent)]
    Ddp(#[from] DdpError),
    /// The RDMAP layer refused the message.
    #[error(transparent)]
    Rdmap(#[from] WireError),
}

impl<'a> MessageRepr<'a> {
    /// The RDMAP control byte.
    pub fn control(&self) -> Control {
        Control(self.ddp.rsvd_ulp())
    }

    /// The RDMAP opcode, from the DDP header's reserved bits.
    pub fn opcode(&self) -> Opcode {
        self.control().opcode()
    }

    /// Parses a ULPDU of a connection speaking RFC 5040 only. Checks, in
    /// order: the DDP header, the RDMAP version, that the opcode is one of
    /// RFC 5040's and matches the buffer model and queue number, and the
    /// shape of Read Request and Terminate headers.
    pub fn parse(ulpdu: &'a [u8]) -> Result<Self, ParseError> {
        Self::parse_as(ulpdu, false)
    }

    /// Parses a ULPDU of a connection that agreed to RFC 7306: its opcodes
    /// are accepted too, each a single segment on its queue with its
    /// header's exact length.
    pub fn parse_rfc7306(ulpdu: &'a [u8]) -> Result<Self, ParseError> {
        Self::parse_as(ulpdu, true)
    }

    /// The segments that carry data (RDMA Write, Read Response, the four
    /// Sends: nearly every segment of a transfer), read in one pass with
    /// one length check. `Some` exactly when [`parse`](Self::parse) (and
    /// [`parse_rfc7306`](Self::parse_rfc7306), which adds no data opcodes)
    /// returns the same header with [`Body::Data`]; `None` for every other
    /// ULPDU, well-formed or not, which the full parse then reads and, if
    /// it is wrong, refuses with its precise error.
    #[inline]
    pub fn parse_data(ulpdu: &'a [u8]) -> Option<DataSegment<'a>> {
        let (&[ddp_control, rsvd_ulp], _) = ulpdu.split_first_chunk::<2>()?;
        let ddp = ddp::wire::Control::from_byte(ddp_control);
        let opcode = Control(rsvd_ulp).opcode();
        if ddp.version != DDP_VERSION || !Control(rsvd_ulp).version_ok() {
            return None;
        }
        if ddp.tagged {
            if !opcode.is_tagged() {
                return None;
            }
            // A fixed-size header: the view's accessors need no checks.
            let (h, payload) = ulpdu.split_first_chunk::<TAGGED_HEADER_LEN>()?;
            let h = TaggedHeader::new_unchecked(&h[..]);
            let t = TaggedRepr {
                last: ddp.last,
                rsvd_ulp,
                stag: h.stag(),
                to: h.to(),
                ddp_rsvd: ddp.rsvd,
            };
            return Some(DataSegment::Tagged(t, payload));
        }
        if !opcode.is_send() {
            return None;
        }
        let (h, payload) = ulpdu.split_first_chunk::<UNTAGGED_HEADER_LEN>()?;
        let h = UntaggedHeader::new_unchecked(&h[..]);
        if Some(h.qn()) != opcode.queue() {
            return None;
        }
        let u = untagged_repr(&h, ddp.last, rsvd_ulp, ddp.rsvd);
        Some(DataSegment::Send(u, payload))
    }

    /// An RDMA Read Request, read in one pass as
    /// [`parse_data`](Self::parse_data) reads data segments: `Some`
    /// exactly when [`parse`](Self::parse) (and
    /// [`parse_rfc7306`](Self::parse_rfc7306)) returns the same header
    /// with [`Body::ReadRequest`]; `None` for every other ULPDU, left to
    /// the full parse and its precise error.
    #[inline]
    pub fn parse_read_request(ulpdu: &'a [u8]) -> Option<(UntaggedRepr, ReadRequestRepr)> {
        let (&[ddp_control, rsvd_ulp], _) = ulpdu.split_first_chunk::<2>()?;
        let ddp = ddp::wire::Control::from_byte(ddp_control);
        let control = Control(rsvd_ulp);
        // Untagged, single segment, on queue 1, exactly its header long.
        if ddp.version != DDP_VERSION
            || !control.version_ok()
            || control.opcode() != Opcode::ReadRequest
            || ddp.tagged
            || !ddp.last
        {
            return None;
        }
        let (h, body) = ulpdu.split_first_chunk::<UNTAGGED_HEADER_LEN>()?;
        let body: &[u8; READ_REQUEST_LEN] = body.try_into().ok()?;
        let h = UntaggedHeader::new_unchecked(&h[..]);
        if Some(h.qn()) != Opcode::ReadRequest.queue() {
            return None;
        }
        let u = untagged_repr(&h, true, rsvd_ulp, ddp.rsvd);
        // A fixed-size body: the view's accessors need no checks.
        let r = ReadRequest::new_unchecked(&body[..]);
        let r = ReadRequestRepr {
            sink_stag: STag(r.sink_stag()),
            sink_to: r.sink_to(),
            size: r.read_size(),
            source_stag: STag(r.source_stag()),
            source_to: r.source_to(),
        };
        Some((u, r))
    }

    fn parse_as(ulpdu: &'a [u8], rfc7306: bool) -> Result<Self, ParseError> {
        let (ddp, payload) = parse_segment(ulpdu)?;
        let control = Control(ddp.rsvd_ulp());
        if !control.version_ok() {
            return Err(WireError::Version(control.version()).into());
        }
        let opcode = control.opcode();
        let known = opcode.is_supported() || (rfc7306 && opcode.is_rfc7306());
        if !known || opcode.is_tagged() != ddp.is_tagged() {
            return Err(WireError::UnexpectedOpcode(opcode).into());
        }
        if let SegmentRepr::Untagged(u) = ddp {
            if Some(u.qn) != opcode.queue() {
                return Err(WireError::WrongQueue { opcode, qn: u.qn }.into());
            }
        }
        if opcode.is_single_segment() && !ddp.last() {
            return Err(WireError::NotSingleSegment(opcode).into());
        }
        let exactly = |expected: usize| {
            if payload.len() == expected {
                Ok(payload)
            } else {
                Err(WireError::BadLength {
                    opcode,
                    len: payload.len(),
                    expected,
                })
            }
        };
        let body = match opcode {
            Opcode::ReadRequest => Body::ReadRequest(ReadRequestRepr::parse(
                &ReadRequest::new_checked(exactly(READ_REQUEST_LEN)?)?,
            )?),
            Opcode::Terminate => Body::Terminate(TerminateRepr::parse(payload)?),
            Opcode::ImmediateData | Opcode::ImmediateDataSolicited => Body::Immediate(
                ImmediateDataRepr::parse(&ImmediateData::new_checked(exactly(IMMEDIATE_LEN)?)?)?,
            ),
            Opcode::AtomicRequest => Body::AtomicRequest(AtomicRequestRepr::parse(
                &AtomicRequest::new_checked(exactly(REQUEST_LEN)?)?,
            )?),
            Opcode::AtomicResponse => Body::AtomicResponse(AtomicResponseRepr::parse(
                &AtomicResponse::new_checked(exactly(RESPONSE_LEN)?)?,
            )?),
            _ => Body::Data(payload),
        };
        Ok(MessageRepr { ddp, body })
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub fn buffer_len(&self) -> usize {
        self.ddp.buffer_len()
            + match &self.body {
                Body::Data(d) => d.len(),
                Body::ReadRequest(r) => r.buffer_len(),
                Body::Terminate(t) => t.buffer_len(),
                Body::Immediate(i) => i.buffer_len(),
                Body::AtomicRequest(r) => r.buffer_len(),
                Body::AtomicResponse(r) => r.buffer_len(),
            }
    }

    /// Writes the whole ULPDU into the front of `out`, returning its length.
    /// A buffer shorter than [`buffer_len`](Self::buffer_len) is refused
    /// with nothing written.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, EmitError> {
        let len = self.buffer_len();
        EmitError::check(out, len)?;
        let out = &mut out[..len];
        let h = self.ddp.emit(out)?;
        let rest = &mut out[h..];
        match &self.body {
            Body::Data(d) => rest.copy_from_slice(d),
            Body::ReadRequest(r) => r.emit(&mut ReadRequest::new_unchecked(rest))?,
            Body::Terminate(t) => {
                t.emit(rest)?;
            }
            Body::Immediate(i) => {
                i.emit(rest)?;
            }
            Body::AtomicRequest(r) => {
                r.emit(rest)?;
            }
            Body::AtomicResponse(r) => {
                r.emit(rest)?;
            }
        }
        Ok(len)
    }
}

/// The untagged header of the one-pass parses, from its checked fields.
/// Inlined: the fields go straight into the record, which its caller
/// keeps in registers.
#[inline(always)]
fn untagged_repr(
    h: &UntaggedHeader<&[u8]>,
    last: bool,
    rsvd_ulp: u8,
    ddp_rsvd: u8,
) -> UntaggedRepr {
    UntaggedRepr {
        last,
        rsvd_ulp,
        rsvd_ulp2: h.rsvd_ulp2(),
        qn: h.qn(),
        msn: h.msn(),
        mo: h.mo(),
        ddp_rsvd,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::terminate::TermLayout;
    use ddp::memory::STag;
    use ddp::wire::{TaggedRepr, UntaggedRepr};
    use proptest::prelude::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// ULPDUs (MPA length, pad and CRC stripped) of rping-mismatch-crc.pcap.
    fn capture_send() -> Vec<u8> {
        hex("4143 00000000 00000000 00000001 00000000 000055fcbe170700cb24170000000064")
    }
    fn capture_read_request() -> Vec<u8> {
        hex("4141 00000000 00000001 00000001 00000000
             165df500 000055b3abb62f30 00000064 cb241700 000055fcbe170700")
    }
    fn capture_terminate() -> Vec<u8> {
        hex("4147 00000000 00000002 00000001 00000000 11010300 0064
             c142 165df500 000055b3abb62f30")
    }
    /// rping-cxgb.pcap frame 8: the zero-length RDMA Write RTR.
    fn capture_write_rtr() -> Vec<u8> {
        hex("c140 00000001 0000000000000000")
    }

    #[test]
    fn capture_send_parses() {
        let b = capture_send();
        let m = MessageRepr::parse(&b).unwrap();
        assert_eq!(m.opcode(), Opcode::Send);
        assert_eq!(
            m.ddp,
            SegmentRepr::Untagged(UntaggedRepr::new(true, 0x43, 0, 0, 1, 0))
        );
        assert_eq!(m.body, Body::Data(&b[18..]));
        assert_eq!(m.buffer_len(), b.len());
    }

    #[test]
    fn capture_read_request_parses() {
        let b = capture_read_request();
        let m = MessageRepr::parse(&b).unwrap();
        assert_eq!(m.opcode(), Opcode::ReadRequest);
        let Body::ReadRequest(r) = m.body else {
            panic!("not a read request")
        };
        assert_eq!(r.size, 100);
        assert_eq!(r.source_stag, STag(0xcb24_1700));
    }

    #[test]
    fn capture_terminate_parses_as_siw() {
        let b = capture_terminate();
        let m = MessageRepr::parse(&b).unwrap();
        let Body::Terminate(t) = m.body else {
            panic!("not a terminate")
        };
        assert_eq!(t.layout, TermLayout::Siw);
        assert_eq!(
            (t.control.layer, t.control.etype, t.control.code),
            (1, 1, 1)
        );
        let (ddp, _) = parse_segment(t.attached.unwrap().ddp_header.unwrap()).unwrap();
        assert_eq!(
            ddp,
            SegmentRepr::Tagged(TaggedRepr::new(
                true,
                0x42,
                STag(0x165d_f500),
                0x55b3_abb6_2f30
            ))
        );
    }

    #[test]
    fn capture_rtr_parses() {
        let b = capture_write_rtr();
        let m = MessageRepr::parse(&b).unwrap();
        assert_eq!(m.opcode(), Opcode::RdmaWrite);
        assert_eq!(m.body, Body::Data(&[]));
    }

    #[test]
    fn captures_re_emit_into_poisoned_buffers() {
        for b in [
            capture_send(),
            capture_read_request(),
            capture_terminate(),
            capture_write_rtr(),
        ] {
            let m = MessageRepr::parse(&b).unwrap();
            let mut out = vec![0xa5u8; b.len() + 3];
            assert_eq!(m.emit(&mut out), Ok(b.len()));
            assert_eq!(&out[..b.len()], &b[..]);
            assert_eq!(&out[b.len()..], &[0xa5; 3]);
        }
    }

    #[test]
    fn emit_refuses_a_buffer_one_byte_short() {
        for b in [
            capture_send(),
            capture_read_request(),
            capture_terminate(),
            capture_write_rtr(),
        ] {
            let m = MessageRepr::parse(&b).unwrap();
            let n = m.buffer_len();
            let mut short = vec![0xa5u8; n - 1];
            assert_eq!(
                m.emit(&mut short),
                Err(EmitError {
                    len: n - 1,
                    needed: n
                })
            );
            assert!(short.iter().all(|&x| x == 0xa5), "nothing written");
            let (mut a, mut c) = (vec![0xa5u8; n], vec![0x5au8; n]);
            assert_eq!(m.emit(&mut a), Ok(n));
            assert_eq!(m.emit(&mut c), Ok(n));
            assert_eq!(a, c, "every byte written");
            assert_eq!(MessageRepr::parse(&a), Ok(m));
        }
    }

    #[test]
    fn rdmap_version_is_checked() {
        let mut b = capture_send();
        b[1] = 0x83;
        assert_eq!(
            MessageRepr::parse(&b),
            Err(ParseError::Rdmap(WireError::Version(2)))
        );
    }

    #[test]
    fn rfc7306_and_reserved_opcodes_are_unexpected() {
        for op in 8u8..16 {
            let mut b = capture_send();
            b[1] = 0x40 | op;
            assert_eq!(
                MessageRepr::parse(&b),
                Err(ParseError::Rdmap(WireError::UnexpectedOpcode(
                    Opcode::from_bits(op)
                )))
            );
        }
    }

    #[test]
    fn model_mismatch_is_unexpected_opcode() {
        let mut b = capture_send();
        b[1] = 0x40; // RDMA Write in an untagged segment
        assert_eq!(
            MessageRepr::parse(&b),
            Err(ParseError::Rdmap(WireError::UnexpectedOpcode(
                Opcode::RdmaWrite
            )))
        );
        let mut t = capture_write_rtr();
        t[1] = 0x43; // Send in a tagged segment
        assert_eq!(
            MessageRepr::parse(&t),
            Err(ParseError::Rdmap(WireError::UnexpectedOpcode(Opcode::Send)))
        );
    }

    #[test]
    fn wrong_queue() {
        let mut b = capture_send();
        b[9] = 1; // QN 1
        assert_eq!(
            MessageRepr::parse(&b),
            Err(ParseError::Rdmap(WireError::WrongQueue {
                opcode: Opcode::Send,
                qn: 1
            }))
        );
    }

    #[test]
    fn read_request_shape() {
        let mut b = capture_read_request();
        b.push(0);
        assert!(matches!(
            MessageRepr::parse(&b),
            Err(ParseError::Rdmap(WireError::BadLength { len: 29, .. }))
        ));
        let mut b = capture_read_request();
        b[0] = 0x01; // L clear
        assert_eq!(
            MessageRepr::parse(&b),
            Err(ParseError::Rdmap(WireError::NotSingleSegment(
                Opcode::ReadRequest
            )))
        );
    }

    #[test]
    fn ddp_errors_pass_through() {
        assert!(matches!(
            MessageRepr::parse(&[0x42, 0x43]),
            Err(ParseError::Ddp(DdpError::InvalidVersion { .. }))
        ));
        assert!(matches!(
            MessageRepr::parse(&[0x41, 0x43, 0]),
            Err(ParseError::Ddp(DdpError::Truncated { .. }))
        ));
    }

    #[test]
    fn every_prefix_of_the_captures_is_refused_or_shorter() {
        for b in [capture_read_request(), capture_terminate()] {
            for n in 0..b.len() {
                assert!(MessageRepr::parse(&b[..n]).is_err(), "prefix {n}");
            }
        }
    }

    fn immediate(solicited: bool, msn: u32) -> Vec<u8> {
        let op = if solicited {
            Opcode::ImmediateDataSolicited
        } else {
            Opcode::ImmediateData
        };
        let m = MessageRepr {
            ddp: SegmentRepr::Untagged(UntaggedRepr::new(true, Control::new(op).0, 0, 0, msn, 0)),
            body: Body::Immediate(ImmediateDataRepr::from_imm(0xfeed_beef)),
        };
        let mut out = vec![0; m.buffer_len()];
        m.emit(&mut out).unwrap();
        out
    }

    #[test]
    fn rfc7306_opcodes_parse_only_when_agreed() {
        let b = immediate(true, 4);
        assert_eq!(
            hex("4149 00000000 00000000 00000004 00000000 feedbeef 00000000"),
            b
        );
        assert_eq!(
            MessageRepr::parse(&b),
            Err(ParseError::Rdmap(WireError::UnexpectedOpcode(
                Opcode::ImmediateDataSolicited
            )))
        );
        let m = MessageRepr::parse_rfc7306(&b).unwrap();
        assert_eq!(
            m.body,
            Body::Immediate(ImmediateDataRepr::from_imm(0xfeed_beef))
        );
        // Reserved code points stay unexpected either way.
        let mut r = b.clone();
        r[1] = 0x4c;
        assert_eq!(
            MessageRepr::parse_rfc7306(&r),
            Err(ParseError::Rdmap(WireError::UnexpectedOpcode(
                Opcode::Unknown(0xc)
            )))
        );
    }

    #[test]
    fn rfc7306_shapes_are_checked() {
        let b = immediate(false, 1);
        let mut long = b.clone();
        long.push(0);
        assert!(matches!(
            MessageRepr::parse_rfc7306(&long),
            Err(ParseError::Rdmap(WireError::BadLength {
                len: 9,
                expected: 8,
                ..
            }))
        ));
        let mut middle = b.clone();
        middle[0] = 0x01; // L clear
        assert_eq!(
            MessageRepr::parse_rfc7306(&middle),
            Err(ParseError::Rdmap(WireError::NotSingleSegment(
                Opcode::ImmediateData
            )))
        );
        let mut queue = b.clone();
        queue[9] = 3;
        assert_eq!(
            MessageRepr::parse_rfc7306(&queue),
            Err(ParseError::Rdmap(WireError::WrongQueue {
                opcode: Opcode::ImmediateData,
                qn: 3
            }))
        );
        // An Atomic Response is 12 bytes on queue 3.
        let resp = hex("414b 00000000 00000003 00000001 00000000 00000007 0000000000000009");
        let m = MessageRepr::parse_rfc7306(&resp).unwrap();
        assert_eq!(
            m.body,
            Body::AtomicResponse(AtomicResponseRepr {
                request_id: 7,
                original: 9
            })
        );
        for n in 0..resp.len() {
            assert!(
                MessageRepr::parse_rfc7306(&resp[..n]).is_err(),
                "prefix {n}"
            );
        }
    }

    proptest! {
        #[test]
        fn parsed_rfc7306_messages_re_emit_exactly(bytes in proptest::collection::vec(any::<u8>(), 0..90)) {
            if let Ok(m) = MessageRepr::parse_rfc7306(&bytes) {
                let mut out = vec![0xa5; m.buffer_len()];
                prop_assert_eq!(m.emit(&mut out), Ok(bytes.len()));
                prop_assert_eq!(out, bytes);
            }
        }

        #[test]
        fn well_formed_atomic_requests_round_trip(
            msn in any::<u32>(), op in 0u8..16, id in any::<u32>(), stag in any::<u32>(),
            to in any::<u64>(), a in any::<u64>(), b in any::<u64>(), c in any::<u64>(), d in any::<u64>(),
        ) {
            use crate::wire::AtomicOp;
            let r = AtomicRequestRepr { op: AtomicOp::from_bits(op), reserved: 0, request_id: id, stag: STag(stag), to,
                add_swap_data: a, add_swap_mask: b, compare_data: c, compare_mask: d };
            let ddp = SegmentRepr::Untagged(UntaggedRepr::new(
                true, Control::new(Opcode::AtomicRequest).0, 0, 1, msn, 0));
            let m = MessageRepr { ddp, body: Body::AtomicRequest(r) };
            let mut out = vec![0xa5; m.buffer_len()];
            m.emit(&mut out).unwrap();
            prop_assert_eq!(out.len(), 18 + 52);
            prop_assert_eq!(MessageRepr::parse_rfc7306(&out).unwrap(), m);
            prop_assert!(MessageRepr::parse(&out).is_err());
            let mut short = vec![0xa5; m.buffer_len() - 1];
            prop_assert!(m.emit(&mut short).is_err());
            prop_assert!(short.iter().all(|&x| x == 0xa5));
        }

        #[test]
        fn parsed_messages_re_emit_exactly(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok(m) = MessageRepr::parse(&bytes) {
                let mut out = vec![0xa5; m.buffer_len()];
                prop_assert_eq!(m.emit(&mut out), Ok(bytes.len()));
                prop_assert_eq!(out, bytes);
            }
        }

        #[test]
        fn well_formed_sends_round_trip(
            solicited in any::<bool>(), inv in proptest::option::of(any::<u32>()),
            msn in any::<u32>(), mo in any::<u32>(), last in any::<bool>(),
            data in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let op = Opcode::send(solicited, inv.is_some());
            let ddp = SegmentRepr::Untagged(UntaggedRepr::new(
                last, Control::new(op).0, inv.unwrap_or(0), 0, msn, mo));
            let m = MessageRepr { ddp, body: Body::Data(&data) };
            let mut out = vec![0xa5; m.buffer_len()];
            m.emit(&mut out).unwrap();
            prop_assert_eq!(MessageRepr::parse(&out).unwrap(), m);
        }

        #[test]
        fn well_formed_read_requests_round_trip(
            msn in any::<u32>(), a in any::<u32>(), b in any::<u64>(), c in any::<u32>(),
            d in any::<u32>(), e in any::<u64>(),
        ) {
            let r = ReadRequestRepr { sink_stag: STag(a), sink_to: b, size: c, source_stag: STag(d), source_to: e };
            let ddp = SegmentRepr::Untagged(UntaggedRepr::new(
                true, Control::new(Opcode::ReadRequest).0, 0, 1, msn, 0));
            let m = MessageRepr { ddp, body: Body::ReadRequest(r) };
            let mut out = vec![0xa5; m.buffer_len()];
            m.emit(&mut out).unwrap();
            prop_assert_eq!(out.len(), 18 + 28);
            prop_assert_eq!(MessageRepr::parse(&out).unwrap(), m);
        }

        #[test]
        fn well_formed_tagged_round_trip(
            read_response in any::<bool>(), last in any::<bool>(), stag in any::<u32>(),
            to in any::<u64>(), data in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let op = if read_response { Opcode::ReadResponse } else { Opcode::RdmaWrite };
            let ddp = SegmentRepr::Tagged(TaggedRepr::new(last, Control::new(op).0, STag(stag), to));
            let m = MessageRepr { ddp, body: Body::Data(&data) };
            let mut out = vec![0xa5; m.buffer_len()];
            m.emit(&mut out).unwrap();
            prop_assert_eq!(MessageRepr::parse(&out).unwrap(), m);
        }
    }

    /// A header for [`parse_data`](MessageRepr::parse_data) to judge:
    /// DDP control and RDMAP control drawn around the values that matter,
    /// QN mostly 0, any length.
    fn data_candidate() -> impl Strategy<Value = Vec<u8>> {
        (
            prop_oneof![
                Just(0xc1u8),
                Just(0x81),
                Just(0x41),
                Just(0x01),
                any::<u8>()
            ],
            prop_oneof![(0u8..16).prop_map(|op| 0x40 | op), any::<u8>()],
            prop_oneof![Just(0u32), 0u32..4, any::<u32>()],
            proptest::collection::vec(any::<u8>(), 0..40),
            0usize..40,
        )
            .prop_map(|(ddp, rdmap, qn, mut rest, cut)| {
                rest.splice(..0, [ddp, rdmap]);
                if rest.len() >= 10 && ddp & 0x80 == 0 {
                    rest[6..10].copy_from_slice(&qn.to_be_bytes());
                }
                rest.truncate(cut.max(2).min(rest.len()));
                rest
            })
    }

    #[test]
    fn parse_data_reads_captures_as_parse_does() {
        let b = capture_send();
        let Some(DataSegment::Send(u, p)) = MessageRepr::parse_data(&b) else {
            panic!("a Send is a data segment")
        };
        assert_eq!(
            MessageRepr::parse(&b).unwrap().ddp,
            SegmentRepr::Untagged(u)
        );
        assert_eq!(p, &b[18..]);
        let b = capture_write_rtr();
        let Some(DataSegment::Tagged(t, p)) = MessageRepr::parse_data(&b) else {
            panic!("a Write is a data segment")
        };
        assert_eq!(t, TaggedRepr::new(true, 0x40, STag(1), 0));
        assert!(p.is_empty());
        assert_eq!(MessageRepr::parse_data(&capture_read_request()), None);
        assert_eq!(MessageRepr::parse_data(&capture_terminate()), None);
    }

    /// `bytes` with octet `at` set to `value`.
    fn patched(bytes: &[u8], at: usize, value: u8) -> Vec<u8> {
        let mut b = bytes.to_vec();
        b[at] = value;
        b
    }

    #[test]
    fn parse_data_leaves_near_misses_to_parse() {
        let send = capture_send();
        let write = capture_write_rtr();
        let cases: [(Vec<u8>, &str); 7] = [
            ([&send[..17]].concat(), "untagged header one byte short"),
            ([&write[..13]].concat(), "tagged header one byte short"),
            (patched(&send, 0, 0x42), "DDP version 2"),
            (patched(&write, 1, 0x80), "RDMAP version 2"),
            (patched(&write, 1, 0x43), "Send opcode on a tagged segment"),
            (
                patched(&send, 1, 0x40),
                "Write opcode on an untagged segment",
            ),
            (patched(&send, 9, 1), "Send on queue 1"),
        ];
        refused_by_both(&cases, |b| MessageRepr::parse_data(b).is_some());
    }

    /// Each near miss is left by the one-pass reading (`takes`: whether it
    /// answers) to the full parse, and refused there.
    fn refused_by_both(cases: &[(Vec<u8>, &str)], takes: impl Fn(&[u8]) -> bool) {
        for (b, what) in cases {
            assert!(!takes(b), "{what}");
            assert!(MessageRepr::parse(b).is_err(), "{what}");
        }
    }

    proptest! {
        /// The one-pass reading agrees with the full parse, in both
        /// modes: the same header and payload whenever it answers, and it
        /// answers for every data segment the full parse accepts.
        #[test]
        fn parse_data_agrees_with_parse(b in data_candidate()) {
            let fast = MessageRepr::parse_data(&b).map(|d| match d {
                DataSegment::Tagged(t, p) => (SegmentRepr::Tagged(t), Body::Data(p)),
                DataSegment::Send(u, p) => (SegmentRepr::Untagged(u), Body::Data(p)),
            });
            agrees_with_parse(&b, fast, |body| matches!(body, Body::Data(_)))?;
        }
    }

    #[test]
    fn parse_read_request_reads_the_capture_as_parse_does() {
        let b = capture_read_request();
        let (u, r) = MessageRepr::parse_read_request(&b).expect("a Read Request");
        let m = MessageRepr::parse(&b).unwrap();
        assert_eq!(m.ddp, SegmentRepr::Untagged(u));
        assert_eq!(m.body, Body::ReadRequest(r));
        assert_eq!(r.size, 0x64);
        assert_eq!(MessageRepr::parse_read_request(&capture_send()), None);
        assert_eq!(MessageRepr::parse_read_request(&capture_write_rtr()), None);
        assert_eq!(MessageRepr::parse_read_request(&capture_terminate()), None);
    }

    #[test]
    fn parse_read_request_leaves_near_misses_to_parse() {
        let read = capture_read_request();
        let with = |i: usize, v: u8| patched(&read, i, v);
        let cases: [(Vec<u8>, &str); 8] = [
            (read[..read.len() - 1].to_vec(), "body one byte short"),
            ([&read[..], &[0]].concat(), "body one byte long"),
            (read[..17].to_vec(), "header one byte short"),
            (with(0, 0x42), "DDP version 2"),
            (with(1, 0x81), "RDMAP version 2"),
            (with(0, 0x01), "not the last segment"),
            (with(0, 0xc1), "tagged"),
            (with(9, 0), "on queue 0"),
        ];
        refused_by_both(&cases, |b| MessageRepr::parse_read_request(b).is_some());
    }

    /// A Read Request for [`parse_read_request`](MessageRepr::parse_read_request)
    /// to judge: its control bytes and queue drawn around the values that
    /// matter, any fields, lengths around 46.
    fn read_request_candidate() -> impl Strategy<Value = Vec<u8>> {
        (
            prop_oneof![Just(0x41u8), Just(0x01), Just(0xc1), any::<u8>()],
            prop_oneof![
                Just(0x41u8),
                (0u8..16).prop_map(|op| 0x40 | op),
                any::<u8>()
            ],
            prop_oneof![Just(1u32), 0u32..4, any::<u32>()],
            proptest::collection::vec(any::<u8>(), 40..52),
        )
            .prop_map(|(ddp, rdmap, qn, mut rest)| {
                rest[0] = ddp;
                rest[1] = rdmap;
                rest[6..10].copy_from_slice(&qn.to_be_bytes());
                rest
            })
    }

    proptest! {
        /// The one-pass reading of a Read Request agrees with the full
        /// parse, in both modes, and answers for every Read Request it
        /// accepts.
        #[test]
        fn parse_read_request_agrees_with_parse(b in read_request_candidate()) {
            let fast = MessageRepr::parse_read_request(&b)
                .map(|(u, r)| (SegmentRepr::Untagged(u), Body::ReadRequest(r)));
            agrees_with_parse(&b, fast, |body| matches!(body, Body::ReadRequest(_)))?;
        }
    }

    /// A one-pass reading's answer `fast` for `b` against the full parse,
    /// in both modes: the same header and body whenever it answers, and
    /// an answer for every message of its kind (`ours`) the parse accepts.
    fn agrees_with_parse(
        b: &[u8],
        fast: Option<(SegmentRepr, Body<'_>)>,
        ours: impl Fn(&Body<'_>) -> bool,
    ) -> Result<(), TestCaseError> {
        for full in [MessageRepr::parse(b), MessageRepr::parse_rfc7306(b)] {
            match (&fast, full) {
                (Some((ddp, body)), Ok(m)) => {
                    prop_assert_eq!(&m.ddp, ddp);
                    prop_assert_eq!(&m.body, body);
                }
                (Some(_), Err(e)) => {
                    prop_assert!(false, "fast path took what parse refuses: {:?}", e)
                }
                (None, Ok(m)) => prop_assert!(
                    !ours(&m.body),
                    "a message of the fast path's kind left to the full parse: {:?}",
                    m
                ),
                (None, Err(_)) => {}
            }
        }
        Ok(())
    }
}
