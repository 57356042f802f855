//! Property checks the fuzz targets run (`fuzz/fuzz_targets/rdmap_*.rs`),
//! also run over seeds and random inputs by this crate's tests.

use core::ops::ControlFlow;

use ddp::memory::{Access, Memory, PdId, RegionTable, STag};

use crate::connection::{Connection, ConnectionConfig, Event, Negotiated, Role};
use crate::wire::atomic::{self, AtomicRequest, AtomicResponse};
use crate::wire::immediate::{self, ImmediateData};
use crate::wire::{
    AtomicOp, AtomicRequestRepr, AtomicResponseRepr, ImmediateDataRepr, MessageRepr, ReadRequest,
    ReadRequestRepr, TermControl, TerminateRepr,
};
use crate::work_request::{AtomicArgs, RecvWr, SendOp, SendWr, Sge};

/// Parses `data` every way RDMAP reads bytes. Whatever parses re-emits to
/// exactly the same bytes; whatever does not maps to a TERMINATE triple.
pub fn headers(data: &[u8]) {
    match MessageRepr::parse(data) {
        Ok(m) => {
            let mut out = vec![0xa5; m.buffer_len()];
            assert_eq!(m.emit(&mut out), Ok(data.len()), "emit length");
            assert_eq!(out, data, "message re-emits unchanged");
        }
        Err(e) => {
            let _ = e.terminate();
            let _ = crate::term::TermCause::from(e);
        }
    }
    if let Ok(t) = TerminateRepr::parse(data) {
        let mut out = vec![0xa5; t.buffer_len()];
        assert_eq!(t.emit(&mut out), Ok(data.len()));
        assert_eq!(out, data, "terminate re-emits unchanged");
    }
    if let Some(word) = data.first_chunk::<4>() {
        let (c, layout) = TermControl::recognise(*word);
        assert_eq!(c.encode(layout), *word, "control word round trip");
    }
    if let Ok(view) = ReadRequest::new_checked(data) {
        let r = ReadRequestRepr::parse(&view).expect("checked view parses");
        assert_eq!(
            &r.to_bytes()[..],
            &data[..crate::wire::read_request::HEADER_LEN]
        );
    }
}

/// RFC 7306: `data` read as an RFC 7306 ULPDU and as each of its
/// headers (what parses re-emits the same bytes; an atomic changes no bit
/// its masks keep), then as the stream of a peer to a responder that
/// agreed to RFC 7306 (the properties of [`connection`], and atomics never
/// touch a region without the right).
pub fn rfc7306(data: &[u8]) {
    rfc7306_headers(data);
    run_connection(data, true);
}

fn rfc7306_headers(data: &[u8]) {
    match MessageRepr::parse_rfc7306(data) {
        Ok(m) => {
            let mut out = vec![0xa5; m.buffer_len()];
            assert_eq!(m.emit(&mut out), Ok(data.len()), "emit length");
            assert_eq!(out, data, "message re-emits unchanged");
        }
        Err(e) => {
            let _ = crate::term::TermCause::from(e);
            assert!(
                MessageRepr::parse(data).is_err(),
                "RFC 7306 parsing refuses what RFC 5040 parsing accepts"
            );
        }
    }
    if let Ok(v) = ImmediateData::new_checked(data) {
        let r = ImmediateDataRepr::parse(&v).expect("checked view parses");
        let mut out = [0u8; immediate::HEADER_LEN];
        assert_eq!(r.emit(&mut out), Ok(out.len()));
        assert_eq!(out[..], data[..out.len()], "immediate data round trip");
    }
    if let Ok(v) = AtomicResponse::new_checked(data) {
        let r = AtomicResponseRepr::parse(&v).expect("checked view parses");
        let mut out = [0u8; atomic::RESPONSE_LEN];
        assert_eq!(r.emit(&mut out), Ok(out.len()));
        assert_eq!(out[..], data[..out.len()], "atomic response round trip");
    }
    if let Ok(v) = AtomicRequest::new_checked(data) {
        let r = AtomicRequestRepr::parse(&v).expect("checked view parses");
        let mut out = [0u8; atomic::REQUEST_LEN];
        assert_eq!(r.emit(&mut out), Ok(out.len()));
        assert_eq!(out[..], data[..out.len()], "atomic request round trip");
        let original = u64::from_be_bytes(*data.first_chunk::<8>().unwrap_or(&[0; 8]));
        let new = r.apply(original);
        let keep = !r.add_swap_mask;
        match r.op {
            AtomicOp::Swap => {
                assert_eq!(new.map(|n| n & keep), Some(original & keep), "swap mask");
            }
            AtomicOp::CmpSwap => {
                let equal = (original ^ r.compare_data) & r.compare_mask == 0;
                let n = new.unwrap_or(!original);
                assert_eq!(n & keep, original & keep, "swap mask");
                assert!(equal || n == original, "an unequal compare swaps nothing");
            }
            AtomicOp::FetchAdd if r.add_swap_mask == 0 => {
                assert_eq!(new, Some(original.wrapping_add(r.add_swap_data)));
            }
            AtomicOp::FetchAdd => assert!(new.is_some()),
            AtomicOp::Unknown(_) => assert_eq!(new, None),
        }
    }
}

const PD: PdId = PdId(1);
const REGION: usize = 256;

/// The regions of the fuzzed responder. STags are small so that the fuzzer
/// finds them: 0x100, 0x200, ...
/// STag 0x100 is a remote-write window the peer may write freely.
struct Regions {
    /// Local write: receive buffers and the READ sink.
    posted: STag,
    /// Remote read only.
    readable: STag,
    /// No access at all.
    none: STag,
    /// Local write, never posted.
    idle: STag,
    /// Remote write, but in another protection domain.
    foreign: STag,
}

fn regions(mem: &mut RegionTable) -> Regions {
    let fill = |seed: u8| -> Vec<u8> { (0..REGION).map(|i| (i as u8) ^ seed).collect() };
    let mut reg = |index: u32, access: Access, pd: PdId, invalidatable: bool| {
        let stag = STag::new(index, 0);
        mem.register(
            stag,
            pd,
            u64::from(index) << 12,
            access,
            fill(index as u8),
            invalidatable,
        );
        stag
    };
    reg(1, Access::REMOTE_WRITE | Access::LOCAL_WRITE, PD, true);
    Regions {
        posted: reg(2, Access::LOCAL_WRITE, PD, true),
        readable: reg(3, Access::REMOTE_READ, PD, false),
        none: reg(4, Access::NONE, PD, false),
        idle: reg(5, Access::LOCAL_WRITE, PD, false),
        foreign: reg(6, Access::REMOTE_WRITE, PdId(2), false),
    }
}

fn sge(stag: STag, offset: u64, len: u32) -> Sge {
    Sge {
        stag,
        to: (u64::from(stag.index()) << 12) + offset,
        len,
    }
}

/// A responder fed arbitrary bytes in chunks. Checks: no panic; consumed
/// never exceeds what was given; regions the peer has no right to write
/// keep their bytes; what the connection sends deframes cleanly and parses;
/// completions name posted work requests; at most one termination.
///
/// The first byte picks CRC, markers, the RTR and IRD; the second seeds
/// the chunk sizes; the rest is the stream.
pub fn connection(data: &[u8]) {
    run_connection(data, false);
}

/// [`connection`], returning what the run left behind, so seed tests can
/// check that an input reaches placement and completion.
pub fn connection_outcome(data: &[u8]) -> Outcome {
    run_connection(data, false)
}

/// What a [`connection`] run left behind, for tests that check the fuzzed
/// scenario reaches what it should.
#[derive(Debug, Default)]
pub struct Outcome {
    pub mem: RegionTable,
    pub completions: Vec<crate::completion::WorkCompletion>,
    pub terminated: bool,
    pub sent: usize,
}

fn run_connection(data: &[u8], rfc7306: bool) -> Outcome {
    let (cfg_byte, seed, stream) = match data {
        [a, b, rest @ ..] => (*a, *b, rest),
        _ => return Outcome::default(),
    };
    let crc = cfg_byte & 1 != 0;
    let markers = cfg_byte & 2 != 0;
    let rtr = match (cfg_byte >> 2) & 3 {
        0 => None,
        1 => Some(mpa::Rtr::Send),
        2 => Some(mpa::Rtr::Write),
        _ => Some(mpa::Rtr::Read),
    };
    let ird = u16::from((cfg_byte >> 4) & 3);
    let negotiated = Negotiated {
        rev: 2,
        crc,
        markers_tx: markers,
        markers_rx: markers,
        ird,
        ord: 2,
        rtr,
        peer_private_data: Vec::new(),
        role: Role::Responder,
        peer_ird_ord: None,
    };
    let mut cfg = ConnectionConfig::new(negotiated, PD, 512);
    cfg.sq_depth = 8;
    cfg.rq_depth = 4;
    cfg.rfc7306 = rfc7306;
    let mut conn = Connection::new(cfg);
    let mut mem = RegionTable::new();
    let r = regions(&mut mem);
    // RFC 7306 only, so the RFC 5040 target sees the regions it always
    // did: STag 0x700, the one region atomics may change, and 0x800, the
    // region our own local invalidate takes away.
    let revoked = STag::new(8, 0);
    if rfc7306 {
        mem.register(
            STag::new(7, 0),
            PD,
            7 << 12,
            Access::REMOTE_ATOMIC,
            vec![0; 64],
            false,
        );
        mem.register(revoked, PD, 8 << 12, Access::LOCAL_WRITE, vec![0; 8], false);
    }
    let protected: Vec<(STag, Vec<u8>)> = [r.readable, r.none, r.idle, r.foreign]
        .iter()
        .map(|&s| (s, mem.bytes(s).unwrap_or_default().to_vec()))
        .collect();

    // Work of our own, sent once the peer's first FPDU arrives.
    for i in 0..4u64 {
        let _ = conn.post_recv(RecvWr {
            wr_id: 100 + i,
            sgl: vec![sge(r.posted, i * 32, 32)],
        });
    }
    let posted = [
        (
            1,
            SendOp::Send {
                solicited: false,
                invalidate: None,
            },
            vec![sge(r.readable, 0, 40)],
        ),
        (
            2,
            SendOp::Write {
                remote_stag: STag(0x100),
                remote_to: 0x1000,
            },
            vec![sge(r.none, 0, 200)],
        ),
        (
            3,
            SendOp::Read {
                remote_stag: STag(0x300),
                remote_to: 0x3000,
            },
            vec![sge(r.posted, 128, 64)],
        ),
    ];
    let extended = [
        (
            4,
            SendOp::WriteImm {
                remote_stag: STag(0x100),
                remote_to: 0x1000,
                imm: 4,
            },
            vec![sge(r.readable, 0, 8)],
        ),
        (
            5,
            SendOp::SendImm {
                solicited: true,
                imm: 5,
            },
            vec![],
        ),
        (
            6,
            SendOp::Atomic {
                remote_stag: STag(0x700),
                remote_to: 0x7000,
                args: AtomicArgs::fetch_add(1),
            },
            vec![sge(r.posted, 192, 8)],
        ),
    ];
    let invalidate = (7, SendOp::LocalInvalidate { stag: revoked }, Vec::new());
    let ours = posted
        .into_iter()
        .chain(extended.into_iter().chain([invalidate]).filter(|_| rfc7306));
    for (wr_id, op, sgl) in ours {
        let _ = conn.post_send(SendWr {
            wr_id,
            op,
            sgl,
            signaled: true,
            fence: false,
            inline: Vec::new(),
        });
    }

    let mut checker = mpa::Deframer::new(crc, markers, 65535);
    let mut out = vec![0u8; 8192];
    let mut terminations = 0;
    let mut completions = Vec::new();
    let mut sent = 0;
    let mut rng = u32::from(seed) | 1;
    let mut rest = stream;
    // Each round consumes at least one byte or stops.
    for _ in 0..=stream.len() {
        rng = rng.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let take = (1 + (rng >> 16) as usize % 300).min(rest.len());
        let (chunk, tail) = rest.split_at(take);
        let used = conn.handle_bytes(&mut mem, chunk);
        assert!(used <= chunk.len(), "consumed more than given");
        rest = match rest.get(used..) {
            Some(r) => r,
            None => &[],
        };
        let _ = tail;

        let n = conn.poll_transmit(&mem, &mut out);
        assert!(n <= out.len());
        while let Some(stag) = conn.take_local_invalidate() {
            assert_eq!(stag, revoked, "only the STag we asked to invalidate");
            mem.deregister(stag);
        }
        let fed = checker
            .feed(&out[..n], |ulpdu| {
                let parsed = if rfc7306 {
                    MessageRepr::parse_rfc7306(ulpdu)
                } else {
                    MessageRepr::parse(ulpdu)
                };
                assert!(parsed.is_ok(), "we sent an unparseable ULPDU");
                ControlFlow::Continue(())
            })
            .expect("our output deframes");
        assert_eq!(fed, n);
        sent += n;

        while let Some(e) = conn.poll_event() {
            match e {
                Event::Completion(c) => {
                    assert!(matches!(c.wr_id, 1..=7 | 100..=103), "unknown wr_id");
                    completions.push(c);
                }
                Event::Terminated { .. } => terminations += 1,
                Event::PeerClosed | Event::FirstFpduTimeout => {}
            }
        }
        if used == 0 || rest.is_empty() {
            break;
        }
    }
    assert!(terminations <= 1, "terminated twice");
    for (stag, before) in protected {
        assert_eq!(
            mem.bytes(stag),
            Some(&before[..]),
            "a protected region changed"
        );
        assert!(mem.region(stag).is_some(), "a protected region vanished");
    }
    conn.close();
    while let Some(e) = conn.poll_event() {
        if let Event::Completion(c) = e {
            completions.push(c);
        }
    }
    assert!(conn.is_idle());
    Outcome {
        mem,
        completions,
        terminated: terminations == 1,
        sent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fpdu(ulpdu: &[u8]) -> Vec<u8> {
        let mut f = mpa::Framer::new(false, false);
        let mut out = vec![0u8; ulpdu.len() + 16];
        let n = f.frame(ulpdu, &[], &mut out).unwrap();
        out.truncate(n);
        out
    }

    #[test]
    fn headers_on_capture_bytes() {
        headers(&[
            0x41, 0x47, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0x11, 0x01, 0x03, 0x00,
            0x00, 0x64, 0xc1, 0x42, 0x16, 0x5d, 0xf5, 0x00, 0x00, 0x00, 0x55, 0xb3, 0xab, 0xb6,
            0x2f, 0x30,
        ]);
        headers(&[0xc1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
        headers(&[]);
    }

    #[test]
    fn connection_on_meaningful_streams() {
        // A Write into the window, a Send, a Read of the readable region,
        // then one into the protected ones.
        let mut s = vec![0x30u8, 7];
        let mut w = vec![0xc1, 0x40, 0, 0, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0x10, 0x00];
        w.extend_from_slice(&[0xee; 16]);
        s.extend(fpdu(&w));
        let mut snd = vec![0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];
        snd.extend_from_slice(&[0xdd; 8]);
        s.extend(fpdu(&snd));
        let mut rr = vec![0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0];
        rr.extend_from_slice(&[0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x10, 0]);
        rr.extend_from_slice(&[0, 0, 0, 16, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0x30, 0]);
        s.extend(fpdu(&rr));
        let mut bad = vec![0xc1, 0x40, 0, 0, 0x06, 0x00, 0, 0, 0, 0, 0, 0, 0x60, 0x00];
        bad.extend_from_slice(&[0xcc; 16]);
        let before_bad = s.len();
        s.extend(fpdu(&bad));
        let o = run_connection(&s[..before_bad], false);
        assert_eq!(
            o.mem.bytes(STag(0x100)).unwrap()[..16],
            [0xee; 16],
            "the Write landed"
        );
        assert_eq!(
            o.mem.bytes(STag(0x200)).unwrap()[..8],
            [0xdd; 8],
            "the Send landed"
        );
        assert!(!o.terminated);
        assert!(
            o.sent > 0,
            "the Read was answered and our own work went out"
        );
        let recv = o.completions.iter().find(|c| c.wr_id == 100).unwrap();
        assert_eq!((recv.status, recv.byte_len), (crate::WcStatus::Success, 8));
        let o = run_connection(&s, false);
        assert!(o.terminated, "the Write into another PD ended the stream");
        connection(&s);
        for cfg in 0u8..64 {
            s[0] = cfg;
            connection(&s);
        }
    }

    #[test]
    fn rfc7306_reaches_atomics_and_immediate_data() {
        // An atomic add on the atomic region, Immediate Data into a posted
        // receive, then an atomic on a region without the right.
        let req = |msn: u32, stag: u32, to: u64| {
            let r = AtomicRequestRepr {
                op: AtomicOp::FetchAdd,
                reserved: 0,
                request_id: msn,
                stag: STag(stag),
                to,
                add_swap_data: 5,
                add_swap_mask: 0,
                compare_data: 0,
                compare_mask: 0,
            };
            let mut u = vec![
                0x41, 0x4a, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, msn as u8, 0, 0, 0, 0,
            ];
            u.extend_from_slice(&[0; atomic::REQUEST_LEN]);
            r.emit(&mut u[18..]).unwrap();
            rfc7306_headers(&u);
            rfc7306_headers(&u[18..]);
            u
        };
        let mut s = vec![0x30u8, 7];
        s.extend(fpdu(&req(1, 0x700, 0x7008)));
        let imm = [
            0x41, 0x48, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0,
        ];
        rfc7306_headers(&imm);
        s.extend(fpdu(&imm));
        let good = s.len();
        s.extend(fpdu(&req(2, 0x300, 0x3000)));
        let o = run_connection(&s[..good], true);
        assert_eq!(o.mem.bytes(STag(0x700)).unwrap()[8..16], 5u64.to_ne_bytes());
        let recv = o.completions.iter().find(|c| c.wr_id == 100).unwrap();
        assert_eq!(
            (recv.opcode, recv.imm_data),
            (crate::WcOpcode::RecvImm, Some(9))
        );
        assert!(!o.terminated);
        assert!(
            run_connection(&s, true).terminated,
            "no atomic right on 0x300"
        );
        // Without agreement the first atomic already ends the stream.
        assert!(run_connection(&s[..good], false).terminated);
        rfc7306(&s);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn rfc7306_never_breaks_its_promises(data in proptest::collection::vec(any::<u8>(), 0..600)) {
            rfc7306(&data);
        }

        #[test]
        fn headers_never_panic(data in proptest::collection::vec(any::<u8>(), 0..96)) {
            headers(&data);
        }

        #[test]
        fn connection_never_breaks_its_promises(data in proptest::collection::vec(any::<u8>(), 0..600)) {
            connection(&data);
        }

        /// Valid frames with random header fields reach deeper states.
        #[test]
        fn connection_with_framed_random_ulpdus(
            cfg in any::<u8>(),
            ulpdus in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 1..6),
            heads in proptest::collection::vec(prop_oneof![Just(0x41u8), Just(0xc1u8)], 6),
            ops in proptest::collection::vec(0x40u8..0x48, 6),
        ) {
            let mut s = vec![cfg & !3, 1];
            for (i, mut u) in ulpdus.into_iter().enumerate() {
                let h = if heads[i] == 0xc1 { 14 } else { 18 };
                u.resize(u.len().max(h), 0);
                u[0] = heads[i];
                u[1] = ops[i];
                s.extend(fpdu(&u));
            }
            connection(&s);
        }
    }
}
