//! The two devices of a test and the network between them: the in-memory
//! link (real or virtual time, optionally impaired), kernel TCP on
//! loopback, smoltcp on a TAP device facing kernel TCP in a namespace, or
//! two smoltcp hosts on bridged TAP devices.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Instant;

use verbs::transport::kernel::{KernelConfig, KernelTransport};
use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::transport::tap::{TapConfig, TapTransport};
use verbs::Device;

use super::capture::Capture;
use super::PORT;
pub use ::capture::netns::Netns;

/// Which device of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// Two unconnected devices and where the server listens.
pub struct Net {
    pub client: Device,
    pub server: Device,
    /// Address the client connects to.
    pub server_ip: IpAddr,
    /// Port to listen on; 0 lets the transport pick (kernel TCP).
    pub listen_port: u16,
    /// What the client's transport saw, when recorded.
    pub capture: Option<Capture>,
    /// Start of virtual time, when the devices run on it.
    pub virtual_start: Option<Instant>,
    /// What this net is, for messages.
    pub name: String,
}

impl Net {
    /// Two smoltcp hosts on an in-memory link, on the real clock, with the
    /// client's frames recorded.
    pub fn memory(cfg: &MemoryLinkConfig) -> Net {
        let (mut a, b) = MemoryLink::pair(cfg).expect("memory link");
        let capture = Capture::default();
        a.device_mut().set_pcap(Some(capture.sink()));
        Net {
            client: Device::new(Box::new(a)),
            server: Device::new(Box::new(b)),
            server_ip: IpAddr::V4(cfg.addr_b()),
            listen_port: PORT,
            capture: Some(capture),
            virtual_start: None,
            name: "memory".into(),
        }
    }

    /// The memory link on virtual time: deterministic for a given seed.
    pub fn memory_virtual(cfg: &MemoryLinkConfig) -> Net {
        let mut net = Net::memory(cfg);
        let start = Instant::now();
        net.client.use_virtual_clock(start);
        net.server.use_virtual_clock(start);
        net.virtual_start = Some(start);
        net.name = "memory (virtual time)".into();
        net
    }

    /// Kernel TCP on 127.0.0.1, an ephemeral port, the client's bytes
    /// recorded as synthesized frames.
    pub fn kernel() -> Net {
        let cfg = KernelConfig::default().bind_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let mut client = KernelTransport::new(cfg.clone());
        let capture = Capture::default();
        client.set_pcap(Some(capture.sink()));
        Net {
            client: Device::new(Box::new(client)),
            server: Device::new(Box::new(KernelTransport::new(cfg))),
            server_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            listen_port: 0,
            capture: Some(capture),
            virtual_start: None,
            name: "kernel".into(),
        }
    }

    /// smoltcp on a TAP device in `ns` facing a kernel-TCP device in the
    /// same namespace; `tap_is_client` picks who connects. Must run on a
    /// thread inside `ns` (kernel sockets are made in the caller's
    /// namespace).
    pub fn tap(ns: &Netns, tap_is_client: bool) -> Net {
        let k = ns.next_iface();
        let subnet = 10 + (k % 200) as u8;
        let tap_ip = Ipv4Addr::new(10, 77, subnet, 2);
        let kernel_ip = Ipv4Addr::new(10, 77, subnet, 1);
        let ifname = format!("iwtap{k}");
        let cfg = TapConfig::default()
            .ifname(ifname.clone())
            .netns(None)
            .addr(tap_ip);
        let mut tap = TapTransport::open(&cfg).expect("TAP in the namespace");
        ns.ip(&["addr", "add", &format!("{kernel_ip}/24"), "dev", &ifname])
            .expect("address on the TAP device");
        let capture = Capture::default();
        let kernel = KernelTransport::new(KernelConfig::default().bind_ip(IpAddr::V4(kernel_ip)));
        let (client, server, server_ip, listen_port) = if tap_is_client {
            tap.device_mut().set_pcap(Some(capture.sink()));
            (
                Device::new(Box::new(tap)),
                Device::new(Box::new(kernel)),
                kernel_ip,
                0,
            )
        } else {
            let mut kernel = kernel;
            kernel.set_pcap(Some(capture.sink()));
            (
                Device::new(Box::new(kernel)),
                Device::new(Box::new(tap)),
                tap_ip,
                PORT,
            )
        };
        Net {
            client,
            server,
            server_ip: IpAddr::V4(server_ip),
            listen_port,
            capture: Some(capture),
            virtual_start: None,
            name: format!(
                "tap ({} connects)",
                if tap_is_client { "tap" } else { "kernel" }
            ),
        }
    }

    /// Two smoltcp hosts on TAP devices joined by a bridge in `ns`, each
    /// with or without the kernel's checksum and segmentation offloads;
    /// the server's frames are recorded (what its kernel side delivered
    /// and took). Must run on a thread inside `ns`.
    pub fn tap_pair(ns: &Netns, client_offload: bool, server_offload: bool) -> Net {
        let k = ns.next_iface();
        let subnet = 10 + (k % 200) as u8;
        let bridge = format!("iwbr{k}");
        ns.ip(&["link", "add", &bridge, "type", "bridge"])
            .expect("bridge in the namespace");
        ns.ip(&["link", "set", &bridge, "up"]).expect("bridge up");
        let open = |side: u8, offload: bool| {
            let ifname = format!("iwtap{k}s{side}");
            let cfg = TapConfig::default()
                .ifname(ifname.clone())
                .netns(None)
                .addr(Ipv4Addr::new(10, 77, subnet, side))
                .mac([0x02, 0x49, 0x57, subnet, 0, side])
                .offload(offload);
            let tap = TapTransport::open(&cfg).expect("TAP in the namespace");
            assert_eq!(tap.device().offload(), offload, "the kernel's offloads");
            ns.ip(&["link", "set", &ifname, "master", &bridge])
                .expect("TAP on the bridge");
            tap
        };
        let client = open(1, client_offload);
        let mut server = open(2, server_offload);
        let capture = Capture::default();
        server.device_mut().set_pcap(Some(capture.sink()));
        let on_off = |b: bool| if b { "on" } else { "off" };
        Net {
            client: Device::new(Box::new(client)),
            server: Device::new(Box::new(server)),
            server_ip: IpAddr::V4(Ipv4Addr::new(10, 77, subnet, 2)),
            listen_port: PORT,
            capture: Some(capture),
            virtual_start: None,
            name: format!(
                "tap pair (client offloads {}, server offloads {})",
                on_off(client_offload),
                on_off(server_offload)
            ),
        }
    }

    pub fn addr(&self, port: u16) -> SocketAddr {
        SocketAddr::new(self.server_ip, port)
    }
}

/// Runs `f` on a thread inside `ns`, where TAP devices and sockets it makes
/// stay.
pub fn in_netns<R: Send>(ns: &Netns, f: impl FnOnce() -> R + Send) -> R {
    verbs::transport::tap::netns::in_netns(ns.name(), f).expect("entering the namespace")
}
