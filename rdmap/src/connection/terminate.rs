//! Building our TERMINATE and reading the peer's.

use ddp::wire::{parse_segment, SegmentRepr, UntaggedRepr, UNTAGGED_HEADER_LEN};

use crate::completion::WcStatus;
use crate::opcode::{queue, Opcode};
use crate::term::{Attach, Layer, TermCause, TermCode};
use crate::wire::terminate::{ddp_header_len, MAX_LEN, RDMA_HEADER_LEN};
use crate::wire::{Attached, Control, TermControl, TermLayout, TerminateRepr};

use super::event::PeerTerminate;

/// A TERMINATE ULPDU, built once and kept until the transport takes it.
#[derive(Debug, Clone)]
pub(crate) struct TermFrame {
    buf: [u8; UNTAGGED_HEADER_LEN + MAX_LEN],
    len: usize,
}

impl TermFrame {
    pub fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }
}

/// The offending headers of `offending` (a ULPDU, or a Read Request we
/// reconstructed) that `attach` asks for, if they are all there.
fn attachment(offending: &[u8], attach: Attach) -> Option<Attached<'_>> {
    if attach == Attach::Nothing {
        return None;
    }
    let first = *offending.first()?;
    let ddp = offending.get(..ddp_header_len(first))?;
    let is_read_request = first & 0x80 == 0
        && offending
            .get(1)
            .is_some_and(|&b| Control(b).opcode() == Opcode::ReadRequest);
    let rdma = if attach == Attach::DdpAndRdma && is_read_request {
        offending.get(UNTAGGED_HEADER_LEN..UNTAGGED_HEADER_LEN + RDMA_HEADER_LEN)
    } else {
        None
    };
    Some(Attached {
        segment_len: u16::try_from(offending.len()).unwrap_or(u16::MAX),
        ddp_header: Some(ddp),
        rdma_header: rdma,
    })
}

/// Our TERMINATE for `cause`: untagged, queue 2, MSN `msn`, RFC 5040
/// layout, with M and D set when headers are attached (the DDP Segment
/// Length is the length of the whole offending ULPDU).
pub(crate) fn build(cause: TermCause, offending: &[u8], msn: u32) -> TermFrame {
    let attached = attachment(offending, cause.attach);
    let control = TermControl {
        layer: cause.code.layer.bits(),
        etype: cause.code.etype,
        code: cause.code.code,
        m: attached.is_some(),
        d: attached.is_some(),
        r: attached.is_some_and(|a| a.rdma_header.is_some()),
        reserved: 0,
    };
    let repr = TerminateRepr {
        control,
        layout: TermLayout::Rfc5040,
        attached,
    };
    let ddp = SegmentRepr::Untagged(UntaggedRepr::new(
        true,
        Control::new(Opcode::Terminate).0,
        0,
        queue::TERMINATE,
        msn,
        0,
    ));
    let mut frame = TermFrame {
        buf: [0; UNTAGGED_HEADER_LEN + MAX_LEN],
        len: 0,
    };
    // The buffer holds the largest TERMINATE, so neither emit can fail;
    // should one, the TERMINATE goes out without its headers.
    let h = ddp.emit(&mut frame.buf).unwrap_or(UNTAGGED_HEADER_LEN);
    let body = frame.buf.get_mut(h..).unwrap_or_default();
    let n = repr.emit(body).unwrap_or_else(|_| {
        let bare = TerminateRepr {
            attached: None,
            ..repr
        };
        bare.emit(body).unwrap_or(0)
    });
    frame.len = h + n;
    frame
}

/// The TERMINATE FPDU a failed MPA start-up sends before closing (RFC 6581:
/// an invalid Request or Reply, insufficient IRD, no matching RTR): the
/// LLP error `code` with nothing attached, MSN 1, framed with `crc` and
/// `markers` as the first FPDU of the stream.
pub fn startup_terminate(code: TermCode, crc: bool, markers: bool) -> Vec<u8> {
    let frame = build(TermCause::with_attach(code, Attach::Nothing), &[], 1);
    let mut out = Vec::new();
    // Cannot fail: a TERMINATE is far below the 16-bit ULPDU limit.
    let _ = mpa::Framer::new(crc, markers).frame_to_vec(frame.bytes(), &[], &mut out);
    out
}

/// What the peer's TERMINATE says, for the event.
pub(crate) fn peer_cause(t: &TerminateRepr<'_>) -> (TermCode, PeerTerminate) {
    let c = t.control;
    let code = match Layer::from_bits(c.layer) {
        Some(layer) => TermCode::new(layer, c.etype, c.code),
        None => TermCode::RDMAP_CATASTROPHIC,
    };
    (
        code,
        PeerTerminate {
            control: c,
            layout: t.layout,
        },
    )
}

/// The completion status of a work request the peer's TERMINATE names.
pub(crate) fn remote_status(code: TermCode) -> WcStatus {
    match (code.layer, code.etype, code.code) {
        (Layer::Rdmap | Layer::Ddp, 1, _) => WcStatus::RemAccessErr,
        (Layer::Ddp, 2, 2 | 5) | (Layer::Rdmap, 2, 5 | 6) => WcStatus::RemInvReqErr,
        (Layer::Llp, _, _) => WcStatus::FatalErr,
        _ => WcStatus::RemOpErr,
    }
}

/// Which of our messages the attached DDP header describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offender {
    /// An untagged message: queue and MSN.
    Untagged { qn: u32, msn: u32 },
    /// A tagged segment: STag and TO.
    Tagged { stag: u32, to: u64 },
}

pub(crate) fn offender(t: &TerminateRepr<'_>) -> Option<Offender> {
    let header = t.attached?.ddp_header?;
    match parse_segment(header).ok()?.0 {
        SegmentRepr::Untagged(u) => Some(Offender::Untagged {
            qn: u.qn,
            msn: u.msn,
        }),
        SegmentRepr::Tagged(t) => Some(Offender::Tagged {
            stag: t.stag.0,
            to: t.to,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Body, MessageRepr};

    fn parse(frame: &TermFrame) -> TerminateRepr<'_> {
        match MessageRepr::parse(frame.bytes()).unwrap().body {
            Body::Terminate(t) => t,
            other => panic!("not a terminate: {other:?}"),
        }
    }

    const WRITE_SEGMENT: [u8; 18] = [
        0xc1, 0x40, 0, 0, 0x12, 0x34, 0, 0, 0, 0, 0, 0, 0x10, 0x00, 0xde, 0xad, 0xbe, 0xef,
    ];

    #[test]
    fn ddp_tagged_error_attaches_the_ddp_header() {
        let f = build(
            TermCause::with_attach(TermCode::DDP_T_INVALID_STAG, Attach::Ddp),
            &WRITE_SEGMENT,
            1,
        );
        let mut expect = vec![
            0x41, 0x47, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, // DDP
            0x11, 0x00, 0xc0, 0x00, // DDP layer, tagged, invalid STag, M|D
            0x00, 18, // the whole offending ULPDU
        ];
        expect.extend_from_slice(&WRITE_SEGMENT[..14]);
        assert_eq!(f.bytes(), &expect[..]);
        let t = parse(&f);
        assert_eq!(t.layout, TermLayout::Rfc5040);
        assert_eq!(
            offender(&t),
            Some(Offender::Tagged {
                stag: 0x1234,
                to: 0x1000
            })
        );
    }

    #[test]
    fn llp_error_attaches_nothing() {
        let f = build(TermCause::new(TermCode::LLP_CRC), &WRITE_SEGMENT, 1);
        assert_eq!(&f.bytes()[18..], &[0x20, 0x02, 0x00, 0x00]);
        assert_eq!(f.bytes().len(), 22);
    }

    #[test]
    fn read_request_error_attaches_both_headers() {
        let mut rr = vec![0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0];
        rr.extend_from_slice(&[9u8; 28]);
        let f = build(TermCause::new(TermCode::RDMAP_INVALID_STAG), &rr, 1);
        let body = &f.bytes()[18..];
        assert_eq!(&body[..4], &[0x01, 0x00, 0xe0, 0x00]);
        assert_eq!(&body[4..6], &[0, 46]);
        assert_eq!(&body[6..], &rr[..]);
        let t = parse(&f);
        assert_eq!(offender(&t), Some(Offender::Untagged { qn: 1, msn: 3 }));
    }

    #[test]
    fn truncated_offender_attaches_nothing() {
        let f = build(
            TermCause::with_attach(TermCode::DDP_CATASTROPHIC, Attach::Ddp),
            &WRITE_SEGMENT[..5],
            2,
        );
        assert_eq!(&f.bytes()[18..], &[0x10, 0x00, 0x00, 0x00]);
        assert_eq!(&f.bytes()[10..14], &[0, 0, 0, 2], "MSN");
    }

    #[test]
    fn remote_statuses() {
        assert_eq!(
            remote_status(TermCode::DDP_T_BASE_BOUNDS),
            WcStatus::RemAccessErr
        );
        assert_eq!(
            remote_status(TermCode::RDMAP_ACCESS_RIGHTS),
            WcStatus::RemAccessErr
        );
        assert_eq!(
            remote_status(TermCode::DDP_UT_NO_BUFFER),
            WcStatus::RemInvReqErr
        );
        assert_eq!(
            remote_status(TermCode::DDP_UT_TOO_LONG),
            WcStatus::RemInvReqErr
        );
        assert_eq!(
            remote_status(TermCode::DDP_UT_MSN_RANGE),
            WcStatus::RemOpErr
        );
        assert_eq!(
            remote_status(TermCode::RDMAP_UNEXPECTED_OPCODE),
            WcStatus::RemInvReqErr
        );
        assert_eq!(
            remote_status(TermCode::RDMAP_CATASTROPHIC_STREAM),
            WcStatus::RemOpErr
        );
        assert_eq!(remote_status(TermCode::LLP_CRC), WcStatus::FatalErr);
    }

    #[test]
    fn unknown_peer_layer_is_catastrophic() {
        let t = TerminateRepr::parse(&[0x50, 0x00, 0x00, 0x00]).unwrap();
        let (code, peer) = peer_cause(&t);
        assert_eq!(code, TermCode::RDMAP_CATASTROPHIC);
        assert_eq!(peer.control.layer, 5);
    }
}
