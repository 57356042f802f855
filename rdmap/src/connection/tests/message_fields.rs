//! A message's RDMAP fields (opcode, solicited flag, the STag to
//! invalidate) ride in every one of its segments and may not change
//! between them (RFC 5040 section 4.1); a segment that changes them is
//! refused with the TERMINATE of RFC 5040 section 4.8.

use ddp::memory::{Access, STag};
use ddp::wire::{SegmentRepr, UntaggedRepr};

use super::errors::{assert_terminate, attach, fpdu};
use super::util::{Pair, Setup, PD};
use crate::completion::{WcOpcode, WcStatus};
use crate::opcode::Opcode;
use crate::wire::{Body, Control, ImmediateDataRepr, MessageRepr};

/// One untagged segment on the Send queue, as a peer may craft it.
fn segment(opcode: Opcode, invalidate: u32, msn: u32, mo: u32, last: bool, body: Body) -> Vec<u8> {
    let m = MessageRepr {
        ddp: SegmentRepr::Untagged(UntaggedRepr::new(
            last,
            Control::new(opcode).0,
            invalidate,
            0,
            msn,
            mo,
        )),
        body,
    };
    let mut out = vec![0; m.buffer_len()];
    m.emit(&mut out).unwrap();
    out
}

fn data(opcode: Opcode, invalidate: u32, mo: u32, last: bool) -> Vec<u8> {
    segment(opcode, invalidate, 1, mo, last, Body::Data(&[0x5a; 8]))
}

/// `b` with one 64-byte receive posted (wr_id 1), then the two segments.
fn deliver(setup: Setup, first: &[u8], second: &[u8]) -> Pair {
    let mut p = Pair::new(setup);
    let r = p.b.register(Access::LOCAL_WRITE, vec![0; 64]);
    let s = p.b.sge(r);
    p.b.recv(1, vec![s]);
    p.inject_to_b(&fpdu(first));
    p.drive();
    assert!(
        p.b.completions().is_empty(),
        "half a message completes nothing"
    );
    p.inject_to_b(&fpdu(second));
    p.drive();
    p
}

/// The receive being filled failed with `status`.
fn receive_failed(p: &Pair, status: WcStatus) {
    let c = p.b.completions();
    assert_eq!((c[0].wr_id, c[0].status), (1, status), "{c:?}");
    assert_eq!(c[0].invalidated, None);
    assert!(c.iter().all(|w| w.status != WcStatus::Success), "{c:?}");
}

#[test]
fn an_opcode_that_changes_inside_a_send_is_unexpected() {
    let second = data(Opcode::SendInvalidate, 0, 8, true);
    let p = deliver(Setup::default(), &data(Opcode::Send, 0, 0, false), &second);
    assert_terminate(
        &p.b,
        [0x02, 0x06, 0xc0, 0x00],
        &attach(second.len(), &second[..18]),
    );
    receive_failed(&p, WcStatus::RemOpErr);
}

#[test]
fn a_solicited_flag_that_changes_inside_a_send_is_unexpected() {
    let second = data(Opcode::SendSolicited, 0, 8, true);
    let p = deliver(Setup::default(), &data(Opcode::Send, 0, 0, false), &second);
    assert_terminate(
        &p.b,
        [0x02, 0x06, 0xc0, 0x00],
        &attach(second.len(), &second[..18]),
    );
    receive_failed(&p, WcStatus::RemOpErr);
}

#[test]
fn immediate_data_cannot_complete_a_half_received_send() {
    let setup = Setup {
        rfc7306: true,
        ..Setup::default()
    };
    let imm = segment(
        Opcode::ImmediateData,
        0,
        1,
        8,
        true,
        Body::Immediate(ImmediateDataRepr::from_imm(7)),
    );
    let p = deliver(setup, &data(Opcode::Send, 0, 0, false), &imm);
    assert_terminate(
        &p.b,
        [0x02, 0x06, 0xc0, 0x00],
        &attach(imm.len(), &imm[..18]),
    );
    receive_failed(&p, WcStatus::RemOpErr);
    assert!(p
        .b
        .completions()
        .iter()
        .all(|w| w.opcode != WcOpcode::RecvImm));
}

/// `b`'s region a Send with Invalidate may name.
fn invalidatable(p: &mut Pair) -> STag {
    p.b.register_with(Access::REMOTE_WRITE, vec![0; 8], true, PD)
}

#[test]
fn an_invalidate_stag_that_changes_inside_a_send_cannot_be_invalidated() {
    let mut p = Pair::new(Setup::default());
    let (x, y) = (invalidatable(&mut p), invalidatable(&mut p));
    let second = data(Opcode::SendInvalidate, y.0, 8, true);
    let r = p.b.register(Access::LOCAL_WRITE, vec![0; 64]);
    let s = p.b.sge(r);
    p.b.recv(1, vec![s]);
    p.inject_to_b(&fpdu(&data(Opcode::SendInvalidate, x.0, 0, false)));
    p.inject_to_b(&fpdu(&second));
    p.drive();
    assert_terminate(
        &p.b,
        [0x02, 0x09, 0xc0, 0x00],
        &attach(second.len(), &second[..18]),
    );
    receive_failed(&p, WcStatus::RemInvReqErr);
    let mem = &p.b.mem;
    assert!(
        ddp::memory::Memory::region(mem, x).is_some(),
        "x stays valid"
    );
    assert!(
        ddp::memory::Memory::region(mem, y).is_some(),
        "y stays valid"
    );
}

#[test]
fn a_send_with_invalidate_whose_segments_agree_invalidates() {
    let mut p = Pair::new(Setup::default());
    let x = invalidatable(&mut p);
    let r = p.b.register(Access::LOCAL_WRITE, vec![0; 64]);
    let s = p.b.sge(r);
    p.b.recv(1, vec![s]);
    p.inject_to_b(&fpdu(&data(Opcode::SendInvalidate, x.0, 0, false)));
    p.inject_to_b(&fpdu(&data(Opcode::SendInvalidate, x.0, 8, true)));
    p.drive();
    let c = p.b.completions();
    assert_eq!(
        (c[0].status, c[0].byte_len, c[0].invalidated),
        (WcStatus::Success, 16, Some(x))
    );
    assert!(ddp::memory::Memory::region(&p.b.mem, x).is_none());
}
