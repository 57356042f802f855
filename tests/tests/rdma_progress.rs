//! Devices driven by progress threads (and by several program threads):
//! an idle thread sleeps in the transport without the device lock and
//! without spinning, a post wakes it at once, concurrent posters all get
//! through, and stopping the thread is prompt.
//!
//! Each claim is checked by counting ([`Device::stats`]: turns of the
//! thread and what ended each of its waits), never against a clock: a
//! loaded machine makes things slower, not different. Latencies are
//! printed as figures.

mod common;

use std::time::{Duration, Instant};

use common::suite::{guarded, holding, REMOTE};
use common::*;
use verbs::{wr, Access, Device, DeviceStats, WcOpcode, WcStatus};

fn memory() -> Net {
    Net::memory(&MemoryLinkConfig::default())
}

/// Spawns a progress thread on each device of `p`.
fn threaded(p: &Pair) -> (verbs::ProgressThread, verbs::ProgressThread) {
    (
        p.client.spawn_progress_thread(),
        p.server.spawn_progress_thread(),
    )
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// What `dev`'s counters moved by while `f` ran.
fn counted<R>(dev: &Device, f: impl FnOnce() -> R) -> (R, DeviceStats) {
    let before = dev.stats();
    let r = f();
    (r, dev.stats().since(&before))
}

/// An idle spell of about 200 ms: the counters it moved and the time
/// that really passed (a loaded machine may sleep longer than asked).
fn idle_spell(dev: &Device) -> (DeviceStats, Duration) {
    let start = Instant::now();
    let ((), stats) = counted(dev, || std::thread::sleep(Duration::from_millis(200)));
    (stats, start.elapsed())
}

/// Each started 100 ms of `spell`, times `per_100ms`.
fn per_100ms(spell: Duration, per_100ms: u64) -> u64 {
    per_100ms * (spell.as_millis() as u64 / 100 + 1)
}

fn idle_thread_sleeps(make: fn() -> Net) {
    let p = connect(make(), Opts::default());
    let _threads = threaded(&p);
    std::thread::sleep(Duration::from_millis(100));
    for dev in [&p.client, &p.server] {
        let (s, spell) = idle_spell(dev);
        println!("{}: {s:?} in {spell:?} idle", p.name);
        // A spinning thread turns millions of times; one that waits for a
        // 2 ms slice, fifty per 100 ms. This one wakes for deadlines only.
        assert!(
            s.thread_turns <= per_100ms(spell, 6),
            "{}: {} turns in {spell:?} idle",
            p.name,
            s.thread_turns
        );
        // Nobody posted or needed the transport: nothing but timers and
        // the transport itself ended its waits.
        assert_eq!((s.woken_by_post, s.woken_by_call), (0, 0), "{}", p.name);
    }
}

#[test]
fn idle_progress_thread_sleeps_memory() {
    idle_thread_sleeps(memory);
}

#[test]
fn idle_progress_thread_sleeps_kernel() {
    idle_thread_sleeps(Net::kernel);
}

/// Ping-pong of small Sends between two threaded devices after an idle
/// spell: each post reaches the wire at once, rather than waiting for the
/// end of the thread's idle wait (100 ms): it wakes the sleeping progress
/// thread, or (a thread asleep on the readiness descriptor, or busy, leaves
/// the transport in the device) goes out on the posting thread itself.
fn ping_pong_after_idle(make: fn() -> Net) {
    let p = connect(make(), Opts::default());
    let _threads = threaded(&p);
    let c_buf = holding(&p.client_pd, 0, &[7; 32], 32, Access::LOCAL_WRITE);
    let s_buf = guarded(&p.server_pd, 64, Access::LOCAL_WRITE);
    let mut rtts = Vec::new();
    // Rounds in which each side's send went out at once.
    let (mut client_woken, mut server_woken) = (0, 0);
    const ROUNDS: u64 = 20;
    for i in 0..ROUNDS {
        // Let both threads fall asleep first.
        std::thread::sleep(Duration::from_millis(if i == 0 { 250 } else { 20 }));
        p.server_qp
            .post_recv(wr::recv(i, vec![s_buf.sge(0, 32).unwrap()]))
            .unwrap();
        p.client_qp
            .post_recv(wr::recv(100 + i, vec![c_buf.sge(32, 32).unwrap()]))
            .unwrap();
        let start = Instant::now();
        let client_before = p.client.stats();
        p.client_qp
            .post_send(wr::send(200 + i, vec![c_buf.sge(0, 32).unwrap()]))
            .unwrap();
        let got = p
            .server_cq
            .wait_one(LIMIT)
            .unwrap()
            .expect("server receive");
        assert_eq!((got.wr_id, got.status), (i, WcStatus::Success));
        let server_mid = p.server.stats();
        p.server_qp
            .post_send(wr::send(300 + i, vec![s_buf.sge(0, 32).unwrap()]))
            .unwrap();
        let mut back = None;
        while back.is_none() {
            let w = p
                .client_cq
                .wait_one(LIMIT)
                .unwrap()
                .expect("client completion");
            assert!(w.is_success(), "{w:?}");
            if w.opcode == WcOpcode::Recv {
                back = Some(w);
            }
        }
        rtts.push(start.elapsed());
        let prompt = |d: DeviceStats| d.woken_by_post > 0 || d.sent_by_poster > 0;
        client_woken += u32::from(prompt(p.client.stats().since(&client_before)));
        assert!(p.server_cq.wait_one(LIMIT).unwrap().unwrap().is_success());
        server_woken += u32::from(prompt(p.server.stats().since(&server_mid)));
    }
    let m = median(rtts.clone());
    println!(
        "{}: round trips after idle: median {m:?}, all {rtts:?}; \
         a post went out at once in {client_woken} (client) and {server_woken} (server) \
         of {ROUNDS} rounds",
        p.name
    );
    // A post that neither woke the thread nor went out itself would be
    // seen by the end of the thread's idle wait only: then no round
    // counts. Most rounds find the thread asleep (it may be finishing a
    // turn in a few).
    for (side, woken) in [("client", client_woken), ("server", server_woken)] {
        assert!(
            u64::from(woken) * 2 >= ROUNDS,
            "{}: the {side}'s post went out at once in {woken} of {ROUNDS} rounds",
            p.name
        );
    }
}

#[test]
fn posting_to_an_idle_thread_is_prompt_memory() {
    ping_pong_after_idle(memory);
}

#[test]
fn posting_to_an_idle_thread_is_prompt_kernel() {
    ping_pong_after_idle(Net::kernel);
}

/// Posting while the progress thread sleeps in the transport does not wait
/// for the lock: the sleeping thread does not hold it.
#[test]
fn posts_do_not_wait_for_the_sleeping_thread() {
    let p = connect(memory(), Opts::default());
    let _threads = threaded(&p);
    let buf = guarded(&p.server_pd, 16, Access::LOCAL_WRITE);
    std::thread::sleep(Duration::from_millis(150));
    let mut took = Vec::new();
    const POSTS: u64 = 100;
    let ((), s) = counted(&p.server, || {
        for i in 0..POSTS {
            let start = Instant::now();
            p.server_qp
                .post_recv(wr::recv(i, vec![buf.sge_all()]))
                .unwrap();
            took.push(start.elapsed());
            if i % 10 == 0 {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    });
    let m = median(took);
    println!(
        "post latency while the thread sleeps: median {m:?}; \
         {} of {POSTS} posts went through while it waited",
        s.calls_during_wait
    );
    // A waiter holding the device lock would make every post wait for
    // its return, and none would see it away; most find it asleep.
    assert!(
        s.calls_during_wait * 2 >= POSTS,
        "{} of {POSTS} posts during the wait",
        s.calls_during_wait
    );
    assert_eq!(p.server_cq.len(), 0);
}

/// Bulk traffic with progress threads and blocking waits only.
#[test]
fn bulk_transfer_with_progress_threads() {
    let p = connect(memory(), Opts::default());
    let _threads = threaded(&p);
    let n = 8 << 20;
    let data = pattern(n, 42);
    let src = holding(&p.client_pd, 0, &data, 0, Access::NONE);
    let dst = guarded(&p.server_pd, n, REMOTE);
    let sink = guarded(&p.client_pd, n, Access::LOCAL_WRITE);
    for round in 0..4u64 {
        p.server_qp.post_recv(wr::recv(round, vec![])).unwrap();
        p.client_qp
            .post_send(wr::write(
                10 + round,
                vec![src.sge_all()],
                dst.rkey(),
                dst.addr(),
            ))
            .unwrap();
        p.client_qp.post_send(wr::send(20 + round, vec![])).unwrap();
        p.client_qp
            .post_send(wr::read(30 + round, sink.sge_all(), dst.rkey(), dst.addr()))
            .unwrap();
        let r = p.server_cq.wait_one(LIMIT).unwrap().expect("receive");
        assert_eq!((r.wr_id, r.status), (round, WcStatus::Success));
        let mut wcs = [p.client_cq.wait_one(LIMIT).unwrap(); 3];
        for w in wcs.iter_mut().skip(1) {
            *w = p.client_cq.wait_one(LIMIT).unwrap();
        }
        let ids: Vec<_> = wcs.iter().map(|w| w.map(|w| (w.wr_id, w.status))).collect();
        assert_eq!(
            ids,
            [
                Some((10 + round, WcStatus::Success)),
                Some((20 + round, WcStatus::Success)),
                Some((30 + round, WcStatus::Success))
            ]
        );
        assert!(sink.with_bytes(|b| b == &data[..]));
        sink.with_bytes_mut(|b| b.fill(GUARD));
    }
}

/// A program thread spinning on a completion queue that expects nothing
/// (perftest's server on its control connection while its peer Reads)
/// serves the wire itself while the progress thread sleeps: the thread
/// then leaves the sockets to the spinner's turns instead of being woken
/// by them. Every Read is answered while the spinner spins, and again,
/// by the thread, once it stops.
#[test]
fn a_spinning_poller_serves_the_wire_while_the_thread_sleeps() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let p = connect(Net::kernel(), Opts::default());
    let _threads = threaded(&p);
    let n = 4096;
    let data = pattern(n, 9);
    let src = holding(&p.server_pd, 0, &data, 0, REMOTE);
    let sink = guarded(&p.client_pd, n, Access::LOCAL_WRITE);
    let idle_cq = p.server.create_cq(4);
    let stop = AtomicBool::new(false);
    let read_all = |first: u64, count: u64| {
        for i in first..first + count {
            sink.with_bytes_mut(|b| b.fill(GUARD));
            p.client_qp
                .post_send(wr::read(i, sink.sge_all(), src.rkey(), src.addr()))
                .unwrap();
            let w = p.client_cq.wait_one(LIMIT).unwrap().expect("Read");
            assert_eq!((w.wr_id, w.status), (i, WcStatus::Success));
            assert!(sink.with_bytes(|b| b == &data[..]), "Read {i}");
        }
    };
    let spinning = std::thread::scope(|sc| {
        let spinner = sc.spawn(|| {
            let mut polls = 0u64;
            while !stop.load(Ordering::Acquire) {
                assert!(idle_cq.poll_one().unwrap().is_none());
                polls += 1;
            }
            polls
        });
        let ((), stats) = counted(&p.server, || read_all(0, 200));
        stop.store(true, Ordering::Release);
        let polls = spinner.join().unwrap();
        println!(
            "spinning on an idle queue: {polls} polls; the thread left the sockets \
             to them {} times, woke for I/O {} times",
            stats.poller_watches, stats.woken_by_io
        );
        stats
    });
    assert!(
        spinning.poller_watches > 0,
        "the thread never left the sockets to the spinner: {spinning:?}"
    );
    let ((), alone) = counted(&p.server, || read_all(1000, 50));
    assert_eq!(alone.poller_watches, 0, "nobody spins any more");
}

/// Four program threads post Sends on one queue pair at once while the
/// progress threads run: every message arrives, each thread's in order.
#[test]
fn concurrent_posters_on_one_queue_pair() {
    let opts = Opts {
        rq_depth: 512,
        ..Opts::default()
    };
    let p = connect(memory(), opts);
    let _threads = threaded(&p);
    const THREADS: usize = 4;
    const EACH: usize = 100;
    let rx = guarded(&p.server_pd, THREADS * EACH * 8, Access::LOCAL_WRITE);
    for i in 0..THREADS * EACH {
        p.server_qp
            .post_recv(wr::recv(i as u64, vec![rx.sge(i * 8, 8).unwrap()]))
            .unwrap();
    }
    // The source regions outlive their threads: a region goes with its
    // last handle, and the sends may still be queued when a thread ends.
    let _sources: Vec<verbs::MemoryRegion> = std::thread::scope(|s| {
        let posters: Vec<_> = (0..THREADS)
            .map(|t| {
                let (qp, pd) = (&p.client_qp, &p.client_pd);
                s.spawn(move || {
                    let src = pd.register(EACH * 8, Access::NONE).unwrap();
                    for k in 0..EACH {
                        let msg = [t as u32, k as u32];
                        let bytes: Vec<u8> = msg.iter().flat_map(|v| v.to_le_bytes()).collect();
                        src.write(k * 8, &bytes).unwrap();
                        let w = wr::send((t * EACH + k) as u64, vec![src.sge(k * 8, 8).unwrap()]);
                        // The send queue (128) may fill: retry after a pause.
                        let start = Instant::now();
                        loop {
                            match qp.post_send(w.clone()) {
                                Ok(()) => break,
                                Err(verbs::VerbsError::Post(rdmap::PostError::QueueFull {
                                    ..
                                })) => {
                                    assert!(start.elapsed() < LIMIT);
                                    std::thread::sleep(Duration::from_micros(200));
                                }
                                Err(e) => panic!("{e}"),
                            }
                        }
                    }
                    src
                })
            })
            .collect();
        posters.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut recvs = Vec::new();
    let deadline = Instant::now() + LIMIT;
    while recvs.len() < THREADS * EACH && Instant::now() < deadline {
        let mut out = [verbs::WorkCompletion::FILLER; 64];
        let n = p.server_cq.wait(&mut out, Duration::from_secs(1)).unwrap();
        recvs.extend_from_slice(&out[..n]);
    }
    assert_eq!(recvs.len(), THREADS * EACH);
    let mut next = [0u32; THREADS];
    for (i, w) in recvs.iter().enumerate() {
        assert_eq!(
            (w.wr_id, w.status, w.byte_len),
            (i as u64, WcStatus::Success, 8)
        );
        let b = rx.with_bytes(|b| b[i * 8..i * 8 + 8].to_vec());
        let t = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let k = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        assert_eq!(k, next[t], "thread {t}'s messages in order");
        next[t] += 1;
    }
    assert!(next.iter().all(|&n| n as usize == EACH));
    let sends = p.client_cq.len();
    assert!(sends <= THREADS * EACH);
}

/// Without a progress thread, a program thread blocked in a completion
/// wait sleeps in the transport; a second thread posting on the same
/// device is neither blocked by it nor left unsent.
#[test]
fn caller_driven_waiter_and_poster_on_one_device() {
    let p = connect(memory(), Opts::default());
    // Only the client gets a thread; the server is driven by its callers.
    let _client_thread = p.client.spawn_progress_thread();
    let rx = guarded(&p.server_pd, 64, Access::LOCAL_WRITE);
    let src = holding(&p.server_pd, 0, b"from the server", 0, Access::NONE);
    let c_src = holding(&p.client_pd, 0, b"from the client", 0, Access::NONE);
    let c_rx = guarded(&p.client_pd, 64, Access::LOCAL_WRITE);
    p.client_qp
        .post_recv(wr::recv(7, vec![c_rx.sge_all()]))
        .unwrap();
    let server_cq = &p.server_cq;
    std::thread::scope(|s| {
        let waiter = s.spawn(move || server_cq.wait_one(LIMIT).unwrap().expect("completion"));
        std::thread::sleep(Duration::from_millis(150));
        // The waiter sleeps in the transport now; posting must not wait
        // for it: the post goes through while it still waits.
        let start = Instant::now();
        let ((), s) = counted(&p.server, || {
            p.server_qp
                .post_recv(wr::recv(1, vec![rx.sge_all()]))
                .unwrap()
        });
        println!("posting beside the waiter took {:?}", start.elapsed());
        assert_eq!(s.calls_during_wait, 1, "{s:?}");
        // The client speaks first (the server is the MPA responder); the
        // waiting thread drives the server and sees the receive.
        p.client_qp
            .post_send(wr::send(8, vec![c_src.sge_all()]))
            .unwrap();
        let w = waiter.join().unwrap();
        assert_eq!((w.wr_id, w.status, w.byte_len), (1, WcStatus::Success, 15));
    });
    assert_eq!(&rx.to_vec()[..15], b"from the client");
    // Now a Send from the server: posted from this thread while nobody
    // waits on the server; the post itself puts it on the wire.
    p.server_qp
        .post_send(wr::send(2, vec![src.sge_all()]))
        .unwrap();
    let mut got = Vec::new();
    while got.len() < 2 {
        got.push(
            p.client_cq
                .wait_one(LIMIT)
                .unwrap()
                .expect("client completion"),
        );
    }
    got.sort_by_key(|w| w.wr_id);
    assert_eq!((got[0].wr_id, got[0].byte_len), (7, 15));
    assert_exactly_prefix(&c_rx, b"from the server");
}

fn assert_exactly_prefix(mr: &verbs::MemoryRegion, want: &[u8]) {
    assert_eq!(&mr.to_vec()[..want.len()], want);
}

/// Dropping the thread's handle stops it promptly, idle or busy (it is
/// woken, not left to finish its idle wait), and the device goes back to
/// being driven by its callers.
#[test]
fn stopping_the_thread_is_prompt() {
    let p = connect(memory(), Opts::default());
    let t = p.server.spawn_progress_thread();
    std::thread::sleep(Duration::from_millis(150));
    let start = Instant::now();
    let ((), s) = counted(&p.server, || drop(t));
    println!("stopping took {:?}: {s:?}", start.elapsed());
    // Unwoken, the sleeping thread would return only when its wait timed
    // out; woken, its last wait ends by the stop's call.
    assert_eq!(s.woken_by_timer, 0, "{s:?}");
    // Caller-driven again: an ordinary exchange works.
    let rx = guarded(&p.server_pd, 8, Access::LOCAL_WRITE);
    p.server_qp
        .post_recv(wr::recv(1, vec![rx.sge_all()]))
        .unwrap();
    p.client_qp.post_send(wr::send(2, vec![])).unwrap();
    assert!(p.server_completions(1)[0].is_success());
}

/// A transport that cannot be woken (a third-party one, say): the
/// progress thread then sleeps in short slices, so posts still go out
/// within a few milliseconds.
struct Unwakeable(Box<dyn verbs::transport::Transport + Send>);

impl verbs::transport::Transport for Unwakeable {
    fn listen(
        &mut self,
        port: u16,
    ) -> Result<verbs::transport::ListenerId, verbs::transport::TransportError> {
        self.0.listen(port)
    }
    fn accept(&mut self, l: verbs::transport::ListenerId) -> Option<verbs::transport::StreamId> {
        self.0.accept(l)
    }
    fn unlisten(&mut self, l: verbs::transport::ListenerId) {
        self.0.unlisten(l)
    }
    fn connect(
        &mut self,
        remote: std::net::SocketAddr,
    ) -> Result<verbs::transport::StreamId, verbs::transport::TransportError> {
        self.0.connect(remote)
    }
    fn state(&self, s: verbs::transport::StreamId) -> verbs::transport::StreamState {
        self.0.state(s)
    }
    fn local_addr(&self, s: verbs::transport::StreamId) -> Option<std::net::SocketAddr> {
        self.0.local_addr(s)
    }
    fn peer_addr(&self, s: verbs::transport::StreamId) -> Option<std::net::SocketAddr> {
        self.0.peer_addr(s)
    }
    fn send_with(
        &mut self,
        s: verbs::transport::StreamId,
        f: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Result<usize, verbs::transport::TransportError> {
        self.0.send_with(s, f)
    }
    fn recv_with(
        &mut self,
        s: verbs::transport::StreamId,
        f: &mut dyn FnMut(&[u8]) -> usize,
    ) -> Result<usize, verbs::transport::TransportError> {
        self.0.recv_with(s, f)
    }
    fn send_capacity(&self, s: verbs::transport::StreamId) -> usize {
        self.0.send_capacity(s)
    }
    fn recv_queued(&self, s: verbs::transport::StreamId) -> usize {
        self.0.recv_queued(s)
    }
    fn mss(&self, s: verbs::transport::StreamId) -> usize {
        self.0.mss(s)
    }
    fn close(&mut self, s: verbs::transport::StreamId) {
        self.0.close(s)
    }
    fn abort(&mut self, s: verbs::transport::StreamId) {
        self.0.abort(s)
    }
    fn poll(&mut self, now: Instant) -> bool {
        self.0.poll(now)
    }
    fn poll_delay(&mut self, now: Instant) -> Option<Duration> {
        self.0.poll_delay(now)
    }
    fn wait(&mut self, timeout: Option<Duration>) {
        self.0.wait(timeout)
    }
    fn listen_port(&self, l: verbs::transport::ListenerId) -> Option<u16> {
        self.0.listen_port(l)
    }
    // No waker: the trait's default.
}

#[test]
fn a_transport_without_a_waker_still_works_threaded() {
    let cfg = MemoryLinkConfig::default();
    let (a, b) = verbs::transport::memory::MemoryLink::pair(&cfg).unwrap();
    let net = Net {
        client: Device::new(Box::new(Unwakeable(Box::new(a)))),
        server: Device::new(Box::new(Unwakeable(Box::new(b)))),
        server_ip: std::net::IpAddr::V4(cfg.addr_b()),
        listen_port: PORT,
        capture: None,
        virtual_start: None,
        name: "memory without waker".into(),
    };
    let p = connect(net, Opts::default());
    let _threads = threaded(&p);
    std::thread::sleep(Duration::from_millis(100));
    // Sleeping in short slices (2 ms): more turns than a thread that waits
    // out its 100 ms idle wait, but far from spinning.
    let (s, spell) = idle_spell(&p.server);
    println!("without waker: {s:?} in {spell:?} idle");
    assert!(
        s.thread_turns > per_100ms(spell, 3),
        "{} turns in {spell:?}: not sliced",
        s.thread_turns
    );
    assert!(
        s.thread_turns < per_100ms(spell, 500),
        "{} turns in {spell:?}: spinning",
        s.thread_turns
    );
    let rx = guarded(&p.server_pd, 8, Access::LOCAL_WRITE);
    let mut took = Vec::new();
    for i in 0..10 {
        p.server_qp
            .post_recv(wr::recv(i, vec![rx.sge_all()]))
            .unwrap();
        std::thread::sleep(Duration::from_millis(10));
        let start = Instant::now();
        p.client_qp.post_send(wr::send(i, vec![])).unwrap();
        let w = p.server_cq.wait_one(LIMIT).unwrap().expect("receive");
        took.push(start.elapsed());
        assert!(w.is_success());
    }
    println!("without waker: median send to receive {:?}", median(took));
}

/// Calls that need the transport itself (here `with_transport`) wake the
/// sleeping progress thread and get it back at once.
#[test]
fn transport_access_wakes_the_sleeping_thread() {
    let p = connect(memory(), Opts::default());
    let _threads = threaded(&p);
    std::thread::sleep(Duration::from_millis(150));
    let mut took = Vec::new();
    const CALLS: u64 = 10;
    let mut woken = 0;
    for _ in 0..CALLS {
        std::thread::sleep(Duration::from_millis(20));
        let start = Instant::now();
        let (mss, s) = counted(&p.server, || {
            p.server.with_transport(|t| {
                let _ = t.poll_delay(Instant::now());
                1460
            })
        });
        took.push(start.elapsed());
        assert_eq!(mss, 1460);
        // Or the thread sleeps on the readiness descriptor and left the
        // transport at home: the call took it without waking anyone.
        woken += u64::from(s.woken_by_call > 0 || s.calls_during_wait > 0);
    }
    // Unwoken, the thread would hold the transport for the rest of its
    // 100 ms wait and that wait would end by its timer; woken, it ends by
    // the call (in microseconds; milliseconds on a loaded machine).
    println!(
        "transport access: median {:?}; the call woke the thread {woken} of {CALLS} times",
        median(took)
    );
    assert!(woken * 2 >= CALLS, "woken {woken} of {CALLS} times");
}
