//! The progress engine: one transport, the queue pairs and listeners on it,
//! and one `turn` that moves bytes between them.
//!
//! Per queue pair the phases are: idle (receives may be posted), MPA
//! start-up on a TCP stream, connected (an `rdmap::Connection` reading
//! straight out of the transport's receive buffer and writing FPDUs
//! straight into its send buffer), and closed. Incoming connections wait in
//! [`incoming`] until the application accepts them onto a queue pair.

mod completions;
mod cq_notify;
mod incoming;
mod qp_slot;
mod registry;
mod srq_slot;
mod startup;
mod work_list;

mod stream_owners;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ddp::memory::PdId;
use rdmap::work_request::{RecvWr, SendWr};

use crate::qp_stats::{MpaPhase, QpStats};
use crate::transport::{ListenerId, LocalKeys, StreamId, Transport};
use crate::types::{
    AcceptParams, CmEvent, ConnectParams, ListenOptions, PostListError, QpLimits, QpState,
    VerbsError,
};

pub(crate) use completions::CqShared;
pub(crate) use cq_notify::CqNotify;
pub(crate) use incoming::PendingRequest;
use incoming::{Incoming, IncomingState};
use qp_slot::{Phase, QpSlot};
pub(crate) use registry::Region;
#[cfg(test)]
pub(crate) use registry::RegionCache;
pub use registry::{Registry, RegistryView, INDEX_BATCH, MAX_REGIONS};
use srq_slot::SrqSlot;
use startup::Startup;
use stream_owners::StreamOwners;
use work_list::WorkList;

/// Connections completing start-up per listener when the caller names none.
const DEFAULT_BACKLOG: usize = 8;

#[derive(Debug)]
struct ListenerSlot {
    transport_id: ListenerId,
    opts: ListenOptions,
    requests: VecDeque<u64>,
}

/// Queue pairs by number. The numbers are this device's own counter, never
/// chosen by a peer, so a multiply hash does (SipHash showed in profiles of
/// small messages: every post and every turn looks a queue pair up).
type QpMap = HashMap<u32, QpSlot, LocalKeys>;

pub(crate) struct Engine {
    /// `None` while a thread waits in it without the engine lock (see
    /// `DeviceShared::park`); every path that needs it either waits for its
    /// return or leaves the work to the thread that holds it.
    transport: Option<Box<dyn Transport + Send>>,
    registry: Arc<Registry>,
    qps: QpMap,
    /// Queue pairs in a stable order (their numbers, so creation order),
    /// for visits of them all; ordered so a destroy removes one in
    /// logarithmic time instead of a scan.
    qp_order: BTreeSet<u32>,
    /// The queue pairs the next turn visits (see [`WorkList`]).
    work: WorkList,
    /// The queue pair each stream belongs to, so news from a stream
    /// queues its queue pair.
    by_stream: StreamOwners,
    listeners: HashMap<u32, ListenerSlot>,
    /// Shared receive queues by number.
    srqs: HashMap<u32, SrqSlot>,
    incoming: HashMap<u64, Incoming>,
    /// Start-ups this side refused and closed: what the peer still sends is
    /// read and dropped, so the close completes instead of waiting on
    /// bytes nobody will read. Each is released once its stream is over.
    closing: Vec<StreamId>,
    next_qp: u32,
    next_srq: u32,
    next_listener: u32,
    next_request: u64,
    /// Something a blocked caller may be waiting for happened.
    changed: bool,
    /// A caller-supplied clock (virtual time); `None`: the system clock.
    clock: Option<Instant>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("transport_here", &self.transport.is_some())
            .field("qps", &self.qps.len())
            .field("listeners", &self.listeners.len())
            .field("incoming", &self.incoming.len())
            .field("closing", &self.closing.len())
            .finish()
    }
}

impl Engine {
    pub(crate) fn new(transport: Box<dyn Transport + Send>, registry: Arc<Registry>) -> Self {
        Engine {
            transport: Some(transport),
            registry,
            qps: QpMap::default(),
            qp_order: BTreeSet::new(),
            work: WorkList::default(),
            by_stream: StreamOwners::default(),
            listeners: HashMap::new(),
            srqs: HashMap::new(),
            incoming: HashMap::new(),
            closing: Vec::new(),
            next_qp: 1,
            next_srq: 1,
            next_listener: 1,
            next_request: 1,
            changed: false,
            clock: None,
        }
    }

    /// The engine's notion of now: the virtual clock if one is set.
    pub(crate) fn now(&self) -> Instant {
        self.clock.unwrap_or_else(Instant::now)
    }

    /// Switches to a virtual clock starting at `start`.
    pub(crate) fn set_clock(&mut self, start: Instant) {
        self.clock = Some(start);
    }

    /// Advances the virtual clock to `now` (never backwards) and returns
    /// the instant to run at: the virtual clock, or `now` on the system
    /// clock.
    pub(crate) fn advance_clock(&mut self, now: Instant) -> Instant {
        match &mut self.clock {
            Some(c) => {
                *c = (*c).max(now);
                *c
            }
            None => now,
        }
    }

    pub(crate) fn has_transport(&self) -> bool {
        self.transport.is_some()
    }

    /// Lends the transport out for a wait without the engine lock.
    pub(crate) fn take_transport(&mut self) -> Option<Box<dyn Transport + Send>> {
        self.transport.take()
    }

    pub(crate) fn put_transport(&mut self, t: Box<dyn Transport + Send>) {
        self.transport = Some(t);
    }

    pub(crate) fn transport_mut(&mut self) -> Option<&mut (dyn Transport + Send + 'static)> {
        self.transport.as_deref_mut()
    }

    pub(crate) fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    pub(crate) fn poll_delay(&mut self, now: Instant) -> Option<Duration> {
        let mut delay = self.transport.as_mut().and_then(|t| t.poll_delay(now));
        // Deadlines are filed after each visit; a queue pair queued since
        // (a post, a connect) may have a new one.
        let queued = self.work.queued().iter();
        let deadlines = queued
            .filter_map(|n| self.qps.get(n)?.deadline())
            .chain(self.work.first_deadline())
            .chain(
                self.incoming
                    .values()
                    .filter_map(|i| i.startup.poll_timeout()),
            );
        for d in deadlines {
            let d = d.saturating_duration_since(now);
            delay = Some(delay.map_or(d, |x| x.min(d)));
        }
        delay
    }

    /// One round of progress. True if anything happened; false (and
    /// nothing done) while the transport is lent out.
    pub(crate) fn turn(&mut self, now: Instant) -> bool {
        let Some(transport) = self.transport.as_deref_mut() else {
            return false;
        };
        let mut busy = transport.poll(now);
        busy |= self.accept_streams(now);
        busy |= self.drive_incoming(now);
        busy |= self.drain_closing();
        busy |= self.drive_qps(now);
        if busy {
            if let Some(t) = self.transport.as_deref_mut() {
                t.poll_send(now);
            }
        }
        busy
    }

    /// Pushes queued FPDUs onto the wire without reading anything. False
    /// if the transport is lent out (its holder sends them on its return).
    pub(crate) fn flush(&mut self, now: Instant) -> bool {
        self.flush_with(&mut || now)
    }

    /// [`Self::flush`], reading the clock only if something needs the
    /// time: a queue pair's send hold, or a transport flush that is due.
    /// A post onto a stream with data in flight needs neither.
    pub(crate) fn flush_lazy(&mut self) -> bool {
        let clock = self.clock;
        let mut read = None;
        self.flush_with(&mut || *read.get_or_insert_with(|| clock.unwrap_or_else(Instant::now)))
    }

    fn flush_with(&mut self, now: &mut dyn FnMut() -> Instant) -> bool {
        let Some(transport) = self.transport.as_deref_mut() else {
            return false;
        };
        let mut sent = false;
        // Only queue pairs posted to since the last flush have anything new
        // to transmit; those still busy from the last turn send on the next.
        for num in self.work.drain_posted() {
            if let Some(slot) = self.qps.get_mut(&num) {
                sent |= slot.transmit(transport, &self.registry, now);
            }
        }
        // The transport may hold them behind unacknowledged data, to leave
        // with the next poll in full segments (autocorking).
        if sent && transport.flush_due() {
            transport.flush(now());
        }
        true
    }

    fn drive_qps(&mut self, now: Instant) -> bool {
        let Some(transport) = self.transport.as_deref_mut() else {
            return false;
        };
        let (work, by_stream) = (&mut self.work, &self.by_stream);
        let tracked = transport.drain_ready(&mut |s| {
            if let Some(num) = by_stream.owner(s) {
                work.mark(num);
            }
        });
        if !tracked || self.work.sweep_due(now) {
            for &num in &self.qp_order {
                self.work.mark(num);
            }
        }
        let list = self.work.take(now);
        let mut busy = false;
        for &num in &list {
            if let Some(slot) = self.qps.get_mut(&num) {
                let mut srq = slot.srq.and_then(|n| self.srqs.get_mut(&n));
                let before = srq.as_ref().map(|s| s.buffers.posted());
                let buffers = srq.as_deref_mut().map(|s| &mut s.buffers);
                let (b, changed) = slot.drive(transport, &self.registry, buffers, now);
                busy |= b;
                self.changed |= changed;
                if let (Some(srq), Some(before)) = (srq, before) {
                    self.changed |= srq.taken_from(before);
                }
                // Something moved: there may be more next turn. Otherwise
                // only news from the stream, a post or the deadline will
                // bring it back.
                if b {
                    self.work.mark(num);
                }
                self.work.set_deadline(num, slot.deadline());
            }
        }
        self.work.recycle(list);
        busy
    }

    // ---- queue pairs -------------------------------------------------

    /// A queue pair; with `srq`, its queue 0 receives from that shared
    /// receive queue.
    pub(crate) fn create_qp(
        &mut self,
        pd: PdId,
        send_cq: Arc<CqShared>,
        recv_cq: Arc<CqShared>,
        limits: QpLimits,
        srq: Option<u32>,
    ) -> Result<u32, VerbsError> {
        if let Some(n) = srq {
            match self.srqs.get_mut(&n) {
                Some(s) if !s.orphaned => s.qps += 1,
                _ => return Err(VerbsError::NoSuchSrq(n)),
            }
        }
        let num = self.next_qp;
        self.next_qp += 1;
        let mut slot = QpSlot::new(num, pd, send_cq, recv_cq, limits);
        slot.srq = srq;
        self.qps.insert(num, slot);
        self.qp_order.insert(num);
        self.work.mark(num);
        Ok(num)
    }

    /// Destroys queue pair `num`. Returns the work requests discarded with
    /// a shared receive queue it was the last user of (see
    /// [`Self::drop_srq`]).
    pub(crate) fn destroy_qp(&mut self, num: u32, now: Instant) -> usize {
        let mut discarded = 0;
        if let Some(mut slot) = self.qps.remove(&num) {
            if let Some(t) = self.transport.as_deref_mut() {
                slot.disconnect(t, now);
                slot.release(t);
                // Put the FIN (or a queued TERMINATE) on the wire now: the
                // device may be dropped before its next turn.
                t.poll(now);
            }
            if let Some(n) = slot.srq {
                if let Some(s) = self.srqs.get_mut(&n) {
                    s.qps = s.qps.saturating_sub(1);
                    if s.orphaned && s.qps == 0 {
                        discarded = self.srqs.remove(&n).map_or(0, |s| s.buffers.posted());
                    }
                }
            }
        }
        self.qp_order.remove(&num);
        self.work.forget(num);
        self.by_stream.forget_qp(num);
        discarded
    }

    /// Queue pair `num`, queued for the next turn and the next flush: the
    /// caller is about to post to it.
    fn slot(&mut self, num: u32) -> Result<&mut QpSlot, VerbsError> {
        let slot = self.qps.get_mut(&num).ok_or(VerbsError::NoSuchQp(num))?;
        self.work.mark_posted(num);
        Ok(slot)
    }

    pub(crate) fn qp_count(&self) -> usize {
        self.qps.len()
    }

    pub(crate) fn qp_state(&self, num: u32) -> QpState {
        self.qps.get(&num).map_or(QpState::Error, |s| s.state())
    }

    pub(crate) fn qp_stats(&self, num: u32) -> QpStats {
        match self.qps.get(&num) {
            Some(slot) => slot.stats(self.transport.as_deref().map(|t| t as &dyn Transport)),
            None => QpStats {
                state: QpState::Error,
                phase: MpaPhase::Closed,
                rdma: Default::default(),
                tcp: None,
            },
        }
    }

    pub(crate) fn post_send(&mut self, num: u32, wr: SendWr) -> Result<(), VerbsError> {
        let completed = self.slot(num)?.post_send(wr)?;
        self.changed |= completed;
        Ok(())
    }

    /// Posts `wrs` in order until one is refused; the error says how many
    /// were posted before it.
    pub(crate) fn post_send_list(
        &mut self,
        num: u32,
        wrs: impl IntoIterator<Item = SendWr>,
    ) -> Result<(), PostListError> {
        let mut posted = 0;
        let result = match self.slot(num) {
            Ok(slot) => slot.post_send_list(wrs, &mut posted),
            Err(e) => Err(e),
        };
        self.note_list_post(result, posted)
    }

    pub(crate) fn post_recv(&mut self, num: u32, wr: RecvWr) -> Result<(), VerbsError> {
        let slot = self.slot(num)?;
        if slot.srq.is_some() {
            return Err(VerbsError::Post(
                rdmap::work_request::PostError::SharedReceiveQueue,
            ));
        }
        let completed = slot.post_recv(wr)?;
        self.changed |= completed;
        Ok(())
    }

    /// Receive work requests as [`Self::post_send_list`] posts send ones.
    pub(crate) fn post_recv_list(
        &mut self,
        num: u32,
        wrs: impl IntoIterator<Item = RecvWr>,
    ) -> Result<(), PostListError> {
        let mut posted = 0;
        let result = match self.slot(num) {
            Ok(slot) if slot.srq.is_some() => Err(VerbsError::Post(
                rdmap::work_request::PostError::SharedReceiveQueue,
            )),
            Ok(slot) => slot.post_recv_list(wrs, &mut posted),
            Err(e) => Err(e),
        };
        self.note_list_post(result, posted)
    }

    /// A list post's outcome; a refusal may follow posts that completed
    /// at once, so it counts as a change too.
    fn note_list_post(
        &mut self,
        result: Result<bool, VerbsError>,
        posted: usize,
    ) -> Result<(), PostListError> {
        match result {
            Ok(completed) => {
                self.changed |= completed;
                Ok(())
            }
            Err(error) => {
                self.changed = true;
                Err(PostListError { posted, error })
            }
        }
    }

    pub(crate) fn take_qp_event(&mut self, num: u32) -> Option<CmEvent> {
        self.qps.get_mut(&num)?.events.pop_front()
    }

    pub(crate) fn has_qp_event(&self, num: u32) -> bool {
        self.qps.get(&num).is_some_and(|s| !s.events.is_empty())
    }

    pub(crate) fn connect(
        &mut self,
        num: u32,
        remote: SocketAddr,
        params: ConnectParams,
        now: Instant,
    ) -> Result<(), VerbsError> {
        let startup = Startup::initiator(&params, now)?;
        let slot = self.qps.get_mut(&num).ok_or(VerbsError::NoSuchQp(num))?;
        if !matches!(slot.phase, Phase::Idle) {
            return Err(VerbsError::AlreadyConnected);
        }
        let transport = self
            .transport
            .as_deref_mut()
            .ok_or(VerbsError::TransportBusy)?;
        let stream = transport.connect(remote).map_err(VerbsError::Transport)?;
        // The SYN leaves now, not at the next turn.
        transport.poll(now);
        slot.set_conn_span(trace_span!(
            parent: slot.span(),
            "conn",
            stream = ?stream,
            peer = %remote,
            role = "initiator"
        ));
        trace_event!(
            parent: slot.span(),
            tracing::Level::DEBUG,
            qp = num,
            peer = %remote,
            "MPA initiator: TCP connecting"
        );
        self.by_stream.bind(stream, num);
        self.work.mark(num);
        slot.set_first_fpdu_delay(params.mpa.first_fpdu_delay);
        slot.set_rfc7306(params.mpa.rfc7306);
        slot.phase = Phase::Starting {
            stream,
            startup: Box::new(startup),
        };
        Ok(())
    }

    pub(crate) fn disconnect(&mut self, num: u32, now: Instant) {
        if let (Some(slot), Some(t)) = (self.qps.get_mut(&num), self.transport.as_deref_mut()) {
            slot.disconnect(t, now);
            t.poll(now);
            self.changed = true;
            self.work.mark(num);
        }
    }

    // ---- listening -----------------------------------------------------

    pub(crate) fn listen(
        &mut self,
        port: u16,
        opts: ListenOptions,
    ) -> Result<(u32, u16), VerbsError> {
        let transport = self
            .transport
            .as_deref_mut()
            .ok_or(VerbsError::TransportBusy)?;
        let transport_id = transport.listen(port).map_err(VerbsError::Transport)?;
        let port = transport.listen_port(transport_id).unwrap_or(port);
        let id = self.next_listener;
        self.next_listener += 1;
        self.listeners.insert(
            id,
            ListenerSlot {
                transport_id,
                opts,
                requests: VecDeque::new(),
            },
        );
        Ok((id, port))
    }

    /// Stops listening; connections still in start-up on this listener,
    /// offered or not, are reset (a request already accepted is not).
    pub(crate) fn unlisten(&mut self, id: u32) {
        let Some(l) = self.listeners.remove(&id) else {
            return;
        };
        let Some(transport) = self.transport.as_deref_mut() else {
            return;
        };
        transport.unlisten(l.transport_id);
        let orphans: Vec<u64> = self
            .incoming
            .iter()
            .filter(|(_, inc)| inc.listener == id)
            .map(|(&k, _)| k)
            .collect();
        for k in orphans {
            if let Some(inc) = self.incoming.remove(&k) {
                transport.abort(inc.stream);
            }
        }
    }

    fn accept_streams(&mut self, now: Instant) -> bool {
        let Some(transport) = self.transport.as_deref_mut() else {
            return false;
        };
        let mut arrived = Vec::new();
        for (&lid, l) in &self.listeners {
            while let Some(stream) = transport.accept(l.transport_id) {
                arrived.push((lid, stream));
            }
        }
        let busy = !arrived.is_empty();
        for (lid, stream) in arrived {
            self.admit(lid, stream, now);
        }
        busy
    }

    /// Starts MPA start-up on a stream a listener accepted, within the
    /// listener's backlog. When the backlog is full, the start-ups still
    /// waiting for their Request first read what has arrived; then the
    /// oldest of those still waiting (a silent one if any) is reset to
    /// make room, so idle or trickling connections cannot keep out a
    /// client that sends its Request at once. Only when every slot holds a
    /// request offered to the application is the newcomer refused.
    fn admit(&mut self, lid: u32, stream: StreamId, now: Instant) {
        let Some(l) = self.listeners.get(&lid) else {
            return;
        };
        let backlog = l.opts.backlog.unwrap_or(DEFAULT_BACKLOG).max(1);
        let startup = Startup::responder(&l.opts, now);
        let in_startup = |incoming: &HashMap<u64, Incoming>| {
            incoming.values().filter(|i| i.listener == lid).count()
        };
        if in_startup(&self.incoming) >= backlog {
            self.drive_incoming(now);
        }
        let Some(transport) = self.transport.as_deref_mut() else {
            return;
        };
        if in_startup(&self.incoming) >= backlog {
            // Silent ones first, then those with a partial Request.
            let evict = self
                .incoming
                .iter()
                .filter(|(_, i)| i.listener == lid && i.awaits_request())
                .map(|(&id, i)| (!i.is_silent(), id))
                .min()
                .map(|(_, id)| id);
            match evict.and_then(|id| self.incoming.remove(&id)) {
                Some(evicted) => transport.abort(evicted.stream),
                None => {
                    transport.abort(stream);
                    return;
                }
            }
        }
        match startup {
            Ok(startup) => {
                let id = self.next_request;
                self.next_request += 1;
                let span = trace_span!(
                    "conn",
                    stream = ?stream,
                    peer = ?transport.peer_addr(stream),
                    role = "responder",
                    qp = tracing::field::Empty
                );
                trace_event!(
                    parent: &span,
                    tracing::Level::DEBUG,
                    listener = lid,
                    "MPA responder: TCP accepted, awaiting the Request"
                );
                self.incoming
                    .insert(id, Incoming::new(lid, stream, startup, span));
            }
            Err(_) => transport.abort(stream),
        }
    }

    fn drive_incoming(&mut self, now: Instant) -> bool {
        let Some(transport) = self.transport.as_deref_mut() else {
            return false;
        };
        let mut busy = false;
        let mut done = Vec::new();
        for (&id, inc) in &mut self.incoming {
            let step = inc.drive(transport, now);
            busy |= step.busy;
            if step.offered {
                if let Some(l) = self.listeners.get_mut(&inc.listener) {
                    l.requests.push_back(id);
                    self.changed = true;
                }
            }
            if step.finished {
                done.push(id);
            }
        }
        for id in done {
            if let Some(inc) = self.incoming.remove(&id) {
                for l in self.listeners.values_mut() {
                    l.requests.retain(|&r| r != id);
                }
                if !matches!(inc.state, IncomingState::Handed) {
                    transport.close(inc.stream);
                    self.closing.push(inc.stream);
                }
            }
        }
        busy
    }

    /// Drops what refused start-ups still receive; releases those over.
    fn drain_closing(&mut self) -> bool {
        let Some(transport) = self.transport.as_deref_mut() else {
            return false;
        };
        let mut busy = false;
        self.closing.retain(|&s| {
            busy |= transport
                .recv_with(s, &mut |b| b.len())
                .is_ok_and(|n| n > 0);
            if transport.state(s).is_terminal() {
                transport.abort(s);
                return false;
            }
            true
        });
        busy
    }

    pub(crate) fn has_request(&self, listener: u32) -> bool {
        self.listeners
            .get(&listener)
            .is_some_and(|l| !l.requests.is_empty())
    }

    pub(crate) fn take_request(&mut self, listener: u32) -> Option<PendingRequest> {
        let l = self.listeners.get_mut(&listener)?;
        while let Some(id) = l.requests.pop_front() {
            if let Some(inc) = self.incoming.get(&id) {
                if let IncomingState::Offered(info) = &inc.state {
                    let peer_addr = self
                        .transport
                        .as_deref()
                        .and_then(|t| t.peer_addr(inc.stream));
                    return Some(PendingRequest {
                        id,
                        peer_addr,
                        info: info.clone(),
                    });
                }
            }
        }
        None
    }

    pub(crate) fn accept(
        &mut self,
        id: u64,
        qp: u32,
        params: AcceptParams,
    ) -> Result<(), VerbsError> {
        let slot = self.qps.get_mut(&qp).ok_or(VerbsError::NoSuchQp(qp))?;
        if !matches!(slot.phase, Phase::Idle) {
            return Err(VerbsError::AlreadyConnected);
        }
        let now = self.clock.unwrap_or_else(Instant::now);
        let mut inc = self.incoming.remove(&id).ok_or(VerbsError::RequestGone)?;
        if let Some(l) = self.listeners.get(&inc.listener) {
            slot.set_first_fpdu_timeout(l.opts.mpa.first_fpdu_timeout);
            slot.set_responder_sends_first(l.opts.mpa.responder_sends_first);
            slot.set_rfc7306(l.opts.mpa.rfc7306);
        }
        if !matches!(inc.state, IncomingState::Offered(_)) {
            if let Some(t) = self.transport.as_deref_mut() {
                t.abort(inc.stream);
            }
            return Err(VerbsError::RequestGone);
        }
        let accepted = {
            let span = inc.span.clone();
            let _entered = span.enter();
            inc.startup.accept(&params, now)
        };
        if let Err(e) = accepted {
            // The request is gone either way: do not leave its stream open.
            if let Some(t) = self.transport.as_deref_mut() {
                t.abort(inc.stream);
            }
            return Err(e);
        }
        inc.state = IncomingState::Handed;
        #[cfg(feature = "tracing")]
        inc.span.record("qp", qp);
        slot.set_conn_span(inc.span.clone());
        self.by_stream.bind(inc.stream, qp);
        self.work.mark(qp);
        slot.phase = Phase::Starting {
            stream: inc.stream,
            startup: Box::new(inc.startup),
        };
        self.changed = true;
        Ok(())
    }

    pub(crate) fn reject(&mut self, id: u64, private_data: &[u8]) -> Result<(), VerbsError> {
        let now = self.now();
        let inc = self.incoming.get_mut(&id).ok_or(VerbsError::RequestGone)?;
        inc.startup.reject(private_data, now)?;
        inc.state = IncomingState::Rejecting;
        Ok(())
    }
}
