//! Fenced and inline send work requests.

use ddp::memory::Access;

use super::transport::ulpdus;
use super::util::{pattern, Pair, Setup};
use crate::completion::{WcOpcode, WcStatus};
use crate::connection::DEFAULT_MAX_INLINE;
use crate::work_request::{PostError, SendOp, SendWr};

const SEND: SendOp = SendOp::Send {
    solicited: false,
    invalidate: None,
};

fn wr(wr_id: u64, op: SendOp, inline: Vec<u8>) -> SendWr {
    SendWr {
        wr_id,
        op,
        sgl: Vec::new(),
        signaled: true,
        fence: false,
        inline,
    }
}

/// Opcodes of the ULPDUs `a` has sent so far.
fn sent(p: &Pair) -> Vec<u8> {
    ulpdus(&p.a.wire, true)
        .iter()
        .map(|u| u[1] & 0x0f)
        .collect()
}

/// a Reads from b, then Sends; returns the opcodes a sent after one
/// round and at the end.
fn read_then_send(fence: bool) -> (Vec<u8>, Vec<u8>) {
    let mut p = Pair::new(Setup::default());
    let src = p.b.register(Access::REMOTE_READ, pattern(64, 1));
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; 64]);
    let rx = p.b.register(Access::LOCAL_WRITE, vec![0; 64]);
    let (s, k, r) = (p.b.sge(src), p.a.sge(sink), p.b.sge(rx));
    p.b.recv(9, vec![r]);
    p.a.read(1, k, s);
    let mut send = wr(2, SEND, b"after".to_vec());
    send.fence = fence;
    p.a.conn.post_send(send).unwrap();
    p.step();
    let first = sent(&p);
    p.drive();
    let ids: Vec<_> =
        p.a.completions()
            .iter()
            .map(|c| (c.wr_id, c.status))
            .collect();
    assert_eq!(ids, vec![(1, WcStatus::Success), (2, WcStatus::Success)]);
    assert_eq!(p.b.completions()[0].byte_len, 5);
    (first, sent(&p))
}

#[test]
fn a_fenced_send_waits_for_the_read_before_it() {
    // Unfenced, the Send follows the Read Request at once.
    assert_eq!(read_then_send(false).0, vec![1, 3]);
    let (first, all) = read_then_send(true);
    assert_eq!(first, vec![1], "the fenced Send waits");
    assert_eq!(all, vec![1, 3]);
}

#[test]
fn a_fence_after_nothing_outstanding_does_not_wait() {
    let mut p = Pair::new(Setup::default());
    let rx = p.b.register(Access::LOCAL_WRITE, vec![0; 8]);
    let r = p.b.sge(rx);
    p.b.recv(1, vec![r]);
    p.a.conn
        .post_send(wr(2, SEND, b"x".to_vec()).fenced())
        .unwrap();
    p.step();
    assert_eq!(sent(&p), vec![3]);
}

#[test]
fn inline_sends_and_writes_need_no_local_stag() {
    let mut p = Pair::new(Setup::default());
    let rx =
        p.b.register(Access::LOCAL_WRITE, vec![0; DEFAULT_MAX_INLINE]);
    let dst = p.b.register(Access::REMOTE_WRITE, vec![0; 32]);
    let (r, d) = (p.b.sge(rx), p.b.sge(dst));
    p.b.recv(7, vec![r]);
    let data = pattern(DEFAULT_MAX_INLINE, 4);
    p.a.conn.post_send(wr(1, SEND, data.clone())).unwrap();
    let write = SendOp::Write {
        remote_stag: d.stag,
        remote_to: d.to + 8,
    };
    let mut posted = b"inline write".to_vec();
    p.a.conn.post_send(wr(2, write, posted.clone())).unwrap();
    // Copied at posting: changing the caller's copy changes nothing.
    posted.fill(0);
    p.drive();
    assert_eq!(p.b.bytes(rx), &data[..]);
    assert_eq!(&p.b.bytes(dst)[8..20], b"inline write");
    let c: Vec<_> =
        p.a.completions()
            .iter()
            .map(|c| (c.wr_id, c.opcode, c.byte_len))
            .collect();
    assert_eq!(
        c,
        vec![
            (1, WcOpcode::Send, DEFAULT_MAX_INLINE as u32),
            (2, WcOpcode::RdmaWrite, 12)
        ]
    );
}

#[test]
fn inline_limits() {
    let mut p = Pair::new(Setup::default());
    let too_long = vec![0; DEFAULT_MAX_INLINE + 1];
    assert_eq!(
        p.a.conn.post_send(wr(1, SEND, too_long)),
        Err(PostError::InlineTooLong {
            len: DEFAULT_MAX_INLINE + 1,
            max: DEFAULT_MAX_INLINE
        })
    );
    let read = SendOp::Read {
        remote_stag: ddp::memory::STag(0x100),
        remote_to: 0,
    };
    assert_eq!(
        p.a.conn.post_send(wr(2, read, vec![1])),
        Err(PostError::InlineMisused)
    );
    let src = p.a.register(Access::NONE, vec![1; 4]);
    let mut both = wr(3, SEND, vec![1]);
    both.sgl.push(p.a.sge(src));
    assert_eq!(p.a.conn.post_send(both), Err(PostError::InlineMisused));
    p.drive();
    assert!(p.a.wire.is_empty());
}

#[test]
fn a_local_invalidate_revokes_after_the_requests_before_it() {
    let mut p = Pair::new(Setup::default());
    let src = p.a.register(Access::NONE, pattern(16, 2));
    let window = p.a.register(Access::REMOTE_WRITE, vec![0; 16]);
    let rx = p.b.register(Access::LOCAL_WRITE, vec![0; 16]);
    let (s, w, r) = (p.a.sge(src), p.a.sge(window), p.b.sge(rx));
    p.b.recv(1, vec![r]);
    p.a.send(1, vec![s]);
    let inv = |stag| wr(2, SendOp::LocalInvalidate { stag }, Vec::new());
    p.a.conn.post_send(inv(src)).unwrap();
    let mut unknown = inv(ddp::memory::STag(0x7700));
    unknown.wr_id = 3;
    p.a.conn.post_send(unknown).unwrap();
    let mut window_inv = inv(window);
    window_inv.wr_id = 4;
    p.a.conn.post_send(window_inv).unwrap();
    p.drive();
    // The Send gathered its bytes before the STag went.
    assert_eq!(p.b.bytes(rx), &pattern(16, 2)[..]);
    let c: Vec<_> =
        p.a.completions()
            .iter()
            .map(|c| (c.wr_id, c.status, c.opcode))
            .collect();
    assert_eq!(
        c,
        vec![
            (1, WcStatus::Success, WcOpcode::Send),
            (2, WcStatus::Success, WcOpcode::LocalInv),
            (3, WcStatus::LocProtErr, WcOpcode::LocalInv),
            (4, WcStatus::Success, WcOpcode::LocalInv),
        ]
    );
    assert!(p.a.mem.bytes(src).is_none() && p.a.mem.bytes(window).is_none());
    assert!(
        ulpdus(&p.a.wire, true).len() == 1,
        "nothing on the wire for them"
    );
    // The peer's Write to the revoked window is refused: invalid STag.
    let data = p.b.register(Access::NONE, vec![9; 8]);
    let d = p.b.sge(data);
    p.b.write(5, vec![d], w);
    p.drive();
    assert_eq!(
        p.a.terminated(),
        Some((false, crate::term::TermCode::DDP_T_INVALID_STAG))
    );
}

#[test]
fn a_local_invalidate_takes_no_sgl() {
    let mut p = Pair::new(Setup::default());
    let src = p.a.register(Access::NONE, vec![0; 4]);
    let mut w = wr(1, SendOp::LocalInvalidate { stag: src }, Vec::new());
    w.sgl.push(p.a.sge(src));
    assert_eq!(p.a.conn.post_send(w), Err(PostError::InvalidateSgl));
    let w = wr(2, SendOp::LocalInvalidate { stag: src }, vec![1]);
    assert_eq!(p.a.conn.post_send(w), Err(PostError::InvalidateSgl));
}
