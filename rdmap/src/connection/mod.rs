//! The per-connection state machine joining MPA framing, DDP placement and
//! RDMAP semantics, driven sans-IO by a transport after MPA start-up:
//! stream bytes in ([`Connection::handle_bytes`]), whole FPDUs out
//! ([`Connection::poll_transmit`]), completions and terminations as
//! [`Event`]s.
//!
//! Ordering (RFC 5040): send queue entries go on the wire
//! in posting order, one message at a time, and complete in posting order;
//! Read Responses are sent in the order the Read Requests arrived, and may
//! share the wire with an untagged send queue message segment by segment,
//! never with another tagged one (siw keeps one tagged and one untagged
//! message in progress per direction, and so do we). Receives complete in
//! MSN order. Every error caused by the peer queues a TERMINATE, moves the
//! connection to [`State::Error`] and flushes all work requests.

mod atomics;
mod config;
mod event;
mod framing;
mod inner;
mod send_queue;
mod stats;
mod terminate;

#[cfg(test)]
mod tests;

use std::time::Instant;

use ddp::memory::{Memory, PdId};
use ddp::untagged::SharedBuffers;

pub use config::{ConnectionConfig, Negotiated, Role, DEFAULT_MAX_INLINE, MAX_RX_ULPDU, MIN_FPDU};
pub use event::{Event, PeerTerminate, State};
pub use stats::{ConnectionStats, TerminateRecord};
pub use terminate::startup_terminate;

use crate::work_request::{PostError, RecvWr, SendWr};
use framing::FrameRx;
use inner::Inner;

/// One RDMAP stream (a connected queue pair) after MPA start-up.
#[derive(Debug)]
pub struct Connection {
    rx: FrameRx,
    inner: Inner,
}

impl Connection {
    /// A connection in its first phase, as MPA start-up left it.
    pub fn new(cfg: ConnectionConfig) -> Self {
        Connection {
            rx: FrameRx::new(&cfg.negotiated, MAX_RX_ULPDU),
            inner: Inner::new(&cfg),
        }
    }

    /// Queues a send work request. On a terminated or closed connection it
    /// completes at once with [`WcStatus::WrFlushErr`](crate::WcStatus).
    pub fn post_send(&mut self, wr: SendWr) -> Result<(), PostError> {
        self.inner.post_send(wr)
    }

    /// Posts a receive buffer. On a terminated or closed connection it
    /// completes at once with [`WcStatus::WrFlushErr`](crate::WcStatus).
    pub fn post_recv(&mut self, wr: RecvWr) -> Result<(), PostError> {
        self.inner.post_recv(wr)
    }

    /// Takes bytes of the TCP stream, placing what they carry into `mem`.
    /// Returns how many were consumed (all of them unless a ULPDU stops
    /// half-way, which the deframer buffers internally). A protocol error
    /// queues a TERMINATE and moves to [`State::Error`]; from then on input
    /// is discarded (reported as consumed).
    pub fn handle_bytes<M: Memory + ?Sized>(&mut self, mem: &mut M, input: &[u8]) -> usize {
        self.handle_bytes_shared(mem, None, input)
    }

    /// [`Self::handle_bytes`] for a connection configured with
    /// [`ConnectionConfig::shared_receive`]: a Send or Immediate Data
    /// message that starts takes the oldest buffer of `srq`; with none
    /// there (or no pool) it is answered as on an empty receive queue, by
    /// a TERMINATE (DDP, untagged buffer error, no buffer available).
    pub fn handle_bytes_shared<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        mut srq: Option<&mut SharedBuffers>,
        input: &[u8],
    ) -> usize {
        if !self.inner.accepts_input() {
            return input.len();
        }
        let Connection { rx, inner } = self;
        match rx.feed(input, |ulpdu| {
            inner.on_ulpdu(mem, srq.as_deref_mut(), ulpdu)
        }) {
            Ok(n) if inner.accepts_input() => n,
            Ok(_) => input.len(),
            Err(code) => {
                inner.stream_broken(code);
                input.len()
            }
        }
    }

    /// Writes whole FPDUs into `out` (the transport's send buffer) and
    /// returns the bytes written; 0 when nothing is due or the next FPDU
    /// does not fit.
    pub fn poll_transmit<M: Memory + ?Sized>(&mut self, mem: &M, out: &mut [u8]) -> usize {
        self.inner.poll_transmit(mem, out)
    }

    /// [`poll_transmit`](Self::poll_transmit) that also calls `fpdu_end`
    /// with the offset in `out` just past each FPDU it wrote, in order: the
    /// record boundaries a TCP that aligns FPDUs with segments cuts at
    /// (RFC 5044 section 4).
    pub fn poll_transmit_records<M: Memory + ?Sized>(
        &mut self,
        mem: &M,
        out: &mut [u8],
        fpdu_end: impl FnMut(usize),
    ) -> usize {
        self.inner.poll_transmit_records(mem, out, fpdu_end)
    }

    /// After `poll_transmit`: an STag a local Invalidate STag work request
    /// asks the driver to invalidate now (in its registration table; the
    /// connection has checked it is a valid region of its protection
    /// domain). The request completes as this returns it. Until the driver
    /// takes it, `poll_transmit` sends nothing more of the send queue.
    pub fn take_local_invalidate(&mut self) -> Option<ddp::memory::STag> {
        self.inner.take_local_invalidate()
    }

    /// The next completion or connection event, oldest first. Inlined
    /// into the caller's drain loop, across crates: the event then comes
    /// out in registers rather than through memory.
    #[inline]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.inner.poll_event()
    }

    /// The one timer RDMAP keeps (TCP retransmits, MPA start-up has its
    /// own): a responder's wait for the initiator's first FPDU, while it
    /// lasts.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.inner.first_fpdu_deadline()
    }

    /// Gives up on the first FPDU if its deadline passed (see
    /// [`ConnectionConfig::first_fpdu_deadline`]).
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.poll_timeout().is_some_and(|d| now >= d) {
            self.inner.first_fpdu_timed_out();
        }
    }

    /// The peer closed its direction (TCP FIN): every outstanding work
    /// request is flushed and [`Event::PeerClosed`] reported.
    pub fn handle_peer_close(&mut self) {
        self.inner.peer_closed();
    }

    /// Closes locally: every outstanding work request completes with
    /// [`WcStatus::WrFlushErr`](crate::WcStatus). A TERMINATE already queued
    /// is still handed out by `poll_transmit`.
    pub fn close(&mut self) {
        self.inner.close();
    }

    /// No work request, READ or TERMINATE outstanding and nothing to send.
    pub fn is_idle(&self) -> bool {
        self.inner.is_idle()
    }

    /// `poll_transmit` has an FPDU to hand out (given room).
    pub fn wants_write(&self) -> bool {
        self.inner.wants_write()
    }

    /// Where the connection stands.
    pub fn state(&self) -> State {
        self.inner.state()
    }

    /// The protection domain whose regions the peer may use.
    pub fn pd(&self) -> PdId {
        self.inner.pd()
    }

    /// Largest ULPDU (DDP header and payload) this side puts in one FPDU.
    pub fn max_ulpdu(&self) -> usize {
        self.inner.max_ulpdu()
    }

    /// READs the peer may have outstanding towards us.
    pub fn ird(&self) -> usize {
        self.inner.ird()
    }

    /// READs we may have outstanding towards the peer.
    pub fn ord(&self) -> usize {
        self.inner.ord()
    }

    /// What the connection carried each way and has outstanding, and the
    /// TERMINATE that ended it, if one did.
    pub fn stats(&self) -> ConnectionStats {
        ConnectionStats {
            bytes_received: self.rx.traffic.bytes,
            messages_received: self.rx.traffic.messages,
            ..self.inner.stats()
        }
    }
}
