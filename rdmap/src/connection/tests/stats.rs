//! `Connection::stats`: traffic each way, what is outstanding, and the
//! TERMINATE that ended the stream.

use ddp::memory::Access;

use super::util::{pattern, Pair, Setup};
use crate::connection::TerminateRecord;
use crate::term::TermCode;

#[test]
fn traffic_counts_match_the_wire_both_ways() {
    let mut p = Pair::new(Setup::default());
    let len = 3000; // three segments at an MSS-sized FPDU
    let src = p.a.register(Access::NONE, pattern(len, 1));
    let dst =
        p.b.register(Access::LOCAL_WRITE | Access::REMOTE_WRITE, vec![0; len]);
    let (s, d) = (p.a.sge(src), p.b.sge(dst));
    p.b.recv(1, vec![d]);
    p.a.send(1, vec![s]);
    p.a.write(2, vec![s], d);
    p.drive();
    let (a, b) = (p.a.conn.stats(), p.b.conn.stats());
    assert_eq!(a.bytes_sent, p.a.wire.len() as u64);
    assert_eq!(b.bytes_received, a.bytes_sent);
    assert_eq!(b.bytes_sent, p.b.wire.len() as u64);
    assert_eq!(a.bytes_received, b.bytes_sent);
    assert!(a.bytes_sent > 2 * len as u64, "headers and CRCs included");
    // One Send and one Write, however many segments each took.
    assert_eq!((a.messages_sent, b.messages_received), (2, 2));
    assert_eq!(a.sends_outstanding, 0);
    assert_eq!(a.last_terminate, None);
}

#[test]
fn outstanding_reads_count_against_ord_and_ird_until_answered() {
    let mut p = Pair::new(Setup::default());
    let remote = p.b.register(Access::REMOTE_READ, pattern(64, 2));
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; 64]);
    let (r, s) = (p.b.sge(remote), p.a.sge(sink));
    p.a.read(1, s, r);
    p.a.read(2, s, r);
    let a = p.a.conn.stats();
    assert_eq!((a.sends_outstanding, a.reads_outstanding), (2, 0));
    // The Read Requests leave; B takes them but answers nothing yet.
    let mut buf = vec![0u8; 4096];
    let n = p.a.conn.poll_transmit(&p.a.mem, &mut buf);
    let a = p.a.conn.stats();
    assert_eq!((a.reads_outstanding, a.ord_in_use, a.ord), (2, 2, 8));
    assert_eq!(p.b.conn.handle_bytes(&mut p.b.mem, &buf[..n]), n);
    let b = p.b.conn.stats();
    assert_eq!((b.ird_in_use, b.ird), (2, 8));
    assert_eq!(b.messages_received, 2);
    // Answered: nothing outstanding on either side.
    p.drive();
    let (a, b) = (p.a.conn.stats(), p.b.conn.stats());
    assert_eq!(
        (a.sends_outstanding, a.reads_outstanding, a.ord_in_use),
        (0, 0, 0)
    );
    assert_eq!(b.ird_in_use, 0);
    assert_eq!(b.messages_sent, 2, "two Read Responses");
}

#[test]
fn the_last_terminate_is_kept_with_its_side() {
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
    let sent = TerminateRecord {
        by_peer: false,
        cause: TermCode::LLP_CRC,
    };
    assert_eq!(p.b.conn.stats().last_terminate, Some(sent));
    assert_eq!(
        p.a.conn.stats().last_terminate,
        Some(TerminateRecord {
            by_peer: true,
            ..sent
        })
    );
    assert_eq!(p.b.conn.stats().messages_sent, 1, "the TERMINATE");
}
