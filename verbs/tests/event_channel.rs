//! Event channels: armed completion queues and watched queue pairs and
//! listeners make a descriptor readable, with a progress thread and with
//! the caller driving the device from its own poll loop (over the memory
//! link and over kernel TCP, whose readiness descriptor is an epoll set).

use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::transport::poll_readable;
use verbs::{
    wr, AcceptParams, Access, CmEvent, ConnectParams, Device, EventChannel, ListenOptions,
    NotifyOn, QpInit, VerbsError,
};

const PORT: u16 = 4791;
const LONG: Duration = Duration::from_secs(10);

fn devices() -> (Device, Device, std::net::SocketAddr) {
    let cfg = MemoryLinkConfig::default();
    let (a, b) = MemoryLink::pair(&cfg).unwrap();
    (
        Device::new(Box::new(a)),
        Device::new(Box::new(b)),
        cfg.endpoint_b(PORT),
    )
}

#[test]
fn a_queue_without_a_channel_refuses_to_arm() {
    let (a, _b, _) = devices();
    let cq = a.create_cq(4);
    assert!(matches!(
        cq.req_notify(NotifyOn::Any),
        Err(VerbsError::NoChannel)
    ));
}

#[test]
fn with_a_progress_thread_channels_fire_for_requests_events_and_armed_completions() {
    let (client, server, addr) = devices();
    let _threads = (
        client.spawn_progress_thread(),
        server.spawn_progress_thread(),
    );
    let (cch, sch) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());

    let listener = server.listen(PORT, ListenOptions::default()).unwrap();
    listener.watch_requests(&sch);
    let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
    let ccq = client.create_cq_with_channel(16, &cch);
    let scq = server.create_cq_with_channel(16, &sch);
    let cqp = client.create_qp(&cpd, QpInit::new(&ccq)).unwrap();
    let sqp = server.create_qp(&spd, QpInit::new(&scq)).unwrap();
    cqp.watch_events(&cch);

    let rbuf = spd.register(64, Access::LOCAL_WRITE).unwrap();
    for i in 0..2 {
        sqp.post_recv(wr::recv(i, vec![rbuf.sge(0, 64).unwrap()]))
            .unwrap();
    }
    cqp.connect(addr, ConnectParams::default()).unwrap();
    assert!(sch.wait(LONG).unwrap(), "the listener's channel fires");
    let req = listener.try_request().expect("a request after the fire");
    req.accept(&sqp, AcceptParams::default()).unwrap();
    assert!(cch.wait(LONG).unwrap(), "the queue pair's channel fires");
    assert!(matches!(cqp.try_event(), Some(CmEvent::Established(_))));

    // Armed for solicited completions only: a plain Send lands without a
    // fire, a solicited one fires.
    // The listener's channel is level-triggered: it fired again while the
    // request waited untaken. Start clean.
    sch.ack();
    scq.req_notify(NotifyOn::Solicited).unwrap();
    let sbuf = cpd.register_vec(b"hello".to_vec(), Access::NONE).unwrap();
    cqp.post_send(wr::send(1, vec![sbuf.sge_all()])).unwrap();
    let wc = ccq.wait_one(LONG).unwrap().expect("send completes");
    assert!(wc.is_success());
    let plain = scq.wait_one(LONG).unwrap().expect("plain receive");
    assert!(!plain.solicited);
    assert!(!sch.ack(), "a plain receive does not fire a solicited arm");
    cqp.post_send(wr::send_solicited(2, vec![sbuf.sge_all()]))
        .unwrap();
    assert!(sch.wait(LONG).unwrap(), "the solicited receive fires");
    let wc = scq.poll_one().unwrap().expect("queued before the fire");
    assert!(wc.solicited && wc.is_success());
    assert_eq!(wc.byte_len, 5);
}

/// One thread, no progress threads: the loop waits on both devices'
/// readiness descriptors and the channels, and runs progress when any
/// fires or the devices' poll delay passes.
struct Loop {
    devices: Vec<(Device, OwnedFd)>,
    /// Waits that ended because a readiness descriptor was readable.
    readiness_wakes: usize,
}

impl Loop {
    fn new(devices: &[&Device]) -> Loop {
        Loop {
            devices: devices
                .iter()
                .map(|d| {
                    let fd = d.readiness_fd().expect("the transport has one");
                    ((*d).clone(), fd)
                })
                .collect(),
            readiness_wakes: 0,
        }
    }

    /// Drives until `channel` fires; acks it.
    fn until(&mut self, channel: &EventChannel) {
        let deadline = Instant::now() + LONG;
        while Instant::now() < deadline {
            for (d, _) in &self.devices {
                d.progress();
            }
            let delay = self
                .devices
                .iter()
                .filter_map(|(d, _)| d.poll_delay())
                .min()
                .unwrap_or(LONG)
                .min(deadline.saturating_duration_since(Instant::now()));
            let mut fds = vec![channel.as_fd()];
            fds.extend(self.devices.iter().map(|(_, fd)| fd.as_fd()));
            let ready = poll_readable(&fds, Some(delay)).unwrap();
            if ready[1..].iter().any(|&r| r) {
                self.readiness_wakes += 1;
            }
            if ready[0] {
                assert!(channel.ack());
                return;
            }
        }
        panic!(
            "the channel did not fire (after {} readiness wakes)",
            self.readiness_wakes
        );
    }
}

#[test]
fn a_caller_driven_loop_over_readiness_descriptors_needs_no_thread() {
    let (client, server, addr) = devices();
    caller_driven_loop(client, server, PORT, |port| {
        assert_eq!(port, PORT);
        addr
    });
}

#[test]
fn a_caller_driven_loop_over_kernel_tcp_needs_no_thread() {
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};
    use verbs::transport::kernel::{KernelConfig, KernelTransport};
    let cfg = KernelConfig::default().bind_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let client = Device::new(Box::new(KernelTransport::new(cfg.clone())));
    let server = Device::new(Box::new(KernelTransport::new(cfg)));
    caller_driven_loop(client, server, 0, |port| {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    });
}

/// Connect and accept, then an RDMA Write, an RDMA Read and a Send, with
/// one thread driving both devices through [`Loop`].
fn caller_driven_loop(
    client: Device,
    server: Device,
    listen_port: u16,
    addr_of: impl Fn(u16) -> std::net::SocketAddr,
) {
    let mut ev = Loop::new(&[&client, &server]);
    let (cch, sch) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let listener = server
        .listen(listen_port, ListenOptions::default())
        .unwrap();
    listener.watch_requests(&sch);
    let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
    let ccq = client.create_cq_with_channel(16, &cch);
    let scq = server.create_cq_with_channel(16, &sch);
    let cqp = client.create_qp(&cpd, QpInit::new(&ccq)).unwrap();
    let sqp = server.create_qp(&spd, QpInit::new(&scq)).unwrap();
    cqp.watch_events(&cch);

    cqp.connect(addr_of(listener.port()), ConnectParams::default())
        .unwrap();
    ev.until(&sch);
    let req = listener.try_request().expect("request");
    req.accept(&sqp, AcceptParams::default()).unwrap();
    ev.until(&cch);
    assert!(matches!(cqp.try_event(), Some(CmEvent::Established(_))));

    // An RDMA Write; the client's queue is armed first, then drained.
    let target = spd.register(32, Access::ALL).unwrap();
    let src = cpd.register_vec(vec![7; 32], Access::NONE).unwrap();
    ccq.req_notify(NotifyOn::Any).unwrap();
    assert!(ccq.poll_one().unwrap().is_none());
    cqp.post_send(wr::write(
        9,
        vec![src.sge_all()],
        target.rkey(),
        target.addr(),
    ))
    .unwrap();
    ev.until(&cch);
    let wc = ccq.poll_one().unwrap().expect("the write's completion");
    assert_eq!((wc.wr_id, wc.is_success()), (9, true));

    // An RDMA Read of part of it back into a fresh client buffer (a
    // Write completes once sent; the Read behind it sees it placed).
    let sink = cpd.register(8, Access::LOCAL_WRITE).unwrap();
    ccq.req_notify(NotifyOn::Any).unwrap();
    assert!(ccq.poll_one().unwrap().is_none());
    cqp.post_send(wr::read(
        10,
        sink.sge(0, 8).unwrap(),
        target.rkey(),
        target.addr(),
    ))
    .unwrap();
    ev.until(&cch);
    let wc = ccq.poll_one().unwrap().expect("the read's completion");
    assert_eq!((wc.wr_id, wc.is_success()), (10, true));
    assert_eq!(sink.to_vec(), [7; 8]);

    // A Send into a posted receive; the server's queue fires.
    let rbuf = spd.register(16, Access::LOCAL_WRITE).unwrap();
    sqp.post_recv(wr::recv(11, vec![rbuf.sge_all()])).unwrap();
    scq.req_notify(NotifyOn::Any).unwrap();
    assert!(scq.poll_one().unwrap().is_none());
    let msg = cpd.register_vec(b"hello".to_vec(), Access::NONE).unwrap();
    cqp.post_send(wr::send(12, vec![msg.sge_all()])).unwrap();
    ev.until(&sch);
    let wc = scq.poll_one().unwrap().expect("the receive's completion");
    assert_eq!((wc.wr_id, wc.byte_len, wc.is_success()), (11, 5, true));
    assert_eq!(&rbuf.to_vec()[..5], b"hello");
    assert_eq!(client.stats().thread_turns + server.stats().thread_turns, 0);
    assert!(
        ev.readiness_wakes > 0,
        "the transports' descriptors woke the loop, not only timeouts"
    );
}
