//! Linux kernel TCP across the bench's modelled wire.
//!
//! Two namespaces, each with one TAP device, joined by a [`Switch`] whose
//! crossing is the same [`LinkModel`](transport::link_model::LinkModel)
//! the memory link applies, at the same settings: exactly `iwarp link`,
//! driven in this process. One bulk stream from the left host to the right
//! one per call, its congestion controller pinned on both sockets
//! (`TCP_CONGESTION`). What the sender resent and how many timeouts it
//! took come from the counters of its namespace (`/proc/net/snmp`
//! `RetransSegs` over `OutSegs`, `/proc/net/netstat` `TCPTimeouts`): the
//! stream is the only TCP there, so they are its own.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use transport::link_model::{LinkCounters, LinkModelConfig};
use transport::switch::{Side, Switch};
use verbs::transport::tap::netns::in_netns;

use super::linux_stream::stream;
use super::linux_tcp::offloads_off_on;
use crate::commands::link::{namespaced_hosts, NamespacedHost, HOST_ADDRS};

const PORT: u16 = 7473;
/// Frames a TAP device holds for the forwarder to read. The forwarder is
/// one thread the scheduler can hold back for milliseconds; at 1 Gbit/s
/// Linux's 1000 frames last 12 ms and then the device drops what the
/// model never saw. 16384 frames last about 200 ms.
const TAP_QUEUE_FRAMES: usize = 16384;
/// How long the forwarder sleeps at most between looks at its stop flag.
const SWITCH_TICK: Duration = Duration::from_millis(10);

/// One stream's figures.
#[derive(Debug, Clone)]
pub(crate) struct LinuxFlow {
    /// The congestion controller the sockets ran.
    pub cc: &'static str,
    /// Goodput after the warm-up, in Gbit/s.
    pub gbps: f64,
    /// Segments the sender sent, resends included, and those resent.
    pub segs_out: u64,
    pub retrans_segs: u64,
    /// Retransmission timeouts the sender took.
    pub timeouts: u64,
    /// What the wire did to the frames in the data direction.
    pub link: LinkCounters,
    /// Frames a TAP device refused on the way out of the switch (lost too,
    /// but not by the model).
    pub port_drops: u64,
    /// Frames the sender's TAP device dropped before the switch read them
    /// (its queue full: the forwarder fell behind). Also lost, also not by
    /// the model.
    pub device_drops: u64,
}

impl LinuxFlow {
    /// Resent segments over segments sent.
    pub(crate) fn resent_share(&self) -> f64 {
        share(self.retrans_segs, self.segs_out)
    }
}

pub(crate) fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The two hosts and the switch between them; the namespaces go away when
/// it is dropped.
pub(crate) struct LinuxWire {
    hosts: Vec<NamespacedHost>,
    switch: Option<Switch>,
    /// TSO, GSO and GRO turned off on both TAP devices.
    pub offloads_off: bool,
    /// The routes' minimum RTO, or why it could not be set.
    pub rto_min: Result<Duration, String>,
    /// Largest socket buffer autotuning may reach, or why it could not be
    /// set (then Linux's own limits apply).
    pub buffer_max: Result<usize, String>,
}

/// Two Linux hosts in namespaces on a switch's two sides, set up as the
/// wire's comparisons need them.
pub(crate) struct LinuxHosts {
    /// Sender (left) first, receiver (right) second.
    pub hosts: Vec<NamespacedHost>,
    /// TSO, GSO and GRO turned off on both TAP devices.
    pub offloads_off: bool,
    /// The routes' minimum RTO, or why it could not be set.
    pub rto_min: Result<Duration, String>,
    /// Largest socket buffer autotuning may reach, or why it could not be
    /// set.
    pub buffer_max: Result<usize, String>,
}

impl LinuxHosts {
    /// Both hosts on `sw` at `mtu`, offloads off, with `rto_min` on each
    /// host's route to the other and socket buffers allowed up to
    /// `buffer_max` bytes.
    pub(crate) fn on(
        sw: &mut Switch,
        mtu: usize,
        rto_min: Duration,
        buffer_max: usize,
    ) -> Result<Self, String> {
        let hosts = namespaced_hosts(sw, mtu)?;
        let mut offloads_off = true;
        let mut rto = Ok(rto_min);
        let mut buffers = Ok(buffer_max);
        for (host, far) in hosts.iter().zip(HOST_ADDRS.iter().rev()) {
            offloads_off &= offloads_off_on(host.ns.name(), &host.tap);
            let qlen = TAP_QUEUE_FRAMES.to_string();
            host.ns
                .ip(&["link", "set", &host.tap, "txqueuelen", &qlen])?;
            let ms = format!("{}ms", rto_min.as_millis().max(1));
            let route = host.ns.ip(&[
                "route",
                "add",
                &format!("{far}/32"),
                "dev",
                &host.tap,
                "rto_min",
                &ms,
            ]);
            if let Err(e) = route {
                rto = Err(format!("route rto_min: {e}"));
            }
            if let Err(e) = set_buffer_max(host.ns.name(), buffer_max) {
                buffers = Err(e);
            }
        }
        Ok(LinuxHosts {
            hosts,
            offloads_off,
            rto_min: rto,
            buffer_max: buffers,
        })
    }
}

impl LinuxWire {
    /// Both hosts at `mtu` behind `model` (seeded by `seed`), with
    /// `rto_min` on each host's route to the other and socket buffers
    /// allowed up to `buffer_max` bytes.
    pub(crate) fn new(
        model: &LinkModelConfig,
        seed: u64,
        mtu: usize,
        rto_min: Duration,
        buffer_max: usize,
    ) -> Result<Self, String> {
        let mut sw = Switch::new(model, seed);
        let LinuxHosts {
            hosts,
            offloads_off,
            rto_min: rto,
            buffer_max: buffers,
        } = LinuxHosts::on(&mut sw, mtu, rto_min, buffer_max)?;
        Ok(LinuxWire {
            hosts,
            switch: Some(sw),
            offloads_off,
            rto_min: rto,
            buffer_max: buffers,
        })
    }

    /// One bulk stream left to right with controller `cc`: `warm_up`
    /// unmeasured, then `duration` measured. The counters cover both.
    pub(crate) fn flow(
        &mut self,
        cc: &'static str,
        warm_up: Duration,
        duration: Duration,
    ) -> Result<LinuxFlow, String> {
        let mut sw = self.switch.take().ok_or("the forwarder failed earlier")?;
        let (sender, receiver) = (self.hosts[0].ns.name(), self.hosts[1].ns.name());
        let link_before = sw.counters(Side::Left);
        let port_before = sw.port_drops();
        let tap = self.hosts[0].tap.clone();
        let before = TcpCounters::read(sender, &tap)?;
        let stop_switch = AtomicBool::new(false);
        let (result, after, sw) = std::thread::scope(|s| {
            let forwarder = s.spawn(|| {
                let r = sw.run(&stop_switch, SWITCH_TICK);
                (r, sw)
            });
            let server = SocketAddr::from((HOST_ADDRS[1], PORT));
            let result = stream(sender, receiver, cc, server, warm_up, duration);
            // Read while the wire still runs: the stream was reset, so
            // nothing more is sent, and nothing is counted against a
            // wire that stopped.
            let after = TcpCounters::read(sender, &tap);
            stop_switch.store(true, Ordering::Release);
            let (ran, sw) = forwarder
                .join()
                .map_err(|_| "the forwarder panicked".to_string())?;
            ran.map_err(|e| format!("forwarding: {e}"))?;
            Ok::<_, String>((result, after, sw))
        })?;
        let link = sw.counters(Side::Left).since(&link_before);
        let port_drops = sw.port_drops() - port_before;
        self.switch = Some(sw);
        let gbps = result?;
        let after = after?;
        Ok(LinuxFlow {
            cc,
            gbps,
            segs_out: after.out_segs.saturating_sub(before.out_segs),
            retrans_segs: after.retrans_segs.saturating_sub(before.retrans_segs),
            timeouts: after.timeouts.saturating_sub(before.timeouts),
            link,
            port_drops,
            device_drops: after.tx_dropped.saturating_sub(before.tx_dropped),
        })
    }
}

/// Lets autotuning grow TCP socket buffers to `max` bytes in `ns` (these
/// limits are per namespace), so Linux's window is bounded like smoltcp's
/// rings rather than by the host's defaults.
fn set_buffer_max(ns: &str, max: usize) -> Result<(), String> {
    in_netns(ns, || {
        for (file, default) in [("tcp_rmem", 131_072), ("tcp_wmem", 16_384)] {
            let v = format!("4096 {default} {max}");
            std::fs::write(format!("/proc/sys/net/ipv4/{file}"), v)?;
        }
        Ok::<_, std::io::Error>(())
    })
    .and_then(|r| r)
    .map_err(|e| format!("TCP buffer limits in {ns}: {e}"))
}

/// The sender namespace's TCP counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct TcpCounters {
    out_segs: u64,
    retrans_segs: u64,
    timeouts: u64,
    /// Frames the TAP device `tap` dropped on their way out.
    tx_dropped: u64,
}

impl TcpCounters {
    /// Read from a thread inside `ns` (`/proc/thread-self/net` is that
    /// thread's namespace's; `/proc/self/net` would be the main thread's).
    fn read(ns: &str, tap: &str) -> Result<TcpCounters, String> {
        let (snmp, netstat, dev) = in_netns(ns, || {
            Ok::<_, std::io::Error>((
                std::fs::read_to_string("/proc/thread-self/net/snmp")?,
                std::fs::read_to_string("/proc/thread-self/net/netstat")?,
                std::fs::read_to_string("/proc/thread-self/net/dev")?,
            ))
        })
        .and_then(|r| r)
        .map_err(|e| format!("TCP counters in {ns}: {e}"))?;
        let get = |text: &str, group: &str, field: &str| {
            counter(text, group, field)
                .ok_or_else(|| format!("no {group} {field} in the counters of {ns}"))
        };
        Ok(TcpCounters {
            out_segs: get(&snmp, "Tcp", "OutSegs")?,
            retrans_segs: get(&snmp, "Tcp", "RetransSegs")?,
            timeouts: get(&netstat, "TcpExt", "TCPTimeouts")?,
            tx_dropped: tx_dropped(&dev, tap)
                .ok_or_else(|| format!("no {tap} in /proc/net/dev of {ns}"))?,
        })
    }
}

/// The transmit `drop` column of interface `iface` in `/proc/net/dev`
/// text (eight receive columns, then bytes, packets, errs, drop).
fn tx_dropped(text: &str, iface: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (name, cols) = l.split_once(':')?;
        (name.trim() == iface).then(|| cols.split_whitespace().nth(11)?.parse().ok())?
    })
}

/// Field `field` of group `group` in `/proc/net/snmp` or `/proc/net/netstat`
/// text: a line of names then a line of values, each starting `Group:`.
fn counter(text: &str, group: &str, field: &str) -> Option<u64> {
    let prefix = format!("{group}:");
    let mut lines = text.lines().filter(|l| l.starts_with(&prefix));
    let names = lines.next()?;
    let values = lines.next()?;
    let at = names.split_whitespace().position(|n| n == field)?;
    values.split_whitespace().nth(at)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_found_by_group_and_name() {
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
                    Tcp: RtoAlgorithm OutSegs RetransSegs\nTcp: 1 1000 12\n\
                    Udp: InDatagrams\nUdp: 5\n";
        assert_eq!(counter(snmp, "Tcp", "OutSegs"), Some(1000));
        assert_eq!(counter(snmp, "Tcp", "RetransSegs"), Some(12));
        assert_eq!(counter(snmp, "Udp", "InDatagrams"), Some(5));
        assert_eq!(counter(snmp, "Tcp", "Nope"), None);
        assert_eq!(counter(snmp, "TcpExt", "TCPTimeouts"), None);
        assert_eq!(counter("Tcp: OutSegs\n", "Tcp", "OutSegs"), None);
    }

    #[test]
    fn transmit_drops_of_one_device() {
        let dev = "Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n\
                   \x20   lo: 10 1 0 0 0 0 0 0 10 1 0 0 0 0 0 0\n\
                   link0: 500 5 0 2 0 0 0 0 900 9 0 7 0 0 0 0\n";
        assert_eq!(tx_dropped(dev, "link0"), Some(7));
        assert_eq!(tx_dropped(dev, "lo"), Some(0));
        assert_eq!(tx_dropped(dev, "link1"), None);
    }

    #[test]
    fn shares_never_divide_by_zero() {
        assert_eq!(share(3, 0), 0.0);
        assert_eq!(share(1, 4), 0.25);
    }
}
