//! One ULPDU read as DDP and RDMAP, with the rdmap crate's parsers.

use ddp::wire::parse_segment;
use rdmap::wire::{Body, MessageRepr, ReadRequest, ReadRequestRepr, TerminateRepr};

use super::event::{CrcStatus, Fpdu, Rfc7306, Terminate, Where};

/// Builds the report of one FPDU from its ULPDU. A ULPDU that is not a
/// valid RDMAP message still shows what its DDP header says.
pub fn describe(at: Where, ulpdu: &[u8], wire_len: usize, crc: CrcStatus) -> Fpdu {
    let mut fpdu = Fpdu {
        at,
        ulpdu_len: ulpdu.len(),
        wire_len,
        crc,
        ddp: None,
        opcode: None,
        payload_len: 0,
        read_request: None,
        terminate: None,
        rfc7306: None,
        error: None,
    };
    // A dissector reads every opcode it knows, RFC 7306's included: only
    // the two ends know whether they agreed to them.
    match MessageRepr::parse_rfc7306(ulpdu) {
        Ok(msg) => {
            fpdu.ddp = Some(msg.ddp);
            fpdu.opcode = Some(msg.opcode());
            fpdu.payload_len = ulpdu.len().saturating_sub(msg.ddp.buffer_len());
            match msg.body {
                Body::Data(_) => {}
                Body::ReadRequest(r) => fpdu.read_request = Some(r),
                Body::Terminate(t) => fpdu.terminate = Some(terminate(&t)),
                Body::Immediate(i) => fpdu.rfc7306 = Some(Box::new(Rfc7306::Immediate(i))),
                Body::AtomicRequest(r) => fpdu.rfc7306 = Some(Box::new(Rfc7306::AtomicRequest(r))),
                Body::AtomicResponse(r) => {
                    fpdu.rfc7306 = Some(Box::new(Rfc7306::AtomicResponse(r)))
                }
            }
        }
        Err(e) => {
            fpdu.error = Some(e.to_string());
            if let Ok((ddp, payload)) = parse_segment(ulpdu) {
                fpdu.ddp = Some(ddp);
                fpdu.opcode = Some(rdmap::wire::Control(ddp.rsvd_ulp()).opcode());
                fpdu.payload_len = payload.len();
            }
        }
    }
    fpdu
}

fn terminate(t: &TerminateRepr<'_>) -> Terminate {
    let attached = t.attached;
    let ddp_header = attached
        .and_then(|a| a.ddp_header)
        .and_then(|h| parse_segment(h).ok())
        .map(|(repr, _)| repr);
    let read_request = attached
        .and_then(|a| a.rdma_header)
        .and_then(|h| ReadRequest::new_checked(h).ok())
        .and_then(|v| ReadRequestRepr::parse(&v).ok());
    Terminate {
        control: t.control,
        layout: t.layout,
        segment_len: attached.map(|a| a.segment_len),
        ddp_header,
        read_request,
    }
}
