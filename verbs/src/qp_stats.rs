//! [`QueuePair::stats`](crate::QueuePair::stats): one queue pair's traffic,
//! outstanding work, start-up phase, last TERMINATE and TCP state, for
//! telling a busy connection from a stuck one (docs/diagnostics.md).

use std::fmt;

pub use rdmap::connection::{ConnectionStats, TerminateRecord};
pub use transport::TcpStreamStats;

use crate::types::QpState;

/// Where a queue pair's connection stands, start-up steps included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MpaPhase {
    /// Not connecting yet (receives may be posted).
    Idle,
    /// The TCP handshake is under way.
    TcpConnecting,
    /// Initiator: the MPA Request is (being) sent; waiting for the Reply.
    AwaitingReply,
    /// Responder: accepted; the MPA Reply is still being queued.
    SendingReply,
    /// Responder: start-up done, waiting for the initiator's first FPDU
    /// (RFC 5044; in peer-to-peer mode the RTR of RFC 6581).
    AwaitingFirstFpdu,
    /// Carrying RDMA traffic.
    Established,
    /// Over: terminated, closed, or start-up failed.
    Closed,
}

/// A snapshot of one queue pair (see
/// [`QueuePair::stats`](crate::QueuePair::stats)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct QpStats {
    /// The queue pair's state, as [`QueuePair::state`](crate::QueuePair::state) reports it.
    pub state: QpState,
    /// Where its connection stands.
    pub phase: MpaPhase,
    /// What its RDMAP connection carried and has outstanding (all zero
    /// before start-up completes).
    pub rdma: ConnectionStats,
    /// Its TCP connection's state; `None` before there is one, after it
    /// is released, or on a transport that cannot tell.
    pub tcp: Option<TcpStreamStats>,
}

impl fmt::Display for MpaPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MpaPhase::Idle => "idle",
            MpaPhase::TcpConnecting => "tcp-connecting",
            MpaPhase::AwaitingReply => "awaiting-mpa-reply",
            MpaPhase::SendingReply => "sending-mpa-reply",
            MpaPhase::AwaitingFirstFpdu => "awaiting-first-fpdu",
            MpaPhase::Established => "established",
            MpaPhase::Closed => "closed",
        })
    }
}

/// One line per subject: state, traffic, outstanding work, TERMINATE, TCP.
impl fmt::Display for QpStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.rdma;
        writeln!(f, "state {:?}, phase {}", self.state, self.phase)?;
        writeln!(
            f,
            "sent {} B in {} messages, received {} B in {} messages",
            r.bytes_sent, r.messages_sent, r.bytes_received, r.messages_received
        )?;
        writeln!(
            f,
            "outstanding: {} sends, {} reads, {} atomics; IRD {}/{} ORD {}/{} in use",
            r.sends_outstanding,
            r.reads_outstanding,
            r.atomics_outstanding,
            r.ird_in_use,
            r.ird,
            r.ord_in_use,
            r.ord
        )?;
        match r.last_terminate {
            Some(t) => writeln!(
                f,
                "last TERMINATE {} by {}: layer {:?} type {:#x} code {:#04x}",
                if t.by_peer { "received" } else { "sent" },
                if t.by_peer { "the peer" } else { "this side" },
                t.cause.layer,
                t.cause.etype,
                t.cause.code
            )?,
            None => writeln!(f, "no TERMINATE")?,
        }
        match &self.tcp {
            Some(t) => {
                let srtt = t.srtt.map_or("-".to_string(), |d| {
                    format!("{:.3} ms", d.as_secs_f64() * 1e3)
                });
                let cwnd = t.cwnd.map_or("-".to_string(), |w| format!("{w} B"));
                let timeouts = t.timeouts.map_or("-".to_string(), |n| n.to_string());
                write!(
                    f,
                    "tcp: srtt {srtt}, cwnd {cwnd}, {} segments resent, {timeouts} timeouts, \
                     {} B queued to send, {} B received unread",
                    t.retransmitted_segments, t.send_queued, t.recv_queued
                )
            }
            None => write!(f, "tcp: -"),
        }
    }
}
