//! The one device behind `iwarp0`: a [`verbs::Device`] over the transport
//! the environment names, with its progress thread, made on first use.
//!
//! * `IWARP_TRANSPORT` unset or `kernel`: the host's TCP, no privileges.
//! * `IWARP_TRANSPORT=tap` with `IWARP_TAP=<ifname>` and
//!   `IWARP_IP=<a.b.c.d/n>` (optional `IWARP_GATEWAY`, `IWARP_NETNS`): a
//!   smoltcp host on that TAP interface (needs CAP_NET_ADMIN).
//! * `IWARP_CRC=off|on|required|never`: the MPA CRC policy (default `off`:
//!   not asked for, used when the peer asks; siw's and `iwarp`'s default).
//! * `IWARP_RESPONDER_SENDS_FIRST=0|1`: whether an accepted connection
//!   may send before the initiator's first FPDU arrives. Default 1, as
//!   siw does (perftest's write latency test needs it); 0 waits, as RFC
//!   5044 section 7.1.2 says.
//! * `IWARP_RFC7306=1`: every connection uses RFC 7306 (atomics, Write
//!   and Send with Immediate Data). MPA cannot negotiate it, so both
//!   ends must set it; the device then reports `IBV_ATOMIC_HCA`.
//! * `IWARP_FIRST_FPDU_DELAY_MS=n`: how long a connecting side holds its
//!   first FPDU after the MPA Reply (default 20, as `iwarp rping` and
//!   `iwarp perf`): Linux siw, responding, attaches its socket to the
//!   queue pair only after sending the Reply, and an FPDU landing in
//!   between sits unread (see `MpaOptions::first_fpdu_delay`).
//! * `IWARP_DISCONNECT_GRACE_MS=n`: how long `rdma_disconnect` of an
//!   established connection first waits for the peer to close it
//!   (default 0, closing at once as rdma-core does). A peer that flushes
//!   its own last SEND when our FIN arrives first (siw, with perftest's
//!   server) needs a few hundred milliseconds.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::OnceLock;
use std::time::Duration;

use verbs::transport::kernel::{KernelConfig, KernelTransport};
use verbs::transport::tap::{TapConfig, TapTransport};
use verbs::transport::Transport;
use verbs::{CrcPolicy, Device, ListenOptions, MpaOptions, ProgressThread};

/// The first FPDU's hold after the MPA Reply unless the environment says
/// otherwise.
const FIRST_FPDU_DELAY: Duration = Duration::from_millis(20);

/// The device and the thread that drives it.
pub struct Stack {
    /// The device every context of `iwarp0` uses.
    pub device: Device,
    /// MPA options of connections made or accepted.
    pub mpa: MpaOptions,
    /// How long a disconnect waits for the peer to close first.
    pub disconnect_grace: Duration,
    _progress: ProgressThread,
}

static STACK: OnceLock<Result<Stack, String>> = OnceLock::new();

/// The stack, made on first call; the error says why it could not be.
pub fn stack() -> Result<&'static Stack, &'static str> {
    STACK
        .get_or_init(|| {
            let cfg = Config::from_env()?;
            let device = Device::new(cfg.transport()?);
            let progress = device.spawn_progress_thread();
            Ok(Stack {
                device,
                mpa: cfg.mpa,
                disconnect_grace: cfg.disconnect_grace,
                _progress: progress,
            })
        })
        .as_ref()
        .map_err(|e| e.as_str())
}

impl Stack {
    /// Listener options: this side's MPA settings.
    pub fn listen_options(&self) -> ListenOptions {
        ListenOptions::default().with_mpa(self.mpa.clone())
    }
}

/// What the environment asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `None`: kernel TCP; `Some`: the TAP interface's settings.
    pub tap: Option<TapConfig>,
    /// MPA settings.
    pub mpa: MpaOptions,
    /// How long `rdma_disconnect` waits for the peer to close first.
    pub disconnect_grace: Duration,
}

impl Config {
    /// Reads `IWARP_*` from the process environment.
    pub fn from_env() -> Result<Config, String> {
        Config::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads the settings through `get` (the environment, or a test's map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
        let mut mpa = MpaOptions::default();
        mpa.crc = match get("IWARP_CRC").as_deref() {
            Some("on") => CrcPolicy::Preferred,
            None | Some("off") => CrcPolicy::Off,
            Some("required") => CrcPolicy::Required,
            Some("never") => CrcPolicy::Never,
            Some(other) => {
                return Err(format!("IWARP_CRC={other}: expected off|on|required|never"))
            }
        };
        mpa.responder_sends_first = match get("IWARP_RESPONDER_SENDS_FIRST").as_deref() {
            None | Some("1") => true,
            Some("0") => false,
            Some(other) => {
                return Err(format!(
                    "IWARP_RESPONDER_SENDS_FIRST={other}: expected 0 or 1"
                ))
            }
        };
        mpa.rfc7306 = match get("IWARP_RFC7306").as_deref() {
            None | Some("0") => false,
            Some("1") => true,
            Some(other) => return Err(format!("IWARP_RFC7306={other}: expected 0 or 1")),
        };
        mpa.first_fpdu_delay = match get("IWARP_FIRST_FPDU_DELAY_MS") {
            None => FIRST_FPDU_DELAY,
            Some(ms) => Duration::from_millis(
                ms.parse::<u16>()
                    .map_err(|e| format!("IWARP_FIRST_FPDU_DELAY_MS={ms}: {e}"))?
                    .into(),
            ),
        };
        let disconnect_grace = match get("IWARP_DISCONNECT_GRACE_MS") {
            None => Duration::ZERO,
            Some(ms) => Duration::from_millis(
                ms.parse::<u16>()
                    .map_err(|e| format!("IWARP_DISCONNECT_GRACE_MS={ms}: {e}"))?
                    .into(),
            ),
        };
        let tap = match get("IWARP_TRANSPORT").as_deref() {
            None | Some("") | Some("kernel") => None,
            Some("tap") => {
                let ifname = get("IWARP_TAP").ok_or("IWARP_TRANSPORT=tap needs IWARP_TAP")?;
                let ip = get("IWARP_IP").ok_or("IWARP_TRANSPORT=tap needs IWARP_IP=a.b.c.d/n")?;
                let (addr, prefix) = ip
                    .split_once('/')
                    .ok_or(format!("IWARP_IP={ip}: expected a.b.c.d/n"))?;
                let addr: Ipv4Addr = addr.parse().map_err(|e| format!("IWARP_IP={ip}: {e}"))?;
                let prefix_len: u8 = prefix
                    .parse()
                    .ok()
                    .filter(|p| *p <= 32)
                    .ok_or(format!("IWARP_IP={ip}: bad prefix length"))?;
                let gateway = match get("IWARP_GATEWAY") {
                    Some(g) => Some(g.parse().map_err(|e| format!("IWARP_GATEWAY={g}: {e}"))?),
                    None => None,
                };
                Some(
                    TapConfig::default()
                        .ifname(ifname)
                        .netns(get("IWARP_NETNS"))
                        .addr(addr)
                        .prefix_len(prefix_len)
                        .gateway(gateway),
                )
            }
            Some(other) => return Err(format!("IWARP_TRANSPORT={other}: expected kernel or tap")),
        };
        Ok(Config {
            tap,
            mpa,
            disconnect_grace,
        })
    }

    fn transport(&self) -> Result<Box<dyn Transport + Send>, String> {
        Ok(match &self.tap {
            Some(cfg) => {
                Box::new(TapTransport::open(cfg).map_err(|e| format!("TAP {}: {e}", cfg.ifname))?)
            }
            None => Box::new(KernelTransport::new(
                KernelConfig::default().bind_ip(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            )),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn kernel_tcp_is_the_default_and_tap_needs_its_interface_and_address() {
        let c = config(&[]).unwrap();
        assert!(c.tap.is_none());
        assert_eq!(c.mpa.crc, CrcPolicy::Off);
        assert_eq!(
            config(&[("IWARP_CRC", "on")]).unwrap().mpa.crc,
            CrcPolicy::Preferred
        );
        assert!(config(&[("IWARP_TRANSPORT", "tap")]).is_err());
        assert!(config(&[("IWARP_TRANSPORT", "tap"), ("IWARP_TAP", "t0")]).is_err());
        let c = config(&[
            ("IWARP_TRANSPORT", "tap"),
            ("IWARP_TAP", "t0"),
            ("IWARP_IP", "10.0.0.2/24"),
            ("IWARP_CRC", "required"),
        ])
        .unwrap();
        let tap = c.tap.unwrap();
        assert_eq!(
            (tap.ifname.as_str(), tap.addr, tap.prefix_len),
            ("t0", Ipv4Addr::new(10, 0, 0, 2), 24)
        );
        assert_eq!(c.mpa.crc, CrcPolicy::Required);
        assert!(config(&[("IWARP_TRANSPORT", "rxe")]).is_err());
        assert!(config(&[("IWARP_CRC", "maybe")]).is_err());
        assert!(config(&[]).unwrap().mpa.responder_sends_first);
        assert!(
            !config(&[("IWARP_RESPONDER_SENDS_FIRST", "0")])
                .unwrap()
                .mpa
                .responder_sends_first
        );
        assert!(config(&[("IWARP_RESPONDER_SENDS_FIRST", "yes")]).is_err());
        assert!(!config(&[]).unwrap().mpa.rfc7306);
        assert!(config(&[("IWARP_RFC7306", "1")]).unwrap().mpa.rfc7306);
        assert!(config(&[("IWARP_RFC7306", "on")]).is_err());
        assert_eq!(
            config(&[]).unwrap().mpa.first_fpdu_delay,
            Duration::from_millis(20)
        );
        assert_eq!(
            config(&[("IWARP_FIRST_FPDU_DELAY_MS", "0")])
                .unwrap()
                .mpa
                .first_fpdu_delay,
            Duration::ZERO
        );
        assert!(config(&[("IWARP_FIRST_FPDU_DELAY_MS", "-1")]).is_err());
        assert!(config(&[("IWARP_FIRST_FPDU_DELAY_MS", "70000")]).is_err());
        assert_eq!(config(&[]).unwrap().disconnect_grace, Duration::ZERO);
        assert_eq!(
            config(&[("IWARP_DISCONNECT_GRACE_MS", "300")])
                .unwrap()
                .disconnect_grace,
            Duration::from_millis(300)
        );
        assert!(config(&[("IWARP_DISCONNECT_GRACE_MS", "soon")]).is_err());
        assert!(config(&[
            ("IWARP_TRANSPORT", "tap"),
            ("IWARP_TAP", "t0"),
            ("IWARP_IP", "10.0.0.2/33")
        ])
        .is_err());
    }
}
