//! smoltcp on a Linux TAP device.
//!
//! The TAP interface is the kernel's side of the wire; this transport is a
//! separate host behind it with its own MAC and IP address, talking TCP to
//! whatever the kernel routes to the interface (a kernel socket, a bridge,
//! a VM's siw). With [`TapConfig::netns`] the interface is created inside a
//! network namespace while the process stays where it is.

mod device;
pub mod netns;
mod offload;
pub(crate) mod sys;
pub mod vnet;

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;

use smoltcp::wire::{EthernetAddress, Ipv4Cidr};

pub use device::{TapDevice, TapStats};

use super::smol::SmolStack;
use super::{TcpTuning, TransportError};

/// A smoltcp host on a TAP interface.
pub type TapTransport = SmolStack<TapDevice>;

/// How the TAP transport is set up.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TapConfig {
    /// Interface to create or attach to (at most 15 bytes; `%d` lets the
    /// kernel number it).
    pub ifname: String,
    /// Network namespace to create the interface in (name from
    /// `ip netns add`, or a path); `None` uses the caller's.
    pub netns: Option<String>,
    /// This host's address and prefix length.
    pub addr: Ipv4Addr,
    /// The prefix length of the subnet the TAP is on.
    pub prefix_len: u8,
    /// This host's MAC; must differ from the kernel's side of the TAP.
    pub mac: [u8; 6],
    /// Default route for destinations outside the prefix.
    pub gateway: Option<Ipv4Addr>,
    /// IP MTU; `None` reads the interface's.
    pub mtu: Option<usize>,
    /// Set the interface up after opening it.
    pub bring_up: bool,
    /// Socket settings.
    pub tuning: TcpTuning,
    /// Shrink each receive window to what the interface's transmit queue
    /// holds (txqueuelen × MSS), so the kernel never bursts more frames at
    /// us than the queue keeps: drops there collapse TCP throughput.
    pub fit_window_to_queue: bool,
    /// Frames written per poll at most.
    pub tx_burst: usize,
    /// Let the kernel segment and checksum (a virtio-net header on every
    /// frame, `TUN_F_CSUM | TUN_F_TSO4`): smoltcp writes TCP super-frames of
    /// up to 64 KiB that the kernel cuts at the MSS, and reads the large
    /// frames the kernel coalesced. Falls back to one frame per MTU, with
    /// checksums in software, where the kernel refuses.
    pub offload: bool,
    /// Seeds initial sequence numbers and ephemeral ports.
    pub seed: u64,
}

crate::setters::setters!(TapConfig {
    ifname: String,
    netns: Option<String>,
    addr: Ipv4Addr,
    prefix_len: u8,
    mac: [u8; 6],
    gateway: Option<Ipv4Addr>,
    mtu: Option<usize>,
    bring_up: bool,
    tuning: TcpTuning,
    fit_window_to_queue: bool,
    tx_burst: usize,
    offload: bool,
    seed: u64,
});

impl Default for TapConfig {
    fn default() -> Self {
        TapConfig {
            ifname: "iwtap%d".into(),
            netns: None,
            addr: Ipv4Addr::new(10, 77, 1, 2),
            prefix_len: 24,
            mac: [0x02, 0x49, 0x57, 0, 0, 0x02],
            gateway: None,
            mtu: None,
            bring_up: true,
            tuning: TcpTuning {
                segment_aligned: true,
                autocork: false,
                ..TcpTuning::default()
            },
            fit_window_to_queue: true,
            tx_burst: 256,
            offload: true,
            seed: 0x7a9_5eed,
        }
    }
}

/// What opening the interface learned.
struct Opened {
    fd: OwnedFd,
    ifname: String,
    mtu: usize,
    txqueuelen: usize,
    offload: bool,
}

/// The descriptor, with offloads if asked for and the kernel agrees.
fn open_fd(cfg: &TapConfig) -> io::Result<(OwnedFd, String, bool)> {
    if cfg.offload {
        let (fd, ifname) = sys::open_tap(&cfg.ifname, true)?;
        if sys::enable_tcp4_offload(&fd).is_ok() {
            return Ok((fd, ifname, true));
        }
        // Reopen plain; a `%d` name is resolved by now.
        drop(fd);
        return open_plain(&ifname);
    }
    open_plain(&cfg.ifname)
}

/// The descriptor without offloads, withdrawing any a program that ended
/// without doing so left on the interface (they belong to it, and frames
/// of up to 64 KiB would come up).
fn open_plain(ifname: &str) -> io::Result<(OwnedFd, String, bool)> {
    let (fd, ifname) = sys::open_tap(ifname, false)?;
    sys::disable_offload(&fd)?;
    Ok((fd, ifname, false))
}

fn open_here(cfg: &TapConfig) -> io::Result<Opened> {
    let (fd, ifname, offload) = open_fd(cfg)?;
    let ctl = sys::control_socket()?;
    if cfg.bring_up {
        sys::bring_up(&ctl, &ifname)?;
    }
    let mtu = match cfg.mtu {
        Some(m) => m,
        None => sys::mtu(&ctl, &ifname)?,
    };
    // Unknown queue length: assume Linux's default for Ethernet devices.
    let txqueuelen = sys::txqueuelen(&ctl, &ifname).unwrap_or(1000);
    Ok(Opened {
        fd,
        ifname,
        mtu,
        txqueuelen,
        offload,
    })
}

impl SmolStack<TapDevice> {
    /// Opens (or creates) the TAP interface and puts a smoltcp host on it.
    /// Needs CAP_NET_ADMIN; in a namespace, also CAP_SYS_ADMIN.
    pub fn open(cfg: &TapConfig) -> Result<Self, TransportError> {
        if cfg.prefix_len > 32 {
            return Err(TransportError::BadAddress("prefix length over 32"));
        }
        let opened = match &cfg.netns {
            Some(ns) => netns::in_netns(ns, || open_here(cfg))
                .and_then(|r| r)
                .map_err(|e| TransportError::io("open TAP in namespace", e))?,
            None => open_here(cfg).map_err(|e| TransportError::io("open TAP", e))?,
        };
        if !(576..=65535).contains(&opened.mtu) {
            return Err(TransportError::BadAddress("TAP MTU outside 576..=65535"));
        }
        let tuning = fitted_tuning(cfg, opened.mtu, opened.txqueuelen);
        let dev = TapDevice::new(
            opened.fd,
            opened.ifname,
            opened.mtu,
            cfg.tx_burst,
            opened.offload,
        );
        SmolStack::new(
            dev,
            EthernetAddress(cfg.mac),
            Ipv4Cidr::new(cfg.addr, cfg.prefix_len),
            cfg.gateway,
            tuning,
            cfg.seed,
        )
    }
}

/// The tuning with the receive window capped to the TAP queue, if asked,
/// and, for aligned segments, a send ring of whole segments.
fn fitted_tuning(cfg: &TapConfig, mtu: usize, txqueuelen: usize) -> TcpTuning {
    let mut t = cfg.tuning.clone();
    let mss = mtu.saturating_sub(40).max(1);
    if cfg.fit_window_to_queue {
        // Never below a few segments, or the connection crawls.
        let cap = (txqueuelen * mss).max(4 * mss);
        t.rx_buffer = t.rx_buffer.min(cap);
    }
    if t.segment_aligned && t.tx_buffer >= mss {
        // smoltcp sends no segment across the ring's end: a ring of whole
        // segments wraps between two, so the MSS-sized FPDUs stay aligned.
        t.tx_buffer -= t.tx_buffer % mss;
    }
    t
}

#[cfg(test)]
mod tests;
