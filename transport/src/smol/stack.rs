//! A [`Transport`] over a smoltcp `Interface` and any smoltcp device.

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use smoltcp::iface::{Config, Interface, PollResult, SocketHandle, SocketSet};
use smoltcp::phy::Device;
use smoltcp::socket::tcp;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpCidr, Ipv4Cidr};

use super::ring_memory::{release_pages, RingMemory};
use super::tuning::TcpTuning;
use crate::linger::Linger;
use crate::slab::Slab;
use crate::{
    ListenerId, LocalKeys, StreamId, StreamState, TcpLossStats, TcpStreamStats, Transport,
    TransportError, Waker,
};

/// Bytes of IPv4 and TCP headers without options, subtracted from the MTU.
const IPV4_TCP_HEADERS: usize = 40;
/// How long a stream queues nothing before its room for record ends and
/// its send ring's pages are given back (they come back with its next
/// bytes).
const SEND_IDLE: Duration = Duration::from_secs(1);
/// First port handed out to outgoing connections (IANA dynamic range).
const EPHEMERAL_FIRST: u16 = 49152;
/// How much a `send_with`/`recv_with` falls back to copying when a ring
/// wraps under a frame: enough for any FPDU, small enough to stay cheap.
const WRAP_SCRATCH: usize = 256 * 1024;

/// The part of a smoltcp device the stack needs beyond moving frames.
pub trait LinkDevice: Device {
    /// The caller's clock for frames moved during the next `Interface::poll`.
    fn set_now(&mut self, now: Instant);
    /// Called after each `Interface::poll`: hands frames built during it
    /// to the link and says whether any frame moved.
    fn end_poll(&mut self) -> bool;
    /// When frames the device holds become deliverable: zero if some are
    /// due now, `None` if it holds none.
    fn poll_delay(&mut self, now: Instant) -> Option<Duration>;
    /// Blocks until a frame may have arrived or `timeout` passed.
    fn wait(&mut self, timeout: Option<Duration>);
    /// Interrupts `wait` from another thread (see [`Transport::waker`]).
    fn waker(&self) -> Option<Waker> {
        None
    }
    /// A descriptor readable while frames wait (see
    /// [`Transport::readiness_fd`]).
    fn readiness_fd(&mut self) -> Option<std::os::fd::OwnedFd> {
        None
    }
    /// Whether `readiness_fd` gives one (see
    /// [`Transport::has_readiness_fd`]).
    fn has_readiness_fd(&self) -> bool {
        false
    }
    /// What a modelled link did to the frames this end sent (see
    /// [`Transport::link_counters`]).
    fn link_counters(&self) -> Option<crate::link_model::LinkCounters> {
        None
    }
}

/// A listening port: armed sockets waiting for a SYN, and sockets that took
/// one and have not been accepted yet, oldest first.
#[derive(Debug)]
struct Listener {
    port: u16,
    armed: Vec<SocketHandle>,
    pending: VecDeque<SocketHandle>,
}

#[derive(Debug)]
struct Stream {
    handle: SocketHandle,
    /// `close()` was called: ending in CLOSED is then a clean close.
    user_closed: bool,
    /// Runs from the first poll after `close`: bounds how long the socket
    /// may wait for a peer that never finishes.
    linger: Linger,
    /// The socket has room for record ends (see
    /// [`TcpTuning::attach_records`]).
    records: bool,
    /// In `senders`: `Some(true)` if bytes were queued since the last idle
    /// check.
    sent_lately: Option<bool>,
}

/// One smoltcp interface with its sockets, driven through [`Transport`].
pub struct SmolStack<D: LinkDevice> {
    iface: Interface,
    sockets: SocketSet<'static>,
    device: D,
    tuning: TcpTuning,
    epoch: Option<Instant>,
    listeners: Slab<Listener>,
    streams: Slab<Stream>,
    /// The stream each socket carries, for [`Transport::drain_ready`].
    by_socket: HashMap<SocketHandle, u64, LocalKeys>,
    /// Sockets with news (smoltcp's ready index), taken out at each poll
    /// and kept until [`Transport::drain_ready`] hands them on.
    touched: Vec<SocketHandle>,
    /// Whether smoltcp tracks `touched` (else any socket may have news).
    tracked: bool,
    /// A listener's socket may have changed (one with news that carries
    /// no stream, an accept, a failed re-arm): `maintain_listeners` must
    /// look. Otherwise it would read every armed socket on every poll.
    listeners_stale: bool,
    /// Streams the user closed and not yet released: what `reclaim` and
    /// the linger deadline look at, instead of every stream.
    closed: Vec<u64>,
    /// Streams that queued bytes, until they are found idle (see
    /// `release_idle`), and when they are next checked.
    senders: Vec<u64>,
    idle_check: Option<Instant>,
    /// Aborted sockets kept for one more poll so their RST goes out.
    doomed: Vec<SocketHandle>,
    next_port: u16,
    scratch: Vec<u8>,
    /// Record ends a `send_records_with` closure reported, until marked.
    record_ends: Vec<usize>,
    /// Bytes were queued on a stream with nothing unacknowledged since the
    /// last poll: `flush` must poll to send them (see [`Transport::flush`]).
    push_due: bool,
    /// Loss recovery counters of the sockets already freed.
    retired: TcpLossStats,
    /// The mapped rings (receive, send) each socket holds a slice of.
    /// Declared after `sockets`, so that on drop every socket, and its
    /// slices, is gone before the mappings are.
    rings: HashMap<SocketHandle, [RingMemory; 2]>,
}

impl<D: LinkDevice> std::fmt::Debug for SmolStack<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmolStack")
            .field("addr", &self.iface.ipv4_addr())
            .field("streams", &self.streams.len())
            .field("listeners", &self.listeners.len())
            .finish_non_exhaustive()
    }
}

impl<D: LinkDevice> SmolStack<D> {
    /// An interface with address `cidr` (and an optional default gateway) on
    /// `device`. `seed` feeds smoltcp's initial sequence numbers and the
    /// first ephemeral port, so runs with one seed repeat exactly.
    pub fn new(
        mut device: D,
        mac: EthernetAddress,
        cidr: Ipv4Cidr,
        gateway: Option<Ipv4Addr>,
        tuning: TcpTuning,
        seed: u64,
    ) -> Result<Self, TransportError> {
        if !mac.is_unicast() {
            return Err(TransportError::BadAddress("MAC address is not unicast"));
        }
        let mut config = Config::new(HardwareAddress::Ethernet(mac));
        config.random_seed = seed;
        let mut iface = Interface::new(config, &mut device, smoltcp::time::Instant::ZERO);
        iface.update_ip_addrs(|addrs| {
            // Capacity is at least one address; the list starts empty.
            let _ = addrs.push(IpCidr::Ipv4(cidr));
        });
        if let Some(gw) = gateway {
            iface
                .routes_mut()
                .add_default_ipv4_route(gw)
                .map_err(|_| TransportError::Exhausted("routes"))?;
        }
        let port_span = u64::from(u16::MAX - EPHEMERAL_FIRST) + 1;
        Ok(SmolStack {
            iface,
            sockets: SocketSet::new(Vec::new()),
            device,
            tuning,
            epoch: None,
            listeners: Slab::default(),
            streams: Slab::default(),
            by_socket: HashMap::default(),
            touched: Vec::new(),
            tracked: true,
            listeners_stale: true,
            closed: Vec::new(),
            senders: Vec::new(),
            idle_check: None,
            doomed: Vec::new(),
            next_port: EPHEMERAL_FIRST + (seed % port_span) as u16,
            scratch: Vec::new(),
            record_ends: Vec::new(),
            push_due: false,
            retired: TcpLossStats::default(),
            rings: HashMap::new(),
        })
    }

    /// The interface's IPv4 address.
    pub fn ipv4_addr(&self) -> Option<Ipv4Addr> {
        self.iface.ipv4_addr()
    }

    pub fn device(&self) -> &D {
        &self.device
    }

    pub fn device_mut(&mut self) -> &mut D {
        &mut self.device
    }

    pub fn tuning(&self) -> &TcpTuning {
        &self.tuning
    }

    /// Open streams plus sockets held by listeners.
    pub fn socket_count(&self) -> usize {
        self.sockets.iter().count()
    }

    fn smol_time(&mut self, now: Instant) -> smoltcp::time::Instant {
        let epoch = *self.epoch.get_or_insert(now);
        let micros = now.saturating_duration_since(epoch).as_micros();
        smoltcp::time::Instant::from_micros(i64::try_from(micros).unwrap_or(i64::MAX))
    }

    /// Frees a socket, keeping its loss recovery counters.
    fn free(&mut self, h: SocketHandle) {
        self.retired
            .add(&self.sockets.get::<tcp::Socket>(h).stats());
        remove_socket(&mut self.sockets, &mut self.rings, h);
    }

    /// A new socket with the stack's tuning, on rings mapped for it (heap
    /// rings if the kernel refuses a mapping), set up by `setup` and added
    /// to the set.
    fn add_socket(
        &mut self,
        setup: impl FnOnce(&mut tcp::Socket<'static>, &mut Interface) -> Result<(), TransportError>,
    ) -> Result<SocketHandle, TransportError> {
        let mapped = RingMemory::map(self.tuning.rx_buffer.max(1))
            .zip(RingMemory::map(self.tuning.tx_buffer.max(1)));
        let mut s = match &mapped {
            // SAFETY: each mapping lends its one slice to this socket, and
            // `remove_socket` (or the stack's drop order) drops the socket
            // before the mappings.
            Some((rx, tx)) => unsafe {
                self.tuning.socket_on(
                    tcp::SocketBuffer::new(rx.lend()),
                    tcp::SocketBuffer::new(tx.lend()),
                )
            },
            None => self.tuning.socket(),
        };
        setup(&mut s, &mut self.iface)?;
        let h = self.sockets.add(s);
        if let Some((rx, tx)) = mapped {
            self.rings.insert(h, [rx, tx]);
        }
        Ok(h)
    }

    fn socket(&self, h: SocketHandle) -> &tcp::Socket<'static> {
        self.sockets.get::<tcp::Socket>(h)
    }

    fn stream_state(&self, stream: &Stream) -> StreamState {
        let sock = self.socket(stream.handle);
        match map_state(sock.state(), stream.user_closed) {
            // Both sides closed but bytes remain to be read: not over yet.
            StreamState::Closed if sock.recv_queue() > 0 => StreamState::Closing,
            st => st,
        }
    }

    fn arm(&mut self, port: u16) -> Result<SocketHandle, TransportError> {
        self.add_socket(|s, _| {
            s.listen(port)
                .map_err(|_| TransportError::BadAddress("port 0"))
        })
    }

    /// Takes the sockets with news out of smoltcp's ready index into
    /// `touched`; news on a socket that carries no stream (an armed or
    /// pending one) marks the listeners stale.
    fn collect_touched(&mut self) {
        let (touched, by_socket) = (&mut self.touched, &self.by_socket);
        let mut stale = false;
        self.tracked = self.sockets.drain_touched(|h| {
            stale |= !by_socket.contains_key(&h);
            touched.push(h);
        });
        self.listeners_stale |= stale || !self.tracked;
        // Polls without a `drain_ready` between them (a user of the stack
        // that does not ask) add the same sockets again: keep it bounded.
        if touched.len() > 2 * by_socket.len() + 64 {
            touched.sort_unstable();
            touched.dedup();
        }
    }

    /// [`Self::maintain_listeners`] if a listener's socket may have
    /// changed since it last ran.
    fn refresh_listeners(&mut self) -> bool {
        self.collect_touched();
        std::mem::take(&mut self.listeners_stale) && self.maintain_listeners()
    }

    /// Moves sockets that took a SYN to `pending`, re-arms to the backlog,
    /// and returns reset handshakes to the armed pool. True if anything moved.
    fn maintain_listeners(&mut self) -> bool {
        let mut moved = false;
        let keys: Vec<u64> = self.listeners.keys().collect();
        for key in keys {
            let Some(l) = self.listeners.get_mut(key) else {
                continue;
            };
            let (port, mut armed, mut pending) = (
                l.port,
                std::mem::take(&mut l.armed),
                std::mem::take(&mut l.pending),
            );
            let (sockets, retired, rings) = (&mut self.sockets, &mut self.retired, &mut self.rings);
            armed.retain(|&h| {
                let listening = sockets.get::<tcp::Socket>(h).state() == tcp::State::Listen;
                if !listening {
                    pending.push_back(h);
                    moved = true;
                }
                listening
            });
            // A handshake reset in SYN-RECEIVED puts smoltcp's socket back in
            // LISTEN; one that failed otherwise is dead. Neither is accepted.
            pending.retain(|&h| match sockets.get::<tcp::Socket>(h).state() {
                tcp::State::Listen if armed.len() < self.tuning.backlog.max(1) => {
                    armed.push(h);
                    false
                }
                tcp::State::Listen | tcp::State::Closed => {
                    retired.add(&sockets.get::<tcp::Socket>(h).stats());
                    remove_socket(sockets, rings, h);
                    false
                }
                _ => true,
            });
            // Sockets that took a SYN and were not accepted yet share the
            // backlog with the armed ones: a SYN flood holds at most
            // `backlog` sockets (each with its rings), and SYNs beyond them
            // are refused with RST.
            while armed.len() + pending.len() < self.tuning.backlog.max(1) {
                match self.arm(port) {
                    Ok(h) => armed.push(h),
                    Err(_) => {
                        // Try again next time, news or not.
                        self.listeners_stale = true;
                        break;
                    }
                }
                moved = true;
            }
            if let Some(l) = self.listeners.get_mut(key) {
                l.armed = armed;
                l.pending = pending;
            }
        }
        moved
    }

    /// Streams held, closed ones still lingering included.
    pub fn stream_count(&self) -> usize {
        self.streams.len()
    }

    /// Frees sockets of streams the user closed once they are done, and
    /// resets those whose linger ran out at `now` (no clock: none does).
    fn reclaim(&mut self, now: Option<Instant>) {
        let mut done = Vec::new();
        let mut expired = Vec::new();
        let streams = &mut self.streams;
        // Released streams leave the list (an abort after a close, too).
        self.closed.retain(|&key| streams.get(key).is_some());
        for &key in &self.closed {
            let Some(s) = self.streams.get_mut(key) else {
                continue;
            };
            if let Some(now) = now {
                s.linger.start(now);
                if s.linger.expired(now) {
                    expired.push((key, s.handle));
                    continue;
                }
            }
            let sock = self.sockets.get::<tcp::Socket>(s.handle);
            // TIME-WAIT only guards against stray old segments; holding the
            // rings for its duration would cost megabytes per connection.
            // Bytes the peer sent before its FIN are kept until read.
            let over = matches!(sock.state(), tcp::State::Closed | tcp::State::TimeWait);
            if over && sock.recv_queue() == 0 {
                done.push((key, s.handle));
            }
        }
        for (key, h) in done {
            self.release(key, h);
            self.free(h);
        }
        // The peer never finished (or its last bytes were never read):
        // reset, and free the socket once the RST is out.
        for (key, h) in expired {
            self.release(key, h);
            self.sockets.get_mut::<tcp::Socket>(h).abort();
            self.doomed.push(h);
        }
    }

    /// Stream `key` (socket `h`) queues bytes, records if `records`
    /// (which need room for their ends).
    fn note_send(&mut self, key: u64, h: SocketHandle, records: bool) {
        let Some(stream) = self.streams.get_mut(key) else {
            return;
        };
        if records && !stream.records {
            self.tuning
                .attach_records(self.sockets.get_mut::<tcp::Socket>(h));
            stream.records = true;
        }
        if stream.sent_lately.replace(true).is_none() {
            self.senders.push(key);
        }
    }

    /// Every [`SEND_IDLE`]: streams that queued nothing since the last
    /// check and have every byte acknowledged give back their room for
    /// record ends, the pages of their send ring and the socket's
    /// delivery-rate records.
    fn release_idle(&mut self, now: Instant) {
        match self.idle_check {
            Some(at) if now < at => return,
            _ => self.idle_check = Some(now + SEND_IDLE),
        }
        let (streams, sockets) = (&mut self.streams, &mut self.sockets);
        self.senders.retain(|&key| {
            let Some(stream) = streams.get_mut(key) else {
                return false;
            };
            if stream.sent_lately.replace(false) == Some(true) {
                return true;
            }
            let sock = sockets.get_mut::<tcp::Socket>(stream.handle);
            if sock.send_queue() > 0 {
                return true;
            }
            if stream.records {
                TcpTuning::detach_records(sock);
                stream.records = false;
            }
            // An empty ring lends all of itself (smoltcp rewinds it).
            let _ = sock.send(|free| {
                release_pages(free);
                (0, ())
            });
            sock.release_idle_memory();
            stream.sent_lately = None;
            false
        });
    }

    /// Forgets stream `key` carried by socket `h` (the socket is the
    /// caller's to free).
    fn release(&mut self, key: u64, h: SocketHandle) {
        // `closed` drops the key at the next `reclaim`; ids are never
        // reused, so it cannot name another stream meanwhile.
        self.streams.remove(key);
        self.by_socket.remove(&h);
    }

    fn port_in_use(&self, port: u16) -> bool {
        self.sockets.iter().any(|(_, s)| match s {
            smoltcp::socket::Socket::Tcp(t) => {
                t.listen_endpoint().port == port
                    || t.local_endpoint().is_some_and(|e| e.port == port)
            }
            #[allow(unreachable_patterns)]
            _ => false,
        })
    }

    fn ephemeral_port(&mut self) -> Result<u16, TransportError> {
        for _ in 0..=(u16::MAX - EPHEMERAL_FIRST) {
            let p = self.next_port;
            self.next_port = if p == u16::MAX {
                EPHEMERAL_FIRST
            } else {
                p + 1
            };
            if !self.port_in_use(p) {
                return Ok(p);
            }
        }
        Err(TransportError::Exhausted("ephemeral ports"))
    }

    /// The segment size this interface sends: what an FPDU is sized to.
    fn mss_hint(&self) -> usize {
        self.device
            .capabilities()
            .ip_mtu()
            .saturating_sub(IPV4_TCP_HEADERS)
    }

    fn handle(&self, s: StreamId) -> Result<SocketHandle, TransportError> {
        self.streams
            .get(s.0)
            .map(|st| st.handle)
            .ok_or(TransportError::UnknownStream(s))
    }

    /// [`Transport::send_records_with`] without the flush bookkeeping. With
    /// `records`, the ends `f` reports are marked on the socket, which cuts
    /// its segments there (see the vendored smoltcp's `records.rs`).
    fn queue_with(
        &mut self,
        s: StreamId,
        f: &mut crate::RecordWriter<'_>,
        records: bool,
    ) -> Result<usize, TransportError> {
        let h = self.handle(s)?;
        let state = self.state(s);
        let mss = self.mss_hint().max(1);
        self.note_send(s.0, h, records);
        let sock = self.sockets.get_mut::<tcp::Socket>(h);
        if !sock.may_send() {
            return Err(TransportError::InvalidState(state));
        }
        let ends = &mut self.record_ends;
        ends.clear();
        if records {
            // `f` writes whole records: what is queued already ends one.
            sock.mark_record_end(sock.send_queue());
        }
        let mut total = 0;
        // At most: the ring's tail, its head after the wrap, one scratch.
        for _ in 0..2 {
            let free = sock.send_capacity() - sock.send_queue();
            if free == 0 {
                return Ok(total);
            }
            let mut overrun = None;
            let base = sock.send_queue();
            let (n, lent) = sock
                .send(|buf| {
                    let lent = buf.len();
                    let n = f(buf, &mut |end| ends.push(base + end));
                    if n > lent {
                        overrun = Some(n);
                        (0, (0, lent))
                    } else {
                        (n, (n, lent))
                    }
                })
                .map_err(|_| TransportError::InvalidState(state))?;
            if let Some(claimed) = overrun {
                return Err(TransportError::ClosureOverrun { claimed, lent });
            }
            for end in ends.drain(..) {
                sock.mark_record_end(end);
            }
            total += n;
            if n == lent && n > 0 {
                continue;
            }
            let free_after = free - n;
            let rest = lent - n;
            if n == 0 && rest < free_after {
                // The ring's end cut the slice short of the free space: build
                // into a linear scratch and copy it in across the wrap. Offer
                // just past the tail first (a frame or two more than it
                // held), so only what straddles the wrap is copied twice;
                // offer more only if that was still too small.
                let wide = free_after.min(WRAP_SCRATCH.max(rest + 1));
                let narrow = wide.min(rest + 2 * mss);
                let mut offered = rest;
                for len in [narrow, wide] {
                    if len <= offered {
                        continue;
                    }
                    offered = len;
                    self.scratch.resize(len, 0);
                    let base = sock.send_queue();
                    let m = f(&mut self.scratch[..len], &mut |end| ends.push(base + end));
                    if m > len {
                        return Err(TransportError::ClosureOverrun {
                            claimed: m,
                            lent: len,
                        });
                    }
                    if m == 0 {
                        ends.clear();
                        continue;
                    }
                    let queued = sock
                        .send_slice(&self.scratch[..m])
                        .map_err(|_| TransportError::InvalidState(state))?;
                    debug_assert_eq!(queued, m);
                    for end in ends.drain(..) {
                        sock.mark_record_end(end);
                    }
                    total += queued;
                    break;
                }
            }
            return Ok(total);
        }
        Ok(total)
    }
}

/// Removes socket `h` from the set and drops it, then the rings it was on
/// (in that order: the socket holds slices of them).
fn remove_socket(
    sockets: &mut SocketSet<'static>,
    rings: &mut HashMap<SocketHandle, [RingMemory; 2]>,
    h: SocketHandle,
) {
    drop(sockets.remove(h));
    drop(rings.remove(&h));
}

/// smoltcp's TCP state as the seam reports it.
fn map_state(st: tcp::State, user_closed: bool) -> StreamState {
    use tcp::State as T;
    match st {
        T::SynSent | T::SynReceived => StreamState::Connecting,
        T::Established => StreamState::Established,
        T::CloseWait => StreamState::PeerClosed,
        T::FinWait1 | T::FinWait2 | T::Closing | T::LastAck => StreamState::Closing,
        T::TimeWait => StreamState::Closed,
        T::Closed if user_closed => StreamState::Closed,
        // CLOSED without our close: RST, refusal or user timeout. LISTEN
        // cannot hold an accepted stream; treat it as dead too.
        T::Closed | T::Listen => StreamState::Reset,
    }
}

impl<D: LinkDevice> Transport for SmolStack<D> {
    fn listen(&mut self, port: u16) -> Result<ListenerId, TransportError> {
        if port == 0 {
            return Err(TransportError::BadAddress("port 0"));
        }
        let taken = self
            .listeners
            .keys()
            .any(|k| self.listeners.get(k).is_some_and(|l| l.port == port));
        if taken {
            return Err(TransportError::AddressInUse(port));
        }
        let mut armed = Vec::new();
        for _ in 0..self.tuning.backlog.max(1) {
            armed.push(self.arm(port)?);
        }
        let key = self
            .listeners
            .insert(Listener {
                port,
                armed,
                pending: VecDeque::new(),
            })
            .ok_or(TransportError::Exhausted("listener slots"))?;
        Ok(ListenerId(key))
    }

    fn accept(&mut self, l: ListenerId) -> Option<StreamId> {
        self.refresh_listeners();
        let listener = self.listeners.get_mut(l.0)?;
        let sockets = &self.sockets;
        let ready = listener.pending.iter().position(|&h| {
            !matches!(
                sockets.get::<tcp::Socket>(h).state(),
                tcp::State::SynReceived | tcp::State::Listen | tcp::State::Closed
            )
        })?;
        let handle = listener.pending.remove(ready)?;
        // Its place in the backlog is free: re-arm it.
        self.listeners_stale = true;
        let key = self.streams.insert(Stream {
            handle,
            user_closed: false,
            linger: Linger::default(),
            records: false,
            sent_lately: None,
        })?;
        self.by_socket.insert(handle, key);
        Some(StreamId(key))
    }

    fn unlisten(&mut self, l: ListenerId) {
        if let Some(listener) = self.listeners.remove(l.0) {
            for h in listener.armed.into_iter().chain(listener.pending) {
                // Half-open handshakes are reset rather than left dangling.
                self.sockets.get_mut::<tcp::Socket>(h).abort();
                self.doomed.push(h);
            }
        }
    }

    fn connect(&mut self, remote: SocketAddr) -> Result<StreamId, TransportError> {
        let SocketAddr::V4(v4) = remote else {
            return Err(TransportError::Unsupported("IPv6 on smoltcp transports"));
        };
        if v4.port() == 0 || v4.ip().is_unspecified() {
            return Err(TransportError::BadAddress("remote address or port 0"));
        }
        let local_port = self.ephemeral_port()?;
        let handle = self.add_socket(|s, iface| {
            s.connect(iface.context(), v4, local_port)
                .map_err(|_| TransportError::BadAddress("unroutable remote"))
        })?;
        match self.streams.insert(Stream {
            handle,
            user_closed: false,
            linger: Linger::default(),
            records: false,
            sent_lately: None,
        }) {
            Some(key) => {
                self.by_socket.insert(handle, key);
                Ok(StreamId(key))
            }
            None => {
                remove_socket(&mut self.sockets, &mut self.rings, handle);
                Err(TransportError::Exhausted("stream slots"))
            }
        }
    }

    fn state(&self, s: StreamId) -> StreamState {
        match self.streams.get(s.0) {
            Some(stream) => self.stream_state(stream),
            None => StreamState::Closed,
        }
    }

    fn local_addr(&self, s: StreamId) -> Option<SocketAddr> {
        let h = self.handle(s).ok()?;
        self.socket(h).local_endpoint().map(SocketAddr::from)
    }

    fn peer_addr(&self, s: StreamId) -> Option<SocketAddr> {
        let h = self.handle(s).ok()?;
        self.socket(h).remote_endpoint().map(SocketAddr::from)
    }

    fn send_with(
        &mut self,
        s: StreamId,
        f: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Result<usize, TransportError> {
        let idle = self
            .handle(s)
            .is_ok_and(|h| self.socket(h).send_queue() == 0);
        let queued = self.queue_with(s, &mut |buf, _| f(buf), false)?;
        // Bytes on a stream with nothing queued or unacknowledged must be
        // pushed at once: no acknowledgement is coming to bring a poll.
        self.push_due |= idle && queued > 0;
        Ok(queued)
    }

    fn send_records_with(
        &mut self,
        s: StreamId,
        f: &mut crate::RecordWriter<'_>,
    ) -> Result<usize, TransportError> {
        let idle = self
            .handle(s)
            .is_ok_and(|h| self.socket(h).send_queue() == 0);
        let queued = self.queue_with(s, f, true)?;
        // Bytes on a stream with nothing queued or unacknowledged must be
        // pushed at once: no acknowledgement is coming to bring a poll.
        self.push_due |= idle && queued > 0;
        Ok(queued)
    }

    fn set_record_packing(&mut self, s: StreamId, packed: bool) {
        if let Ok(h) = self.handle(s) {
            self.sockets
                .get_mut::<tcp::Socket>(h)
                .set_record_packing(packed);
        }
    }

    fn recv_with(
        &mut self,
        s: StreamId,
        f: &mut dyn FnMut(&[u8]) -> usize,
    ) -> Result<usize, TransportError> {
        let h = self.handle(s)?;
        let state = self.state(s);
        let sock = self.sockets.get_mut::<tcp::Socket>(h);
        let mut total = 0;
        for _ in 0..2 {
            let queued = sock.recv_queue();
            if queued == 0 {
                break;
            }
            let mut overrun = None;
            let res = sock.recv(|buf| {
                let lent = buf.len();
                let n = f(buf);
                if n > lent {
                    overrun = Some(n);
                    (0, (0, lent))
                } else {
                    (n, (n, lent))
                }
            });
            let (n, lent) = match res {
                Ok(v) => v,
                Err(tcp::RecvError::Finished) => break,
                Err(tcp::RecvError::InvalidState) => {
                    return Err(TransportError::InvalidState(state))
                }
            };
            if let Some(claimed) = overrun {
                return Err(TransportError::ClosureOverrun { claimed, lent });
            }
            total += n;
            if n == lent && n > 0 {
                continue;
            }
            let rest = lent - n;
            let queued_after = queued - n;
            if n == 0 && rest < queued_after {
                // A frame straddles the ring's end: join it in the scratch.
                let len = queued_after.min(WRAP_SCRATCH.max(rest + 1));
                self.scratch.resize(len, 0);
                let peeked = sock
                    .peek_slice(&mut self.scratch[..len])
                    .map_err(|_| TransportError::InvalidState(state))?;
                let m = f(&self.scratch[..peeked]);
                if m > peeked {
                    return Err(TransportError::ClosureOverrun {
                        claimed: m,
                        lent: peeked,
                    });
                }
                let mut left = m;
                while left > 0 {
                    let d = sock
                        .recv(|b| {
                            let d = b.len().min(left);
                            (d, d)
                        })
                        .map_err(|_| TransportError::InvalidState(state))?;
                    if d == 0 {
                        break;
                    }
                    left -= d;
                }
                total += m;
            }
            break;
        }
        if total == 0 && matches!(state, StreamState::Reset | StreamState::Closed) {
            return Err(TransportError::InvalidState(state));
        }
        Ok(total)
    }

    fn send_capacity(&self, s: StreamId) -> usize {
        match self.handle(s) {
            Ok(h) => {
                let sock = self.socket(h);
                if sock.may_send() {
                    sock.send_capacity() - sock.send_queue()
                } else {
                    0
                }
            }
            Err(_) => 0,
        }
    }

    fn recv_queued(&self, s: StreamId) -> usize {
        self.handle(s).map_or(0, |h| self.socket(h).recv_queue())
    }

    fn mss(&self, _s: StreamId) -> usize {
        // smoltcp keeps the peer's MSS option private; both ends of the
        // links built here share one MTU, so the local figure is the one.
        self.mss_hint()
    }

    fn close(&mut self, s: StreamId) {
        let Some(stream) = self.streams.get_mut(s.0) else {
            return;
        };
        if !stream.user_closed {
            self.closed.push(s.0);
        }
        stream.user_closed = true;
        let h = stream.handle;
        self.sockets.get_mut::<tcp::Socket>(h).close();
        self.reclaim(None);
    }

    fn abort(&mut self, s: StreamId) {
        if let Some(h) = self.streams.get(s.0).map(|st| st.handle) {
            self.release(s.0, h);
            self.sockets.get_mut::<tcp::Socket>(h).abort();
            self.doomed.push(h);
        }
    }

    fn flush(&mut self, now: Instant) -> bool {
        // With autocorking, bytes queued behind unacknowledged data wait for
        // the poll the acknowledgement brings, and leave then in full
        // segments. Without it (peers that delay their ACKs), they go now.
        if self.tuning().autocork {
            self.push_due && self.poll(now)
        } else {
            self.poll(now)
        }
    }

    fn flush_due(&self) -> bool {
        !self.tuning().autocork || self.push_due
    }

    fn poll(&mut self, now: Instant) -> bool {
        self.push_due = false;
        let ts = self.smol_time(now);
        self.device.set_now(now);
        let changed = self.iface.poll(ts, &mut self.device, &mut self.sockets)
            == PollResult::SocketStateChanged;
        for h in std::mem::take(&mut self.doomed) {
            self.free(h);
        }
        let listeners_moved = self.refresh_listeners();
        self.reclaim(Some(now));
        self.release_idle(now);
        let frames_moved = self.device.end_poll();
        changed || listeners_moved || frames_moved
    }

    fn drain_ready(&mut self, f: &mut dyn FnMut(StreamId)) -> bool {
        self.collect_touched();
        for h in self.touched.drain(..) {
            if let Some(&key) = self.by_socket.get(&h) {
                f(StreamId(key));
            }
        }
        self.tracked
    }

    fn poll_delay(&mut self, now: Instant) -> Option<Duration> {
        if !self.doomed.is_empty() {
            return Some(Duration::ZERO);
        }
        let ts = self.smol_time(now);
        let sockets = self
            .iface
            .poll_delay(ts, &self.sockets)
            .map(|d| Duration::from_micros(d.total_micros()));
        let device = self.device.poll_delay(now);
        let linger = self
            .closed
            .iter()
            .filter_map(|&key| self.streams.get(key)?.linger.remaining(now))
            .min();
        // Streams that sent are checked for idleness even when nothing
        // else happens, so a device that sleeps until it is due still
        // gives their memory back.
        let idle_check = match self.idle_check {
            Some(at) if !self.senders.is_empty() => Some(at.saturating_duration_since(now)),
            _ => None,
        };
        [sockets, device, linger, idle_check]
            .into_iter()
            .flatten()
            .min()
    }

    fn wait(&mut self, timeout: Option<Duration>) {
        self.device.wait(timeout);
    }

    fn listen_port(&self, l: ListenerId) -> Option<u16> {
        self.listeners.get(l.0).map(|l| l.port)
    }

    fn waker(&self) -> Option<Waker> {
        self.device.waker()
    }

    fn readiness_fd(&mut self) -> Option<std::os::fd::OwnedFd> {
        self.device.readiness_fd()
    }

    fn has_readiness_fd(&self) -> bool {
        self.device.has_readiness_fd()
    }

    fn link_counters(&self) -> Option<crate::link_model::LinkCounters> {
        self.device.link_counters()
    }

    fn tcp_loss_stats(&self) -> Option<TcpLossStats> {
        let mut sum = self.retired;
        for (_, s) in self.sockets.iter() {
            if let Some(t) = <tcp::Socket as smoltcp::socket::AnySocket>::downcast(s) {
                sum.add(&t.stats());
            }
        }
        Some(sum)
    }

    fn tcp_stream_stats(&self, s: StreamId) -> Option<TcpStreamStats> {
        let t = self.socket(self.handle(s).ok()?);
        Some(TcpStreamStats::from_smoltcp(
            &t.stats(),
            t.rtt().map(|d| Duration::from_micros(d.total_micros())),
            t.congestion_window(),
            t.send_queue(),
            t.recv_queue(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_mapping_covers_every_tcp_state() {
        use tcp::State as T;
        let cases = [
            (T::SynSent, false, StreamState::Connecting),
            (T::SynReceived, false, StreamState::Connecting),
            (T::Established, false, StreamState::Established),
            (T::CloseWait, false, StreamState::PeerClosed),
            (T::FinWait1, true, StreamState::Closing),
            (T::FinWait2, true, StreamState::Closing),
            (T::Closing, true, StreamState::Closing),
            (T::LastAck, true, StreamState::Closing),
            (T::TimeWait, true, StreamState::Closed),
            (T::Closed, true, StreamState::Closed),
            (T::Closed, false, StreamState::Reset),
            (T::Listen, false, StreamState::Reset),
        ];
        for (tcp_state, closed, want) in cases {
            assert_eq!(map_state(tcp_state, closed), want, "{tcp_state}");
        }
    }

    /// What each connection's own state spans, printed (`-- --nocapture`)
    /// and bounded: every segment walks part of these lines, so at hundreds
    /// of busy connections a larger one costs cache misses on every
    /// segment, and growing it should be a decision.
    #[test]
    fn per_stream_state_stays_within_its_cache_lines() {
        use std::mem::size_of;
        let sizes = [
            ("smoltcp tcp::Socket", size_of::<tcp::Socket<'static>>(), 96),
            ("transport Stream", size_of::<Stream>(), 2),
        ];
        for (name, bytes, max_lines) in sizes {
            let lines = bytes.div_ceil(64);
            println!("{name}: {bytes} bytes, {lines} cache lines (bound {max_lines})");
            assert!(lines <= max_lines, "{name} spans {lines} cache lines");
        }
    }
}
