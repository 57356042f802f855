//! A smoltcp device on one end of the in-process wire.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};

use super::fault::{Fate, FaultConfig, Impairment};
use super::link::{Frame, InFlight, Wire};
use crate::link_model::LinkCounters;
use crate::smol::LinkDevice;
use crate::Waker;
use capture::pcap::PcapSink;

/// Bytes of an Ethernet II header.
const ETHERNET_HEADER: usize = 14;

/// What one end of the link saw, for tests and reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Frames handed to the wire (before impairment).
    pub frames_sent: u64,
    /// Bytes of those frames.
    pub bytes_sent: u64,
    /// Frames the impairment's random or bursty loss dropped.
    pub lost: u64,
    /// Frames the bottleneck queue had no room for.
    pub overflowed: u64,
    /// Frames the impairment corrupted.
    pub corrupted: u64,
    /// Frames taken off the wire.
    pub frames_received: u64,
}

/// Sending half: everything a transmit token touches.
#[derive(Debug)]
struct TxSide {
    now: Instant,
    impairment: Impairment,
    /// Frames built this poll, queued on the wire when the poll ends.
    out: Vec<InFlight>,
    /// Empty buffers ready for new frames.
    spares: Vec<Vec<u8>>,
    frame_capacity: usize,
    pcap: Option<PcapSink>,
    stats: LinkStats,
    /// A frame was built or received since the last `end_poll`.
    activity: bool,
}

/// Receiving half: frames due now and buffers to hand back.
#[derive(Debug, Default)]
struct RxSide {
    due: VecDeque<Frame>,
    used: Vec<Vec<u8>>,
    /// This poll has taken its arrival instant's frames from the wire.
    taken: bool,
}

/// One end of a memory link, as a smoltcp Ethernet device.
#[derive(Debug)]
pub struct MemoryDevice {
    wire: Arc<Wire>,
    /// Lane this end sends on; it receives on the other.
    lane: usize,
    mtu: usize,
    tx: TxSide,
    rx: RxSide,
    /// Frames one poll may take when several are due (see
    /// [`MemoryLinkConfig::rx_batch`](super::MemoryLinkConfig::rx_batch)).
    rx_batch: usize,
}

impl MemoryDevice {
    pub(crate) fn new(
        wire: Arc<Wire>,
        lane: usize,
        ip_mtu: usize,
        faults: FaultConfig,
        seed: u64,
    ) -> Self {
        let mtu = ip_mtu + ETHERNET_HEADER;
        MemoryDevice {
            wire,
            lane,
            mtu,
            tx: TxSide {
                now: Instant::now(),
                impairment: Impairment::new(faults, seed),
                out: Vec::new(),
                spares: Vec::new(),
                frame_capacity: mtu,
                pcap: None,
                stats: LinkStats::default(),
                activity: false,
            },
            rx: RxSide::default(),
            rx_batch: 1,
        }
    }

    /// Lets one poll take up to `frames` frames that are already due.
    pub(crate) fn set_rx_batch(&mut self, frames: usize) {
        self.rx_batch = frames.max(1);
    }

    /// Records every frame this end sends (before impairment) and receives.
    pub fn set_pcap(&mut self, sink: Option<PcapSink>) {
        self.tx.pcap = sink;
    }

    /// The capture being recorded, if any.
    pub fn pcap(&self) -> Option<&PcapSink> {
        self.tx.pcap.as_ref()
    }

    /// Takes the capture out (flushing happens when it is dropped).
    pub fn take_pcap(&mut self) -> Option<PcapSink> {
        self.tx.pcap.take()
    }

    /// What this end has sent, received and dropped so far.
    pub fn stats(&self) -> LinkStats {
        self.tx.stats
    }

    /// What the link model did to the frames this end sent, and how late
    /// the far end took them.
    pub fn link_counters(&self) -> LinkCounters {
        LinkCounters {
            taken_late: self.wire.taken_late(self.lane),
            ..self.tx.impairment.counters()
        }
    }

    /// Frames this end sent that found the wire full.
    pub fn overflow_drops(&self) -> u64 {
        self.wire.overflow_drops(self.lane)
    }

    fn rx_lane(&self) -> usize {
        1 - self.lane
    }

    /// Puts the frames built during the poll on the wire.
    fn flush(&mut self) {
        if self.tx.out.is_empty() && !self.tx.spares.is_empty() {
            return;
        }
        let want = self.tx.out.len().max(8);
        self.wire
            .send(self.lane, &mut self.tx.out, &mut self.tx.spares, want);
    }
}

pub struct RxToken<'a> {
    frame: Frame,
    used: &'a mut Vec<Vec<u8>>,
}

impl phy::RxToken for RxToken<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let r = f(self.frame.bytes());
        self.used.push(self.frame.into_buffer());
        r
    }
}

pub struct TxToken<'a> {
    tx: &'a mut TxSide,
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let tx = self.tx;
        let buf = tx.spares.pop().unwrap_or_default();
        // smoltcp writes every octet of the frame it asks for; the stale
        // bytes of a reused buffer are overwritten, never sent.
        let mut frame = Frame::reuse(buf, len, tx.frame_capacity);
        let r = f(frame.bytes_mut());
        if let Some(p) = tx.pcap.as_mut() {
            p.record(tx.now, frame.bytes());
        }
        tx.activity = true;
        tx.stats.frames_sent += 1;
        tx.stats.bytes_sent += len as u64;
        match tx.impairment.apply(tx.now, frame.bytes_mut()) {
            Fate::Lost => {
                tx.stats.lost += 1;
                tx.spares.push(frame.into_buffer());
            }
            Fate::Overflowed => {
                tx.stats.overflowed += 1;
                tx.spares.push(frame.into_buffer());
            }
            Fate::Deliver { at, corrupted } => {
                tx.stats.corrupted += u64::from(corrupted);
                tx.out.push(InFlight {
                    deliver_at: at,
                    frame,
                });
            }
        }
        r
    }
}

impl Device for MemoryDevice {
    type RxToken<'a> = RxToken<'a>;
    type TxToken<'a> = TxToken<'a>;

    fn receive(
        &mut self,
        _timestamp: smoltcp::time::Instant,
    ) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        if self.rx.due.is_empty() && !std::mem::replace(&mut self.rx.taken, true) {
            self.wire.receive_batch(
                self.rx_lane(),
                self.tx.now,
                self.rx_batch,
                &mut self.rx.due,
                &mut self.rx.used,
            );
        }
        let frame = self.rx.due.pop_front()?;
        self.tx.activity = true;
        self.tx.stats.frames_received += 1;
        if let Some(p) = self.tx.pcap.as_mut() {
            p.record(self.tx.now, frame.bytes());
        }
        Some((
            RxToken {
                frame,
                used: &mut self.rx.used,
            },
            TxToken { tx: &mut self.tx },
        ))
    }

    fn transmit(&mut self, _timestamp: smoltcp::time::Instant) -> Option<Self::TxToken<'_>> {
        Some(TxToken { tx: &mut self.tx })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = self.mtu;
        caps
    }
}

impl LinkDevice for MemoryDevice {
    fn set_now(&mut self, now: Instant) {
        self.tx.now = now;
        self.rx.taken = false;
    }

    fn end_poll(&mut self) -> bool {
        self.flush();
        std::mem::take(&mut self.tx.activity)
    }

    fn poll_delay(&mut self, now: Instant) -> Option<Duration> {
        if !self.rx.due.is_empty() {
            return Some(Duration::ZERO);
        }
        self.wire
            .next_due(self.rx_lane())
            .map(|due| due.saturating_duration_since(now))
    }

    fn wait(&mut self, timeout: Option<Duration>) {
        self.flush();
        if !self.rx.due.is_empty() {
            return;
        }
        self.wire.wait(self.rx_lane(), timeout);
    }

    fn waker(&self) -> Option<Waker> {
        let (wire, lane) = (Arc::clone(&self.wire), self.rx_lane());
        Some(Arc::new(move || wire.wake(lane)))
    }

    /// An eventfd the peer's sends make readable and our receives clear.
    fn readiness_fd(&mut self) -> Option<std::os::fd::OwnedFd> {
        self.wire.readiness_fd(self.rx_lane())
    }

    fn has_readiness_fd(&self) -> bool {
        true
    }

    fn link_counters(&self) -> Option<LinkCounters> {
        Some(MemoryDevice::link_counters(self))
    }
}
