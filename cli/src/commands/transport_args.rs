//! Transport and MPA flags shared by the commands that open a device
//! (`rping`, `perf`, and any other tool that talks to a peer).
//!
//! No transport flag means the host's TCP (`std::net` sockets); `--tap`
//! puts a smoltcp host on a TAP interface instead. The MPA flags set what
//! this side offers or accepts at connection start-up; `--pcap` records
//! what the transport sends and receives.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, Instant};

use capture::pcap::PcapSink;
use verbs::transport::kernel::{KernelConfig, KernelTransport};
use verbs::transport::tap::{TapConfig, TapTransport};
use verbs::transport::Transport;
use verbs::{
    AcceptParams, ConnectParams, ConnectRequest, CrcPolicy, Device, ListenOptions, MpaOptions,
    RtrSet,
};

/// How a side treats MPA CRC (RFC 5044 section 7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CrcArg {
    /// Do not ask for CRC; use it if the peer asks (siw's default build).
    Off,
    /// Ask for CRC; go on without it if the peer does not use it.
    On,
    /// Ask for CRC and refuse a peer that will not use it.
    Required,
    /// Never use CRC: refuse a peer that asks (not RFC compliant).
    Never,
}

impl CrcArg {
    pub fn policy(self) -> CrcPolicy {
        match self {
            CrcArg::Off => CrcPolicy::Off,
            CrcArg::On => CrcPolicy::Preferred,
            CrcArg::Required => CrcPolicy::Required,
            CrcArg::Never => CrcPolicy::Never,
        }
    }
}

/// A congestion controller of the smoltcp transports, for `--cc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CcArg {
    /// RFC 5681 Reno.
    Reno,
    /// CUBIC (RFC 9438), the default.
    Cubic,
    /// BBRv3 (draft-ietf-ccwg-bbr-06) with pacing.
    Bbr,
}

impl From<CcArg> for transport::CongestionControl {
    fn from(cc: CcArg) -> Self {
        match cc {
            CcArg::Reno => transport::CongestionControl::Reno,
            CcArg::Cubic => transport::CongestionControl::Cubic,
            CcArg::Bbr => transport::CongestionControl::Bbr,
        }
    }
}

/// A ready-to-receive kind for `--p2p` (RFC 6581 peer-to-peer mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RtrArg {
    /// Zero-length SEND.
    Send,
    /// Zero-length RDMA WRITE (what siw's peer-to-peer builds send).
    Write,
    /// Zero-length RDMA READ (Chelsio's default as initiator).
    Read,
    /// Every kind.
    All,
}

/// An IPv4 address with its prefix length, as `A.B.C.D/N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub addr: Ipv4Addr,
    pub prefix_len: u8,
}

impl FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, n) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?}: expected A.B.C.D/N"))?;
        let addr = a.parse().map_err(|e| format!("{a:?}: {e}"))?;
        let prefix_len: u8 = n.parse().map_err(|e| format!("{n:?}: {e}"))?;
        if prefix_len > 32 {
            return Err(format!("prefix length {prefix_len} is over 32"));
        }
        Ok(Cidr { addr, prefix_len })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix_len)
    }
}

/// An Ethernet address as six colon-separated hex bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mac(pub [u8; 6]);

impl FromStr for Mac {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut out = [0u8; 6];
        let mut parts = s.split([':', '-']);
        for byte in &mut out {
            let p = parts
                .next()
                .ok_or_else(|| format!("{s:?}: expected six hex bytes"))?;
            if p.is_empty() || p.len() > 2 {
                return Err(format!("{s:?}: {p:?} is not a hex byte"));
            }
            *byte = u8::from_str_radix(p, 16).map_err(|_| format!("{s:?}: bad hex byte {p:?}"))?;
        }
        if parts.next().is_some() {
            return Err(format!("{s:?}: more than six bytes"));
        }
        if out[0] & 1 != 0 {
            return Err(format!("{s:?}: a multicast address cannot be a host's"));
        }
        Ok(Mac(out))
    }
}

/// Which network stack carries the connections, and the MPA policy.
#[derive(Debug, Clone, clap::Args)]
pub struct TransportArgs {
    /// Run a smoltcp host on this TAP interface (created if missing; needs
    /// CAP_NET_ADMIN) instead of using the kernel's TCP.
    #[arg(
        long,
        value_name = "IFNAME",
        requires = "ip",
        help_heading = "Transport"
    )]
    pub tap: Option<String>,
    /// This host's address on the TAP interface.
    #[arg(
        long,
        value_name = "A.B.C.D/N",
        requires = "tap",
        help_heading = "Transport"
    )]
    pub ip: Option<Cidr>,
    /// This host's MAC on the TAP interface (default 02:49:57:00:00:02).
    #[arg(long, value_name = "MAC", requires = "tap", help_heading = "Transport")]
    pub mac: Option<Mac>,
    /// Default gateway for the TAP host.
    #[arg(
        long,
        value_name = "A.B.C.D",
        requires = "tap",
        help_heading = "Transport"
    )]
    pub gateway: Option<Ipv4Addr>,
    /// Create the TAP interface inside this network namespace (a name from
    /// `ip netns add`, or a path).
    #[arg(long, value_name = "NS", requires = "tap", help_heading = "Transport")]
    pub netns: Option<String>,
    /// Move one MTU-sized frame per system call on the TAP interface,
    /// checksums in software, instead of handing the kernel 64 KiB TCP
    /// super-frames to cut at the MSS (a capture on the kernel's side then
    /// shows the frames as sent).
    #[arg(long, requires = "tap", help_heading = "Transport")]
    pub no_offload: bool,
    /// Congestion control of the TAP host's TCP.
    #[arg(
        long,
        value_enum,
        default_value = "cubic",
        requires = "tap",
        help_heading = "Transport"
    )]
    pub cc: CcArg,
    /// Record what the transport sends and receives in this pcap file (the
    /// kernel transport synthesizes TCP/IP framing around the real bytes).
    #[arg(long, value_name = "FILE", help_heading = "Transport")]
    pub pcap: Option<PathBuf>,

    /// MPA CRC policy; `--crc` alone means `on`.
    #[arg(
        long,
        value_enum,
        value_name = "POLICY",
        num_args = 0..=1,
        default_value = "off",
        default_missing_value = "on",
        help_heading = "MPA"
    )]
    pub crc: CrcArg,
    /// Ask the peer to send MPA markers to us.
    #[arg(long, help_heading = "MPA")]
    pub markers: bool,
    /// MPA revision: 1 (RFC 5044) or 2 (RFC 6581, carries IRD/ORD).
    #[arg(long, value_name = "REV", default_value_t = 2,
          value_parser = clap::value_parser!(u8).range(1..=2), help_heading = "MPA")]
    pub mpa_rev: u8,
    /// Peer-to-peer mode: the ready-to-receive kinds offered (connecting)
    /// or granted (listening; without it a listener grants any kind the
    /// initiator offers), comma-separated.
    #[arg(
        long,
        value_enum,
        value_name = "KIND[,KIND]",
        value_delimiter = ',',
        help_heading = "MPA"
    )]
    pub p2p: Vec<RtrArg>,
    /// RDMA READs the peer may have outstanding towards us (IRD).
    #[arg(long, value_name = "N", help_heading = "MPA")]
    pub ird: Option<u16>,
    /// RDMA READs we may have outstanding towards the peer (ORD).
    #[arg(long, value_name = "N", help_heading = "MPA")]
    pub ord: Option<u16>,
    /// How long MPA start-up may take, in seconds.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 10.0,
        help_heading = "MPA"
    )]
    pub mpa_timeout: f64,
}

impl Default for TransportArgs {
    fn default() -> Self {
        TransportArgs {
            tap: None,
            ip: None,
            mac: None,
            gateway: None,
            netns: None,
            no_offload: false,
            cc: CcArg::Cubic,
            pcap: None,
            crc: CrcArg::Off,
            markers: false,
            mpa_rev: 2,
            p2p: Vec::new(),
            ird: None,
            ord: None,
            mpa_timeout: 10.0,
        }
    }
}

impl TransportArgs {
    /// Opens the device: kernel TCP with listeners bound to `bind` (any
    /// address when `None`), or the TAP host. The capture, if asked for, is
    /// flushed when the device is dropped.
    pub fn open_device(&self, bind: Option<IpAddr>) -> Result<Device, String> {
        Ok(Device::new(self.open_transport(bind)?))
    }

    /// Opens the device with its TCP payload bytes counted.
    pub fn open_counted_device(
        &self,
        bind: Option<IpAddr>,
    ) -> Result<(Device, super::wire_count::WireCounter), String> {
        let (t, counter) = super::wire_count::Counting::wrap(self.open_transport(bind)?);
        Ok((Device::new(Box::new(t)), counter))
    }

    /// Opens the transport alone, for tools that speak on raw byte streams
    /// (`fuzz-peer`); as [`open_device`](Self::open_device) otherwise.
    pub fn open_transport(
        &self,
        bind: Option<IpAddr>,
    ) -> Result<Box<dyn Transport + Send>, String> {
        let sink = match &self.pcap {
            Some(path) => {
                Some(PcapSink::create(path).map_err(|e| format!("pcap {}: {e}", path.display()))?)
            }
            None => None,
        };
        let transport: Box<dyn Transport + Send> = match (&self.tap, self.ip) {
            (Some(ifname), Some(ip)) => {
                let defaults = TapConfig::default();
                let mac = self.mac.map_or(defaults.mac, |m| m.0);
                let tuning = defaults.tuning.clone().congestion(self.cc.into());
                let cfg = defaults
                    .ifname(ifname.clone())
                    .netns(self.netns.clone())
                    .addr(ip.addr)
                    .prefix_len(ip.prefix_len)
                    .mac(mac)
                    .gateway(self.gateway)
                    .seed(seed_from_clock())
                    .offload(!self.no_offload)
                    .tuning(tuning);
                let mut tap = TapTransport::open(&cfg).map_err(|e| format!("TAP {ifname}: {e}"))?;
                tap.device_mut().set_pcap(sink);
                Box::new(tap)
            }
            (Some(_), None) => return Err("--tap needs --ip A.B.C.D/N".into()),
            (None, _) => {
                let mut k = KernelTransport::new(
                    KernelConfig::default()
                        .bind_ip(bind.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))),
                );
                k.set_pcap(sink);
                Box::new(k)
            }
        };
        Ok(transport)
    }

    /// A short description for debug output.
    pub fn describe(&self) -> String {
        match (&self.tap, self.ip) {
            (Some(t), Some(ip)) => format!("smoltcp on TAP {t} as {ip}"),
            _ => "kernel TCP".into(),
        }
    }

    /// The peer-to-peer RTR kinds as a set.
    pub fn rtr_set(&self) -> RtrSet {
        let mut set = RtrSet::EMPTY;
        for k in &self.p2p {
            match k {
                RtrArg::Send => set.send = true,
                RtrArg::Write => set.write = true,
                RtrArg::Read => set.read = true,
                RtrArg::All => set = RtrSet::ALL,
            }
        }
        set
    }

    /// The MPA options of this side.
    pub fn mpa_options(&self) -> MpaOptions {
        let mut mpa = MpaOptions::default();
        mpa.revision = self.mpa_rev;
        mpa.crc = self.crc.policy();
        mpa.markers = self.markers;
        mpa.p2p = self.rtr_set();
        mpa.timeout = Duration::try_from_secs_f64(self.mpa_timeout.max(0.001))
            .unwrap_or(Duration::from_secs(10));
        mpa
    }

    /// What a listener applies to every request.
    pub fn listen_options(&self) -> ListenOptions {
        ListenOptions::default().with_mpa(self.mpa_options())
    }

    /// Connect parameters: `--ird`/`--ord` override the command's defaults.
    pub fn connect_params(&self, ird: u16, ord: u16, private_data: Vec<u8>) -> ConnectParams {
        ConnectParams::default()
            .private_data(private_data)
            .ird(self.ird.unwrap_or(ird))
            .ord(self.ord.unwrap_or(ord))
            .mpa(self.mpa_options())
    }

    /// Accept parameters the way rdma_accept(id, NULL) answers: our IRD is
    /// the initiator's ORD and our ORD its IRD (each `default` when the
    /// request carried none, as with MPA revision 1), unless `--ird`/`--ord`
    /// say otherwise.
    pub fn accept_params(
        &self,
        req: &ConnectRequest,
        default: u16,
        private_data: Vec<u8>,
    ) -> AcceptParams {
        AcceptParams::default()
            .private_data(private_data)
            .ird(self.ird.unwrap_or(req.ord.unwrap_or(default)))
            .ord(self.ord.unwrap_or(req.ird.unwrap_or(default)))
    }
}

/// Keeps the device moving for a moment after a disconnect, so the close
/// (and anything still queued) reaches the peer before the program exits:
/// a userspace TCP stack sends nothing once its process is gone. Returns
/// after 50 ms without activity, or 2 s at most.
pub fn linger(device: &Device) {
    const MAX: Duration = Duration::from_secs(2);
    const QUIET: Duration = Duration::from_millis(50);
    let start = Instant::now();
    let mut last_busy = start;
    while start.elapsed() < MAX {
        if device.progress() {
            last_busy = Instant::now();
        } else if last_busy.elapsed() >= QUIET {
            break;
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Different initial sequence numbers and ports per run of a smoltcp host.
fn seed_from_clock() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (t.as_nanos() as u64) ^ ((std::process::id() as u64) << 32)
}

/// A host name or address and a port: its first IPv4 address, or
/// getaddrinfo's first when it has none (`None`: no address at all).
pub(crate) fn resolve(host: &str, port: u16) -> io::Result<Option<SocketAddr>> {
    let addrs: Vec<SocketAddr> = (host, port).to_socket_addrs()?.collect();
    Ok(addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use verbs::Rtr;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        t: TransportArgs,
    }

    fn parse(args: &[&str]) -> Result<TransportArgs, clap::Error> {
        let mut v = vec!["x"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v).map(|c| c.t)
    }

    #[test]
    fn defaults_are_kernel_tcp_with_siw_default_mpa() {
        let t = parse(&[]).unwrap();
        assert_eq!(t.tap, None);
        assert_eq!(t.describe(), "kernel TCP");
        let m = t.mpa_options();
        assert_eq!(m.revision, 2);
        assert_eq!(m.crc, CrcPolicy::Off);
        assert!(!m.markers);
        assert!(m.p2p.is_empty());
        assert_eq!(m.timeout, Duration::from_secs(10));
    }

    #[test]
    fn crc_flag_alone_means_on_and_takes_a_policy() {
        assert_eq!(parse(&["--crc"]).unwrap().crc, CrcArg::On);
        assert_eq!(
            parse(&["--crc", "required"]).unwrap().mpa_options().crc,
            CrcPolicy::Required
        );
        assert_eq!(
            parse(&["--crc=never"]).unwrap().mpa_options().crc,
            CrcPolicy::Never
        );
        assert!(parse(&["--crc", "sometimes"]).is_err());
    }

    #[test]
    fn p2p_kinds_combine() {
        let t = parse(&["--p2p", "write,read"]).unwrap();
        assert_eq!(
            t.rtr_set(),
            RtrSet {
                send: false,
                write: true,
                read: true
            }
        );
        assert!(t.rtr_set().contains(Rtr::Read) && !t.rtr_set().contains(Rtr::Send));
        assert_eq!(parse(&["--p2p", "all"]).unwrap().rtr_set(), RtrSet::ALL);
        assert!(parse(&["--p2p", "atomic"]).is_err());
    }

    #[test]
    fn mpa_revision_is_one_or_two() {
        assert_eq!(parse(&["--mpa-rev", "1"]).unwrap().mpa_rev, 1);
        assert!(parse(&["--mpa-rev", "0"]).is_err());
        assert!(parse(&["--mpa-rev", "3"]).is_err());
    }

    #[test]
    fn tap_needs_an_address_and_tap_flags_need_tap() {
        assert!(parse(&["--tap", "t0"]).is_err());
        assert!(parse(&["--ip", "10.0.0.2/24"]).is_err());
        assert!(parse(&["--mac", "02:00:00:00:00:01"]).is_err());
        let t = parse(&[
            "--tap",
            "t0",
            "--ip",
            "10.0.0.2/24",
            "--gateway",
            "10.0.0.1",
        ])
        .unwrap();
        assert_eq!(t.describe(), "smoltcp on TAP t0 as 10.0.0.2/24");
        assert_eq!(t.gateway, Some(Ipv4Addr::new(10, 0, 0, 1)));
    }

    #[test]
    fn congestion_control_is_chosen_for_the_tap_host() {
        assert_eq!(parse(&[]).unwrap().cc, CcArg::Cubic);
        assert!(parse(&["--cc", "bbr"]).is_err(), "--cc needs --tap");
        let t = parse(&["--tap", "t0", "--ip", "10.0.0.2/24", "--cc", "bbr"]).unwrap();
        assert_eq!(
            transport::CongestionControl::from(t.cc),
            transport::CongestionControl::Bbr
        );
        assert!(parse(&["--tap", "t0", "--ip", "10.0.0.2/24", "--cc", "vegas"]).is_err());
    }

    #[test]
    fn cidr_parsing() {
        let c: Cidr = "192.168.7.9/20".parse().unwrap();
        assert_eq!((c.addr, c.prefix_len), (Ipv4Addr::new(192, 168, 7, 9), 20));
        assert_eq!(c.to_string(), "192.168.7.9/20");
        for bad in ["10.0.0.1", "10.0.0.1/33", "10.0.0/24", "x/1", "10.0.0.1/"] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn mac_parsing() {
        assert_eq!(
            "02:49:57:0a:0B:ff".parse::<Mac>().unwrap(),
            Mac([2, 0x49, 0x57, 0x0a, 0x0b, 0xff])
        );
        assert_eq!(
            "2-0-0-0-0-1".parse::<Mac>().unwrap(),
            Mac([2, 0, 0, 0, 0, 1])
        );
        for bad in [
            "02:00:00:00:00",
            "02:00:00:00:00:00:00",
            "02:00:00:00:00:g0",
            "02:00:00:00:00:100",
            "01:00:5e:00:00:01",
            "",
        ] {
            assert!(bad.parse::<Mac>().is_err(), "{bad}");
        }
    }

    #[test]
    fn ird_ord_override_command_defaults() {
        let t = parse(&[]).unwrap();
        let p = t.connect_params(1, 1, vec![7]);
        assert_eq!((p.ird, p.ord, p.private_data), (1, 1, vec![7]));
        let t = parse(&["--ird", "8", "--ord", "4"]).unwrap();
        let p = t.connect_params(1, 1, Vec::new());
        assert_eq!((p.ird, p.ord), (8, 4));
    }

    #[test]
    fn mpa_timeout_in_seconds() {
        let t = parse(&["--mpa-timeout", "2.5"]).unwrap();
        assert_eq!(t.mpa_options().timeout, Duration::from_millis(2500));
    }

    #[test]
    fn kernel_device_opens_and_listens_on_loopback() {
        let t = parse(&[]).unwrap();
        let dev = t.open_device(Some("127.0.0.1".parse().unwrap())).unwrap();
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        // The port may be taken again by someone else in between; only a
        // bind error of that kind is acceptable.
        match dev.listen(port, t.listen_options()) {
            Ok(listener) => assert_eq!(listener.port(), port),
            Err(e) => assert!(e.to_string().contains("in use"), "{e}"),
        }
    }

    #[test]
    fn pcap_file_is_created_with_a_header() {
        let path = std::env::temp_dir().join(format!("iwarp-targs-{}.pcap", std::process::id()));
        let t = parse(&["--pcap", path.to_str().unwrap()]).unwrap();
        drop(t.open_device(None).unwrap());
        let bytes = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(bytes.len(), 24, "a classic pcap header and no frames");
        // The nanosecond magic: captures keep the transports' full resolution.
        assert_eq!(&bytes[..4], &0xa1b2_3c4du32.to_le_bytes());
        let bad = parse(&["--pcap", "/nonexistent-dir/x.pcap"]).unwrap();
        assert!(bad.open_device(None).unwrap_err().contains("pcap"));
    }
}
