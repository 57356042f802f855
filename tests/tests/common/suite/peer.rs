//! A verbs device facing a peer that misbehaves or goes away: it breaks
//! the IRD it agreed to, says nothing during start-up, resets the stream
//! in the middle of a transfer, or its host stops answering.

use std::cell::Cell;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use ddp::error::TermCode;
use mpa::InitiatorConfig;
use rdmap::connection::Event;
use verbs::transport::kernel::{KernelConfig, KernelTransport};
use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::transport::{StreamState, Transport};
use verbs::{
    wr, AcceptParams, Access, CmEvent, CompletionQueue, Device, DisconnectReason, ListenOptions,
    QpInit, QueuePair, WcOpcode, WcStatus, WorkCompletion,
};

use super::{assert_wc, guarded, holding, REMOTE};
use crate::common::raw::{RawPeer, RAW_PD};
use crate::common::{pattern, GUARD, LIMIT, PORT, VIRTUAL_LIMIT};

/// A raw transport and a verbs device joined by some network.
pub struct RawNet {
    pub raw: Box<dyn Transport + Send>,
    pub device: Device,
    /// Where the device is reached.
    pub device_ip: IpAddr,
    /// Port for the device to listen on (0: any).
    pub listen_port: u16,
    pub virtual_start: Option<Instant>,
    pub name: &'static str,
}

/// Makes a fresh raw net.
pub type MakeRawNet<'a> = &'a dyn Fn() -> RawNet;

impl RawNet {
    pub fn memory(virtual_time: bool) -> RawNet {
        let cfg = MemoryLinkConfig::default();
        let (a, b) = MemoryLink::pair(&cfg).expect("memory link");
        let device = Device::new(Box::new(b));
        let virtual_start = virtual_time.then(Instant::now);
        if let Some(t) = virtual_start {
            device.use_virtual_clock(t);
        }
        RawNet {
            raw: Box::new(a),
            device,
            device_ip: IpAddr::V4(cfg.addr_b()),
            listen_port: PORT,
            virtual_start,
            name: if virtual_time {
                "memory (virtual time)"
            } else {
                "memory"
            },
        }
    }

    pub fn kernel() -> RawNet {
        let cfg = KernelConfig::default().bind_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
        RawNet {
            raw: Box::new(KernelTransport::new(cfg.clone())),
            device: Device::new(Box::new(KernelTransport::new(cfg))),
            device_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            listen_port: 0,
            virtual_start: None,
            name: "kernel",
        }
    }
}

/// The raw peer and the device, driven together from this thread.
pub struct Rig {
    pub raw: RawPeer,
    pub device: Device,
    pub cq: CompletionQueue,
    pub qp: QueuePair,
    clock: Cell<Option<Instant>>,
    start: Instant,
    pub name: &'static str,
}

impl Rig {
    /// The device listens and accepts (with `accept`) whatever the raw
    /// peer sends as a request; the raw peer connects and, with `mpa`,
    /// runs start-up as initiator. Returns once the raw side's TCP is up
    /// (and start-up finished, when run).
    pub fn new(
        net: RawNet,
        listen: ListenOptions,
        accept: AcceptParams,
        mpa: Option<InitiatorConfig>,
    ) -> Rig {
        let RawNet {
            raw,
            device,
            device_ip,
            listen_port,
            virtual_start,
            name,
        } = net;
        let pd = device.alloc_pd();
        let cq = device.create_cq(4096);
        let qp = device.create_qp(&pd, QpInit::new(&cq)).unwrap();
        let listener = device.listen(listen_port, listen).unwrap();
        let addr = SocketAddr::new(device_ip, listener.port());
        let rig = Rig {
            raw: RawPeer::connect(raw, addr),
            device,
            cq,
            qp,
            clock: Cell::new(virtual_start),
            start: virtual_start.unwrap_or_else(Instant::now),
            name,
        };
        let mut rig = rig;
        rig.drive_until(|r| r.raw.state() != StreamState::Connecting);
        if let Some(cfg) = mpa {
            let now = rig.now();
            rig.raw.start_mpa(cfg, now);
            let mut accepted = false;
            rig.drive_until(|r| {
                if !accepted {
                    if let Some(req) = listener.try_request() {
                        req.accept(&r.qp, accept.clone()).unwrap();
                        accepted = true;
                    }
                }
                r.raw.negotiated.is_some()
            });
            // The device's queue pair is connected once the first FPDU
            // arrives; its event comes first.
            match rig.qp.try_event() {
                Some(CmEvent::Established(_)) | None => {}
                Some(other) => panic!("{name}: {other:?}"),
            }
        }
        // Keep listening for the rest of the test.
        std::mem::forget(listener);
        rig
    }

    pub fn now(&self) -> Instant {
        self.clock.get().unwrap_or_else(Instant::now)
    }

    pub fn virtual_elapsed(&self) -> Duration {
        self.clock
            .get()
            .map_or(Duration::ZERO, |c| c.saturating_duration_since(self.start))
    }

    /// One round on both sides (or only the device, if the raw peer is
    /// gone silent); virtual time jumps when neither moved.
    pub fn step(&mut self, raw_too: bool) -> bool {
        let now = self.now();
        let mut busy = if raw_too { self.raw.turn(now) } else { false };
        busy |= match self.clock.get() {
            Some(now) => self.device.progress_at(now),
            None => self.device.progress(),
        };
        if !busy {
            match self.clock.get() {
                None => std::thread::yield_now(),
                Some(now) => {
                    let mut d = self.device.poll_delay_at(now);
                    if raw_too {
                        if let Some(r) = self.raw.transport.poll_delay(now) {
                            d = Some(d.map_or(r, |x| x.min(r)));
                        }
                    }
                    let jump = match d {
                        Some(d) if d.is_zero() => Duration::from_micros(100),
                        Some(d) => d,
                        None => Duration::from_millis(1),
                    };
                    self.clock.set(Some(now + jump));
                }
            }
        }
        busy
    }

    pub fn drive_until(&mut self, mut done: impl FnMut(&mut Rig) -> bool) {
        self.drive_until_with(true, &mut done)
    }

    fn drive_until_with(&mut self, raw_too: bool, done: &mut dyn FnMut(&mut Rig) -> bool) {
        let start = Instant::now();
        while !done(self) {
            assert!(start.elapsed() < LIMIT, "{}: stuck", self.name);
            assert!(
                self.virtual_elapsed() < VIRTUAL_LIMIT,
                "{}: stuck in virtual time",
                self.name
            );
            self.step(raw_too);
        }
    }

    /// Drives (the raw side too, if `raw_too`) until the device's queue
    /// pair reports an event.
    pub fn device_event(&mut self, raw_too: bool) -> CmEvent {
        let mut ev = None;
        self.drive_until_with(raw_too, &mut |r| {
            ev = r.qp.try_event();
            ev.is_some()
        });
        ev.unwrap_or_else(|| unreachable!())
    }

    pub fn device_completions(&mut self, n: usize, raw_too: bool) -> Vec<WorkCompletion> {
        let mut out = Vec::new();
        self.drive_until_with(raw_too, &mut |r| {
            while let Some(w) = r.cq.poll_one().unwrap() {
                out.push(w);
            }
            out.len() >= n
        });
        out
    }

    /// The raw side's completions so far.
    pub fn raw_completions(&self) -> Vec<rdmap::WorkCompletion> {
        self.raw
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Completion(w) => Some(*w),
                _ => None,
            })
            .collect()
    }
}

fn honest_initiator() -> InitiatorConfig {
    InitiatorConfig {
        ird: 4,
        ord: 1,
        ..Default::default()
    }
}

/// A peer that agreed to ORD 1 (our IRD) and sends three READs at once:
/// the second exceeds the IRD, the device terminates the stream (RDMAP,
/// remote operation, catastrophic for the stream) and says which READ.
pub fn read_over_ird(make: MakeRawNet) {
    let accept = AcceptParams::default().ird(1);
    let mut rig = Rig::new(make(), Default::default(), accept, Some(honest_initiator()));
    assert_eq!(rig.raw.negotiated.as_ref().unwrap().ord, 1);
    rig.raw.open(|n| n.ord = 4);
    let pd = rig.qp.pd().clone();
    let src = holding(&pd, 0, &pattern(300, 1), 0, REMOTE);
    let sink = rig
        .raw
        .registry
        .register(RAW_PD, 300, Access::LOCAL_WRITE)
        .unwrap();
    for i in 0..3u64 {
        let sge = sink.sge(i as usize * 100, 100).unwrap();
        rig.raw
            .conn()
            .post_send(wr::read(i, sge, src.rkey(), src.addr() + i * 100))
            .unwrap();
    }
    let ev = rig.device_event(true);
    let code = TermCode::RDMAP_CATASTROPHIC_STREAM;
    assert_eq!(
        ev,
        CmEvent::Disconnected {
            reason: DisconnectReason::Terminated {
                by_peer: false,
                layer: code.layer.bits(),
                etype: code.etype,
                code: code.code
            }
        },
        "{}",
        rig.name
    );
    rig.drive_until(|r| r.raw_completions().len() == 3);
    let wcs = rig.raw_completions();
    let told = rig.raw.events.iter().find_map(|e| match e {
        Event::Terminated { by_peer, cause, .. } => Some((*by_peer, *cause)),
        _ => None,
    });
    assert_eq!(told, Some((true, code)));
    assert!(
        matches!(wcs[0].status, WcStatus::Success | WcStatus::WrFlushErr),
        "{wcs:?}"
    );
    assert_eq!((wcs[1].wr_id, wcs[1].status), (1, WcStatus::RemOpErr));
    assert_eq!((wcs[2].wr_id, wcs[2].status), (2, WcStatus::WrFlushErr));
}

/// A peer that connects and never sends its MPA request: the device's
/// listener never offers it, and closes the stream at its start-up timeout.
pub fn responder_times_out(make: MakeRawNet) {
    let mut listen = ListenOptions::default();
    listen.mpa.timeout = Duration::from_millis(300);
    let net = make();
    let name = net.name;
    let start = Instant::now();
    let mut rig = Rig::new(net, listen, Default::default(), None);
    rig.drive_until(|r| {
        assert!(r.qp.try_event().is_none());
        matches!(
            r.raw.state(),
            StreamState::PeerClosed | StreamState::Closed | StreamState::Reset
        )
    });
    let took = if rig.virtual_elapsed() > Duration::ZERO {
        rig.virtual_elapsed()
    } else {
        start.elapsed()
    };
    assert!(
        took >= Duration::from_millis(300),
        "{name}: closed after {took:?}"
    );
    assert!(
        took < Duration::from_secs(10),
        "{name}: closed after {took:?}"
    );
}

/// A peer that completes MPA start-up and then never sends its first FPDU:
/// at the listener's first-FPDU timeout the device's queue pair goes to
/// error, says why, flushes what was posted, and closes the stream.
pub fn silent_after_accept_times_out(make: MakeRawNet) {
    let mut listen = ListenOptions::default();
    listen.mpa.first_fpdu_timeout = Duration::from_millis(300);
    let net = make();
    let name = net.name;
    let start = Instant::now();
    let mut rig = Rig::new(net, listen, Default::default(), Some(honest_initiator()));
    let pd = rig.qp.pd().clone();
    let rx = guarded(&pd, 64, Access::LOCAL_WRITE);
    rig.qp.post_recv(wr::recv(1, vec![rx.sge_all()])).unwrap();
    let ev = loop {
        match rig.device_event(true) {
            CmEvent::Established(_) => continue,
            ev => break ev,
        }
    };
    assert_eq!(
        ev,
        CmEvent::Disconnected {
            reason: DisconnectReason::FirstFpduTimeout
        },
        "{name}"
    );
    let took = if rig.virtual_elapsed() > Duration::ZERO {
        rig.virtual_elapsed()
    } else {
        start.elapsed()
    };
    assert!(took >= Duration::from_millis(300), "{name}: after {took:?}");
    assert_eq!(rig.qp.state(), verbs::QpState::Error);
    let wcs = rig.device_completions(1, true);
    assert_wc(&wcs[0], 1, WcStatus::WrFlushErr, WcOpcode::Recv, 0);
    // The raw peer sees the stream close.
    rig.drive_until(|r| {
        matches!(
            r.raw.state(),
            StreamState::PeerClosed | StreamState::Closed | StreamState::Reset
        )
    });
}

/// The device READs 4 MiB from a peer that resets the stream half-way:
/// the READ and every posted receive are flushed, nothing is reported as
/// done, and what was placed is right.
pub fn reset_during_a_read(make: MakeRawNet) {
    let mut rig = Rig::new(
        make(),
        Default::default(),
        Default::default(),
        Some(honest_initiator()),
    );
    rig.raw.open(|_| {});
    let n = 4 << 20;
    let data = pattern(n, 4);
    let src = rig
        .raw
        .registry
        .register_vec(RAW_PD, data.clone(), Access::REMOTE_READ)
        .unwrap();
    let pd = rig.qp.pd().clone();
    let sink = guarded(&pd, n, Access::LOCAL_WRITE);
    let rx = guarded(&pd, 64, Access::LOCAL_WRITE);
    for i in 0..4 {
        rig.qp
            .post_recv(wr::recv(10 + i, vec![rx.sge_all()]))
            .unwrap();
    }
    rig.qp
        .post_send(wr::read(1, sink.sge_all(), src.rkey(), src.addr()))
        .unwrap();
    // The initiator speaks first (RFC 5044 section 7.1.2): an empty Send.
    rig.raw.conn().post_send(wr::send(0, vec![])).unwrap();
    let first = rig.device_completions(1, true);
    assert_wc(&first[0], 10, WcStatus::Success, WcOpcode::Recv, 0);
    rig.drive_until(|_| sink.with_bytes(|b| b[0] != GUARD));
    assert!(sink.with_bytes(|b| b[n - 1] == GUARD), "not finished yet");
    let now = rig.now();
    rig.raw.abort(now);
    let ev = rig.device_event(false);
    assert_eq!(
        ev,
        CmEvent::Disconnected {
            reason: DisconnectReason::Reset
        },
        "{}",
        rig.name
    );
    let mut wcs = rig.device_completions(4, false);
    wcs.sort_by_key(|w| w.wr_id);
    assert_eq!(
        wcs.iter().map(|w| w.wr_id).collect::<Vec<_>>(),
        [1, 11, 12, 13]
    );
    assert_wc(&wcs[0], 1, WcStatus::WrFlushErr, WcOpcode::RdmaRead, 0);
    for w in &wcs[1..] {
        assert_wc(w, w.wr_id, WcStatus::WrFlushErr, WcOpcode::Recv, 0);
    }
    sink.with_bytes(|b| {
        for (i, (&got, &want)) in b.iter().zip(&data).enumerate() {
            assert!(got == GUARD || got == want, "byte {i}");
        }
    });
}
