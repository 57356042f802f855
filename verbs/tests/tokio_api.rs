//! The async API on a single-threaded tokio runtime, with the runtime
//! driving both devices (no progress thread).
#![cfg(feature = "tokio")]

use std::time::Duration;

use verbs::tokio::{drive, AsyncCq, AsyncListener, AsyncQp, AsyncSrq};
use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::{
    wr, AcceptParams, Access, CmEvent, ConnectError, ConnectParams, Device, ListenOptions, QpInit,
    VerbsError, WcOpcode,
};

const PORT: u16 = 4791;
const LONG: Duration = Duration::from_secs(10);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn devices() -> (Device, Device, std::net::SocketAddr) {
    let cfg = MemoryLinkConfig::default();
    let (a, b) = MemoryLink::pair(&cfg).unwrap();
    (
        Device::new(Box::new(a)),
        Device::new(Box::new(b)),
        cfg.endpoint_b(PORT),
    )
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LONG, f).await.expect("timed out")
}

#[test]
fn connect_accept_write_read_send_and_disconnect() {
    runtime().block_on(async {
        let (client, server, addr) = devices();
        let drivers = (drive(&client).unwrap(), drive(&server).unwrap());
        assert!(drivers.0.on_runtime() && drivers.1.on_runtime());
        assert_eq!(client.stats().thread_turns, 0);

        let listener = AsyncListener::listen(&server, PORT, ListenOptions::default()).unwrap();
        let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
        let (ccq, scq) = (
            AsyncCq::new(&client, 16).unwrap(),
            AsyncCq::new(&server, 16).unwrap(),
        );
        let cqp = AsyncQp::new(client.create_qp(&cpd, QpInit::new(ccq.cq())).unwrap()).unwrap();
        let sqp = AsyncQp::new(server.create_qp(&spd, QpInit::new(scq.cq())).unwrap()).unwrap();

        let params = ConnectParams::default().private_data(b"hi".to_vec());
        let (connected, accepted) = tokio::join!(cqp.connect(addr, params), async {
            let req = within(listener.request()).await.unwrap();
            assert_eq!(req.private_data, b"hi");
            req.accept(&sqp, AcceptParams::default()).unwrap();
            sqp.established().await
        });
        connected.unwrap();
        accepted.unwrap();

        let remote = spd.register(32, Access::ALL).unwrap();
        let local = cpd.register(32, Access::LOCAL_WRITE).unwrap();
        local.write(0, &[5; 32]).unwrap();
        cqp.post_send(wr::write(
            1,
            vec![local.sge_all()],
            remote.rkey(),
            remote.addr(),
        ))
        .unwrap();
        let wc = within(ccq.next()).await.unwrap();
        assert_eq!(
            (wc.wr_id, wc.opcode, wc.is_success()),
            (1, WcOpcode::RdmaWrite, true)
        );

        // A Read after the Write sees it placed (the responder serves them
        // in order); the Write's own completion only says it was sent.
        let back = cpd.register(32, Access::LOCAL_WRITE).unwrap();
        cqp.post_send(wr::read(2, back.sge_all(), remote.rkey(), remote.addr()))
            .unwrap();
        let wc = within(ccq.next()).await.unwrap();
        assert_eq!(
            (wc.wr_id, wc.opcode, wc.is_success()),
            (2, WcOpcode::RdmaRead, true)
        );
        assert_eq!(back.to_vec(), vec![5; 32]);
        assert_eq!(remote.to_vec(), vec![5; 32]);
        local.write(0, &[9; 16]).unwrap();

        let rbuf = spd.register(8, Access::LOCAL_WRITE).unwrap();
        sqp.post_recv(wr::recv(3, vec![rbuf.sge_all()])).unwrap();
        cqp.post_send(wr::send(4, vec![local.sge(0, 8).unwrap()]))
            .unwrap();
        let got = within(scq.next_batch(2)).await.unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].wr_id, got[0].byte_len), (3, 8));
        assert_eq!(rbuf.to_vec(), vec![9; 8]);

        cqp.disconnect();
        let ev = within(sqp.next_event()).await.unwrap();
        assert!(matches!(ev, CmEvent::Disconnected { .. }), "{ev:?}");
        assert_eq!(client.stats().thread_turns, 0, "no progress thread ran");
    });
}

#[test]
fn a_rejected_connect_reports_the_private_data() {
    runtime().block_on(async {
        let (client, server, addr) = devices();
        let _drivers = (drive(&client).unwrap(), drive(&server).unwrap());
        let listener = AsyncListener::listen(&server, PORT, ListenOptions::default()).unwrap();
        let pd = client.alloc_pd();
        let cq = AsyncCq::new(&client, 4).unwrap();
        let qp = AsyncQp::new(client.create_qp(&pd, QpInit::new(cq.cq())).unwrap()).unwrap();
        let (connected, ()) = tokio::join!(qp.connect(addr, ConnectParams::default()), async {
            let req = within(listener.request()).await.unwrap();
            req.reject(b"busy").unwrap();
        });
        match connected {
            Err(VerbsError::Connect(ConnectError::Rejected { private_data })) => {
                assert_eq!(private_data, b"busy")
            }
            other => panic!("{other:?}"),
        }
    });
}

#[test]
fn over_kernel_tcp_the_runtime_drives_the_devices_too() {
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};
    use verbs::transport::kernel::{KernelConfig, KernelTransport};
    runtime().block_on(async {
        let cfg = KernelConfig::default().bind_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let client = Device::new(Box::new(KernelTransport::new(cfg.clone())));
        let server = Device::new(Box::new(KernelTransport::new(cfg)));
        let drivers = (drive(&client).unwrap(), drive(&server).unwrap());
        // Kernel TCP's readiness descriptor is an epoll set of its
        // sockets: the runtime watches it, no progress thread.
        assert!(drivers.0.on_runtime() && drivers.1.on_runtime());

        let listener = AsyncListener::listen(&server, 0, ListenOptions::default()).unwrap();
        let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), listener.listener().port());
        let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
        let (ccq, scq) = (
            AsyncCq::new(&client, 16).unwrap(),
            AsyncCq::new(&server, 16).unwrap(),
        );
        let cqp = AsyncQp::new(client.create_qp(&cpd, QpInit::new(ccq.cq())).unwrap()).unwrap();
        let sqp = AsyncQp::new(server.create_qp(&spd, QpInit::new(scq.cq())).unwrap()).unwrap();
        let rbuf = spd.register(16, Access::LOCAL_WRITE).unwrap();
        sqp.post_recv(wr::recv(7, vec![rbuf.sge_all()])).unwrap();
        let (connected, accepted) =
            tokio::join!(cqp.connect(addr, ConnectParams::default()), async {
                let req = within(listener.request()).await.unwrap();
                req.accept(&sqp, AcceptParams::default()).unwrap();
                sqp.established().await
            });
        connected.unwrap();
        accepted.unwrap();
        let msg = cpd
            .register_vec(b"over tcp".to_vec(), Access::NONE)
            .unwrap();
        cqp.post_send(wr::send(1, vec![msg.sge_all()])).unwrap();
        let got = within(scq.next()).await.unwrap();
        assert_eq!((got.wr_id, got.byte_len, got.is_success()), (7, 8, true));
        assert_eq!(&rbuf.to_vec()[..8], b"over tcp");
        assert!(within(ccq.next()).await.unwrap().is_success());
        // An RDMA Write and a Read back, the runtime still driving.
        let target = spd.register(8, Access::ALL).unwrap();
        cqp.post_send(wr::write(
            2,
            vec![msg.sge_all()],
            target.rkey(),
            target.addr(),
        ))
        .unwrap();
        // (A Write completes when sent; the Read behind it sees it placed.)
        assert!(within(ccq.next()).await.unwrap().is_success());
        let sink = cpd.register(8, Access::LOCAL_WRITE).unwrap();
        cqp.post_send(wr::read(3, sink.sge_all(), target.rkey(), target.addr()))
            .unwrap();
        let wc = within(ccq.next()).await.unwrap();
        assert_eq!((wc.wr_id, wc.is_success()), (3, true));
        assert_eq!(sink.to_vec(), b"over tcp");
        assert_eq!(target.to_vec(), b"over tcp");
        assert_eq!(
            client.stats().thread_turns + server.stats().thread_turns,
            0,
            "no progress thread ran"
        );
    });
}

#[test]
fn a_shared_receive_queue_limit_is_awaited() {
    runtime().block_on(async {
        let (client, server, addr) = devices();
        let _drivers = (drive(&client).unwrap(), drive(&server).unwrap());
        let listener = AsyncListener::listen(&server, PORT, ListenOptions::default()).unwrap();
        let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
        let (ccq, scq) = (
            AsyncCq::new(&client, 16).unwrap(),
            AsyncCq::new(&server, 16).unwrap(),
        );
        let srq = server
            .create_srq(&spd, verbs::SrqInit::new(8, 1).with_limit(2))
            .unwrap();
        let srq = AsyncSrq::new(srq).unwrap();
        let bufs = spd.register(3 * 64, Access::LOCAL_WRITE).unwrap();
        for i in 0..3 {
            srq.post_recv(wr::recv(i, vec![bufs.sge(i as usize * 64, 64).unwrap()]))
                .unwrap();
        }
        let cqp = AsyncQp::new(client.create_qp(&cpd, QpInit::new(ccq.cq())).unwrap()).unwrap();
        let sqp = AsyncQp::new(
            server
                .create_qp(&spd, QpInit::new(scq.cq()).with_srq(&srq))
                .unwrap(),
        )
        .unwrap();
        let (connected, accepted) =
            tokio::join!(cqp.connect(addr, ConnectParams::default()), async {
                let req = within(listener.request()).await.unwrap();
                req.accept(&sqp, AcceptParams::default()).unwrap();
                sqp.established().await
            });
        connected.unwrap();
        accepted.unwrap();
        for i in 0..2 {
            cqp.post_send(wr::send(i, vec![])).unwrap();
            let wc = within(scq.next()).await.unwrap();
            assert_eq!((wc.wr_id, wc.qp_num), (i, sqp.num()));
        }
        assert_eq!(
            within(srq.next_event()).await.unwrap(),
            verbs::SrqEvent::LimitReached
        );
        assert_eq!(srq.try_event(), None);
    });
}
