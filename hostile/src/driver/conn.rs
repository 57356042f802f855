//! Running [`Peer`]s over any [`Transport`] (kernel TCP, smoltcp on a TAP
//! device or a memory link): the bytes each connection carries are handed
//! to its peer and recorded in its [`Transcript`], what the peer asks to
//! send is queued, and every wait is bounded by a hard deadline. Nothing
//! here judges.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use transport::{ListenerId, StreamId, StreamState, Transport};

use crate::observe::Ending;
use crate::player::{Action, Peer};
use crate::transcript::{Dir, Event, Transcript};

/// Longest single sleep.
const SLICE: Duration = Duration::from_millis(5);
/// How long closed connections get to say goodbye before they are reset.
const CLOSE_GRACE: Duration = Duration::from_millis(300);

/// One connection and the peer playing on it.
pub struct Conn<'p> {
    /// The transport's stream.
    pub id: StreamId,
    /// The peer playing its script on it.
    pub peer: &'p mut dyn Peer,
    /// What the connection carried so far.
    pub transcript: Transcript,
    pending: VecDeque<u8>,
    fin_wanted: bool,
    fin_sent: bool,
    end_seen: bool,
    done: bool,
    wake: Option<Instant>,
    connected: bool,
}

impl<'p> Conn<'p> {
    /// A connection on stream `id` of `t`, played by `peer`, its transcript starting now.
    pub fn new(
        t: &dyn Transport,
        id: StreamId,
        peer: &'p mut dyn Peer,
        we_connected: bool,
    ) -> Self {
        let unknown = SocketAddr::from(([0, 0, 0, 0], 0));
        Conn {
            id,
            peer,
            transcript: Transcript::new(
                t.local_addr(id).unwrap_or(unknown),
                t.peer_addr(id).unwrap_or(unknown),
                we_connected,
                Instant::now(),
            ),
            pending: VecDeque::new(),
            fin_wanted: false,
            fin_sent: false,
            end_seen: false,
            done: false,
            wake: None,
            connected: false,
        }
    }

    /// Whether the TCP handshake ever completed.
    pub fn connected(&self) -> bool {
        self.connected
    }

    /// One turn: take bytes, note the end, ask the peer, queue its bytes.
    fn turn(&mut self, t: &mut dyn Transport, now: Instant) {
        if self.done {
            return;
        }
        let state = t.state(self.id);
        if state == StreamState::Connecting {
            return;
        }
        if state != StreamState::Reset {
            self.connected = true;
        }
        if self.transcript.ours.port() == 0 {
            if let (Some(o), Some(p)) = (t.local_addr(self.id), t.peer_addr(self.id)) {
                self.transcript.ours = o;
                self.transcript.theirs = p;
            }
        }
        let (peer, transcript) = (&mut *self.peer, &mut self.transcript);
        let _ = t.recv_with(self.id, &mut |b: &[u8]| {
            transcript.record(now, Dir::FromTarget, Event::Data(b.to_vec()));
            peer.on_bytes(b, now);
            b.len()
        });
        if !self.end_seen && t.recv_queued(self.id) == 0 {
            let end = match state {
                StreamState::PeerClosed | StreamState::Closed => Some(Ending::Fin),
                StreamState::Reset => Some(Ending::Reset),
                _ => None,
            };
            if let Some(how) = end {
                self.end_seen = true;
                let ev = if how == Ending::Fin {
                    Event::Fin
                } else {
                    Event::Reset
                };
                self.transcript.record(now, Dir::FromTarget, ev);
                self.peer.on_end(how, now);
            }
        }
        self.wake = None;
        while !self.fin_wanted && self.pending.len() < (1 << 20) {
            match self.peer.poll(now) {
                Action::Send(b) => {
                    self.transcript
                        .record(now, Dir::ToTarget, Event::Data(b.clone()));
                    self.pending.extend(b);
                }
                Action::Fin => self.fin_wanted = true,
                Action::Wait(at) => {
                    self.wake = Some(at);
                    break;
                }
                Action::Done => {
                    self.done = true;
                    break;
                }
            }
        }
        if !self.pending.is_empty() {
            if t.state(self.id).may_send() {
                let pending = &mut self.pending;
                let _ = t.send_with(self.id, &mut |buf: &mut [u8]| {
                    let (a, b) = pending.as_slices();
                    let src = if a.is_empty() { b } else { a };
                    let n = src.len().min(buf.len());
                    buf[..n].copy_from_slice(&src[..n]);
                    pending.drain(..n);
                    n
                });
            } else {
                self.pending.clear();
                self.peer.on_send_failed(now);
            }
        }
        if self.fin_wanted && self.pending.is_empty() && !self.fin_sent {
            self.fin_sent = true;
            self.transcript.record(now, Dir::ToTarget, Event::Fin);
            t.close(self.id);
            // The peer goes on: it may still read the target's answer.
            self.fin_wanted = false;
        }
    }
}

/// Opens a connection to `addr`.
pub fn connect(t: &mut dyn Transport, addr: SocketAddr) -> Result<StreamId, String> {
    t.connect(addr).map_err(|e| format!("connect {addr}: {e}"))
}

/// Waits up to `within` for a connection on `l`.
pub fn accept(t: &mut dyn Transport, l: ListenerId, within: Duration) -> Option<StreamId> {
    let end = Instant::now() + within;
    loop {
        let now = Instant::now();
        t.poll(now);
        if let Some(s) = t.accept(l) {
            return Some(s);
        }
        if now >= end {
            return None;
        }
        let d = t.poll_delay(now).unwrap_or(SLICE).min(SLICE);
        t.wait(Some(d.min(end - now)));
    }
}

/// Runs `conns` until every peer is done or `hard` passes, then closes
/// them (reset after a short grace) and returns their transcripts.
pub fn run(t: &mut dyn Transport, conns: &mut [Conn<'_>], hard: Instant) {
    loop {
        let now = Instant::now();
        t.poll(now);
        let mut next = hard;
        for c in conns.iter_mut() {
            c.turn(t, now);
            if let Some(w) = c.wake {
                next = next.min(w);
            }
        }
        t.flush(now);
        if conns.iter().all(|c| c.done) || now >= hard {
            break;
        }
        let d = t
            .poll_delay(now)
            .unwrap_or(SLICE)
            .min(SLICE)
            .min(next.saturating_duration_since(now));
        t.wait(Some(d));
    }
    release(t, conns.iter().map(|c| c.id));
}

/// Closes `ids` and resets what has not finished within a short grace.
pub fn release(t: &mut dyn Transport, ids: impl Iterator<Item = StreamId>) {
    let ids: Vec<StreamId> = ids.collect();
    for &id in &ids {
        if !t.state(id).is_terminal() {
            t.close(id);
        }
    }
    let end = Instant::now() + CLOSE_GRACE;
    while Instant::now() < end && ids.iter().any(|&id| !t.state(id).is_terminal()) {
        let now = Instant::now();
        t.poll(now);
        // Drain so a closing peer's bytes do not hold the connection.
        for &id in &ids {
            let _ = t.recv_with(id, &mut |b: &[u8]| b.len());
        }
        t.wait(Some(SLICE));
    }
    for id in ids {
        t.abort(id);
    }
}
