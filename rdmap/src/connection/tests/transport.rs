//! What goes on the wire: whole FPDUs, sizes, room, chunked delivery.

use ddp::memory::Access;
use proptest::prelude::*;

use super::util::{fpdu_lengths, pattern, Pair, Setup};
use crate::completion::WcStatus;
use crate::wire::MessageRepr;

/// The ULPDUs in a side's transmitted stream (no markers).
pub fn ulpdus(wire: &[u8], crc: bool) -> Vec<Vec<u8>> {
    ulpdus_with(wire, crc, false)
}

/// The ULPDUs in a side's transmitted stream, deframed with its CRC
/// checked.
pub fn ulpdus_with(wire: &[u8], crc: bool, markers: bool) -> Vec<Vec<u8>> {
    let mut d = mpa::Deframer::new(crc, markers, 65535);
    let mut out = Vec::new();
    let n = d
        .feed(wire, |u| {
            out.push(u.to_vec());
            core::ops::ControlFlow::Continue(())
        })
        .expect("our own stream deframes");
    assert_eq!(n, wire.len());
    out
}

#[test]
fn every_fpdu_we_send_parses_and_fits_the_mss() {
    for max_fpdu in [128usize, 200, 576, 1460, 9000] {
        let mut p = Pair::new(Setup {
            max_fpdu,
            ..Setup::default()
        });
        let data = pattern(50_000, 1);
        let src = p.a.register(Access::REMOTE_READ, data.clone());
        let dst =
            p.b.register(Access::LOCAL_WRITE | Access::REMOTE_WRITE, vec![0; 50_000]);
        let (s, d) = (p.a.sge(src), p.b.sge(dst));
        p.b.recv(1, vec![d]);
        p.a.send(1, vec![s]);
        p.a.write(2, vec![s], d);
        let sink = p.b.register(Access::LOCAL_WRITE, vec![0; 50_000]);
        let k = p.b.sge(sink);
        p.b.read(3, k, s);
        p.drive();
        assert!(p.b.bytes(sink) == &data[..]);
        let limit = max_fpdu & !3;
        for side in [&p.a, &p.b] {
            for len in fpdu_lengths(&side.wire).unwrap() {
                assert!(len <= limit, "FPDU {len} > {limit}");
            }
            for u in ulpdus(&side.wire, true) {
                MessageRepr::parse(&u).unwrap();
            }
        }
    }
}

#[test]
fn tiny_transmit_room_hands_out_nothing_partial() {
    let mut p = Pair::new(Setup {
        max_fpdu: 600,
        ..Setup::default()
    });
    let src = p.a.register(Access::NONE, pattern(2000, 1));
    let dst = p.b.register(Access::LOCAL_WRITE, vec![0; 2000]);
    let (s, d) = (p.a.sge(src), p.b.sge(dst));
    p.b.recv(1, vec![d]);
    p.a.send(1, vec![s]);
    let mut buf = [0u8; 16];
    // A 16-byte window cannot take the first FPDU: nothing is written.
    assert_eq!(p.a.conn.poll_transmit(&p.a.mem, &mut buf), 0);
    assert!(p.a.conn.wants_write());
    p.tx_room = 700;
    p.drive();
    assert!(p.b.bytes(dst) == &pattern(2000, 1)[..]);
    assert!(p.a.bursts.iter().all(|&b| b <= 700));
    assert!(p.a.bursts.len() >= 4, "one FPDU per burst");
}

#[test]
fn transmit_room_of_exactly_one_fpdu() {
    let mut p = Pair::new(Setup::default());
    let src = p.a.register(Access::NONE, pattern(10_000, 1));
    let dst = p.b.register(Access::LOCAL_WRITE, vec![0; 10_000]);
    let (s, d) = (p.a.sge(src), p.b.sge(dst));
    p.b.recv(1, vec![d]);
    p.a.send(1, vec![s]);
    p.tx_room = 1460;
    p.drive();
    assert!(p.b.bytes(dst) == &pattern(10_000, 1)[..]);
    assert!(p.a.bursts.iter().all(|&b| b <= 1460));
}

#[test]
fn nothing_to_send_writes_nothing() {
    let mut p = Pair::new(Setup::default());
    let mut buf = vec![0xa5u8; 4096];
    assert_eq!(p.a.conn.poll_transmit(&p.a.mem, &mut buf), 0);
    assert!(!p.a.conn.wants_write());
    assert!(buf.iter().all(|&b| b == 0xa5));
    assert!(p.a.conn.is_idle());
    assert_eq!(p.a.conn.poll_timeout(), None);
}

#[test]
fn every_split_of_a_small_exchange() {
    // Reference run, then the same stream to b fed in two pieces cut at
    // every offset.
    let build = || {
        let mut p = Pair::new(Setup::default());
        let src = p.a.register(Access::REMOTE_READ, pattern(100, 1));
        let dst =
            p.b.register(Access::LOCAL_WRITE | Access::REMOTE_WRITE, vec![0; 300]);
        let d = p.b.sge(dst);
        p.b.recv(1, vec![d]);
        let s = p.a.sge(src);
        p.a.send(1, vec![s]);
        let mut w = d;
        w.to += 100;
        p.a.write(2, vec![s], w);
        p
    };
    let mut p = build();
    let mut wire = vec![0u8; 4096];
    let n = p.a.conn.poll_transmit(&p.a.mem, &mut wire);
    let wire = &wire[..n];
    for cut in 0..=wire.len() {
        let mut q = build();
        let (x, y) = wire.split_at(cut);
        assert_eq!(q.b.conn.handle_bytes(&mut q.b.mem, x), x.len());
        assert_eq!(q.b.conn.handle_bytes(&mut q.b.mem, y), y.len());
        let dst = ddp::memory::STag::new(1, 0);
        assert_eq!(&q.b.bytes(dst)[..100], &pattern(100, 1)[..], "cut {cut}");
        assert_eq!(&q.b.bytes(dst)[100..200], &pattern(100, 1)[..], "cut {cut}");
        let mut events = Vec::new();
        while let Some(e) = q.b.conn.poll_event() {
            events.push(e);
        }
        assert_eq!(events.len(), 1, "cut {cut}");
    }
}

#[test]
fn byte_at_a_time_delivery() {
    let mut p = Pair::new(Setup::default()).chunked(1, 1);
    let data = pattern(5000, 7);
    let src = p.a.register(Access::REMOTE_READ, data.clone());
    let sink = p.b.register(Access::LOCAL_WRITE, vec![0; 5000]);
    let (s, k) = (p.a.sge(src), p.b.sge(sink));
    p.a.send(0, vec![]);
    let r = p.b.register(Access::LOCAL_WRITE, vec![]);
    let rs = p.b.sge(r);
    p.b.recv(0, vec![rs]);
    p.b.read(1, k, s);
    p.drive();
    assert!(p.b.bytes(sink) == &data[..]);
    assert_eq!(p.b.completions().len(), 2);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// A mixed workload delivered in random pieces in both directions
    /// lands exactly as delivered whole.
    #[test]
    fn random_chunking_changes_nothing(seed in any::<u64>(), max in 1usize..3000, len in 0usize..40_000, crc in any::<bool>(), markers in any::<bool>()) {
        let mut p = Pair::new(Setup { crc, markers, ..Setup::default() }).chunked(seed, max);
        let data = pattern(len, seed as u8);
        let src = p.a.register(Access::REMOTE_READ, data.clone());
        let recv = p.b.register(Access::LOCAL_WRITE, vec![0; len]);
        let win = p.b.register(Access::REMOTE_WRITE, vec![0; len]);
        let sink = p.b.register(Access::LOCAL_WRITE, vec![0; len]);
        let (s, r, w, k) = (p.a.sge(src), p.b.sge(recv), p.b.sge(win), p.b.sge(sink));
        p.b.recv(1, vec![r]);
        p.a.send(1, vec![s]);
        p.a.write(2, vec![s], w);
        p.b.read(3, k, s);
        p.drive();
        prop_assert!(p.b.bytes(recv) == &data[..]);
        prop_assert!(p.b.bytes(win) == &data[..]);
        prop_assert!(p.b.bytes(sink) == &data[..]);
        prop_assert!(p.a.completions().iter().all(|c| c.status == WcStatus::Success));
        prop_assert!(p.b.completions().iter().all(|c| c.status == WcStatus::Success));
        prop_assert_eq!(p.a.completions().len(), 2);
        prop_assert_eq!(p.b.completions().len(), 2);
    }
}

/// One `poll_transmit` with room for everything writes every segment of a
/// Send and of a Write in one run: each header carries the next offset
/// (MO, or TO), a Send's segments share one MSN, only the last has L set,
/// and the bytes arrive whole, gathered across SGEs.
#[test]
fn a_run_of_segments_in_one_call_carries_consecutive_offsets() {
    use ddp::wire::{parse_segment, SegmentRepr};

    let mut p = Pair::new(Setup::default());
    let len = 10_000;
    let data = pattern(len, 3);
    let src = p.a.register(Access::NONE, data.clone());
    let recv = p.b.register(Access::LOCAL_WRITE, vec![0; len]);
    let win = p.b.register(Access::REMOTE_WRITE, vec![0; len]);
    let (s, r, w) = (p.a.sge(src), p.b.sge(recv), p.b.sge(win));
    // Two SGEs, split off an FPDU boundary.
    let (mut s1, mut s2) = (s, s);
    s1.len = 3_001;
    s2.to += 3_001;
    s2.len = (len - 3_001) as u32;
    p.b.recv(1, vec![r]);
    p.a.send(1, vec![s1, s2]);
    p.a.write(2, vec![s1, s2], w);

    let mut out = vec![0u8; 64 * 1024];
    let n = p.a.conn.poll_transmit(&p.a.mem, &mut out);
    let us = ulpdus(&out[..n], true);
    let mut send_payload = Vec::new();
    let mut write_payload = Vec::new();
    let mut msns = Vec::new();
    let (mut send_last, mut write_last) = (0, 0);
    for u in &us {
        let (seg, payload) = parse_segment(u).expect("parses");
        match seg {
            SegmentRepr::Untagged(h) => {
                assert_eq!(h.mo as usize, send_payload.len(), "MO of each Send segment");
                msns.push(h.msn);
                send_last += usize::from(h.last);
                assert_eq!(h.last, send_payload.len() + payload.len() == len);
                send_payload.extend_from_slice(payload);
            }
            SegmentRepr::Tagged(h) => {
                assert_eq!(h.stag, w.stag);
                assert_eq!(h.to, w.to + write_payload.len() as u64, "TO");
                write_last += usize::from(h.last);
                assert_eq!(h.last, write_payload.len() + payload.len() == len);
                write_payload.extend_from_slice(payload);
            }
        }
    }
    assert!(us.len() >= 14, "both messages went in this call");
    assert_eq!((send_last, write_last), (1, 1));
    assert!(msns.iter().all(|&m| m == msns[0]), "one MSN per Send");
    assert_eq!(send_payload, data);
    assert_eq!(write_payload, data);
    // And the peer takes them.
    p.inject_to_b(&out[..n]);
    p.drive();
    assert_eq!(p.b.bytes(recv), &data[..]);
    assert_eq!(p.b.bytes(win), &data[..]);
}
