//! The engine against a hand-driven peer on the memory link.

use super::*;
use crate::transport::memory::{MemoryLink, MemoryLinkConfig};
use crate::transport::{StreamState, CLOSE_LINGER};

const PORT: u16 = 7174;

/// Runs the engine and the peer on virtual time until `done`, at most
/// `steps` turns of 1 ms each.
fn run(
    engine: &mut Engine,
    peer: &mut dyn Transport,
    now: &mut Instant,
    steps: usize,
    mut done: impl FnMut(&mut Engine, &mut dyn Transport) -> bool,
) -> bool {
    for _ in 0..steps {
        if done(engine, peer) {
            return true;
        }
        engine.turn(*now);
        peer.poll(*now);
        *now += Duration::from_millis(1);
    }
    done(engine, peer)
}

#[test]
fn a_refused_request_closes_cleanly_although_the_peer_sent_more() {
    let cfg = MemoryLinkConfig::default();
    let (a, mut peer) = MemoryLink::pair(&cfg).unwrap();
    let mut engine = Engine::new(Box::new(a), Registry::new());
    engine.listen(PORT, ListenOptions::default()).unwrap();
    let mut now = Instant::now();
    let s = peer.connect(cfg.endpoint_a(PORT)).unwrap();
    assert!(run(&mut engine, &mut peer, &mut now, 10_000, |_, p| {
        p.state(s) == StreamState::Established
    }));
    // Not an MPA Request (the key differs), and more bytes behind it than
    // start-up reads before it refuses.
    let junk = b"GET / HTTP/1.1\r\nHost: iwarp\r\n\r\n".repeat(8);
    let queued = peer
        .send_with(s, &mut |b| {
            b[..junk.len()].copy_from_slice(&junk);
            junk.len()
        })
        .unwrap();
    assert_eq!(queued, junk.len());
    assert!(run(&mut engine, &mut peer, &mut now, 10_000, |_, p| {
        let _ = p.recv_with(s, &mut |b| b.len());
        p.state(s) == StreamState::PeerClosed
    }));
    assert_eq!(engine.closing.len(), 1, "refused and closed");
    peer.close(s);
    let closed_at = now;
    assert!(run(&mut engine, &mut peer, &mut now, 100_000, |e, p| {
        e.closing.is_empty() && p.state(s).is_terminal()
    }));
    assert_eq!(
        peer.state(s),
        StreamState::Closed,
        "FINs both ways, not a reset"
    );
    assert!(
        now.saturating_duration_since(closed_at) < CLOSE_LINGER,
        "released by the close, not by the linger"
    );
    assert!(engine.incoming.is_empty());
}

/// A queue pair bound to a stream, as `connect` leaves it.
fn connected_qp(engine: &mut Engine, remote: SocketAddr, now: Instant) -> u32 {
    let cq = CqShared::new(8);
    let limits = QpLimits {
        sq_depth: 4,
        rq_depth: 4,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let num = engine
        .create_qp(PdId(1), Arc::clone(&cq), cq, limits, None)
        .unwrap();
    engine
        .connect(num, remote, ConnectParams::default(), now)
        .unwrap();
    num
}

#[test]
fn destroying_a_queue_pair_forgets_its_stream_and_only_its_own() {
    let cfg = MemoryLinkConfig::default();
    let (a, mut peer) = MemoryLink::pair(&cfg).unwrap();
    let _listener = peer.listen(PORT).unwrap();
    let mut engine = Engine::new(Box::new(a), Registry::new());
    let now = Instant::now();
    let remote = cfg.endpoint_b(PORT);
    let nums: Vec<u32> = (0..3)
        .map(|_| connected_qp(&mut engine, remote, now))
        .collect();
    assert_eq!(engine.by_stream.len(), 3);
    assert!(engine.by_stream.consistent());
    engine.destroy_qp(nums[1], now);
    assert_eq!(
        engine.qp_order.iter().copied().collect::<Vec<_>>(),
        [nums[0], nums[2]],
        "the others keep their order"
    );
    assert_eq!(engine.by_stream.len(), 2);
    assert!(engine.by_stream.consistent());
    engine.destroy_qp(nums[0], now);
    engine.destroy_qp(nums[2], now);
    assert_eq!(engine.by_stream.len(), 0);
    assert!(engine.qp_order.is_empty());
}

/// What a queue pair's own state spans, printed (`-- --nocapture`) and
/// bounded: each of its operations walks these lines, so at hundreds of
/// busy queue pairs taking turns a larger one costs cache misses on every
/// operation, and growing it should be a decision.
#[test]
fn per_queue_pair_state_stays_within_its_cache_lines() {
    use std::mem::size_of;
    let sizes = [
        ("engine QpSlot", size_of::<QpSlot>(), 8),
        (
            "rdmap Connection",
            size_of::<rdmap::connection::Connection>(),
            16,
        ),
    ];
    for (name, bytes, max_lines) in sizes {
        let lines = bytes.div_ceil(64);
        println!("{name}: {bytes} bytes, {lines} cache lines (bound {max_lines})");
        assert!(lines <= max_lines, "{name} spans {lines} cache lines");
    }
}
