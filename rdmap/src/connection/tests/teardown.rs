//! Closing: every outstanding work request completes, flushed.

use ddp::memory::Access;

use super::util::{pattern, Pair, Setup};
use crate::completion::{WcOpcode, WcStatus};
use crate::connection::{Event, State};

fn busy_pair() -> Pair {
    let mut p = Pair::new(Setup::default());
    let src = p.b.register(Access::REMOTE_READ, pattern(100_000, 1));
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; 100_000]);
    let (k, s) = (p.a.sge(sink), p.b.sge(src));
    for i in 0..3 {
        p.a.read(i, k, s);
    }
    for i in 3..6 {
        p.a.send(i, vec![]);
        p.b.recv(i, vec![]);
    }
    for i in 10..13 {
        p.a.recv(i, vec![]);
    }
    // Let the first READ get under way.
    p.step();
    p.step();
    p
}

#[test]
fn close_flushes_everything_in_order() {
    let mut p = busy_pair();
    p.a.conn.close();
    p.drive();
    assert_eq!(p.a.conn.state(), State::Closed);
    let c: Vec<_> =
        p.a.completions()
            .iter()
            .map(|c| (c.wr_id, c.status))
            .collect();
    let flushed: Vec<u64> = c
        .iter()
        .filter(|x| x.1 == WcStatus::WrFlushErr)
        .map(|x| x.0)
        .collect();
    assert_eq!(flushed, vec![0, 1, 2, 3, 4, 5, 10, 11, 12]);
    assert!(p.a.conn.is_idle());
    assert!(!p.a.conn.wants_write());
}

#[test]
fn posts_after_close_complete_flushed_at_once() {
    let mut p = Pair::new(Setup::default());
    p.a.conn.close();
    p.a.send(1, vec![]);
    p.a.recv(2, vec![]);
    p.drive();
    let c: Vec<_> =
        p.a.completions()
            .iter()
            .map(|c| (c.wr_id, c.status, c.opcode))
            .collect();
    assert_eq!(
        c,
        vec![
            (1, WcStatus::WrFlushErr, WcOpcode::Send),
            (2, WcStatus::WrFlushErr, WcOpcode::Recv)
        ]
    );
    assert!(p.a.wire.is_empty());
}

#[test]
fn peer_close_flushes_and_reports() {
    let mut p = busy_pair();
    p.b.conn.handle_peer_close();
    p.a.conn.handle_peer_close();
    p.drive();
    assert!(p.a.events.contains(&Event::PeerClosed));
    assert!(p.b.events.contains(&Event::PeerClosed));
    assert_eq!(
        p.a.completions()
            .iter()
            .filter(|c| c.status == WcStatus::WrFlushErr)
            .count(),
        9
    );
    // Reported once.
    p.a.conn.handle_peer_close();
    assert_eq!(p.a.conn.poll_event(), None);
}

#[test]
fn unsignaled_requests_are_flushed_too() {
    let mut p = Pair::new(Setup::default());
    p.a.conn
        .post_send(crate::work_request::SendWr {
            wr_id: 1,
            op: crate::work_request::SendOp::Send {
                solicited: false,
                invalidate: None,
            },
            sgl: vec![],
            signaled: false,
            fence: false,
            inline: Vec::new(),
        })
        .unwrap();
    p.a.conn.close();
    assert_eq!(
        p.a.conn.poll_event().map(|e| match e {
            Event::Completion(c) => (c.wr_id, c.status),
            _ => (0, WcStatus::Success),
        }),
        Some((1, WcStatus::WrFlushErr))
    );
}

#[test]
fn close_keeps_a_queued_terminate() {
    let mut p = Pair::new(Setup::default());
    p.a.send(1, vec![]); // no receive posted at b: b terminates
    let mut buf = vec![0u8; 4096];
    let n = p.a.conn.poll_transmit(&p.a.mem, &mut buf);
    assert_eq!(p.b.conn.handle_bytes(&mut p.b.mem, &buf[..n]), n);
    assert_eq!(p.b.conn.state(), State::Error);
    p.b.conn.close();
    assert_eq!(p.b.conn.state(), State::Closed);
    assert!(p.b.conn.wants_write());
    let n = p.b.conn.poll_transmit(&p.b.mem, &mut buf);
    assert_eq!(n, 48, "a TERMINATE with a DDP header");
    assert!(!p.b.conn.wants_write());
    assert_eq!(p.b.conn.poll_transmit(&p.b.mem, &mut buf), 0);
    p.inject_to_a(&buf[..n]);
    p.drive();
    assert_eq!(p.a.terminated().map(|t| t.0), Some(true));
}

/// A responder whose initiator never sends its first FPDU gives up at the
/// deadline: error, everything flushed, one event, nothing sent.
#[test]
fn a_silent_initiator_times_the_responder_out() {
    use std::time::{Duration, Instant};

    use super::util::config;
    use crate::connection::Role;

    let setup = Setup::default();
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(5);
    let mut b = config(Role::Responder, &setup);
    b.first_fpdu_deadline = Some(deadline);
    let mut a = config(Role::Initiator, &setup);
    a.first_fpdu_deadline = Some(deadline);
    let mut p = Pair::with_configs(setup, a, b);
    // An initiator has no such timer.
    assert_eq!(p.a.conn.poll_timeout(), None);
    p.b.recv(1, vec![]);
    p.b.send(2, vec![]);
    assert_eq!(p.b.conn.poll_timeout(), Some(deadline));
    p.b.conn.handle_timeout(deadline - Duration::from_millis(1));
    p.drive();
    assert_eq!(p.b.conn.state(), State::AwaitingFirstFpdu);
    p.b.conn.handle_timeout(deadline);
    p.drive();
    assert_eq!(p.b.conn.state(), State::Error);
    assert_eq!(p.b.conn.poll_timeout(), None);
    assert!(p.b.events.contains(&Event::FirstFpduTimeout));
    let flushed: Vec<_> =
        p.b.completions()
            .iter()
            .map(|c| (c.wr_id, c.status))
            .collect();
    assert_eq!(
        flushed.len(),
        2,
        "{flushed:?}: the posted receive and send, flushed"
    );
    assert!(flushed.iter().all(|&(_, s)| s == WcStatus::WrFlushErr));
    assert!(p.b.wire.is_empty(), "nothing sent");
}

/// Once the first FPDU arrived the timer is gone.
#[test]
fn the_first_fpdu_stops_the_timer() {
    use std::time::{Duration, Instant};

    use super::util::config;
    use crate::connection::Role;

    let setup = Setup::default();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut b = config(Role::Responder, &setup);
    b.first_fpdu_deadline = Some(deadline);
    let mut p = Pair::with_configs(setup, config(Role::Initiator, &setup), b);
    p.b.recv(1, vec![]);
    p.a.send(2, vec![]);
    p.drive();
    assert_eq!(p.b.conn.state(), State::Established);
    assert_eq!(p.b.conn.poll_timeout(), None);
    p.b.conn.handle_timeout(deadline + Duration::from_secs(60));
    assert_eq!(p.b.conn.state(), State::Established);
}
