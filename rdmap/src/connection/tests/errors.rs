//! Every error path: the TERMINATE on the wire, byte for byte, and the
//! completions and events on both sides.

use ddp::memory::{Access, PdId, STag};

use super::transport::ulpdus;
use super::util::{base, pattern, Pair, Setup, Side};
use crate::completion::{WcOpcode, WcStatus};
use crate::connection::{Event, State};
use crate::term::{Layer, TermCode};
use crate::wire::TermLayout;
use crate::work_request::{SendOp, SendWr, Sge};

/// The DDP header of our TERMINATEs: untagged, last, queue 2, MSN 1.
const TERM_HEADER: [u8; 18] = [0x41, 0x47, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0];

/// The last ULPDU `side` sent is a TERMINATE with `control` and then
/// `attached` (DDP Segment Length and headers).
pub(super) fn assert_terminate(side: &Side, control: [u8; 4], attached: &[u8]) {
    let u = ulpdus(&side.wire, true);
    let last = u.last().expect("something was sent");
    let mut expect = TERM_HEADER.to_vec();
    expect.extend_from_slice(&control);
    expect.extend_from_slice(attached);
    assert_eq!(last, &expect, "TERMINATE bytes");
    assert_eq!(side.conn.state(), State::Error);
    assert!(!side.conn.wants_write(), "nothing after the TERMINATE");
}

/// `len` as the DDP Segment Length field, then `header`.
pub(super) fn attach(len: usize, header: &[u8]) -> Vec<u8> {
    let mut v = u16::try_from(len).unwrap().to_be_bytes().to_vec();
    v.extend_from_slice(header);
    v
}

/// The first ULPDU `side` sent.
fn first_ulpdu(side: &Side) -> Vec<u8> {
    ulpdus(&side.wire, true).remove(0)
}

pub(super) fn assert_terminated(side: &Side, by_peer: bool, cause: TermCode) {
    assert_eq!(side.terminated(), Some((by_peer, cause)));
    assert_eq!(side.conn.state(), State::Error);
}

/// a writes `len` bytes to `remote`; returns the pair after driving.
fn write_to(setup_b: impl FnOnce(&mut Side) -> Sge, len: usize) -> Pair {
    let mut p = Pair::new(Setup::default());
    let src = p.a.register(Access::NONE, pattern(len, 1));
    let s = p.a.sge(src);
    let remote = setup_b(&mut p.b);
    p.a.write(1, vec![s], remote);
    p.drive();
    p
}

fn tagged_write_error(p: &Pair, control: [u8; 4], len: usize) {
    let w = first_ulpdu(&p.a);
    assert_eq!(w.len(), 14 + len);
    assert_terminate(&p.b, control, &attach(14 + len, &w[..14]));
    let code = TermCode::new(
        Layer::from_bits(control[0] >> 4).unwrap(),
        control[0] & 0xf,
        control[1],
    );
    assert_terminated(&p.b, false, code);
    assert_terminated(&p.a, true, code);
    // The Write had been handed to the transport: it completed.
    assert_eq!(p.a.completions()[0].status, WcStatus::Success);
}

/// One test per row: b sets up the target of a's tagged Write of `len`
/// bytes, and answers with a TERMINATE whose control field is `control`
/// (layer/type, code, then the header-attached bits).
macro_rules! write_errors {
    ($($(#[doc = $doc:expr])* $name:ident: len $len:expr, control $control:expr, target $setup:expr;)*) => {
        $(
            $(#[doc = $doc])*
            #[test]
            fn $name() {
                let p = write_to($setup, $len);
                tagged_write_error(&p, $control, $len);
            }
        )*
    };
}

write_errors! {
    write_to_an_invalid_stag: len 100, control [0x11, 0x00, 0xc0, 0x00],
        target |_: &mut Side| Sge { stag: STag(0x0099_9900), to: 0x1000, len: 0 };
    write_to_a_deregistered_stag: len 100, control [0x11, 0x00, 0xc0, 0x00],
        target |b: &mut Side| {
            let s = b.register(Access::REMOTE_WRITE, vec![0; 100]);
            let sge = b.sge(s);
            b.mem.deregister(s);
            sge
        };
    write_before_the_base: len 10, control [0x11, 0x01, 0xc0, 0x00],
        target |b: &mut Side| {
            let s = b.register(Access::REMOTE_WRITE, vec![0; 100]);
            let mut sge = b.sge(s);
            sge.to -= 1;
            sge
        };
    /// DDP has no access-rights code; RDMAP's (remote protection, access
    /// rights) goes out with the DDP header.
    write_without_remote_write_access: len 100, control [0x01, 0x02, 0xc0, 0x00],
        target |b: &mut Side| {
            let s = b.register(Access::LOCAL_WRITE | Access::REMOTE_READ, vec![0; 100]);
            b.sge(s)
        };
    write_into_another_protection_domain: len 100, control [0x11, 0x02, 0xc0, 0x00],
        target |b: &mut Side| {
            let s = b.register_with(Access::REMOTE_WRITE, vec![0; 100], true, PdId(99));
            b.sge(s)
        };
    write_whose_offset_wraps: len 100, control [0x11, 0x03, 0xc0, 0x00],
        target |b: &mut Side| {
            let s = b.register(Access::REMOTE_WRITE, vec![0; 100]);
            Sge { stag: s, to: u64::MAX - 9, len: 0 }
        };
}

#[test]
fn write_past_the_end() {
    let p = write_to(
        |b| {
            let s = b.register(Access::REMOTE_WRITE, vec![0; 100]);
            let mut sge = b.sge(s);
            sge.to += 1;
            sge
        },
        100,
    );
    tagged_write_error(&p, [0x11, 0x01, 0xc0, 0x00], 100);
    assert_eq!(
        p.b.bytes(STag::new(1, 0)),
        &[0u8; 100][..],
        "nothing placed"
    );
}

/// Three segments of one Write arrive together, the third running past
/// the end of the region: the first two are placed, the third is refused
/// with a base-or-bounds TERMINATE quoting its header, and nothing of it
/// lands.
#[test]
fn a_run_of_write_segments_refuses_the_one_leaving_the_region() {
    let mut p = Pair::new(Setup::default());
    let s = p.b.register(Access::REMOTE_WRITE, vec![0; 100]);
    let base = p.b.sge(s).to;
    let segment = |last: bool, at: u64, fill: u8| {
        let mut u = vec![if last { 0xc1 } else { 0x81 }, 0x40];
        u.extend_from_slice(&s.0.to_be_bytes());
        u.extend_from_slice(&(base + at).to_be_bytes());
        u.extend_from_slice(&[fill; 40]);
        u
    };
    let third = segment(true, 80, 3);
    let mut stream = fpdu(&segment(false, 0, 1));
    stream.extend(fpdu(&segment(false, 40, 2)));
    stream.extend(fpdu(&third));
    p.inject_to_b(&stream);
    p.drive();
    assert_terminate(
        &p.b,
        [0x11, 0x01, 0xc0, 0x00],
        &attach(third.len(), &third[..14]),
    );
    assert_terminated(&p.b, false, TermCode::DDP_T_BASE_BOUNDS);
    let mut want = vec![1u8; 40];
    want.extend([2u8; 40]);
    want.extend([0u8; 20]);
    assert_eq!(p.b.bytes(s), &want[..]);
}

/// a reads 64 bytes from whatever `setup_b` returns.
fn read_from(setup_b: impl FnOnce(&mut Side) -> Sge) -> Pair {
    let mut p = Pair::new(Setup::default());
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; 64]);
    let k = p.a.sge(sink);
    let remote = setup_b(&mut p.b);
    p.a.read(1, k, remote);
    p.drive();
    p
}

fn read_source_error(p: &Pair, code: u8) {
    let rr = first_ulpdu(&p.a);
    assert_eq!(rr.len(), 46);
    assert_terminate(&p.b, [0x01, code, 0xe0, 0x00], &attach(46, &rr));
    let cause = TermCode::new(Layer::Rdmap, 1, code);
    assert_terminated(&p.b, false, cause);
    assert_terminated(&p.a, true, cause);
    let c = p.a.completions();
    assert_eq!(c.len(), 1);
    assert_eq!(
        (c[0].wr_id, c[0].status, c[0].opcode),
        (1, WcStatus::RemAccessErr, WcOpcode::RdmaRead)
    );
    assert_eq!(p.a.bytes(STag::new(1, 0)), &[0u8; 64][..]);
}

/// One test per row: a reads 64 bytes from the source b sets up, and b
/// answers with RDMAP's remote-protection TERMINATE carrying `code`.
macro_rules! read_source_errors {
    ($($name:ident: code $code:expr, source $setup:expr;)*) => {
        $(
            #[test]
            fn $name() {
                let p = read_from($setup);
                read_source_error(&p, $code);
            }
        )*
    };
}

read_source_errors! {
    read_from_an_invalid_stag: code 0,
        source |_: &mut Side| Sge { stag: STag(0x0055_5500), to: 0, len: 0 };
    read_past_the_end: code 1,
        source |b: &mut Side| {
            let s = b.register(Access::REMOTE_READ, vec![0; 63]);
            b.sge(s)
        };
    read_without_remote_read_access: code 2,
        source |b: &mut Side| {
            let s = b.register(Access::REMOTE_WRITE | Access::LOCAL_WRITE, vec![0; 64]);
            b.sge(s)
        };
    read_from_another_protection_domain: code 3,
        source |b: &mut Side| {
            let s = b.register_with(Access::REMOTE_READ, vec![0; 64], true, PdId(3));
            b.sge(s)
        };
    read_whose_source_offset_wraps: code 4,
        source |b: &mut Side| {
            let s = b.register(Access::REMOTE_READ, vec![0; 64]);
            Sge { stag: s, to: u64::MAX - 10, len: 0 }
        };
}

#[test]
fn read_source_deregistered_while_answering() {
    let mut p = Pair::new(Setup::default());
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; 64]);
    let src = p.b.register(Access::REMOTE_READ, vec![1; 64]);
    let (k, s) = (p.a.sge(sink), p.b.sge(src));
    p.a.read(1, k, s);
    // Deliver the request, then pull the region before b answers.
    let mut buf = vec![0u8; 4096];
    let n = p.a.conn.poll_transmit(&p.a.mem, &mut buf);
    p.a.wire.extend_from_slice(&buf[..n]);
    assert_eq!(p.b.conn.handle_bytes(&mut p.b.mem, &buf[..n]), n);
    p.b.mem.deregister(src);
    p.drive();
    let rr = first_ulpdu(&p.a);
    assert_terminate(&p.b, [0x01, 0x00, 0xe0, 0x00], &attach(46, &rr));
    assert_eq!(p.a.completions()[0].status, WcStatus::RemAccessErr);
}

#[test]
fn send_longer_than_the_receive() {
    let mut p = Pair::new(Setup::default());
    let r = p.b.register(Access::LOCAL_WRITE, vec![0; 10]);
    let rs = p.b.sge(r);
    p.b.recv(7, vec![rs]);
    let src = p.a.register(Access::NONE, pattern(100, 1));
    let s = p.a.sge(src);
    p.a.send(1, vec![s]);
    p.drive();
    let send = first_ulpdu(&p.a);
    assert_terminate(&p.b, [0x12, 0x05, 0xc0, 0x00], &attach(118, &send[..18]));
    assert_terminated(&p.b, false, TermCode::DDP_UT_TOO_LONG);
    assert_terminated(&p.a, true, TermCode::DDP_UT_TOO_LONG);
    let c = p.b.completions();
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].wr_id, c[0].status), (7, WcStatus::LocLenErr));
    assert_eq!(p.b.bytes(r), &[0u8; 10][..]);
}

#[test]
fn send_with_no_receive_posted() {
    let mut p = Pair::new(Setup::default());
    let src = p.a.register(Access::NONE, pattern(10, 1));
    let s = p.a.sge(src);
    p.a.send(1, vec![s]);
    p.drive();
    let send = first_ulpdu(&p.a);
    assert_terminate(&p.b, [0x12, 0x02, 0xc0, 0x00], &attach(28, &send[..18]));
    assert_terminated(&p.a, true, TermCode::DDP_UT_NO_BUFFER);
    assert!(p.b.completions().is_empty());
}

#[test]
fn reads_beyond_ird_terminate_the_stream() {
    let setup = Setup {
        ord: 4,
        ird: 4,
        ..Setup::default()
    };
    let mut cb = super::util::config(crate::connection::Role::Responder, &setup);
    cb.negotiated.ird = 1;
    let ca = super::util::config(crate::connection::Role::Initiator, &setup);
    let mut p = Pair::with_configs(setup, ca, cb);
    let src = p.b.register(Access::REMOTE_READ, vec![1; 64]);
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; 128]);
    let s = p.b.sge(src);
    let mut k = p.a.sge(sink);
    k.len = 64;
    p.a.read(1, k, s);
    k.to += 64;
    p.a.read(2, k, s);
    p.drive();
    let second = ulpdus(&p.a.wire, true).remove(1);
    assert_eq!(&second[10..14], &[0, 0, 0, 2], "MSN 2 on queue 1");
    // siw's code: remote operation error, catastrophic to the stream.
    assert_terminate(&p.b, [0x02, 0x07, 0xe0, 0x00], &attach(46, &second));
    assert_terminated(&p.a, true, TermCode::RDMAP_CATASTROPHIC_STREAM);
    let c: Vec<_> =
        p.a.completions()
            .iter()
            .map(|c| (c.wr_id, c.status))
            .collect();
    assert_eq!(c, vec![(1, WcStatus::WrFlushErr), (2, WcStatus::RemOpErr)]);
}

/// Frames `ulpdu` (CRC on, no markers) as a peer would.
pub(super) fn fpdu(ulpdu: &[u8]) -> Vec<u8> {
    let mut f = mpa::Framer::new(true, false);
    let mut out = vec![0u8; ulpdu.len() + 16];
    let n = f.frame(ulpdu, &[], &mut out).unwrap();
    out.truncate(n);
    out
}

fn inject_to_b(ulpdu: &[u8]) -> Pair {
    let mut p = Pair::new(Setup::default());
    p.inject_to_b(&fpdu(ulpdu));
    p.drive();
    p
}

const SEND_1: [u8; 18] = [0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];

#[test]
fn unknown_opcodes_are_unexpected() {
    for op in [0x8u8, 0x9, 0xa, 0xb, 0xc, 0xf] {
        let mut u = SEND_1;
        u[1] = 0x40 | op;
        let p = inject_to_b(&u);
        assert_terminate(&p.b, [0x02, 0x06, 0xc0, 0x00], &attach(18, &u));
        assert_terminated(&p.b, false, TermCode::RDMAP_UNEXPECTED_OPCODE);
    }
}

/// SEND_1 with byte `at` set to `value`.
fn send_1_with(at: usize, value: u8) -> [u8; 18] {
    let mut u = SEND_1;
    u[at] = value;
    u
}

/// One test per row: a peer's ULPDU reaches b, which answers with a
/// TERMINATE of `control` and, with `attached`, the ULPDU's headers.
macro_rules! injected_errors {
    ($($(#[doc = $doc:expr])* $name:ident: $ulpdu:expr => control $control:expr, attached $attached:expr;)*) => {
        $(
            $(#[doc = $doc])*
            #[test]
            fn $name() {
                let u = $ulpdu;
                let p = inject_to_b(&u);
                let attached = if $attached { attach(u.len(), &u) } else { Vec::new() };
                assert_terminate(&p.b, $control, &attached);
            }
        )*
    };
}

injected_errors! {
    /// Read Response is tagged; here it comes untagged.
    opcode_in_the_wrong_buffer_model_is_unexpected: send_1_with(1, 0x42)
        => control [0x02, 0x06, 0xc0, 0x00], attached true;
    invalid_rdmap_version_attaches_nothing: send_1_with(1, 0x83)
        => control [0x02, 0x05, 0x00, 0x00], attached false;
    send_on_the_wrong_queue: send_1_with(9, 5)
        => control [0x12, 0x01, 0xc0, 0x00], attached true;
    read_response_nobody_asked_for: [0xc1u8, 0x42, 0, 0, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0, 0]
        => control [0x02, 0x06, 0xc0, 0x00], attached true;
}

#[test]
fn invalid_ddp_version_attaches_nothing() {
    let mut u = SEND_1;
    u[0] = 0x42;
    let p = inject_to_b(&u);
    assert_terminate(&p.b, [0x12, 0x06, 0x00, 0x00], &[]);
    let w = [0xc2u8, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
    let p = inject_to_b(&w);
    assert_terminate(&p.b, [0x11, 0x04, 0x00, 0x00], &[]);
}

#[test]
fn msn_gap() {
    let mut p = Pair::new(Setup::default());
    p.b.recv(1, vec![]);
    let mut u = SEND_1;
    u[13] = 5;
    p.inject_to_b(&fpdu(&u));
    p.drive();
    assert_terminate(&p.b, [0x12, 0x03, 0xc0, 0x00], &attach(18, &u));
    assert_eq!(p.b.completions()[0].status, WcStatus::WrFlushErr);
}

#[test]
fn first_segment_with_nonzero_offset() {
    let mut p = Pair::new(Setup::default());
    let r = p.b.register(Access::LOCAL_WRITE, vec![0; 64]);
    let rs = p.b.sge(r);
    p.b.recv(1, vec![rs]);
    let mut u = SEND_1.to_vec();
    u[17] = 8;
    u.extend_from_slice(&[1; 8]);
    p.inject_to_b(&fpdu(&u));
    p.drive();
    assert_terminate(&p.b, [0x12, 0x04, 0xc0, 0x00], &attach(26, &u[..18]));
}

#[test]
fn read_response_for_the_wrong_sink() {
    let mut p = Pair::new(Setup::default());
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; 8]);
    let k = p.a.sge(sink);
    p.a.read(
        1,
        k,
        Sge {
            stag: STag(0x100),
            to: 0,
            len: 0,
        },
    );
    let mut buf = vec![0u8; 4096];
    let n = p.a.conn.poll_transmit(&p.a.mem, &mut buf);
    p.a.wire.extend_from_slice(&buf[..n]);
    // The peer answers to another STag.
    let mut u = vec![0xc1u8, 0x42, 0, 0, 0x77, 0x00];
    u.extend_from_slice(&base(sink).to_be_bytes());
    u.extend_from_slice(&[9; 8]);
    p.inject_to_a(&fpdu(&u));
    p.drive();
    assert_terminate(&p.a, [0x11, 0x00, 0xc0, 0x00], &attach(22, &u[..14]));
    assert_eq!(p.a.completions()[0].status, WcStatus::WrFlushErr);
    assert_eq!(p.a.bytes(sink), &[0u8; 8][..]);
}

#[test]
fn corrupted_crc_is_an_llp_error() {
    let mut p = Pair::new(Setup::default());
    p.b.recv(1, vec![]);
    let mut f = fpdu(&SEND_1);
    *f.last_mut().unwrap() ^= 0x01;
    p.inject_to_b(&f);
    p.drive();
    assert_terminate(&p.b, [0x20, 0x02, 0x00, 0x00], &[]);
    assert_terminated(&p.b, false, TermCode::LLP_CRC);
    assert_eq!(p.b.completions()[0].status, WcStatus::WrFlushErr);
}

#[test]
fn corrupted_payload_between_two_sides() {
    let mut p = Pair::new(Setup::default());
    let src = p.a.register(Access::NONE, pattern(100, 1));
    let dst = p.b.register(Access::LOCAL_WRITE, vec![0; 100]);
    let (s, d) = (p.a.sge(src), p.b.sge(dst));
    p.b.recv(1, vec![d]);
    p.a.send(1, vec![s]);
    let mut buf = vec![0u8; 4096];
    let n = p.a.conn.poll_transmit(&p.a.mem, &mut buf);
    buf[40] ^= 0x80;
    p.inject_to_b(&buf[..n]);
    p.drive();
    assert_terminate(&p.b, [0x20, 0x02, 0x00, 0x00], &[]);
    assert_terminated(&p.a, true, TermCode::LLP_CRC);
    assert_eq!(
        p.b.bytes(dst),
        &[0u8; 100][..],
        "nothing placed from a bad FPDU"
    );
    assert_eq!(p.b.completions()[0].status, WcStatus::WrFlushErr);
}

fn send_invalidate(p: &mut Pair, stag: STag) {
    let r = p.b.register(Access::LOCAL_WRITE, vec![0; 8]);
    let rs = p.b.sge(r);
    p.b.recv(1, vec![rs]);
    p.a.conn
        .post_send(SendWr {
            wr_id: 1,
            op: SendOp::Send {
                solicited: false,
                invalidate: Some(stag),
            },
            sgl: vec![],
            signaled: true,
            fence: false,
            inline: Vec::new(),
        })
        .unwrap();
    p.drive();
}

#[test]
fn send_with_invalidate_of_a_protected_stag() {
    let mut p = Pair::new(Setup::default());
    let v =
        p.b.register_with(Access::REMOTE_WRITE, vec![0; 8], false, super::util::PD);
    send_invalidate(&mut p, v);
    let send = first_ulpdu(&p.a);
    assert_terminate(&p.b, [0x02, 0x09, 0xc0, 0x00], &attach(18, &send));
    let c = p.b.completions();
    assert_eq!(
        (c[0].status, c[0].invalidated),
        (WcStatus::RemInvReqErr, None)
    );
    assert!(ddp::memory::Memory::region(&p.b.mem, v).is_some());
}

#[test]
fn send_with_invalidate_across_protection_domains() {
    let mut p = Pair::new(Setup::default());
    let v =
        p.b.register_with(Access::REMOTE_WRITE, vec![0; 8], true, PdId(4));
    send_invalidate(&mut p, v);
    let send = first_ulpdu(&p.a);
    assert_terminate(&p.b, [0x01, 0x09, 0xc0, 0x00], &attach(18, &send));
}

#[test]
fn send_with_invalidate_of_an_unknown_stag() {
    let mut p = Pair::new(Setup::default());
    send_invalidate(&mut p, STag(0x00ab_cd00));
    assert_eq!(
        p.b.terminated(),
        Some((false, TermCode::RDMAP_OPERATION_CANNOT_INVALIDATE))
    );
}

#[test]
fn local_source_buffer_error() {
    let mut p = Pair::new(Setup::default());
    p.a.send(
        1,
        vec![Sge {
            stag: STag(0x4200),
            to: 0,
            len: 4,
        }],
    );
    p.a.send(2, vec![]);
    p.drive();
    // RDMAP local catastrophic, unspecified (siw), nothing attached.
    assert_terminate(&p.a, [0x00, 0xff, 0x00, 0x00], &[]);
    let c: Vec<_> =
        p.a.completions()
            .iter()
            .map(|c| (c.wr_id, c.status))
            .collect();
    assert_eq!(
        c,
        vec![(1, WcStatus::LocProtErr), (2, WcStatus::WrFlushErr)]
    );
    assert_terminated(&p.b, true, TermCode::new(Layer::Rdmap, 0, 0xff));
}

#[test]
fn local_source_out_of_bounds() {
    let mut p = Pair::new(Setup::default());
    let src = p.a.register(Access::NONE, vec![0; 10]);
    let mut s = p.a.sge(src);
    s.len = 11;
    let dst = p.b.register(Access::REMOTE_WRITE, vec![0; 20]);
    let d = p.b.sge(dst);
    p.a.write(1, vec![s], d);
    p.drive();
    assert_eq!(p.a.completions()[0].status, WcStatus::LocProtErr);
    assert!(p.b.wire.is_empty(), "the responder never got a first FPDU");
}

#[test]
fn receive_buffer_deregistered_after_posting() {
    let mut p = Pair::new(Setup::default());
    let r = p.b.register(Access::LOCAL_WRITE, vec![0; 8]);
    let rs = p.b.sge(r);
    p.b.recv(1, vec![rs]);
    p.b.recv(2, vec![rs]);
    p.b.mem.deregister(r);
    let src = p.a.register(Access::NONE, vec![1; 8]);
    let s = p.a.sge(src);
    p.a.send(1, vec![s]);
    p.drive();
    let send = first_ulpdu(&p.a);
    assert_terminate(&p.b, [0x10, 0x00, 0xc0, 0x00], &attach(26, &send[..18]));
    let c: Vec<_> =
        p.b.completions()
            .iter()
            .map(|c| (c.wr_id, c.status))
            .collect();
    assert_eq!(
        c,
        vec![(1, WcStatus::LocProtErr), (2, WcStatus::WrFlushErr)]
    );
}

#[test]
fn read_sink_without_local_write() {
    let mut p = Pair::new(Setup::default());
    let sink = p.a.register(Access::REMOTE_READ, vec![0; 8]);
    let k = p.a.sge(sink);
    p.a.read(
        1,
        k,
        Sge {
            stag: STag(0x100),
            to: 0,
            len: 0,
        },
    );
    p.drive();
    assert_eq!(p.a.completions()[0].status, WcStatus::LocProtErr);
    assert_terminate(&p.a, [0x00, 0xff, 0x00, 0x00], &[]);
}

/// The TERMINATE of rping-mismatch-crc.pcap frame 11, CRC included.
const SIW_TERMINATE_FPDU: [u8; 44] = [
    0x00, 0x26, 0x41, 0x47, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01,
    0x00, 0x00, 0x00, 0x00, 0x11, 0x01, 0x03, 0x00, 0x00, 0x64, 0xc1, 0x42, 0x16, 0x5d, 0xf5, 0x00,
    0x00, 0x00, 0x55, 0xb3, 0xab, 0xb6, 0x2f, 0x30, 0xce, 0x52, 0x10, 0x0e,
];

#[test]
fn siw_terminate_from_the_capture_is_understood() {
    let mut p = Pair::new(Setup::default());
    p.a.recv(1, vec![]);
    p.inject_to_a(&SIW_TERMINATE_FPDU);
    p.drive();
    let e =
        p.a.events
            .iter()
            .find(|e| matches!(e, Event::Terminated { .. }))
            .unwrap();
    let Event::Terminated {
        by_peer,
        cause,
        peer,
    } = e
    else {
        unreachable!()
    };
    assert!(*by_peer);
    assert_eq!(*cause, TermCode::DDP_T_BASE_BOUNDS);
    assert_eq!(peer.unwrap().layout, TermLayout::Siw);
    assert!(p.a.wire.is_empty(), "a TERMINATE is never answered");
    assert_eq!(p.a.completions()[0].status, WcStatus::WrFlushErr);
}

#[test]
fn a_malformed_terminate_still_terminates_silently() {
    let mut u = TERM_HEADER.to_vec();
    u.extend_from_slice(&[0x20, 0x02, 0xe0, 0x00, 0x00]); // R|D|M, then cut short
    let p = inject_to_b(&u);
    assert_eq!(p.b.terminated(), Some((true, TermCode::LLP_CRC)));
    assert!(p.b.wire.is_empty());
}

#[test]
fn after_termination_posts_flush_and_nothing_more_is_sent() {
    let mut p = Pair::new(Setup::default());
    p.inject_to_a(&SIW_TERMINATE_FPDU);
    p.drive();
    p.a.send(5, vec![]);
    p.a.recv(6, vec![]);
    p.drive();
    let c: Vec<_> =
        p.a.completions()
            .iter()
            .map(|c| (c.wr_id, c.status, c.opcode))
            .collect();
    assert_eq!(
        c,
        vec![
            (5, WcStatus::WrFlushErr, WcOpcode::Send),
            (6, WcStatus::WrFlushErr, WcOpcode::Recv)
        ]
    );
    assert!(p.a.wire.is_empty());
    // Input after the TERMINATE is discarded.
    assert_eq!(p.a.conn.handle_bytes(&mut p.a.mem, &[1, 2, 3]), 3);
}

#[test]
fn the_peers_terminate_names_a_write_still_queued() {
    // A Read ahead of the Write keeps the Write from being reported; the
    // peer's TERMINATE then names the Write, which fails with the remote
    // status while the Read is flushed.
    let mut p = Pair::new(Setup::default());
    let src = p.b.register(Access::REMOTE_READ, vec![1; 64]);
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; 64]);
    let (k, s) = (p.a.sge(sink), p.b.sge(src));
    p.a.read(1, k, s);
    let data = p.a.register(Access::NONE, vec![2; 32]);
    let d = p.a.sge(data);
    let bad = Sge {
        stag: STag(0x0077_0000),
        to: 0,
        len: 0,
    };
    p.a.write(2, vec![d], bad);
    p.drive();
    assert_terminated(&p.a, true, TermCode::DDP_T_INVALID_STAG);
    let c: Vec<_> =
        p.a.completions()
            .iter()
            .map(|c| (c.wr_id, c.status))
            .collect();
    assert_eq!(
        c,
        vec![(1, WcStatus::WrFlushErr), (2, WcStatus::RemAccessErr)]
    );
}

#[test]
fn a_send_with_invalidate_really_revokes_the_stag() {
    let mut p = Pair::new(Setup::default());
    let win = p.b.register(Access::REMOTE_WRITE, vec![0; 8]);
    let w = p.b.sge(win);
    p.b.recv(1, vec![]);
    p.a.conn
        .post_send(SendWr {
            wr_id: 1,
            op: SendOp::Send {
                solicited: false,
                invalidate: Some(win),
            },
            sgl: vec![],
            signaled: true,
            fence: false,
            inline: Vec::new(),
        })
        .unwrap();
    let src = p.a.register(Access::NONE, vec![3; 8]);
    let s = p.a.sge(src);
    p.a.write(2, vec![s], w);
    p.drive();
    assert_eq!(p.b.completions()[0].invalidated, Some(win));
    // The Write that followed found the STag gone.
    assert_terminated(&p.b, false, TermCode::DDP_T_INVALID_STAG);
}

#[test]
fn a_terminate_needs_room_like_any_fpdu() {
    let mut p = Pair::new(Setup::default());
    p.a.send(1, vec![]);
    let mut buf = vec![0u8; 4096];
    let n = p.a.conn.poll_transmit(&p.a.mem, &mut buf);
    assert_eq!(p.b.conn.handle_bytes(&mut p.b.mem, &buf[..n]), n);
    let mut small = [0xa5u8; 47];
    assert_eq!(p.b.conn.poll_transmit(&p.b.mem, &mut small), 0);
    assert_eq!(small, [0xa5; 47]);
    assert!(p.b.conn.wants_write());
    let mut exact = [0u8; 48];
    assert_eq!(p.b.conn.poll_transmit(&p.b.mem, &mut exact), 48);
    assert!(!p.b.conn.wants_write());
}

#[test]
fn queue_depths_at_the_top_of_usize_do_not_overflow() {
    // The event queue is sized by both depths; a caller that does not
    // bound them must not make that sum wrap or panic.
    let mut p = Pair::new(Setup {
        sq_depth: usize::MAX,
        rq_depth: usize::MAX,
        ..Setup::default()
    });
    let r = p.b.register(Access::LOCAL_WRITE, vec![0; 8]);
    let s = p.b.sge(r);
    p.b.recv(1, vec![s]);
    p.a.send(2, vec![]);
    p.drive();
    assert_eq!(p.b.completions()[0].status, WcStatus::Success);
}
