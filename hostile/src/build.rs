//! Building hostile bytes from the project's own wire types: an MPA Request
//! from `mpa`'s start-up machine, then patched through the `Frame` view;
//! RDMAP messages from `rdmap::wire::MessageRepr`, then patched through
//! `ddp`'s header views. A malformed field is always a well-formed message
//! with one field changed, so each case breaks exactly one rule.

use std::time::Instant;

use ddp::wire::control::Control as DdpControl;
use ddp::wire::{SegmentRepr, TaggedHeader, TaggedRepr, UntaggedHeader, UntaggedRepr};
use ddp::STag;
use mpa::wire::{Frame, KEY_LEN};
use mpa::{InitiatorConfig, Startup};
use rdmap::wire::TerminateRepr;
use rdmap::wire::{Body, Control, MessageRepr, ReadRequestRepr, TermControl, TermLayout};
use rdmap::Opcode;
use transport::SplitMix64;

use crate::observe::Observation;
use crate::rping::RdmaInfo;
use crate::script::Learned;

/// Untagged queue numbers of RDMAP (RFC 5040 section 5.1).
pub mod qn {
    /// Sends.
    pub const SEND: u32 = 0;
    /// Read Requests.
    pub const READ_REQUEST: u32 = 1;
    /// Terminates.
    pub const TERMINATE: u32 = 2;
}

/// The MPA Request `cfg` asks for, exactly as the start-up machine sends
/// it.
pub fn request(cfg: &InitiatorConfig) -> Vec<u8> {
    let mut out = Vec::new();
    // A configuration the machine refuses sends nothing: the case then
    // shows that no Request went out.
    if let Ok(mut s) = Startup::initiator(cfg.clone(), Instant::now()) {
        s.poll_transmit(&mut out);
    }
    out
}

/// `frame` (a whole Request) with its fields changed through the checked
/// view; unchanged if it is too short to be a frame.
pub fn patch_request(mut frame: Vec<u8>, patch: impl FnOnce(&mut Frame<&mut Vec<u8>>)) -> Vec<u8> {
    if Frame::new_checked(&frame[..]).is_ok() {
        patch(&mut Frame::new_unchecked(&mut frame));
    }
    frame
}

/// `frame` (a whole Request) with another 16-octet key, which the `Frame`
/// view only writes as one of the two valid keys.
pub fn with_key(mut frame: Vec<u8>, key: &[u8; KEY_LEN]) -> Vec<u8> {
    if Frame::new_checked(&frame[..]).is_ok() {
        frame[..KEY_LEN].copy_from_slice(key);
    }
    frame
}

/// Writes a ULPDU from a message repr. The reprs below always fit.
fn emit(m: MessageRepr<'_>) -> Vec<u8> {
    let mut out = vec![0; m.buffer_len()];
    let n = m.emit(&mut out).unwrap_or(0);
    out.truncate(n);
    out
}

/// An untagged segment carrying `body` with RDMAP `opcode`.
pub fn untagged(opcode: Opcode, qn: u32, msn: u32, mo: u32, last: bool, body: Body<'_>) -> Vec<u8> {
    emit(MessageRepr {
        ddp: SegmentRepr::Untagged(UntaggedRepr::new(
            last,
            Control::new(opcode).0,
            0,
            qn,
            msn,
            mo,
        )),
        body,
    })
}

/// A tagged segment with RDMAP `opcode`.
pub fn tagged(opcode: Opcode, stag: STag, to: u64, data: &[u8]) -> Vec<u8> {
    emit(MessageRepr {
        ddp: SegmentRepr::Tagged(TaggedRepr::new(true, Control::new(opcode).0, stag, to)),
        body: Body::Data(data),
    })
}

/// A Send (one segment unless `last` is false) of `data` as message `msn`.
pub fn send(msn: u32, data: &[u8], last: bool) -> Vec<u8> {
    untagged(Opcode::Send, qn::SEND, msn, 0, last, Body::Data(data))
}

/// A one-segment Send with Invalidate of `data` as message `msn`, naming
/// `stag`.
pub fn send_invalidate(msn: u32, stag: STag, data: &[u8]) -> Vec<u8> {
    emit(MessageRepr {
        ddp: SegmentRepr::Untagged(UntaggedRepr::new(
            true,
            Control::new(Opcode::SendInvalidate).0,
            stag.0,
            qn::SEND,
            msn,
            0,
        )),
        body: Body::Data(data),
    })
}

/// An RDMA Write of `data` to `stag` at `to`.
pub fn write(stag: STag, to: u64, data: &[u8]) -> Vec<u8> {
    tagged(Opcode::RdmaWrite, stag, to, data)
}

/// An RDMA Read Request, message `msn` of the Read Request queue.
pub fn read_request(msn: u32, req: ReadRequestRepr) -> Vec<u8> {
    untagged(
        Opcode::ReadRequest,
        qn::READ_REQUEST,
        msn,
        0,
        true,
        Body::ReadRequest(req),
    )
}

/// A TERMINATE (RFC 5040 layout, no headers attached) with `control`'s
/// layer, type and code, message `msn` of the Terminate queue.
pub fn terminate(msn: u32, control: TermControl) -> Vec<u8> {
    untagged(
        Opcode::Terminate,
        qn::TERMINATE,
        msn,
        0,
        true,
        Body::Terminate(TerminateRepr {
            control,
            layout: TermLayout::Rfc5040,
            attached: None,
        }),
    )
}

/// `ulpdu` with the DDP version (DV) set to `version`, through the header
/// view of its model. Unchanged if it is too short for its header.
pub fn with_ddp_version(mut ulpdu: Vec<u8>, version: u8) -> Vec<u8> {
    let Some(&first) = ulpdu.first() else {
        return ulpdu;
    };
    let control = DdpControl {
        version,
        ..DdpControl::from_byte(first)
    };
    if control.tagged {
        if let Ok(mut h) = TaggedHeader::new_checked(&mut ulpdu[..]) {
            h.set_control(control);
        }
    } else if let Ok(mut h) = UntaggedHeader::new_checked(&mut ulpdu[..]) {
        h.set_control(control);
    }
    ulpdu
}

/// `ulpdu` with the RDMAP control octet (DDP's RsvdULP) replaced by
/// `control`, through the header view of its model.
pub fn with_rdmap_control(mut ulpdu: Vec<u8>, control: Control) -> Vec<u8> {
    let tagged = ulpdu
        .first()
        .is_some_and(|&b| DdpControl::from_byte(b).tagged);
    if tagged {
        if let Ok(mut h) = TaggedHeader::new_checked(&mut ulpdu[..]) {
            h.set_rsvd_ulp(control.0);
        }
    } else if let Ok(mut h) = UntaggedHeader::new_checked(&mut ulpdu[..]) {
        h.set_rsvd_ulp(control.0);
    }
    ulpdu
}

/// An RDMAP control octet with `version` and `opcode` (a version other
/// than 1 cannot be built with [`Control::new`]).
pub fn rdmap_control(version: u8, opcode: Opcode) -> Control {
    Control(((version & 0x3) << 6) | opcode.bits())
}

/// The hostile side's pretend source buffer, advertised in rping's first
/// Send: what a target reading it gets is [`fill`].
pub const OUR_SOURCE: RdmaInfo = RdmaInfo {
    rkey: 0x0057_a900,
    addr: 0x7f00_0000_1000,
    size: 64,
};
/// The pretend sink buffer, advertised in rping's second Send, and the
/// sink of the hostile side's own Read Requests.
pub const OUR_SINK: RdmaInfo = RdmaInfo {
    rkey: 0x0057_b100,
    addr: 0x7f00_0000_2000,
    size: 64,
};

/// `len` octets of the data the hostile side serves: text ending in a NUL,
/// as rping's buffers hold (rping's server writes back `strlen` + 1 of
/// what it read, so data without a NUL sends it past its buffer).
pub fn fill(len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len).map(|i| b'A' + (i % 26) as u8).collect();
    if let Some(last) = v.last_mut() {
        *last = 0;
    }
    v
}

/// The ULPDU `what` stands for, given what the target has sent so far;
/// `None` when it has not handed out the buffer needed.
pub fn learned(what: Learned, obs: &Observation) -> Option<Vec<u8>> {
    let read = obs.read_requests.last();
    let advert = obs.sends.last().and_then(|s| RdmaInfo::parse(s).ok());
    Some(match what {
        Learned::AnswerRead => {
            let r = read?;
            let len = usize::try_from(r.size)
                .ok()?
                .min(usize::from(u16::MAX) - 64);
            tagged(Opcode::ReadResponse, r.sink_stag, r.sink_to, &fill(len))
        }
        Learned::WriteToReadSink { offset, len } => {
            let r = read?;
            write(
                r.sink_stag,
                r.sink_to.wrapping_add(offset),
                &fill(len as usize),
            )
        }
        Learned::ReadFromReadSink { msn, offset, size } => {
            let r = read?;
            read_request(
                msn,
                ReadRequestRepr {
                    sink_stag: STag(OUR_SINK.rkey),
                    sink_to: OUR_SINK.addr,
                    size,
                    source_stag: r.sink_stag,
                    source_to: r.sink_to.wrapping_add(offset),
                },
            )
        }
        Learned::InvalidateReadSink { msn } => send_invalidate(msn, read?.sink_stag, &[]),
        Learned::WriteToAdvert { offset, len } => {
            let a = advert?;
            let len = if len == 0 { a.size } else { len };
            let len = (len as usize).min(usize::from(u16::MAX) - 64);
            write(STag(a.rkey), a.addr.wrapping_add(offset), &fill(len))
        }
        Learned::ReadFromAdvert { msn, offset, extra } => {
            let a = advert?;
            read_request(
                msn,
                ReadRequestRepr {
                    sink_stag: STag(OUR_SINK.rkey),
                    sink_to: OUR_SINK.addr,
                    size: a.size.saturating_add(extra),
                    source_stag: STag(a.rkey),
                    source_to: a.addr.wrapping_add(offset),
                },
            )
        }
    })
}

/// Deterministic bytes from `seed` (SplitMix64), for the random-FPDU case.
pub fn seeded_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    out.truncate(len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ddp::DdpError;
    use rdmap::wire::{ParseError, WireError};

    #[test]
    fn a_send_parses_back() {
        let b = send(1, b"0123456789abcdef", true);
        let m = MessageRepr::parse(&b).unwrap();
        assert_eq!(m.opcode(), Opcode::Send);
        assert_eq!(m.body, Body::Data(b"0123456789abcdef"));
    }

    #[test]
    fn a_wrong_ddp_version_is_the_only_fault() {
        let b = with_ddp_version(send(1, b"x", true), 2);
        assert_eq!(
            MessageRepr::parse(&b),
            Err(ParseError::Ddp(DdpError::InvalidVersion {
                tagged: false,
                version: 2
            }))
        );
        let fixed = with_ddp_version(b, 1);
        assert!(MessageRepr::parse(&fixed).is_ok());
    }

    #[test]
    fn a_wrong_rdmap_version_is_the_only_fault() {
        let b = with_rdmap_control(
            write(STag(0x100), 0, b"x"),
            rdmap_control(0, Opcode::RdmaWrite),
        );
        assert_eq!(
            MessageRepr::parse(&b),
            Err(ParseError::Rdmap(WireError::Version(0)))
        );
    }

    #[test]
    fn a_terminate_round_trips_through_the_parser() {
        let c = TermControl {
            layer: 0,
            etype: 2,
            code: 0xff,
            ..TermControl::default()
        };
        let b = terminate(1, c);
        let m = MessageRepr::parse(&b).unwrap();
        let Body::Terminate(t) = m.body else {
            panic!("{m:?}")
        };
        assert_eq!(
            (t.control.layer, t.control.etype, t.control.code),
            (0, 2, 0xff)
        );
    }

    #[test]
    fn a_patched_request_keeps_every_other_field() {
        let cfg = InitiatorConfig::default();
        let good = request(&cfg);
        let bad = patch_request(good.clone(), |f| f.set_rev(3));
        assert_eq!(bad.len(), good.len());
        let diff: Vec<usize> = (0..good.len()).filter(|&i| good[i] != bad[i]).collect();
        assert_eq!(diff, vec![17]);
    }

    #[test]
    fn seeded_bytes_are_reproducible() {
        assert_eq!(seeded_bytes(7, 33), seeded_bytes(7, 33));
        assert_ne!(seeded_bytes(7, 33), seeded_bytes(8, 33));
        assert_eq!(seeded_bytes(7, 33).len(), 33);
    }
}
