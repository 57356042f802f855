//! `QueuePair::stats` over kernel TCP on loopback: the figures of a
//! connection whose peer stops reading, and of the same connection once
//! the peer reads again.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use verbs::transport::kernel::{KernelConfig, KernelTransport};
use verbs::{
    wr, AcceptParams, Access, ConnectParams, Device, ListenOptions, MpaPhase, QpInit, QpState,
};

const TIMEOUT: Duration = Duration::from_secs(20);
const WRITE: usize = 256 * 1024;
const WRITES: u64 = 32;

fn kernel_device() -> Device {
    // Small socket buffers: a peer that stops reading backs the sender up
    // after little data.
    let cfg = KernelConfig::default()
        .bind_ip(IpAddr::V4(Ipv4Addr::LOCALHOST))
        .socket_buffers(Some(64 * 1024));
    Device::new(Box::new(KernelTransport::new(cfg)))
}

/// Waits (bounded) until `ready` holds.
fn wait_for(mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + TIMEOUT;
    while Instant::now() < deadline {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    ready()
}

#[test]
fn a_peer_that_stops_reading_shows_in_outstanding_work_and_tcp_queues() {
    let (client, server) = (kernel_device(), kernel_device());
    let _client_thread = client.spawn_progress_thread();
    let server_thread = server.spawn_progress_thread();
    let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
    let (ccq, scq) = (client.create_cq(256), server.create_cq(16));
    let cqp = client.create_qp(&cpd, QpInit::new(&ccq)).unwrap();
    let sqp = server.create_qp(&spd, QpInit::new(&scq)).unwrap();
    assert_eq!(cqp.stats().phase, MpaPhase::Idle);
    assert_eq!(cqp.stats().tcp, None);

    let listener = server.listen(0, ListenOptions::default()).unwrap();
    let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), listener.port());
    cqp.connect(addr, ConnectParams::default()).unwrap();
    let request = listener.request(TIMEOUT).expect("a connect request");
    request.accept(&sqp, AcceptParams::default()).unwrap();
    cqp.wait_established(TIMEOUT).unwrap();
    sqp.wait_established(TIMEOUT).unwrap();
    let fresh = cqp.stats();
    assert_eq!(
        (fresh.state, fresh.phase),
        (QpState::Rts, MpaPhase::Established)
    );
    assert!(fresh.tcp.is_some(), "{fresh}");

    let target = spd
        .register(
            WRITE,
            Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ,
        )
        .unwrap();
    let source = cpd.register(WRITE, Access::LOCAL_WRITE).unwrap();
    // The server stops: nothing reads its socket any more.
    drop(server_thread);
    cqp.post_send(wr::read(
        0,
        source.sge(0, 8).unwrap(),
        target.rkey(),
        target.addr(),
    ))
    .unwrap();
    for id in 1..=WRITES {
        cqp.post_send(wr::write(
            id,
            vec![source.sge_all()],
            target.rkey(),
            target.addr(),
        ))
        .unwrap();
    }
    // 8 MiB of Writes cannot all leave: the peer's window closes, the
    // sender's queues fill and the Writes behind them wait.
    let mut stuck = cqp.stats();
    let backed_up = wait_for(|| {
        stuck = cqp.stats();
        stuck.tcp.is_some_and(|t| t.send_queued > 0)
            && stuck.rdma.sends_outstanding > 1
            && stuck.rdma.bytes_sent == cqp.stats().rdma.bytes_sent
    });
    assert!(backed_up, "{stuck}");
    assert_eq!(stuck.phase, MpaPhase::Established);
    assert_eq!(
        (stuck.rdma.reads_outstanding, stuck.rdma.ord_in_use),
        (1, 1),
        "{stuck}"
    );
    assert!(stuck.rdma.bytes_sent < WRITES * WRITE as u64, "{stuck}");
    assert_eq!(stuck.rdma.last_terminate, None);
    let peer = sqp.stats();
    assert!(peer.tcp.is_some_and(|t| t.recv_queued > 0), "{peer}");
    assert_eq!(peer.rdma.ird_in_use, 0, "the Read Request was never read");

    // The server reads again: everything completes and nothing waits.
    let _server_thread = server.spawn_progress_thread();
    let mut done = 0;
    let drained = wait_for(|| {
        while let Ok(Some(wc)) = ccq.poll_one() {
            assert!(wc.is_success(), "{wc:?}");
            done += 1;
        }
        done == WRITES + 1
    });
    assert!(
        drained,
        "{done} of {} completed: {}",
        WRITES + 1,
        cqp.stats()
    );
    let (c, s) = (cqp.stats(), sqp.stats());
    assert_eq!(
        (
            c.rdma.sends_outstanding,
            c.rdma.reads_outstanding,
            c.rdma.ord_in_use
        ),
        (0, 0, 0),
        "{c}"
    );
    assert!(c.rdma.bytes_sent > WRITES * WRITE as u64);
    assert!(wait_for(
        || sqp.stats().rdma.bytes_received == c.rdma.bytes_sent
    ));
    assert_eq!(s.rdma.messages_sent, 1, "the Read Response");
    assert_eq!(cqp.stats().rdma.messages_sent, WRITES + 1);
}
