//! Client and server against each other in one process, over smoltcp on
//! the in-memory link (clean and lossy), plus peers that misbehave.

use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use verbs::transport::memory::{FaultConfig, MemoryLink, MemoryLinkConfig};
use verbs::transport::{ListenerId, StreamId, StreamState, Transport, TransportError, Waker};
use verbs::{
    wr, AcceptParams, Access, CmEvent, ConnectParams, ConnectRequest, Device, DisconnectReason,
    ListenOptions, MpaOptions, QpInit, WcOpcode,
};

use super::client_driver::{run_client, ClientConfig, ClientReport};
use super::error::{Phase, RpingError};
use super::log::Log;
use super::server_driver::{run_server, ServerConfig, ServerReport};
use super::{tcp_stats_line, RPING_IRD_ORD};
use hostile::rping::RdmaInfo;

const PORT: u16 = 7174;
/// Bound on every step, so a broken run fails instead of hanging.
const STEP: Duration = Duration::from_secs(20);

fn devices(cfg: &MemoryLinkConfig) -> (Device, Device, SocketAddr) {
    let (a, b) = MemoryLink::pair(cfg).unwrap();
    (
        Device::new(Box::new(a)),
        Device::new(Box::new(b)),
        cfg.endpoint_b(PORT),
    )
}

fn client_cfg(size: usize, count: u32) -> ClientConfig {
    ClientConfig {
        size,
        count,
        validate: true,
        verbose: false,
        timeout: Some(STEP),
        connect_timeout: STEP,
        settle: Duration::ZERO,
    }
}

fn server_cfg(size: usize) -> ServerConfig {
    ServerConfig {
        size,
        verbose: false,
        persistent: false,
        max_clients: None,
        timeout: Some(STEP),
    }
}

/// rdma_accept(id, NULL): the initiator's IRD/ORD mirrored.
fn mirror(req: &ConnectRequest) -> AcceptParams {
    AcceptParams::default()
        .private_data(Vec::new())
        .ird(req.ord.unwrap_or(RPING_IRD_ORD))
        .ord(req.ird.unwrap_or(RPING_IRD_ORD))
}

fn rping_params() -> ConnectParams {
    ConnectParams::default()
        .private_data(Vec::new())
        .ird(RPING_IRD_ORD)
        .ord(RPING_IRD_ORD)
        .mpa(MpaOptions::default())
}

type ServerResult = (Result<ServerReport, RpingError>, Vec<String>);

/// Starts a server on `server` in a thread.
fn spawn_server(
    server: Device,
    cfg: ServerConfig,
    listen: ListenOptions,
    verbose_log: bool,
) -> thread::JoinHandle<ServerResult> {
    let listener = server.listen(PORT, listen).unwrap();
    thread::spawn(move || {
        let log = Log::capture(verbose_log);
        let r = run_server(&server, listener, &mirror, &cfg, &log);
        (r, log.lines())
    })
}

fn ping_pair(
    link: &MemoryLinkConfig,
    client_size: usize,
    server_size: usize,
    count: u32,
) -> (Result<ClientReport, RpingError>, Vec<String>, ServerResult) {
    let (c, s, addr) = devices(link);
    let srv = spawn_server(s, server_cfg(server_size), ListenOptions::default(), false);
    let log = Log::capture(false);
    let mut cfg = client_cfg(client_size, count);
    cfg.verbose = true;
    let r = run_client(&c, addr, rping_params(), &cfg, &log);
    (r, log.lines(), srv.join().unwrap())
}

#[test]
fn a_hundred_verified_pings_at_each_size() {
    for size in [26, 64, 4000, 65535] {
        let (client, lines, (server, _)) = ping_pair(&MemoryLinkConfig::default(), size, size, 100);
        assert_eq!(client.unwrap(), ClientReport { pings: 100 }, "size {size}");
        let report = server.unwrap();
        assert_eq!((report.served, report.failed, report.pings), (1, 0, 100));
        let pings: Vec<&String> = lines
            .iter()
            .filter(|l| l.starts_with("ping data: "))
            .collect();
        assert_eq!(pings.len(), 100);
        assert!(pings[0].starts_with("ping data: rdma-ping-0: ABC"));
        assert!(pings[99].starts_with("ping data: rdma-ping-99: "));
        assert_eq!(pings[5].len(), "ping data: ".len() + size - 1);
        // `-v` ends with the queue pair's figures. Per ping the client
        // sends two Sends and a Read Response; the server a Read Request,
        // a Write and two Sends.
        let stats: Vec<&String> = lines
            .iter()
            .filter(|l| l.starts_with("qp stats: "))
            .collect();
        assert!(stats.len() >= 5, "{stats:?}");
        assert!(stats[0].contains("phase established"), "{stats:?}");
        assert!(
            stats[1].contains("in 300 messages, received") && stats[1].ends_with("in 400 messages"),
            "{stats:?}"
        );
        assert!(stats[2].contains("outstanding: 0 sends"), "{stats:?}");
        assert!(stats.iter().any(|l| l.contains("tcp: srtt")), "{stats:?}");
    }
}

#[test]
fn pings_survive_a_lossy_reordering_link() {
    let link = MemoryLinkConfig::default()
        .faults(
            FaultConfig::default()
                .loss(0.02)
                .latency(Duration::from_micros(200))
                .jitter(Duration::from_micros(300)),
        )
        .seed(77);
    let (c, s, addr) = devices(&link);
    let srv = spawn_server(s.clone(), server_cfg(8000), ListenOptions::default(), false);
    let client = run_client(
        &c,
        addr,
        rping_params(),
        &client_cfg(8000, 30),
        &Log::capture(false),
    );
    assert_eq!(client.unwrap().pings, 30);
    assert_eq!(srv.join().unwrap().0.unwrap().pings, 30);
    // Some of the 600-odd data frames were lost, and each was sent again
    // by one of the two ends; `--tcp-stats` prints the counters so.
    let resent: u64 = [&c, &s]
        .iter()
        .map(|d| {
            d.with_transport(|t| t.tcp_loss_stats())
                .unwrap()
                .retransmitted_segments
        })
        .sum();
    assert!(resent > 0);
    let line = tcp_stats_line(&c);
    assert!(line.starts_with("tcp: retransmitted "), "{line}");
    assert!(line.contains(" timeouts ("), "{line}");
}

#[test]
fn tcp_stats_say_so_when_the_transport_keeps_none() {
    let (a, _b) = MemoryLink::pair(&MemoryLinkConfig::default()).unwrap();
    let device = Device::new(Box::new(ResetOnClose(Box::new(a))));
    assert_eq!(
        tcp_stats_line(&device),
        "tcp: this transport keeps no loss recovery counters"
    );
}

#[test]
fn a_smaller_client_is_served_and_its_echo_fits() {
    // The server READs the client's 64 bytes into its 100-byte buffer and
    // writes back strlen + 1 = 64 bytes: rping works this way round.
    let (client, _, (server, _)) = ping_pair(&MemoryLinkConfig::default(), 64, 100, 5);
    assert_eq!(client.unwrap().pings, 5);
    assert_eq!(server.unwrap().pings, 5);
}

#[test]
fn a_larger_client_overruns_the_servers_buffer_and_both_fail() {
    // rping-mismatch-crc.pcap: server -S 64, client -S 100. The READ
    // response does not fit the server's sink: the server terminates.
    let (client, _, (server, server_lines)) = ping_pair(&MemoryLinkConfig::default(), 100, 64, 3);
    match client {
        Err(RpingError::Disconnected {
            reason: DisconnectReason::Terminated { by_peer: true, .. },
            phase: Phase::ReadAdvert,
        }) => {}
        other => panic!("client: {other:?}"),
    }
    let e = server.unwrap_err();
    assert!(
        matches!(
            e,
            RpingError::Disconnected {
                reason: DisconnectReason::Terminated { by_peer: false, .. },
                ..
            } | RpingError::Completion { .. }
        ),
        "server: {e:?}"
    );
    assert!(server_lines
        .iter()
        .any(|l| l.contains("rping server failed")));
}

#[test]
fn the_verbose_server_prints_what_it_read_and_debug_traces_the_steps() {
    let (c, s, addr) = devices(&MemoryLinkConfig::default());
    let mut cfg = server_cfg(64);
    cfg.verbose = true;
    let srv = spawn_server(s, cfg, ListenOptions::default(), true);
    let log = Log::capture(false);
    run_client(&c, addr, rping_params(), &client_cfg(64, 2), &log).unwrap();
    let (r, lines) = srv.join().unwrap();
    assert_eq!(r.unwrap().pings, 2);
    let data: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("server ping data: "))
        .collect();
    assert_eq!(data.len(), 2);
    assert!(data[1].starts_with("server ping data: rdma-ping-1: BCD"));
    for want in [
        "server posted rdma read req",
        "server received read complete",
        "server posted go ahead",
        "server rdma write complete",
    ] {
        assert_eq!(
            lines.iter().filter(|l| *l == want).count(),
            if want == "server posted go ahead" {
                4
            } else {
                2
            },
            "{want}"
        );
    }
    assert!(lines
        .iter()
        .any(|l| l.starts_with("ESTABLISHED: MPA rev 2")));
    assert!(lines.iter().any(|l| l == "! server DISCONNECT EVENT..."));
}

#[test]
fn a_persistent_server_serves_clients_in_turn_and_at_once() {
    let cfg = MemoryLinkConfig::default();
    let (a, b) = MemoryLink::pair(&cfg).unwrap();
    let (client_dev, server_dev) = (Device::new(Box::new(a)), Device::new(Box::new(b)));
    // The server's buffer is the larger: smaller clients are served too.
    let mut scfg = server_cfg(4000);
    scfg.persistent = true;
    scfg.max_clients = Some(4);
    let srv = spawn_server(server_dev, scfg, ListenOptions::default(), false);
    let addr = cfg.endpoint_b(PORT);
    // Two in turn...
    for count in [3, 5] {
        let r = run_client(
            &client_dev,
            addr,
            rping_params(),
            &client_cfg(64, count),
            &Log::capture(false),
        );
        assert_eq!(r.unwrap().pings, count);
    }
    // ...then two at once, from two threads sharing the client device.
    let threads: Vec<_> = [20u32, 30]
        .into_iter()
        .map(|count| {
            let dev = client_dev.clone();
            thread::spawn(move || {
                run_client(
                    &dev,
                    addr,
                    rping_params(),
                    &client_cfg(4000, count),
                    &Log::capture(false),
                )
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let (r, lines) = srv.join().unwrap();
    for c in &results {
        assert!(c.is_ok(), "{c:?}: {lines:#?}");
    }
    assert_eq!(
        r.unwrap_or_else(|e| panic!("{e:?}: {lines:#?}")),
        ServerReport {
            served: 4,
            failed: 0,
            pings: 3 + 5 + 20 + 30
        }
    );
}

#[test]
fn connecting_to_a_port_nobody_listens_on_fails_fast() {
    let (c, _s, addr) = devices(&MemoryLinkConfig::default());
    let started = Instant::now();
    // Drive the server's host too, so its stack answers the SYN with RST.
    let s = _s.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let driver = thread::spawn(move || {
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            if !s.progress() {
                thread::sleep(Duration::from_millis(1));
            }
        }
    });
    let r = run_client(
        &c,
        addr,
        rping_params(),
        &client_cfg(64, 1),
        &Log::capture(false),
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    driver.join().unwrap();
    assert!(matches!(r, Err(RpingError::Connect(_))), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// A hand-made client that sends `msg` as its first message.
fn raw_client_sends(msg: Vec<u8>) -> (Result<ServerReport, RpingError>, Vec<String>) {
    let (c, s, addr) = devices(&MemoryLinkConfig::default());
    let srv = spawn_server(s, server_cfg(64), ListenOptions::default(), false);
    let pd = c.alloc_pd();
    let cq = c.create_cq(16);
    let qp = c.create_qp(&pd, QpInit::new(&cq)).unwrap();
    let buf = pd.register_vec(msg, Access::NONE).unwrap();
    qp.connect_blocking(addr, rping_params(), STEP).unwrap();
    qp.post_send(wr::send(1, vec![buf.sge_all()])).unwrap();
    let wc = cq.wait_one(STEP).unwrap().unwrap();
    assert_eq!(wc.opcode, WcOpcode::Send);
    let r = srv.join().unwrap();
    drop(qp);
    r
}

#[test]
fn the_server_refuses_a_short_advertisement() {
    let (r, lines) = raw_client_sends(vec![0; 8]);
    assert!(
        matches!(r, Err(RpingError::BogusReceive { byte_len: 8 })),
        "{r:?}"
    );
    assert!(lines
        .iter()
        .any(|l| l.contains("Received bogus data, size 8")));
}

#[test]
fn the_server_refuses_an_advertisement_naming_memory_it_may_not_read() {
    // A well-formed advertisement of a made-up STag: the client's stack
    // refuses the READ and the connection is terminated.
    let bogus = RdmaInfo {
        addr: 0x1000,
        rkey: 0x00ab_cd00,
        size: 64,
    };
    let (r, _) = raw_client_sends(bogus.to_bytes().to_vec());
    assert!(r.is_err(), "{r:?}");
}

#[test]
fn the_client_refuses_a_go_ahead_of_the_wrong_length() {
    let (c, s, addr) = devices(&MemoryLinkConfig::default());
    let listener = s.listen(PORT, ListenOptions::default()).unwrap();
    let fake = thread::spawn(move || {
        let req = listener.request(STEP).expect("a connect request");
        let pd = s.alloc_pd();
        let cq = s.create_cq(16);
        let qp = s.create_qp(&pd, QpInit::new(&cq)).unwrap();
        let rbuf = pd.register(16, Access::LOCAL_WRITE).unwrap();
        let sbuf = pd.register(20, Access::NONE).unwrap();
        qp.post_recv(wr::recv(1, vec![rbuf.sge_all()])).unwrap();
        let params = mirror(&req);
        req.accept(&qp, params).unwrap();
        assert!(matches!(qp.wait_event(STEP), Some(CmEvent::Established(_))));
        let wc = cq.wait_one(STEP).unwrap().unwrap();
        assert_eq!((wc.opcode, wc.byte_len), (WcOpcode::Recv, 16));
        qp.post_send(wr::send(2, vec![sbuf.sge_all()])).unwrap();
        // Keep the connection up until the client has judged the reply.
        let _ = qp.wait_event(STEP);
    });
    let r = run_client(
        &c,
        addr,
        rping_params(),
        &client_cfg(64, 1),
        &Log::capture(false),
    );
    fake.join().unwrap();
    // The 20-byte SEND does not fit the 16-byte receive: the client's
    // stack terminates the connection; either way the client fails.
    assert!(
        matches!(
            r,
            Err(RpingError::Disconnected { .. })
                | Err(RpingError::BogusReceive { .. })
                | Err(RpingError::Completion { .. })
        ),
        "{r:?}"
    );
}

#[test]
fn a_silent_server_times_the_client_out() {
    let (c, s, addr) = devices(&MemoryLinkConfig::default());
    let listener = s.listen(PORT, ListenOptions::default()).unwrap();
    let fake = thread::spawn(move || {
        let req = listener.request(STEP).expect("a connect request");
        let pd = s.alloc_pd();
        let cq = s.create_cq(16);
        let qp = s.create_qp(&pd, QpInit::new(&cq)).unwrap();
        let rbuf = pd.register(16, Access::LOCAL_WRITE).unwrap();
        qp.post_recv(wr::recv(1, vec![rbuf.sge_all()])).unwrap();
        let params = mirror(&req);
        req.accept(&qp, params).unwrap();
        // Never answer; keep the stack running until the client gives up.
        let _ = qp.wait_event(STEP);
        let _ = qp.wait_event(STEP);
    });
    let mut cfg = client_cfg(64, 1);
    cfg.timeout = Some(Duration::from_millis(300));
    let started = Instant::now();
    let r = run_client(&c, addr, rping_params(), &cfg, &Log::capture(false));
    assert!(
        matches!(
            r,
            Err(RpingError::Timeout {
                phase: Phase::ReadAdvert,
                ..
            })
        ),
        "{r:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    fake.join().unwrap();
}

/// A transport whose `close` resets the stream: a peer that ends its run
/// with RST instead of FIN (siw does, right after its last ping, on a
/// lossy link).
struct ResetOnClose(Box<dyn Transport + Send>);

impl Transport for ResetOnClose {
    fn listen(&mut self, port: u16) -> Result<ListenerId, TransportError> {
        self.0.listen(port)
    }
    fn accept(&mut self, l: ListenerId) -> Option<StreamId> {
        self.0.accept(l)
    }
    fn unlisten(&mut self, l: ListenerId) {
        self.0.unlisten(l)
    }
    fn connect(&mut self, remote: SocketAddr) -> Result<StreamId, TransportError> {
        self.0.connect(remote)
    }
    fn state(&self, s: StreamId) -> StreamState {
        self.0.state(s)
    }
    fn local_addr(&self, s: StreamId) -> Option<SocketAddr> {
        self.0.local_addr(s)
    }
    fn peer_addr(&self, s: StreamId) -> Option<SocketAddr> {
        self.0.peer_addr(s)
    }
    fn send_with(
        &mut self,
        s: StreamId,
        f: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Result<usize, TransportError> {
        self.0.send_with(s, f)
    }
    fn recv_with(
        &mut self,
        s: StreamId,
        f: &mut dyn FnMut(&[u8]) -> usize,
    ) -> Result<usize, TransportError> {
        self.0.recv_with(s, f)
    }
    fn send_capacity(&self, s: StreamId) -> usize {
        self.0.send_capacity(s)
    }
    fn recv_queued(&self, s: StreamId) -> usize {
        self.0.recv_queued(s)
    }
    fn mss(&self, s: StreamId) -> usize {
        self.0.mss(s)
    }
    fn close(&mut self, s: StreamId) {
        self.0.abort(s)
    }
    fn abort(&mut self, s: StreamId) {
        self.0.abort(s)
    }
    fn poll(&mut self, now: Instant) -> bool {
        self.0.poll(now)
    }
    fn flush(&mut self, now: Instant) -> bool {
        self.0.flush(now)
    }
    fn flush_due(&self) -> bool {
        self.0.flush_due()
    }
    fn poll_delay(&mut self, now: Instant) -> Option<Duration> {
        self.0.poll_delay(now)
    }
    fn wait(&mut self, timeout: Option<Duration>) {
        self.0.wait(timeout)
    }
    fn listen_port(&self, l: ListenerId) -> Option<u16> {
        self.0.listen_port(l)
    }
    fn waker(&self) -> Option<Waker> {
        self.0.waker()
    }
}

#[test]
fn a_client_resetting_after_its_last_ping_ends_the_servers_run_cleanly() {
    let cfg = MemoryLinkConfig::default();
    let (a, b) = MemoryLink::pair(&cfg).unwrap();
    let client = Device::new(Box::new(ResetOnClose(Box::new(a))));
    let srv = spawn_server(
        Device::new(Box::new(b)),
        server_cfg(64),
        ListenOptions::default(),
        true,
    );
    let r = run_client(
        &client,
        cfg.endpoint_b(PORT),
        rping_params(),
        &client_cfg(64, 5),
        &Log::capture(false),
    );
    assert_eq!(r.unwrap().pings, 5);
    let (report, lines) = srv.join().unwrap();
    assert!(
        lines.iter().any(|l| l.contains("the connection was reset")),
        "the server saw a reset: {lines:#?}"
    );
    assert_eq!(
        report.unwrap_or_else(|e| panic!("{e:?}: {lines:#?}")),
        ServerReport {
            served: 1,
            failed: 0,
            pings: 5
        }
    );
}
