//! Send, Write and Read carrying data end to end.

use ddp::memory::{Access, STag};

use super::util::{base, pattern, Pair, Setup};
use crate::completion::{WcOpcode, WcStatus};
use crate::connection::State;
use crate::work_request::{SendOp, SendWr, Sge};

fn send_of(len: usize, setup: Setup) -> Pair {
    let mut p = Pair::new(setup);
    let data = pattern(len, 3);
    let src = p.a.register(Access::NONE, data.clone());
    let dst = p.b.register(Access::LOCAL_WRITE, vec![0; len]);
    let sink = p.b.sge(dst);
    p.b.recv(77, vec![sink]);
    let source = p.a.sge(src);
    p.a.send(5, vec![source]);
    p.drive();
    assert!(p.b.bytes(dst) == &data[..], "len {len}");
    let rc = p.b.completions();
    assert_eq!(rc.len(), 1);
    assert_eq!(rc[0].wr_id, 77);
    assert_eq!(rc[0].status, WcStatus::Success);
    assert_eq!(rc[0].opcode, WcOpcode::Recv);
    assert_eq!(rc[0].byte_len as usize, len);
    assert_eq!(rc[0].invalidated, None);
    assert!(!rc[0].solicited);
    let sc = p.a.completions();
    assert_eq!(sc.len(), 1);
    assert_eq!(
        (sc[0].wr_id, sc[0].status, sc[0].opcode),
        (5, WcStatus::Success, WcOpcode::Send)
    );
    assert_eq!(sc[0].byte_len as usize, len);
    assert_eq!(p.a.conn.state(), State::Established);
    assert_eq!(p.b.conn.state(), State::Established);
    assert!(p.a.conn.is_idle() && p.b.conn.is_idle());
    p
}

#[test]
fn send_small() {
    send_of(64, Setup::default());
}

#[test]
fn send_zero_length() {
    send_of(0, Setup::default());
}

#[test]
fn send_sizes_around_the_segment_boundary() {
    let p = Pair::new(Setup::default());
    let room = p.a.conn.max_ulpdu() - 18;
    for len in [1, 17, room - 1, room, room + 1, 2 * room, 2 * room + 1] {
        send_of(len, Setup::default());
    }
}

#[test]
fn send_several_mebibytes() {
    let p = send_of(4 << 20, Setup::default());
    // Every FPDU fits the MSS (1460 here, a multiple of 4).
    let lens = super::util::fpdu_lengths(&p.a.wire).unwrap();
    assert!(lens.len() > 2800);
    assert!(lens.iter().all(|&l| l <= 1460));
    assert!(lens.contains(&1460), "full-size FPDUs fill the MSS exactly");
}

#[test]
fn send_without_crc() {
    send_of(
        3000,
        Setup {
            crc: false,
            ..Setup::default()
        },
    );
}

#[test]
fn send_with_markers() {
    send_of(
        100_000,
        Setup {
            markers: true,
            ..Setup::default()
        },
    );
}

#[test]
fn send_gathers_and_scatters_sgls() {
    let mut p = Pair::new(Setup::default());
    let data = pattern(5000, 9);
    let s1 = p.a.register(Access::NONE, data[..1000].to_vec());
    let s2 = p.a.register(Access::NONE, data[1000..].to_vec());
    let r1 = p.b.register(Access::LOCAL_WRITE, vec![0; 3]);
    let r2 = p.b.register(Access::LOCAL_WRITE, vec![0; 4000]);
    let r3 = p.b.register(Access::LOCAL_WRITE, vec![0; 2000]);
    let sinks = vec![p.b.sge(r1), p.b.sge(r2), p.b.sge(r3)];
    p.b.recv(1, sinks);
    let sources = vec![p.a.sge(s1), p.a.sge(s2)];
    p.a.send(2, sources);
    p.drive();
    let mut got = p.b.bytes(r1).to_vec();
    got.extend_from_slice(p.b.bytes(r2));
    got.extend_from_slice(&p.b.bytes(r3)[..1000 - 3]);
    assert_eq!(got, data);
    assert_eq!(&p.b.bytes(r3)[997..], &[0u8; 1003][..], "untouched tail");
    assert_eq!(p.b.completions()[0].byte_len, 5000);
}

#[test]
fn send_from_the_middle_of_a_region() {
    let mut p = Pair::new(Setup::default());
    let src = p.a.register(Access::NONE, pattern(100, 1));
    let dst = p.b.register(Access::LOCAL_WRITE, vec![0; 100]);
    let sink = Sge {
        stag: dst,
        to: base(dst) + 50,
        len: 50,
    };
    p.b.recv(1, vec![sink]);
    let source = Sge {
        stag: src,
        to: base(src) + 10,
        len: 20,
    };
    p.a.send(1, vec![source]);
    p.drive();
    assert_eq!(&p.b.bytes(dst)[50..70], &pattern(100, 1)[10..30]);
    assert_eq!(&p.b.bytes(dst)[..50], &[0u8; 50][..]);
}

#[test]
fn sends_fill_receives_in_order() {
    let mut p = Pair::new(Setup::default());
    let mut sinks = Vec::new();
    for i in 0..10u64 {
        let r = p.b.register(Access::LOCAL_WRITE, vec![0; 32]);
        let s = p.b.sge(r);
        p.b.recv(100 + i, vec![s]);
        sinks.push(r);
    }
    for i in 0..10u8 {
        let s = p.a.register(Access::NONE, vec![i; 32]);
        let sge = p.a.sge(s);
        p.a.send(u64::from(i), vec![sge]);
    }
    p.drive();
    for (i, r) in sinks.iter().enumerate() {
        assert_eq!(p.b.bytes(*r), &[i as u8; 32][..]);
    }
    let ids: Vec<u64> = p.b.completions().iter().map(|c| c.wr_id).collect();
    assert_eq!(ids, (100..110).collect::<Vec<_>>());
    let ids: Vec<u64> = p.a.completions().iter().map(|c| c.wr_id).collect();
    assert_eq!(ids, (0..10).collect::<Vec<_>>());
}

#[test]
fn solicited_flag_is_reported() {
    let mut p = Pair::new(Setup::default());
    for i in 0..2 {
        let r = p.b.register(Access::LOCAL_WRITE, vec![0; 8]);
        let s = p.b.sge(r);
        p.b.recv(i, vec![s]);
    }
    for solicited in [true, false] {
        let src = p.a.register(Access::NONE, vec![1; 8]);
        let sge = p.a.sge(src);
        p.a.conn
            .post_send(SendWr {
                wr_id: 9,
                op: SendOp::Send {
                    solicited,
                    invalidate: None,
                },
                sgl: vec![sge],
                signaled: true,
                fence: false,
                inline: Vec::new(),
            })
            .unwrap();
    }
    p.drive();
    let c = p.b.completions();
    assert!(c[0].solicited);
    assert!(!c[1].solicited);
}

#[test]
fn send_with_invalidate_invalidates_before_completing() {
    for solicited in [false, true] {
        let mut p = Pair::new(Setup::default());
        let victim =
            p.b.register(Access::REMOTE_WRITE | Access::LOCAL_WRITE, vec![0; 16]);
        let r = p.b.register(Access::LOCAL_WRITE, vec![0; 8]);
        let s = p.b.sge(r);
        p.b.recv(1, vec![s]);
        let src = p.a.register(Access::NONE, vec![4; 8]);
        let sge = p.a.sge(src);
        p.a.conn
            .post_send(SendWr {
                wr_id: 2,
                op: SendOp::Send {
                    solicited,
                    invalidate: Some(victim),
                },
                sgl: vec![sge],
                signaled: true,
                fence: false,
                inline: Vec::new(),
            })
            .unwrap();
        p.drive();
        let c = p.b.completions();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].status, WcStatus::Success);
        assert_eq!(c[0].invalidated, Some(victim));
        assert_eq!(c[0].solicited, solicited);
        assert!(ddp::memory::Memory::region(&p.b.mem, victim).is_none());
        // The invalidate STag travelled in the untagged header.
        let ulpdus = super::transport::ulpdus(&p.a.wire, true);
        assert_eq!(&ulpdus[0][2..6], &victim.0.to_be_bytes());
        assert_eq!(ulpdus[0][1] & 0xf, if solicited { 6 } else { 4 });
    }
}

#[test]
fn write_small() {
    let mut p = Pair::new(Setup::default());
    let data = pattern(200, 5);
    let src = p.a.register(Access::NONE, data.clone());
    let dst = p.b.register(Access::REMOTE_WRITE, vec![0; 200]);
    let (s, d) = (p.a.sge(src), p.b.sge(dst));
    p.a.write(1, vec![s], d);
    p.drive();
    assert!(p.b.bytes(dst) == &data[..]);
    let c = p.a.completions();
    assert_eq!(
        (c[0].wr_id, c[0].status, c[0].opcode, c[0].byte_len),
        (1, WcStatus::Success, WcOpcode::RdmaWrite, 200)
    );
    assert!(
        p.b.completions().is_empty(),
        "a Write completes nothing at the target"
    );
}

#[test]
fn write_one_mebibyte_into_the_middle() {
    let mut p = Pair::new(Setup::default());
    let data = pattern(1 << 20, 8);
    let src = p.a.register(Access::NONE, data.clone());
    let dst = p.b.register(Access::REMOTE_WRITE, vec![0; (1 << 20) + 100]);
    let s = p.a.sge(src);
    let d = Sge {
        stag: dst,
        to: base(dst) + 50,
        len: 0,
    };
    p.a.write(1, vec![s], d);
    p.drive();
    assert_eq!(&p.b.bytes(dst)[50..50 + (1 << 20)], &data[..]);
    assert_eq!(&p.b.bytes(dst)[..50], &[0u8; 50][..]);
    assert_eq!(p.a.completions()[0].status, WcStatus::Success);
}

#[test]
fn zero_length_write_needs_no_valid_stag() {
    let mut p = Pair::new(Setup::default());
    let d = Sge {
        stag: STag(0xdead_be00),
        to: 0,
        len: 0,
    };
    p.a.write(1, vec![], d);
    p.drive();
    assert_eq!(p.a.completions()[0].status, WcStatus::Success);
    assert_eq!(p.b.conn.state(), State::Established);
}

#[test]
fn read_small() {
    let mut p = Pair::new(Setup::default());
    let data = pattern(64, 2);
    let src = p.b.register(Access::REMOTE_READ, data.clone());
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; 64]);
    let (s, r) = (p.a.sge(sink), p.b.sge(src));
    p.a.read(3, s, r);
    p.drive();
    assert!(p.a.bytes(sink) == &data[..]);
    let c = p.a.completions();
    assert_eq!(
        (c[0].wr_id, c[0].status, c[0].opcode, c[0].byte_len),
        (3, WcStatus::Success, WcOpcode::RdmaRead, 64)
    );
    assert!(p.b.completions().is_empty());
    assert!(p.a.conn.is_idle() && p.b.conn.is_idle());
}

#[test]
fn read_multi_segment() {
    let mut p = Pair::new(Setup::default());
    let data = pattern(300_000, 4);
    let src = p.b.register(Access::REMOTE_READ, data.clone());
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; 300_000]);
    let (s, r) = (p.a.sge(sink), p.b.sge(src));
    p.a.read(3, s, r);
    p.drive();
    assert!(p.a.bytes(sink) == &data[..]);
    assert_eq!(p.a.completions()[0].byte_len, 300_000);
    let lens = super::util::fpdu_lengths(&p.b.wire).unwrap();
    assert!(lens.len() > 200 && lens.iter().all(|&l| l <= 1460));
}

#[test]
fn zero_length_read() {
    let mut p = Pair::new(Setup::default());
    p.a.conn
        .post_send(SendWr {
            wr_id: 4,
            op: SendOp::Read {
                remote_stag: STag(0x4400),
                remote_to: 0,
            },
            sgl: vec![],
            signaled: true,
            fence: false,
            inline: Vec::new(),
        })
        .unwrap();
    p.drive();
    let c = p.a.completions();
    assert_eq!((c[0].status, c[0].byte_len), (WcStatus::Success, 0));
    assert_eq!(p.b.conn.state(), State::Established);
}

#[test]
fn both_directions_at_once() {
    let mut p = Pair::new(Setup::default());
    let n = 200_000;
    let (da, db) = (pattern(n, 1), pattern(n, 2));
    // a -> b: Send, Write; b -> a: Send, Write; and Reads both ways.
    let a_src = p.a.register(Access::REMOTE_READ, da.clone());
    let b_src = p.b.register(Access::REMOTE_READ, db.clone());
    let a_recv = p.a.register(Access::LOCAL_WRITE, vec![0; n]);
    let b_recv = p.b.register(Access::LOCAL_WRITE, vec![0; n]);
    let a_win = p.a.register(Access::REMOTE_WRITE, vec![0; n]);
    let b_win = p.b.register(Access::REMOTE_WRITE, vec![0; n]);
    let a_sink = p.a.register(Access::LOCAL_WRITE, vec![0; n]);
    let b_sink = p.b.register(Access::LOCAL_WRITE, vec![0; n]);
    let (ar, br) = (p.a.sge(a_recv), p.b.sge(b_recv));
    p.a.recv(1, vec![ar]);
    p.b.recv(1, vec![br]);
    let (asrc, bsrc) = (p.a.sge(a_src), p.b.sge(b_src));
    let (awin, bwin) = (p.a.sge(a_win), p.b.sge(b_win));
    let (asink, bsink) = (p.a.sge(a_sink), p.b.sge(b_sink));
    p.a.send(10, vec![asrc]);
    p.a.write(11, vec![asrc], bwin);
    p.a.read(12, asink, bsrc);
    // The responder may only send after the initiator's first FPDU; its
    // posts wait.
    p.b.send(20, vec![bsrc]);
    p.b.write(21, vec![bsrc], awin);
    p.b.read(22, bsink, asrc);
    p.drive();
    assert!(p.b.bytes(b_recv) == &da[..]);
    assert!(p.a.bytes(a_recv) == &db[..]);
    assert!(p.b.bytes(b_win) == &da[..]);
    assert!(p.a.bytes(a_win) == &db[..]);
    assert!(p.a.bytes(a_sink) == &db[..]);
    assert!(p.b.bytes(b_sink) == &da[..]);
    let sq = |s: &super::util::Side| {
        s.completions()
            .iter()
            .filter(|c| c.opcode != WcOpcode::Recv)
            .map(|c| (c.wr_id, c.status))
            .collect::<Vec<_>>()
    };
    let rq = |s: &super::util::Side| {
        s.completions()
            .iter()
            .filter(|c| c.opcode == WcOpcode::Recv)
            .map(|c| (c.wr_id, c.status, c.byte_len))
            .collect::<Vec<_>>()
    };
    let ok = WcStatus::Success;
    assert_eq!(sq(&p.a), vec![(10, ok), (11, ok), (12, ok)]);
    assert_eq!(sq(&p.b), vec![(20, ok), (21, ok), (22, ok)]);
    assert_eq!(rq(&p.a), vec![(1, ok, n as u32)]);
    assert_eq!(rq(&p.b), vec![(1, ok, n as u32)]);
}
