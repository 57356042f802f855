//! The seam between the verbs facade and a network stack.

use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use super::{TcpLossStats, TcpStreamStats, TransportError, Waker};

/// A listening port of one transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ListenerId(pub(crate) u64);

/// One TCP connection of one transport.
///
/// Ids are never reused within a transport, so a stale id reports
/// [`StreamState::Closed`] instead of aliasing a newer connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub(crate) u64);

/// Where a connection stands, as the layer above needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamState {
    /// The handshake has not completed yet.
    Connecting,
    /// Both directions are open.
    Established,
    /// The peer finished sending (FIN); bytes already received can still be
    /// read and this side can still send.
    PeerClosed,
    /// This side closed; queued bytes are still being delivered and the
    /// peer may still send.
    Closing,
    /// The connection ended after both sides closed, or the id was released.
    Closed,
    /// The connection ended without a clean close: reset by the peer,
    /// refused, timed out or aborted.
    Reset,
}

impl StreamState {
    /// Whether bytes may still be queued for sending.
    pub fn may_send(self) -> bool {
        matches!(self, StreamState::Established | StreamState::PeerClosed)
    }

    /// Whether the connection is over for good.
    pub fn is_terminal(self) -> bool {
        matches!(self, StreamState::Closed | StreamState::Reset)
    }
}

/// What [`Transport::send_records_with`] lends free send-buffer space to:
/// it writes whole records into the slice, calls its second argument with
/// the offset just past each, and returns how many bytes it wrote.
pub type RecordWriter<'a> = dyn FnMut(&mut [u8], &mut dyn FnMut(usize)) -> usize + 'a;

/// One network stack (or one set of kernel sockets) carrying TCP streams.
///
/// Nothing here blocks except [`Transport::wait`]. The caller drives the
/// transport: queue bytes with [`send_with`](Transport::send_with), move
/// packets with [`poll`](Transport::poll), take bytes with
/// [`recv_with`](Transport::recv_with), and sleep in
/// [`wait`](Transport::wait) for at most
/// [`poll_delay`](Transport::poll_delay) when idle.
///
/// The trait is object safe; the closures are `dyn` so that a protocol
/// engine can be driven through `&mut dyn Transport` as well as generically
/// (one indirect call per batch of FPDUs, measured to be noise next to the
/// TCP work it triggers).
pub trait Transport {
    /// Starts accepting connections on `port`.
    fn listen(&mut self, port: u16) -> Result<ListenerId, TransportError>;

    /// Takes the oldest connection that completed its handshake on `l`, if
    /// any. Never blocks.
    fn accept(&mut self, l: ListenerId) -> Option<StreamId>;

    /// Stops listening; connections already accepted are unaffected.
    fn unlisten(&mut self, l: ListenerId);

    /// Starts connecting to `remote`; the stream is
    /// [`StreamState::Connecting`] until the handshake completes in `poll`.
    fn connect(&mut self, remote: SocketAddr) -> Result<StreamId, TransportError>;

    /// The stream's state; unknown or released ids report `Closed`.
    fn state(&self, s: StreamId) -> StreamState;

    /// Local address of an open stream.
    fn local_addr(&self, s: StreamId) -> Option<SocketAddr>;

    /// Remote address of an open stream.
    fn peer_addr(&self, s: StreamId) -> Option<SocketAddr>;

    /// Lends free send-buffer space to `f`, which writes a prefix of it and
    /// returns how many bytes it wrote. Returns the total queued.
    ///
    /// `f` may be called more than once: again after it filled its slice
    /// completely while more space is free (a ring buffer wrapped), and
    /// again with a longer contiguous slice if it wrote nothing into a slice
    /// shorter than the free space, up to one slice of all of it (so a whole
    /// FPDU fits whenever the free space allows). Returning 0 ends the call.
    fn send_with(
        &mut self,
        s: StreamId,
        f: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Result<usize, TransportError>;

    /// [`send_with`](Transport::send_with) for a stream of records (MPA
    /// FPDUs) that `f` writes whole: `f` also reports the end of each record
    /// it wrote, as an offset into the slice it was lent, in increasing
    /// order. A transport whose TCP can cut segments there does, so a
    /// segment carries whole records where they fit the MSS (RFC 5044
    /// section 4 asks an MPA-aware sender to align FPDUs with segments);
    /// the default ignores the ends.
    fn send_records_with(
        &mut self,
        s: StreamId,
        f: &mut RecordWriter<'_>,
    ) -> Result<usize, TransportError> {
        self.send_with(s, &mut |buf| f(buf, &mut |_| {}))
    }

    /// Whether several records that [`send_records_with`] reports may share
    /// one segment (the default) or each goes in segments of its own.
    /// Transports that do not cut at record ends ignore it.
    ///
    /// [`send_records_with`]: Transport::send_records_with
    fn set_record_packing(&mut self, s: StreamId, packed: bool) {
        let _ = (s, packed);
    }

    /// Lends received bytes to `f`, which consumes a prefix and returns how
    /// many bytes it consumed. Returns the total consumed; `Ok(0)` when
    /// nothing is queued.
    ///
    /// Like `send_with`, `f` is called again after consuming everything it
    /// was lent while more is queued, and once more with all queued bytes in
    /// one contiguous slice if it consumed nothing of a shorter slice.
    fn recv_with(
        &mut self,
        s: StreamId,
        f: &mut dyn FnMut(&[u8]) -> usize,
    ) -> Result<usize, TransportError>;

    /// Bytes `send_with` could queue right now.
    fn send_capacity(&self, s: StreamId) -> usize;

    /// The layer above has more for `s` than `send_with` just had room for
    /// (its next FPDU did not fit). A transport that stages bytes in a
    /// buffer of its own before handing them to its network stack (kernel
    /// TCP) may hand them over now to make room, instead of at the next
    /// `poll`; true if it freed room, and `send_with` may be called again.
    ///
    /// The default frees nothing: a transport whose send buffer is the TCP
    /// send buffer itself has no room to make before acknowledgements.
    fn make_room(&mut self, s: StreamId) -> bool {
        let _ = s;
        false
    }

    /// Bytes waiting to be consumed by `recv_with`.
    fn recv_queued(&self, s: StreamId) -> usize;

    /// Maximum TCP payload per segment for this stream.
    fn mss(&self, s: StreamId) -> usize;

    /// Closes the sending direction after queued bytes are delivered. The id
    /// stays valid (state `Closing`) until the connection is over.
    fn close(&mut self, s: StreamId);

    /// Resets the connection, dropping queued bytes, and releases the id.
    fn abort(&mut self, s: StreamId);

    /// Moves packets and bytes as far as they go at `now`; true if anything
    /// happened (a frame, a byte, a state change).
    fn poll(&mut self, now: Instant) -> bool;

    /// Called after bytes were queued outside a progress turn (a post):
    /// puts them on the wire now, or leaves them for the next `poll` when
    /// that comes soon anyway. True if anything happened.
    ///
    /// The default polls. A transport may instead hold bytes queued behind
    /// data still unacknowledged (autocorking, as Linux does for small
    /// writes): the acknowledgement wakes the next `poll`, which then sends
    /// everything queued meanwhile in full segments instead of one segment
    /// per message.
    fn flush(&mut self, now: Instant) -> bool {
        self.poll(now)
    }

    /// Whether [`flush`](Self::flush) would do anything now. False lets
    /// the caller skip it, and reading the clock for it (a post onto a
    /// stream with data in flight, under autocorking). The default: true.
    fn flush_due(&self) -> bool {
        true
    }

    /// Polls again at the end of a progress turn, to send what the layer
    /// above queued after the turn's first `poll`. True if anything
    /// happened.
    ///
    /// The default polls. A transport whose reads are system calls (kernel
    /// TCP) only writes here: the turn's first `poll` has just read, and a
    /// second read almost always finds nothing; the next turn reads again.
    fn poll_send(&mut self, now: Instant) -> bool {
        self.poll(now)
    }

    /// Calls `f` with each stream that may have news for the layer above
    /// since the last call (bytes arrived, send room freed, the state
    /// changed), so it can visit those instead of every stream. False if
    /// the transport does not track this (the default): then any stream
    /// may have news.
    ///
    /// Only what `poll` brought counts: what the caller did itself (sent,
    /// read, closed) it knows already.
    fn drain_ready(&mut self, f: &mut dyn FnMut(StreamId)) -> bool {
        let _ = f;
        false
    }

    /// How long until `poll` must run again without outside events; `None`
    /// when only I/O can make progress, zero when work is pending now.
    fn poll_delay(&mut self, now: Instant) -> Option<Duration>;

    /// Blocks until I/O may be ready or `timeout` passes (`None`: no
    /// timeout). Never spins while idle.
    fn wait(&mut self, timeout: Option<Duration>);

    /// The port a listener is bound to (the one picked for `listen(0)` on
    /// transports that support that); `None` for an unknown listener.
    fn listen_port(&self, l: ListenerId) -> Option<u16> {
        let _ = l;
        None
    }

    /// A handle that interrupts a [`wait`](Transport::wait) in progress on
    /// another thread, or makes the next one return at once. `None` if the
    /// transport cannot be woken: its waits then run to their timeout.
    fn waker(&self) -> Option<Waker> {
        None
    }

    /// A descriptor (a duplicate the caller owns) that polls readable when
    /// input is waiting for [`poll`](Transport::poll) or the
    /// [`waker`](Transport::waker) was called: what an event loop
    /// watches to drive the transport itself instead of a thread sleeping
    /// in [`wait`](Transport::wait). Between readiness, `poll` must still
    /// run when [`poll_delay`](Transport::poll_delay) says (timers, frames
    /// delivered late). `None` if the transport has no such descriptor.
    fn readiness_fd(&mut self) -> Option<OwnedFd> {
        None
    }

    /// Whether the transport offers a [`readiness_fd`](Transport::readiness_fd),
    /// asked without making one (a transport may start work on the first
    /// request, as kernel TCP builds its epoll set).
    fn has_readiness_fd(&self) -> bool {
        false
    }

    /// How this transport's TCP recovered from loss so far, summed over
    /// every connection it carried; `None` if it keeps no such counters
    /// (kernel TCP).
    fn tcp_loss_stats(&self) -> Option<TcpLossStats> {
        None
    }

    /// What one stream's TCP knows: round-trip time, congestion window,
    /// resends, timeouts and queued octets. `None` for an unknown or
    /// released stream, or a transport that cannot tell.
    fn tcp_stream_stats(&self, s: StreamId) -> Option<TcpStreamStats> {
        let _ = s;
        None
    }

    /// What the modelled link under this transport did to the frames it
    /// sent (offered, lost, overflowed, delivered); `None` where no model
    /// sits under it (kernel TCP, TAP).
    fn link_counters(&self) -> Option<crate::link_model::LinkCounters> {
        None
    }
}

/// A boxed transport (say `Box<dyn Transport + Send>`, as a device holds
/// whichever one it was opened with) is a transport.
impl<T: Transport + ?Sized> Transport for Box<T> {
    fn listen(&mut self, port: u16) -> Result<ListenerId, TransportError> {
        (**self).listen(port)
    }
    fn accept(&mut self, l: ListenerId) -> Option<StreamId> {
        (**self).accept(l)
    }
    fn unlisten(&mut self, l: ListenerId) {
        (**self).unlisten(l)
    }
    fn connect(&mut self, remote: SocketAddr) -> Result<StreamId, TransportError> {
        (**self).connect(remote)
    }
    fn state(&self, s: StreamId) -> StreamState {
        (**self).state(s)
    }
    fn local_addr(&self, s: StreamId) -> Option<SocketAddr> {
        (**self).local_addr(s)
    }
    fn peer_addr(&self, s: StreamId) -> Option<SocketAddr> {
        (**self).peer_addr(s)
    }
    fn send_with(
        &mut self,
        s: StreamId,
        f: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Result<usize, TransportError> {
        (**self).send_with(s, f)
    }
    fn send_records_with(
        &mut self,
        s: StreamId,
        f: &mut RecordWriter<'_>,
    ) -> Result<usize, TransportError> {
        (**self).send_records_with(s, f)
    }
    fn set_record_packing(&mut self, s: StreamId, packed: bool) {
        (**self).set_record_packing(s, packed)
    }
    fn recv_with(
        &mut self,
        s: StreamId,
        f: &mut dyn FnMut(&[u8]) -> usize,
    ) -> Result<usize, TransportError> {
        (**self).recv_with(s, f)
    }
    fn send_capacity(&self, s: StreamId) -> usize {
        (**self).send_capacity(s)
    }
    fn flush(&mut self, now: Instant) -> bool {
        (**self).flush(now)
    }
    fn flush_due(&self) -> bool {
        (**self).flush_due()
    }
    fn recv_queued(&self, s: StreamId) -> usize {
        (**self).recv_queued(s)
    }
    fn mss(&self, s: StreamId) -> usize {
        (**self).mss(s)
    }
    fn close(&mut self, s: StreamId) {
        (**self).close(s)
    }
    fn abort(&mut self, s: StreamId) {
        (**self).abort(s)
    }
    fn poll(&mut self, now: Instant) -> bool {
        (**self).poll(now)
    }
    fn poll_send(&mut self, now: Instant) -> bool {
        (**self).poll_send(now)
    }
    fn drain_ready(&mut self, f: &mut dyn FnMut(StreamId)) -> bool {
        (**self).drain_ready(f)
    }
    fn poll_delay(&mut self, now: Instant) -> Option<Duration> {
        (**self).poll_delay(now)
    }
    fn wait(&mut self, timeout: Option<Duration>) {
        (**self).wait(timeout)
    }
    fn listen_port(&self, l: ListenerId) -> Option<u16> {
        (**self).listen_port(l)
    }
    fn waker(&self) -> Option<Waker> {
        (**self).waker()
    }
    fn readiness_fd(&mut self) -> Option<OwnedFd> {
        (**self).readiness_fd()
    }
    fn has_readiness_fd(&self) -> bool {
        (**self).has_readiness_fd()
    }
    fn tcp_loss_stats(&self) -> Option<TcpLossStats> {
        (**self).tcp_loss_stats()
    }
    fn tcp_stream_stats(&self, s: StreamId) -> Option<TcpStreamStats> {
        (**self).tcp_stream_stats(s)
    }

    fn link_counters(&self) -> Option<crate::link_model::LinkCounters> {
        (**self).link_counters()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{KernelConfig, KernelTransport};
    use crate::memory::MemoryLink;
    use crate::memory::MemoryLinkConfig;
    use crate::testutil::{drive, Receiver, Sender};

    #[test]
    fn state_predicates() {
        use StreamState::*;
        for (s, send, terminal) in [
            (Connecting, false, false),
            (Established, true, false),
            (PeerClosed, true, false),
            (Closing, false, false),
            (Closed, false, true),
            (Reset, false, true),
        ] {
            assert_eq!(s.may_send(), send, "{s:?}");
            assert_eq!(s.is_terminal(), terminal, "{s:?}");
        }
    }

    /// Every transport is usable as `Box<dyn Transport + Send>`, and all of
    /// them move threads.
    #[test]
    fn boxed_transports_carry_bytes() {
        let (a, b) = MemoryLink::pair(&MemoryLinkConfig::default()).unwrap();
        let kernel = KernelTransport::new(KernelConfig {
            bind_ip: "127.0.0.1".parse().unwrap(),
            ..Default::default()
        });
        let boxed: Vec<Box<dyn Transport + Send>> = vec![Box::new(a), Box::new(kernel)];
        let mut b: Box<dyn Transport + Send> = Box::new(b);
        for (i, mut t) in boxed.into_iter().enumerate() {
            let t = &mut t;
            // Memory: B listens; kernel: one transport serves both ends.
            let (server_side, addr): (&mut dyn Transport, SocketAddr) = if i == 0 {
                (&mut *b, "10.77.0.2:7000".parse().unwrap())
            } else {
                let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let a = l.local_addr().unwrap();
                drop(l);
                (&mut **t, a)
            };
            let l = server_side.listen(addr.port()).unwrap();
            let c = t.connect(addr).unwrap();
            let mut s = None;
            let mut tx = Sender::new(9, 100_000);
            let mut rx = Receiver::new(9, 100_000);
            let ok = drive(t, Duration::from_secs(20), |t| {
                if i == 0 {
                    b.poll(Instant::now());
                    s = s.or_else(|| b.accept(l));
                } else {
                    s = s.or_else(|| t.accept(l));
                }
                if t.state(c) == StreamState::Established {
                    tx.pump(&mut **t, c).unwrap();
                }
                if let Some(s) = s {
                    if i == 0 {
                        rx.drain(&mut *b, s).unwrap();
                    } else {
                        rx.drain(&mut **t, s).unwrap();
                    }
                }
                rx.done()
            });
            assert!(ok, "transport {i}: {} of 100000", rx.received);
            assert_eq!(rx.bad_bytes, 0);
        }
    }
}
