//! A smoltcp device over a TAP file descriptor.
//!
//! Unlike smoltcp's own `TunTapInterface`, a read or write error is counted
//! rather than a panic, frame buffers are allocated once, and at most
//! `burst` frames are written per poll so a window's worth of segments does
//! not overflow the kernel's per-CPU backlog in one go.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};

use super::sys;
use crate::kernel::sys::poll;
use crate::smol::LinkDevice;
use crate::wake::WakeFd;
use crate::Waker;
use capture::pcap::PcapSink;

/// Ethernet header plus an 802.1Q tag.
const FRAME_OVERHEAD: usize = 18;

/// Counters of one TAP device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TapStats {
    pub frames_received: u64,
    pub frames_sent: u64,
    /// Frames not written because the device would block.
    pub tx_dropped: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
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
    pub(crate) fn new(fd: OwnedFd, ifname: String, mtu: usize, burst: usize) -> Self {
        let frame = mtu + FRAME_OVERHEAD;
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

    pub fn stats(&self) -> TapStats {
        self.tx.stats
    }

    /// Records every frame written to and read from the device.
    pub fn set_pcap(&mut self, sink: Option<PcapSink>) {
        self.tx.pcap = sink;
    }

    pub fn pcap(&self) -> Option<&PcapSink> {
        self.tx.pcap.as_ref()
    }

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
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let tx = self.tx;
        tx.buf.clear();
        tx.buf.resize(len, 0);
        let r = f(&mut tx.buf);
        tx.budget = tx.budget.saturating_sub(1);
        tx.activity = true;
        if let Some(p) = tx.pcap.as_mut() {
            p.record(tx.now, &tx.buf);
        }
        match sys::write_frame(self.fd, &tx.buf) {
            Ok(true) => tx.stats.frames_sent += 1,
            // TCP retransmits what the device could not take.
            Ok(false) => tx.stats.tx_dropped += 1,
            Err(_) => tx.stats.tx_errors += 1,
        }
        r
    }
}

impl Device for TapDevice {
    type RxToken<'a> = RxToken<'a>;
    type TxToken<'a> = TxToken<'a>;

    fn receive(
        &mut self,
        _timestamp: smoltcp::time::Instant,
    ) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        let n = match sys::read_frame(&self.fd, &mut self.rx_buf) {
            Ok(Some(n)) => n,
            Ok(None) => return None,
            Err(_) => {
                self.tx.stats.rx_errors += 1;
                return None;
            }
        };
        let frame = &self.rx_buf[..n];
        self.tx.stats.frames_received += 1;
        self.tx.activity = true;
        if let Some(p) = self.tx.pcap.as_mut() {
            p.record(self.tx.now, frame);
        }
        Some((
            RxToken { frame },
            TxToken {
                fd: &self.fd,
                tx: &mut self.tx,
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
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = self.mtu + 14;
        caps
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
        if poll(&mut fds, timeout).is_err() {
            std::thread::sleep(
                timeout
                    .unwrap_or(Duration::from_millis(1))
                    .min(Duration::from_millis(1)),
            );
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
}
