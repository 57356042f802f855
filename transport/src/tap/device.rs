//! A smoltcp device over a TAP file descriptor.
//!
//! Unlike smoltcp's own `TunTapInterface`, a read or write error is counted
//! rather than a panic, frame buffers are allocated once, and at most
//! `burst` frames are written per poll so a window's worth of segments does
//! not overflow the kernel's per-CPU backlog in one go.
//!
//! With offloads (see [`super::offload`]) each frame carries a virtio-net
//! header, TCP goes out as super-frames of up to 64 KiB that the kernel
//! cuts at the MSS, and the kernel hands up frames it coalesced: one
//! system call moves up to 44 segments instead of one.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use smoltcp::phy::{
    self, Checksum, Device, DeviceCapabilities, Medium, PacketMeta, SegmentationCapabilities,
};

use super::offload::{self, RxDrop};
use super::sys;
use super::vnet::{self, VnetHeader, VnetRepr};
use crate::kernel::sys::{ppoll, sleep_after_failed_wait};
use crate::smol::LinkDevice;
use crate::wake::WakeFd;
use crate::Waker;
use capture::pcap::PcapSink;

/// Ethernet header plus an 802.1Q tag.
const FRAME_OVERHEAD: usize = 18;
/// The largest IP packet, which a super-frame may fill.
const MAX_IP_PACKET: usize = 65535;
/// Ethernet header before an IP packet smoltcp emits.
const ETHERNET_HEADER: usize = 14;
/// Frames read in one `receive` call while skipping ones with bad checksums.
const RX_SKIP_LIMIT: usize = 64;
/// Ethernet, IP and TCP headers with options at most: cleared before
/// smoltcp builds each frame.
const HEADERS_CLEARED: usize = ETHERNET_HEADER + 60 + 60;

/// Counters of one TAP device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TapStats {
    /// Frames read from the TAP device.
    pub frames_received: u64,
    /// Frames written to it.
    pub frames_sent: u64,
    /// Frames not written because the device would block.
    pub tx_dropped: u64,
    /// Reads that failed for another reason than "nothing there".
    pub rx_errors: u64,
    /// Writes that failed for another reason than "would block".
    pub tx_errors: u64,
    /// Of `frames_sent`, TCP super-frames the kernel cut into segments.
    pub super_frames_sent: u64,
    /// Of `frames_received`, frames the kernel coalesced from segments.
    pub super_frames_received: u64,
    /// TCP frames dropped for a checksum nobody had verified.
    pub rx_bad_checksum: u64,
}

#[derive(Debug)]
struct TxSide {
    buf: Vec<u8>,
    now: Instant,
    pcap: Option<PcapSink>,
    stats: TapStats,
    /// Frames still allowed this poll.
    budget: usize,
    activity: bool,
    /// Frames carry a virtio-net header and offloads are on.
    offload: bool,
}

/// A TAP interface as a smoltcp Ethernet device.
#[derive(Debug)]
pub struct TapDevice {
    fd: OwnedFd,
    ifname: String,
    mtu: usize,
    burst: usize,
    rx_buf: Vec<u8>,
    tx: TxSide,
    /// Lets another thread end a `wait` (`None` if no eventfd could be made).
    wake: Option<Arc<WakeFd>>,
}

impl TapDevice {
    /// `offload`: the descriptor was opened with the virtio-net header and
    /// the kernel accepted `TUN_F_CSUM | TUN_F_TSO4`.
    pub(crate) fn new(
        fd: OwnedFd,
        ifname: String,
        mtu: usize,
        burst: usize,
        offload: bool,
    ) -> Self {
        let frame = if offload {
            vnet::HEADER_LEN + (mtu + FRAME_OVERHEAD).max(MAX_IP_PACKET + FRAME_OVERHEAD)
        } else {
            mtu + FRAME_OVERHEAD
        };
        TapDevice {
            fd,
            ifname,
            mtu,
            burst: burst.max(1),
            rx_buf: vec![0u8; frame],
            tx: TxSide {
                buf: Vec::with_capacity(frame),
                now: Instant::now(),
                pcap: None,
                stats: TapStats::default(),
                budget: burst.max(1),
                activity: false,
                offload,
            },
            wake: WakeFd::new().ok().map(Arc::new),
        }
    }

    /// The interface name the kernel gave.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// IP MTU of the interface when it was opened.
    pub fn mtu(&self) -> usize {
        self.mtu
    }

    /// What the device has moved and dropped so far.
    pub fn stats(&self) -> TapStats {
        self.tx.stats
    }

    /// Whether the kernel segments and checksums for this device (see
    /// [`super::TapConfig::offload`]).
    pub fn offload(&self) -> bool {
        self.tx.offload
    }

    /// Records every frame written to and read from the device. With
    /// offloads, a super-frame is recorded as the segments the kernel cuts
    /// it into and partial checksums completed: the capture shows the
    /// frames a peer receives, not the system calls.
    pub fn set_pcap(&mut self, sink: Option<PcapSink>) {
        self.tx.pcap = sink;
    }

    /// The capture being recorded, if any.
    pub fn pcap(&self) -> Option<&PcapSink> {
        self.tx.pcap.as_ref()
    }

    /// Stops recording and hands the capture over.
    pub fn take_pcap(&mut self) -> Option<PcapSink> {
        self.tx.pcap.take()
    }
}

pub struct RxToken<'a> {
    frame: &'a [u8],
}

impl phy::RxToken for RxToken<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.frame)
    }
}

pub struct TxToken<'a> {
    fd: &'a OwnedFd,
    tx: &'a mut TxSide,
    /// The MSS to cut a super-segment at, as smoltcp asked.
    gso_size: Option<u16>,
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let tx = self.tx;
        let at = if tx.offload { vnet::HEADER_LEN } else { 0 };
        // smoltcp writes every byte of the frame it asks for, so only a
        // grown buffer is zeroed (a full-size clear per 64 KiB super-frame
        // cost as much as a copy), and the header area that TCP options
        // may leave unwritten is cleared each time.
        if tx.buf.len() < at + len {
            tx.buf.resize(at + len, 0);
        }
        let frame = &mut tx.buf[..at + len];
        let dirty = frame.len().min(at + HEADERS_CLEARED);
        frame[..dirty].fill(0);
        let r = f(&mut frame[at..]);
        let total = at + len;
        tx.budget = tx.budget.saturating_sub(1);
        tx.activity = true;
        let hdr = if tx.offload {
            let (head, frame) = tx.buf[..total].split_at_mut(at);
            let hdr = offload::prepare_tx(frame, self.gso_size);
            // `head` is exactly HEADER_LEN bytes: emit cannot fail.
            let _ = hdr.emit(head);
            hdr
        } else {
            VnetRepr::default()
        };
        if let Some(p) = tx.pcap.as_mut() {
            let now = tx.now;
            offload::wire_frames(&hdr, &tx.buf[at..total], &mut |f| p.record(now, f));
        }
        match sys::write_frame(self.fd, &tx.buf[..total]) {
            Ok(true) => {
                tx.stats.frames_sent += 1;
                tx.stats.super_frames_sent += u64::from(hdr.segmentation.is_some());
            }
            // TCP retransmits what the device could not take.
            Ok(false) => tx.stats.tx_dropped += 1,
            Err(_) => tx.stats.tx_errors += 1,
        }
        r
    }

    fn set_meta(&mut self, meta: PacketMeta) {
        self.gso_size = meta.segmentation_offload_size.map(|n| n.get());
    }
}

impl Device for TapDevice {
    type RxToken<'a> = RxToken<'a>;
    type TxToken<'a> = TxToken<'a>;

    fn receive(
        &mut self,
        _timestamp: smoltcp::time::Instant,
    ) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        let mut range = None;
        for _ in 0..RX_SKIP_LIMIT {
            match self.read_one() {
                None => return None,
                Some(None) => continue,
                Some(Some(r)) => {
                    range = Some(r);
                    break;
                }
            }
        }
        let range = range?;
        Some((
            RxToken {
                frame: &self.rx_buf[range],
            },
            TxToken {
                fd: &self.fd,
                tx: &mut self.tx,
                gso_size: None,
            },
        ))
    }

    fn transmit(&mut self, _timestamp: smoltcp::time::Instant) -> Option<Self::TxToken<'_>> {
        if self.tx.budget == 0 {
            return None;
        }
        Some(TxToken {
            fd: &self.fd,
            tx: &mut self.tx,
            gso_size: None,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = self.mtu + ETHERNET_HEADER;
        if self.tx.offload {
            // The kernel completes TCP checksums on transmit; on receive
            // the device checks those nobody vouched for (see `read_one`).
            caps.checksum.tcp = Checksum::None;
            let mut seg = SegmentationCapabilities::default();
            seg.tcpv4 = std::num::NonZeroUsize::new(ETHERNET_HEADER + MAX_IP_PACKET);
            caps.segmentation = seg;
        }
        caps
    }
}

impl Drop for TapDevice {
    fn drop(&mut self) {
        if self.tx.offload {
            // Nothing to do about a failure: the descriptor closes anyway.
            let _ = sys::disable_offload(&self.fd);
        }
    }
}

impl TapDevice {
    /// Reads one frame: `None` when none waits, `Some(None)` for a frame
    /// dropped here, else where the frame lies in `rx_buf`.
    fn read_one(&mut self) -> Option<Option<std::ops::Range<usize>>> {
        let n = match sys::read_frame(&self.fd, &mut self.rx_buf) {
            Ok(Some(n)) => n,
            Ok(None) => return None,
            Err(_) => {
                self.tx.stats.rx_errors += 1;
                return None;
            }
        };
        let stats = &mut self.tx.stats;
        stats.frames_received += 1;
        self.tx.activity = true;
        if !self.tx.offload {
            if let Some(p) = self.tx.pcap.as_mut() {
                p.record(self.tx.now, &self.rx_buf[..n]);
            }
            return Some(Some(0..n));
        }
        let (head, frame) = self.rx_buf[..n].split_at_mut(vnet::HEADER_LEN.min(n));
        let Ok(h) = VnetHeader::new_checked(&*head) else {
            stats.rx_errors += 1;
            return Some(None);
        };
        let hdr = VnetRepr::parse(&h);
        stats.super_frames_received += u64::from(hdr.segmentation.is_some());
        if let Err(why) = offload::accept_rx(&hdr, frame) {
            match why {
                RxDrop::BadChecksum => stats.rx_bad_checksum += 1,
                RxDrop::BadHeader => stats.rx_errors += 1,
            }
            return Some(None);
        }
        if let Some(p) = self.tx.pcap.as_mut() {
            let now = self.tx.now;
            offload::wire_frames(&hdr, frame, &mut |f| p.record(now, f));
        }
        Some(Some(vnet::HEADER_LEN..n))
    }
}

impl LinkDevice for TapDevice {
    fn set_now(&mut self, now: Instant) {
        self.tx.now = now;
        self.tx.budget = self.burst;
    }

    fn end_poll(&mut self) -> bool {
        std::mem::take(&mut self.tx.activity)
    }

    fn poll_delay(&mut self, _now: Instant) -> Option<Duration> {
        // A poll that spent its whole burst has more to send right away.
        (self.tx.budget == 0).then_some(Duration::ZERO)
    }

    fn wait(&mut self, timeout: Option<Duration>) {
        let tap = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let mut fds = [tap, self.wake.as_ref().map_or(tap, |w| w.pollfd())];
        // A paced sender's next segment may be due in microseconds: poll(2)
        // would round that up to a millisecond and hold the flight back.
        if ppoll(&mut fds, timeout).is_err() {
            sleep_after_failed_wait(timeout);
        }
        if let Some(w) = &self.wake {
            w.drain();
        }
    }

    fn waker(&self) -> Option<Waker> {
        self.wake.as_ref().map(WakeFd::waker)
    }

    /// The TAP descriptor itself: readable while the kernel holds frames
    /// for us, and a poll reads them (a burst at a time; `poll_delay` is
    /// zero while a burst was cut short).
    fn readiness_fd(&mut self) -> Option<OwnedFd> {
        self.fd.try_clone().ok()
    }

    fn has_readiness_fd(&self) -> bool {
        true
    }
}
