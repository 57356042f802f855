//! The two transports the bench's endpoints sit on.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use capture::netns::Netns;
use capture::pcap::PcapSink;
use clap::ValueEnum;
use verbs::transport::kernel::{KernelConfig, KernelTransport};
use verbs::transport::memory::{FaultConfig, MemoryLink, MemoryLinkConfig};
use verbs::transport::tap::{TapConfig, TapTransport};
use verbs::transport::Transport;

use super::nft_loss::{self, Hook};

/// Port the server endpoint listens on.
pub(crate) const PORT: u16 = 7471;

/// Staging per kernel TCP stream (`KernelConfig::send_buffer`), for the
/// raw baseline and the RDMA endpoints alike. The kernel's send buffer
/// holds what is in flight; staging only batches one turn's FPDUs into one
/// `write`. Kept small, the bytes gathered into it are still in cache when
/// the kernel copies them: with the default 1 MiB, 1 MiB Writes on loopback
/// ran at half the goodput per CPU-second, raw TCP likewise. It holds the
/// largest FPDU a loopback MSS allows (65532 bytes).
const KERNEL_STAGING: usize = 64 << 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportKind {
    /// smoltcp on an in-memory link (no privileges).
    Memory,
    /// Kernel TCP on 127.0.0.1.
    Kernel,
    /// smoltcp on two TAP devices bridged in a private network namespace.
    Tap,
}

#[derive(Debug, Clone)]
pub(crate) struct LinkOptions {
    pub kind: TransportKind,
    pub mtu: usize,
    /// Fractions, not percent.
    pub loss: f64,
    pub corrupt: f64,
    /// Extra delay per frame, uniform up to this (memory link): reordering.
    pub jitter: std::time::Duration,
    pub pcap: Option<PathBuf>,
    /// TAP devices with checksum and segmentation offloads.
    pub tap_offload: bool,
    /// Congestion control of the smoltcp sockets.
    pub congestion: transport::CongestionControl,
}

pub(crate) type BoxedTransport = Box<dyn Transport + Send>;

/// Two transports that reach each other, and what must outlive them.
pub(crate) struct Link {
    pub client: BoxedTransport,
    pub server: BoxedTransport,
    /// Where the server listens, as the client reaches it.
    pub server_addr: SocketAddr,
    pub guard: Option<Netns>,
}

impl LinkOptions {
    pub(crate) fn memory_config(&self) -> MemoryLinkConfig {
        MemoryLinkConfig::default()
            .mtu(self.mtu)
            .faults(
                FaultConfig::default()
                    .loss(self.loss)
                    .corrupt(self.corrupt)
                    .jitter(self.jitter),
            )
            .tuning(
                MemoryLinkConfig::default()
                    .tuning
                    .congestion(self.congestion),
            )
    }
}

/// Builds a link; with `pcap`, the client side records what crosses it.
pub(crate) fn build(opts: &LinkOptions) -> Result<Link, String> {
    build_with(opts, opts.pcap.as_deref())
}

pub(crate) fn build_with(
    opts: &LinkOptions,
    pcap: Option<&std::path::Path>,
) -> Result<Link, String> {
    let sink = match pcap {
        Some(p) => {
            Some(PcapSink::create(p).map_err(|e| format!("cannot write {}: {e}", p.display()))?)
        }
        None => None,
    };
    match opts.kind {
        TransportKind::Memory => {
            let cfg = opts.memory_config();
            let (mut a, b) = MemoryLink::pair(&cfg).map_err(|e| format!("memory link: {e}"))?;
            a.device_mut().set_pcap(sink);
            Ok(Link {
                client: Box::new(a),
                server: Box::new(b),
                server_addr: cfg.endpoint_b(PORT),
                guard: None,
            })
        }
        TransportKind::Kernel => {
            let cfg = KernelConfig::default()
                .bind_ip(IpAddr::V4(Ipv4Addr::LOCALHOST))
                .send_buffer(KERNEL_STAGING);
            let mut a = KernelTransport::new(cfg.clone());
            a.set_pcap(sink);
            let b = KernelTransport::new(cfg);
            // A port of this process's own, so concurrent runs do not collide.
            let port = 20_000 + (std::process::id() % 20_000) as u16;
            Ok(Link {
                client: Box::new(a),
                server: Box::new(b),
                server_addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
                guard: None,
            })
        }
        TransportKind::Tap => {
            let guard = Netns::create("bench").map_err(|e| {
                format!("TAP transport: {e} (it needs root, /dev/net/tun and iproute2)")
            })?;
            guard.ip(&["link", "add", "br0", "type", "bridge"])?;
            guard.ip(&["link", "set", "br0", "up"])?;
            if opts.loss > 0.0 {
                // Every frame between the two hosts crosses the bridge once.
                nft_loss::install(guard.name(), Hook::BridgeForward, opts.loss)?;
            }
            let open = |name: &str, last: u8| -> Result<TapTransport, String> {
                let cfg = TapConfig::default()
                    .ifname(name.into())
                    .netns(Some(guard.name().to_owned()))
                    .addr(Ipv4Addr::new(10, 77, 2, last))
                    .prefix_len(24)
                    .mac([0x02, 0x49, 0x57, 0xbe, 0, last])
                    .mtu(None)
                    .offload(opts.tap_offload)
                    .tuning(TapConfig::default().tuning.congestion(opts.congestion));
                TapTransport::open(&cfg).map_err(|e| format!("TAP {name}: {e}"))
            };
            // The kernel side of each TAP joins the bridge; MTU first.
            for name in ["iwb0", "iwb1"] {
                guard.ip(&["tuntap", "add", "dev", name, "mode", "tap"])?;
                guard.ip(&["link", "set", name, "mtu", &opts.mtu.to_string()])?;
                guard.ip(&["link", "set", name, "master", "br0"])?;
                guard.ip(&["link", "set", name, "up"])?;
            }
            let mut a = open("iwb0", 1)?;
            let b = open("iwb1", 2)?;
            a.device_mut().set_pcap(sink);
            Ok(Link {
                client: Box::new(a),
                server: Box::new(b),
                server_addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 77, 2, 2)), PORT),
                guard: Some(guard),
            })
        }
    }
}
