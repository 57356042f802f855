//! The host's TCP through `std::net` sockets, behind the same seam.
//!
//! Sockets are non-blocking with TCP_NODELAY. `send_with` builds into a
//! per-stream staging buffer that `poll` hands to the kernel with one
//! `write` per stream per turn, so many small FPDUs cost one syscall (and
//! [`Transport::make_room`] with one more each time a turn queues more
//! than the buffer holds, up to `MAKE_ROOM_BUDGET` per poll);
//! `poll` reads into a reusable per-stream buffer that `recv_with` lends
//! out. `wait` sleeps in poll(2) on every socket that can make progress;
//! an event loop instead watches [`Transport::readiness_fd`], an epoll set
//! of the same sockets kept in step with what each waits for.
//! A stream the user closed is released once both sides finished, or at
//! the latest [`CLOSE_LINGER`](crate::CLOSE_LINGER) after its close, reset if its bytes were
//! not all delivered by then. A capture, if set, is synthesized from the bytes written and read
//! (`synth`): real TCP framing, but not the kernel's segments.

mod buffer;
mod raw_epoll;
pub(crate) mod sys;

pub use raw_epoll::{epoll_pump, RawRun};

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use buffer::LinearBuf;
use sys::Epoll;

use super::linger::Linger;
use super::slab::Slab;
use super::synth::TcpSynth;
use super::wake::WakeFd;
use super::{ListenerId, StreamId, StreamState, TcpStreamStats, Transport, TransportError, Waker};
use capture::pcap::PcapSink;

/// MSS reported when the kernel will not say.
const DEFAULT_MSS: usize = 1460;
/// How far from half the route's MSS a connection's MSS may be and still
/// count as cut to half the peer's window (see [`segment_payload`]).
const HALF_WINDOW_SLACK: usize = 64;
/// Reads per stream per `poll`, so one busy stream cannot starve the rest.
const READS_PER_TURN: usize = 4;
/// Bytes a stream may write between the starts of two polls before
/// `make_room` refuses (at least one staging buffer). Writing a whole turn's
/// output at once saves system calls and turns, but the peer then reads it
/// in one piece, out of cache: on loopback, 64 KiB Writes lost a third of
/// their goodput per CPU-second with no bound, and gained with 128 to
/// 512 KiB, 256 KiB best for Reads.
const MAKE_ROOM_BUDGET: usize = 256 << 10;
/// How soon `poll` should run while the epoll set is missing a socket.
const EPOLL_RETRY: Duration = Duration::from_millis(1);
/// Ready descriptors one `poll` takes from the epoll set; a fuller set
/// than this makes the poll read every stream instead.
const READY_EVENTS: usize = 64;

/// How the kernel transport sets up its sockets.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KernelConfig {
    /// Address listeners bind to.
    pub bind_ip: IpAddr,
    /// Staging bytes per stream for `send_with`, at most; allocated as
    /// the stream needs them.
    pub send_buffer: usize,
    /// Read buffer per stream for `recv_with`, at most; allocated as the
    /// stream needs it.
    pub recv_buffer: usize,
    /// SO_SNDBUF/SO_RCVBUF for every socket; `None` keeps the kernel's
    /// autotuning.
    pub socket_buffers: Option<usize>,
}

crate::setters::setters!(KernelConfig {
    bind_ip: IpAddr,
    send_buffer: usize,
    recv_buffer: usize,
    socket_buffers: Option<usize>,
});

impl Default for KernelConfig {
    fn default() -> Self {
        KernelConfig {
            bind_ip: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            send_buffer: 1 << 20,
            recv_buffer: 1 << 20,
            socket_buffers: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Connecting,
    Open,
    Reset,
}

#[derive(Debug)]
struct KStream {
    sock: TcpStream,
    phase: Phase,
    tx: LinearBuf,
    rx: LinearBuf,
    peer_fin: bool,
    user_closed: bool,
    /// Runs from `close`: bounds how long the stream may stay.
    linger: Linger,
    shut_wr: bool,
    local: Option<SocketAddr>,
    peer: Option<SocketAddr>,
    mss: usize,
    synth: Option<TcpSynth>,
    /// Events the socket is registered for in the transport's epoll set;
    /// 0 while it is not in the set.
    registered: u32,
    /// Bytes written since the last `poll` began: bounds what
    /// `make_room` may add, and while non-zero, bytes are in flight.
    written: usize,
    /// `read` calls made on the socket (what a poll costs an idle stream).
    reads: u64,
}

impl KStream {
    fn new(sock: TcpStream, phase: Phase, cfg: &KernelConfig) -> Self {
        KStream {
            sock,
            phase,
            tx: LinearBuf::new(cfg.send_buffer),
            rx: LinearBuf::new(cfg.recv_buffer),
            peer_fin: false,
            user_closed: false,
            linger: Linger::default(),
            shut_wr: false,
            local: None,
            peer: None,
            mss: DEFAULT_MSS,
            synth: None,
            registered: 0,
            written: 0,
            reads: 0,
        }
    }

    fn state(&self) -> StreamState {
        match self.phase {
            Phase::Connecting => StreamState::Connecting,
            Phase::Reset => StreamState::Reset,
            Phase::Open if self.user_closed => {
                if self.shut_wr && self.peer_fin && self.rx.is_empty() {
                    StreamState::Closed
                } else {
                    StreamState::Closing
                }
            }
            Phase::Open if self.peer_fin => StreamState::PeerClosed,
            Phase::Open => StreamState::Established,
        }
    }

    /// The handshake is done: learn addresses and MSS, start the capture.
    fn opened(&mut self, pcap: Option<&mut PcapSink>, now: Instant, we_connected: bool) {
        self.phase = Phase::Open;
        // Best effort: a socket that refuses these still carries bytes.
        let _ = self.sock.set_nodelay(true);
        let _ = self.sock.set_nonblocking(true);
        self.local = self.sock.local_addr().ok();
        self.peer = self.sock.peer_addr().ok();
        let maxseg = sys::tcp_maxseg(&self.sock).unwrap_or(DEFAULT_MSS);
        self.mss = segment_payload(maxseg, sys::advertised_mss(&self.sock).ok());
        if let (Some(sink), Some(l), Some(p)) = (pcap, self.local, self.peer) {
            self.synth = TcpSynth::new(l, p, self.mss);
            if let Some(s) = self.synth.as_mut() {
                s.handshake(sink, now, we_connected);
            }
        }
    }

    fn reset(&mut self, pcap: Option<&mut PcapSink>, now: Instant) {
        self.phase = Phase::Reset;
        if let (Some(sink), Some(s)) = (pcap, self.synth.as_mut()) {
            s.rst_received(sink, now);
        }
    }

    /// One turn of I/O: connect completion, one write, a few reads (none
    /// unless `read`).
    fn turn(&mut self, mut pcap: Option<&mut PcapSink>, now: Instant, read: bool) -> bool {
        let mut moved = false;
        if self.phase == Phase::Connecting {
            match self.sock.take_error() {
                Ok(Some(_)) | Err(_) => {
                    self.phase = Phase::Reset;
                    return true;
                }
                Ok(None) => {}
            }
            if self.sock.peer_addr().is_err() {
                return false;
            }
            self.opened(pcap.as_deref_mut(), now, true);
            moved = true;
        }
        if self.phase != Phase::Open {
            return moved;
        }
        match self.push(pcap.as_deref_mut(), now) {
            Some(pushed) => moved |= pushed,
            None => return true,
        }
        if self.user_closed && self.tx.is_empty() && !self.shut_wr {
            // A socket the peer already reset fails here; reads will say so.
            let _ = self.sock.shutdown(Shutdown::Write);
            self.shut_wr = true;
            if let (Some(sink), Some(s)) = (pcap.as_deref_mut(), self.synth.as_mut()) {
                s.fin_sent(sink, now);
            }
            moved = true;
        }
        let reads = if read { READS_PER_TURN } else { 0 };
        for _ in 0..reads {
            if self.peer_fin {
                break;
            }
            if self.rx.tail_room() == 0 && !self.rx.make_room() {
                break;
            }
            let room = self.rx.tail_room();
            self.reads += 1;
            match self.sock.read(self.rx.tail_mut()) {
                Ok(0) => {
                    self.peer_fin = true;
                    if let (Some(sink), Some(s)) = (pcap.as_deref_mut(), self.synth.as_mut()) {
                        s.fin_received(sink, now);
                    }
                    moved = true;
                }
                Ok(n) => {
                    if let (Some(sink), Some(s)) = (pcap.as_deref_mut(), self.synth.as_mut()) {
                        s.received(sink, now, &self.rx.tail_mut()[..n]);
                    }
                    self.rx.commit(n);
                    moved = true;
                    if n < room {
                        break;
                    }
                }
                Err(e) if is_transient(&e) => break,
                Err(_) => {
                    self.reset(pcap, now);
                    return true;
                }
            }
        }
        moved
    }

    /// Hands staged bytes to the kernel with one `write`. `Some(true)` if
    /// any were taken; `None` if the write failed and the stream is reset.
    fn push(&mut self, pcap: Option<&mut PcapSink>, now: Instant) -> Option<bool> {
        if self.phase != Phase::Open || self.tx.is_empty() {
            return Some(false);
        }
        match self.sock.write(self.tx.filled()) {
            Ok(n) => {
                if let (Some(sink), Some(s)) = (pcap, self.synth.as_mut()) {
                    s.sent(sink, now, &self.tx.filled()[..n]);
                }
                self.tx.consume(n);
                self.written += n;
                Some(n > 0)
            }
            Err(e) if is_transient(&e) => Some(false),
            Err(_) => {
                self.reset(pcap, now);
                None
            }
        }
    }

    /// What poll(2) should watch for, if anything.
    fn interest(&self) -> libc::c_short {
        match self.phase {
            Phase::Connecting => libc::POLLOUT,
            Phase::Reset => 0,
            Phase::Open => {
                let mut ev = 0;
                if !self.peer_fin && self.rx.free() > 0 {
                    ev |= libc::POLLIN;
                }
                if !self.tx.is_empty() {
                    ev |= libc::POLLOUT;
                }
                ev
            }
        }
    }

    /// What the epoll set should watch for: [`KStream::interest`] in
    /// epoll's terms. A socket with nothing to wait for stays out of the
    /// set, since epoll reports errors and hang-ups even for no events
    /// and a finished socket would keep the set readable.
    fn epoll_interest(&self) -> u32 {
        let ev = self.interest();
        let mut out = 0;
        if ev & libc::POLLIN != 0 {
            out |= libc::EPOLLIN as u32;
        }
        if ev & libc::POLLOUT != 0 {
            out |= libc::EPOLLOUT as u32;
        }
        out
    }
}

/// Brings a stream's registration in `epoll` in line with its interest;
/// a system call only when the interest changed. False if the kernel
/// refused (the registration then stays as it was, to retry next time).
fn sync_interest(epoll: &Epoll, st: &mut KStream) -> bool {
    let want = st.epoll_interest();
    if want == st.registered {
        return true;
    }
    let fd = st.sock.as_raw_fd();
    let done = match (st.registered, want) {
        (0, w) => epoll.add(fd, w),
        (_, 0) => epoll.delete(fd),
        (_, w) => epoll.modify(fd, w),
    };
    if done.is_ok() {
        st.registered = want;
    }
    done.is_ok()
}

/// Takes a stream leaving the transport out of the epoll set (closing its
/// socket would too, but only once no duplicate of it is left).
fn forget(epoll: Option<&Epoll>, st: &KStream) {
    if let (Some(ep), true) = (epoll, st.registered != 0) {
        // Best effort: the close that follows removes it anyway.
        let _ = ep.delete(st.sock.as_raw_fd());
    }
}

/// The MSS to report for a stream whose kernel says `maxseg` (TCP_MAXSEG)
/// on a route allowing `route` (the MSS this end advertised).
///
/// Linux cuts a new connection's MSS to half the largest window the peer
/// has offered (`tcp_bound_to_half_wnd`) while that window is under two
/// segments: on loopback (route MSS 65483) TCP_MAXSEG says 32741 or 32768
/// at connection time. FPDUs of 32768 bytes put two in a 65536-byte write,
/// which the kernel sends as two packets, 65483 bytes and 53. When the
/// figure is within [`HALF_WINDOW_SLACK`] of half the route's MSS, half the
/// route's MSS is reported instead: two FPDUs then fill one segment. Any
/// other figure (a peer's smaller MSS, an ordinary link) stands.
fn segment_payload(maxseg: usize, route: Option<usize>) -> usize {
    match route {
        Some(r) if maxseg < r && maxseg.abs_diff(r / 2) <= HALF_WINDOW_SLACK => r / 2,
        _ => maxseg,
    }
}

fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

/// Kernel TCP sockets driven through [`Transport`].
#[derive(Debug)]
pub struct KernelTransport {
    cfg: KernelConfig,
    listeners: Slab<TcpListener>,
    streams: Slab<KStream>,
    pcap: Option<PcapSink>,
    /// The last `poll` instant, used to stamp captures made outside `poll`.
    now: Option<Instant>,
    fds: Vec<libc::pollfd>,
    /// Work queued since the last poll (bytes staged, a close requested).
    dirty: bool,
    /// Lets another thread end a `wait`; `None` if no eventfd could be made
    /// (waits then run to their timeout).
    wake: Option<Arc<WakeFd>>,
    /// The readiness descriptor's epoll set, made on the first
    /// [`Transport::readiness_fd`] call (transports driven through `wait`
    /// never pay for keeping it in step): the wake eventfd, every listener
    /// (readable) and every stream with something to wait for (readable
    /// while its receive buffer has room, writable while bytes are staged
    /// or a connect is pending).
    epoll: Option<Epoll>,
    /// A registration the kernel refused (no memory, the epoll watch
    /// limit): until one succeeds the set may miss an event, so
    /// `poll_delay` asks to be polled soon instead of trusting it.
    epoll_behind: bool,
    /// Whether the last `poll` moved anything. Bytes it read are out of
    /// the socket, so the epoll set no longer shows them, yet the layer
    /// above may not have taken them (a caller that polls once more after
    /// handling input, as a progress turn does): with the readiness
    /// descriptor in use, `poll_delay` then asks for one more poll.
    last_poll_moved: bool,
    /// What the epoll set reported ready at the start of the last `poll`
    /// (sorted descriptors): with the set in step, a poll reads only these
    /// streams and drains the wake eventfd only if it is among them, where
    /// reading every stream cost one failing `recvfrom` per idle stream
    /// and one `read` of the eventfd per turn.
    ready: ReadySet,
}

/// The descriptors one `epoll_wait` reported ready, or "all" when the
/// set cannot be trusted to name them (no set, a registration behind, or
/// more ready than one wait takes).
#[derive(Debug, Default)]
struct ReadySet {
    events: Vec<libc::epoll_event>,
    fds: Vec<RawFd>,
    all: bool,
}

impl ReadySet {
    /// Fills the set from `epoll` without blocking; `all` when `epoll` is
    /// `None`, `behind`, the wait failed, or it filled the event buffer.
    fn refill(&mut self, epoll: Option<&Epoll>, behind: bool) {
        self.fds.clear();
        self.all = true;
        let Some(ep) = epoll.filter(|_| !behind) else {
            return;
        };
        if self.events.is_empty() {
            self.events = vec![libc::epoll_event { events: 0, u64: 0 }; READY_EVENTS];
        }
        let Ok(n) = ep.wait(&mut self.events, 0) else {
            return;
        };
        if n == self.events.len() {
            return;
        }
        // The set registers each descriptor with itself as the data word.
        self.fds
            .extend(self.events[..n].iter().map(|e| e.u64 as RawFd));
        self.fds.sort_unstable();
        self.all = false;
    }

    fn contains(&self, fd: RawFd) -> bool {
        self.all || self.fds.binary_search(&fd).is_ok()
    }
}

impl KernelTransport {
    /// A transport with no sockets yet; each `listen` and `connect` makes one.
    pub fn new(cfg: KernelConfig) -> Self {
        KernelTransport {
            cfg,
            listeners: Slab::default(),
            streams: Slab::default(),
            pcap: None,
            now: None,
            fds: Vec::new(),
            dirty: false,
            wake: WakeFd::new().ok().map(Arc::new),
            epoll: None,
            epoll_behind: false,
            last_poll_moved: false,
            ready: ReadySet::default(),
        }
    }

    /// Records the synthesized frames of streams opened from now on.
    pub fn set_pcap(&mut self, sink: Option<PcapSink>) {
        self.pcap = sink;
    }

    /// The capture being recorded, if any.
    pub fn pcap(&self) -> Option<&PcapSink> {
        self.pcap.as_ref()
    }

    /// Stops recording and hands the capture over.
    pub fn take_pcap(&mut self) -> Option<PcapSink> {
        self.pcap.take()
    }

    /// Where a listener is bound (useful after `listen(0)`).
    pub fn listener_addr(&self, l: ListenerId) -> Option<SocketAddr> {
        self.listeners.get(l.0)?.local_addr().ok()
    }

    fn stamp(&self) -> Instant {
        self.now.unwrap_or_else(Instant::now)
    }

    /// Streams held by the transport, closed ones still lingering included.
    pub fn stream_count(&self) -> usize {
        self.streams.len()
    }

    /// Releases closed streams that are over or whose linger ran out.
    fn reclaim(&mut self, now: Instant) {
        let done: Vec<u64> = self
            .streams
            .iter_mut()
            .filter(|(_, s)| s.user_closed && (s.state().is_terminal() || s.linger.expired(now)))
            .map(|(k, _)| k)
            .collect();
        for k in done {
            let Some(mut st) = self.streams.remove(k) else {
                continue;
            };
            forget(self.epoll.as_ref(), &st);
            if st.state().is_terminal() || st.phase != Phase::Open {
                continue;
            }
            // The peer never finished. Bytes all delivered: the kernel may
            // see the close through alone. Otherwise nobody will wait for
            // them: reset, so nothing stays behind in the kernel either.
            let delivered = st.shut_wr && sys::unacknowledged(&st.sock).is_ok_and(|n| n == 0);
            if !delivered {
                // Best effort: if SO_LINGER fails the close is a FIN instead.
                let _ = sys::set_linger_zero(&st.sock);
                if let (Some(sink), Some(syn)) = (self.pcap.as_mut(), st.synth.as_mut()) {
                    syn.rst_sent(sink, now);
                }
            }
        }
    }

    /// One turn of every stream (reads only if `read`, and then only from
    /// the streams `self.ready` names), then closed streams reclaimed and
    /// the epoll set brought in step. True if anything moved.
    fn turn_streams(&mut self, now: Instant, read: bool) -> bool {
        let mut moved = false;
        let pcap = &mut self.pcap;
        for (_, st) in self.streams.iter_mut() {
            if read {
                st.written = 0;
            }
            let read = read && self.ready.contains(st.sock.as_raw_fd());
            moved |= st.turn(pcap.as_mut(), now, read);
        }
        self.reclaim(now);
        self.sync_all_interest();
        moved
    }

    /// Brings every stream's epoll registration in line with its interest.
    fn sync_all_interest(&mut self) {
        let Some(ep) = &self.epoll else {
            return;
        };
        let mut behind = false;
        for (_, st) in self.streams.iter_mut() {
            behind |= !sync_interest(ep, st);
        }
        self.epoll_behind = behind;
    }

    /// Registers one stream (new, or its interest changed outside a poll).
    fn sync_stream_interest(&mut self, key: u64) {
        if let (Some(ep), Some(st)) = (&self.epoll, self.streams.get_mut(key)) {
            self.epoll_behind |= !sync_interest(ep, st);
        }
    }

    /// Makes the epoll set of the readiness descriptor and fills it with
    /// what the transport already holds.
    fn make_epoll(&mut self) -> io::Result<()> {
        let ep = Epoll::new()?;
        let readable = libc::EPOLLIN as u32;
        if let Some(w) = &self.wake {
            ep.add(w.as_raw_fd(), readable)?;
        }
        for (_, l) in self.listeners.iter_mut() {
            ep.add(l.as_raw_fd(), readable)?;
        }
        self.epoll = Some(ep);
        self.sync_all_interest();
        Ok(())
    }

    fn apply_buffer_sizes(&self, fd: std::os::fd::RawFd) -> Result<(), TransportError> {
        if let Some(b) = self.cfg.socket_buffers {
            sys::set_buffer_sizes(fd, b)
                .map_err(|e| TransportError::io("SO_SNDBUF/SO_RCVBUF", e))?;
        }
        Ok(())
    }
}

impl Transport for KernelTransport {
    /// Binds `cfg.bind_ip:port`; port 0 picks a free port (see
    /// [`KernelTransport::listener_addr`]).
    fn listen(&mut self, port: u16) -> Result<ListenerId, TransportError> {
        let l = TcpListener::bind((self.cfg.bind_ip, port)).map_err(|e| {
            if e.kind() == io::ErrorKind::AddrInUse {
                TransportError::AddressInUse(port)
            } else {
                TransportError::io("bind", e)
            }
        })?;
        l.set_nonblocking(true)
            .map_err(|e| TransportError::io("O_NONBLOCK", e))?;
        self.apply_buffer_sizes(l.as_raw_fd())?;
        if let Some(ep) = &self.epoll {
            ep.add(l.as_raw_fd(), libc::EPOLLIN as u32)
                .map_err(|e| TransportError::io("epoll_ctl", e))?;
        }
        let key = self
            .listeners
            .insert(l)
            .ok_or(TransportError::Exhausted("listener slots"))?;
        Ok(ListenerId(key))
    }

    fn accept(&mut self, l: ListenerId) -> Option<StreamId> {
        let listener = self.listeners.get(l.0)?;
        // Transient accept errors (ECONNABORTED, EMFILE...) leave the
        // connection for a later call.
        let (sock, _) = listener.accept().ok()?;
        let now = self.stamp();
        let mut st = KStream::new(sock, Phase::Connecting, &self.cfg);
        st.opened(self.pcap.as_mut(), now, false);
        let key = self.streams.insert(st)?;
        self.sync_stream_interest(key);
        Some(StreamId(key))
    }

    fn unlisten(&mut self, l: ListenerId) {
        if let (Some(ep), Some(listener)) = (&self.epoll, self.listeners.get(l.0)) {
            // Best effort: dropping the listener removes it anyway.
            let _ = ep.delete(listener.as_raw_fd());
        }
        self.listeners.remove(l.0);
    }

    fn connect(&mut self, remote: SocketAddr) -> Result<StreamId, TransportError> {
        if remote.port() == 0 || remote.ip().is_unspecified() {
            return Err(TransportError::BadAddress("remote address or port 0"));
        }
        let sock =
            sys::connect_nonblocking(remote).map_err(|e| TransportError::io("connect", e))?;
        self.apply_buffer_sizes(sock.as_raw_fd())?;
        let st = KStream::new(sock, Phase::Connecting, &self.cfg);
        self.dirty = true;
        let key = self
            .streams
            .insert(st)
            .ok_or(TransportError::Exhausted("stream slots"))?;
        self.sync_stream_interest(key);
        Ok(StreamId(key))
    }

    fn state(&self, s: StreamId) -> StreamState {
        self.streams
            .get(s.0)
            .map_or(StreamState::Closed, KStream::state)
    }

    fn local_addr(&self, s: StreamId) -> Option<SocketAddr> {
        self.streams.get(s.0)?.local
    }

    fn peer_addr(&self, s: StreamId) -> Option<SocketAddr> {
        self.streams.get(s.0)?.peer
    }

    fn send_with(
        &mut self,
        s: StreamId,
        f: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Result<usize, TransportError> {
        let st = self
            .streams
            .get_mut(s.0)
            .ok_or(TransportError::UnknownStream(s))?;
        let state = st.state();
        if !state.may_send() {
            return Err(TransportError::InvalidState(state));
        }
        let mut total = 0;
        let mut grown = false;
        loop {
            let lent = st.tx.tail_room();
            let n = if lent > 0 { f(st.tx.tail_mut()) } else { 0 };
            if n > lent {
                return Err(TransportError::ClosureOverrun { claimed: n, lent });
            }
            st.tx.commit(n);
            total += n;
            // Nothing fitted, or the slice was filled: if more space is
            // free (in front of the unsent bytes or not yet allocated),
            // offer all of it as one slice, once.
            let wants_more = n == 0 || n == lent;
            if grown || !wants_more || st.tx.free() <= st.tx.tail_room() {
                break;
            }
            st.tx.grow_to_limit();
            grown = true;
        }
        self.dirty |= total > 0;
        Ok(total)
    }

    fn recv_with(
        &mut self,
        s: StreamId,
        f: &mut dyn FnMut(&[u8]) -> usize,
    ) -> Result<usize, TransportError> {
        let st = self
            .streams
            .get_mut(s.0)
            .ok_or(TransportError::UnknownStream(s))?;
        if st.rx.is_empty() {
            let state = st.state();
            if state.is_terminal() {
                return Err(TransportError::InvalidState(state));
            }
            return Ok(0);
        }
        let lent = st.rx.len();
        let n = f(st.rx.filled());
        if n > lent {
            return Err(TransportError::ClosureOverrun { claimed: n, lent });
        }
        let was_full = st.rx.free() == 0;
        st.rx.consume(n);
        if was_full && n > 0 {
            // A full buffer took the socket's readability out of the
            // epoll set: room again, so watch it again.
            self.sync_stream_interest(s.0);
        }
        Ok(n)
    }

    fn send_capacity(&self, s: StreamId) -> usize {
        match self.streams.get(s.0) {
            Some(st) if st.state().may_send() => st.tx.free(),
            _ => 0,
        }
    }

    /// Writes the staged bytes with one `write` (a whole staging buffer's
    /// worth when a turn queues more than it holds: a Read responder's
    /// answers, a large Write), so the layer above can go on queueing in
    /// the same turn instead of one staging buffer per turn; refused once
    /// the stream wrote `MAKE_ROOM_BUDGET` since the last poll began.
    fn make_room(&mut self, s: StreamId) -> bool {
        let now = self.stamp();
        let Some(st) = self.streams.get_mut(s.0) else {
            return false;
        };
        if st.written >= MAKE_ROOM_BUDGET.max(self.cfg.send_buffer) {
            return false;
        }
        let freed = match st.push(self.pcap.as_mut(), now) {
            Some(pushed) => pushed,
            // Reset: the next poll reports it.
            None => {
                self.dirty = true;
                false
            }
        };
        self.sync_stream_interest(s.0);
        freed
    }

    fn recv_queued(&self, s: StreamId) -> usize {
        self.streams.get(s.0).map_or(0, |st| st.rx.len())
    }

    fn mss(&self, s: StreamId) -> usize {
        self.streams.get(s.0).map_or(DEFAULT_MSS, |st| st.mss)
    }

    fn tcp_stream_stats(&self, s: StreamId) -> Option<TcpStreamStats> {
        let st = self.streams.get(s.0)?;
        let info = sys::tcp_info(&st.sock).ok()?;
        // Staged here, then in the kernel's send queue until acknowledged;
        // received, in the kernel's queue and then read into ours.
        let unacked = sys::unacknowledged(&st.sock).unwrap_or(0);
        let unread = sys::unread(&st.sock).unwrap_or(0);
        Some(TcpStreamStats::from_tcp_info(
            &info,
            st.tx.len() + unacked,
            st.rx.len() + unread,
        ))
    }

    fn close(&mut self, s: StreamId) {
        let Some(st) = self.streams.get_mut(s.0) else {
            return;
        };
        st.user_closed = true;
        st.linger.start(self.now.unwrap_or_else(Instant::now));
        if st.phase != Phase::Open {
            // Nothing to deliver: a pending connect is simply dropped.
            if let Some(st) = self.streams.remove(s.0) {
                forget(self.epoll.as_ref(), &st);
            }
            return;
        }
        self.dirty = true;
    }

    fn abort(&mut self, s: StreamId) {
        let Some(mut st) = self.streams.remove(s.0) else {
            return;
        };
        forget(self.epoll.as_ref(), &st);
        if st.phase == Phase::Open {
            // Best effort: if SO_LINGER fails the close is a FIN instead.
            let _ = sys::set_linger_zero(&st.sock);
            let now = self.now.unwrap_or_else(Instant::now);
            if let (Some(sink), Some(syn)) = (self.pcap.as_mut(), st.synth.as_mut()) {
                syn.rst_sent(sink, now);
            }
        }
    }

    fn poll(&mut self, now: Instant) -> bool {
        self.now = Some(now);
        self.dirty = false;
        self.ready.refill(self.epoll.as_ref(), self.epoll_behind);
        if let (Some(_), Some(w)) = (&self.epoll, &self.wake) {
            if self.ready.contains(w.as_raw_fd()) {
                // The wake's job (make the readiness descriptor readable
                // so this turn runs) is done; a wake after this makes a
                // new edge.
                w.drain();
            }
        }
        let moved = self.turn_streams(now, true);
        self.last_poll_moved = moved;
        moved
    }

    /// Writes, shuts down and completes connects as `poll` does, without
    /// its reads (see [`Transport::poll_send`]): `strace -c` of a 64 KiB
    /// Read bench found five or six `recvfrom` per Read coming back empty,
    /// one of them each turn from this second poll.
    fn poll_send(&mut self, now: Instant) -> bool {
        self.now = Some(now);
        self.dirty = false;
        let moved = self.turn_streams(now, false);
        // Kept if the turn's first poll moved bytes: the extra turn it asks
        // for is still owed.
        self.last_poll_moved |= moved;
        moved
    }

    /// Writes what posts staged, without the reads a full `poll` tries.
    /// Bytes staged behind data the peer has not acknowledged yet stay
    /// staged: the next `poll` writes everything posted meanwhile with one
    /// `write`, where writing at each post would cost a system call per
    /// message. Bytes written since the last poll began count as
    /// unacknowledged without asking; otherwise one cheap ioctl tells.
    fn flush(&mut self, now: Instant) -> bool {
        if !self.dirty {
            return false;
        }
        self.now = Some(now);
        self.dirty = false;
        let mut moved = false;
        let pcap = &mut self.pcap;
        for (_, st) in self.streams.iter_mut() {
            let in_flight = st.phase == Phase::Open
                && !st.tx.is_empty()
                && (st.written > 0 || sys::unacknowledged(&st.sock).is_ok_and(|n| n > 0));
            if in_flight {
                self.dirty = true;
                continue;
            }
            match st.push(pcap.as_mut(), now) {
                Some(pushed) => moved |= pushed,
                None => {
                    moved = true;
                    // Not written: the next poll notices the reset.
                    self.dirty = true;
                }
            }
            // A close waits for the staged bytes: let the next poll finish it.
            self.dirty |= st.user_closed && !st.shut_wr;
        }
        self.sync_all_interest();
        moved
    }

    fn poll_delay(&mut self, now: Instant) -> Option<Duration> {
        // The kernel keeps the TCP timers; only work staged since the last
        // poll is due, and the end of a closed stream's linger. Driven
        // through the readiness descriptor, so is a poll after one that
        // moved something: what it read may still wait for the layer above.
        if self.dirty || (self.epoll.is_some() && self.last_poll_moved) {
            return Some(Duration::ZERO);
        }
        let linger = self
            .streams
            .iter()
            .filter_map(|(_, s)| s.linger.remaining(now))
            .min();
        if self.epoll_behind {
            // The readiness descriptor may miss a socket: look soon.
            return Some(linger.map_or(EPOLL_RETRY, |l| l.min(EPOLL_RETRY)));
        }
        linger
    }

    fn wait(&mut self, timeout: Option<Duration>) {
        if self.dirty {
            return;
        }
        self.fds.clear();
        if let Some(w) = &self.wake {
            self.fds.push(w.pollfd());
        }
        for (_, l) in self.listeners.iter_mut() {
            self.fds.push(libc::pollfd {
                fd: l.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        for (_, st) in self.streams.iter_mut() {
            let events = st.interest();
            if events != 0 {
                self.fds.push(libc::pollfd {
                    fd: st.sock.as_raw_fd(),
                    events,
                    revents: 0,
                });
            }
        }
        if self.fds.is_empty() {
            // Nothing can wake us: honour the timeout, never block forever.
            if let Some(t) = timeout {
                std::thread::sleep(t);
            }
            return;
        }
        if sys::poll(&mut self.fds, timeout).is_err() {
            sys::sleep_after_failed_wait(timeout);
        }
        if let Some(w) = &self.wake {
            w.drain();
        }
    }

    fn listen_port(&self, l: ListenerId) -> Option<u16> {
        self.listener_addr(l).map(|a| a.port())
    }

    fn waker(&self) -> Option<Waker> {
        self.wake.as_ref().map(WakeFd::waker)
    }

    /// An epoll set of the transport's sockets and its wake eventfd (see
    /// [`KernelTransport`]'s `epoll`), made on the first call: readable
    /// while a listener has a connection, a socket has bytes, a FIN or an
    /// error for us, a connect completed, staged bytes can be written, or
    /// the [`waker`](Transport::waker) was called. `None` if the kernel
    /// refused the set.
    fn readiness_fd(&mut self) -> Option<OwnedFd> {
        if self.epoll.is_none() {
            self.make_epoll().ok()?;
        }
        self.epoll.as_ref()?.try_clone_fd().ok()
    }

    fn has_readiness_fd(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests;
