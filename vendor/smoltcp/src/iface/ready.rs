//! Which sockets of a [`SocketSet`](super::SocketSet) have something to
//! do, so that `Interface::poll` touches those instead of walking every
//! socket (iwarp patch: many connections on one interface).
//!
//! Upstream, each egress pass calls `dispatch` on every socket, `poll_at`
//! asks every socket, and each arriving TCP segment is matched against
//! every socket in turn: the cost of a poll grows with the number of
//! sockets, busy or not. Here:
//!
//! * a socket is *queued* when anything may have changed what it would
//!   send: it was added, lent out mutably (`SocketSet::get_mut`), or took a
//!   segment; each egress pass visits only queued sockets and sockets whose
//!   timer is due, then files each by its `poll_at`: still queued (`Now`,
//!   or waiting for a neighbor), under a timer (`Time`), or nowhere
//!   (`Ingress`: only a segment or the user can give it work);
//! * `Interface::poll_at` asks only the queued sockets and reads the
//!   earliest timer;
//! * a TCP segment is matched first against the socket that last took a
//!   segment of the same 4-tuple (confirmed with `accepts`), and only on a
//!   miss (a SYN for a listener, a segment for no socket) against every
//!   socket;
//! * the sockets that took a segment, or whose state a timer changed, are
//!   *touched*: `SocketSet::drain_touched` names them, so the application
//!   too can visit only the connections with news instead of all of them.
//!
//! Without the `alloc` feature there is no index and every path walks
//! all sockets, as upstream does.

#[cfg(feature = "alloc")]
use alloc::collections::{BTreeMap, BTreeSet};
#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use crate::socket::PollAt;
use crate::time::Instant;
use crate::wire::IpEndpoint;

/// A TCP connection as seen from this interface: (local, remote).
pub(crate) type TcpKey = (IpEndpoint, IpEndpoint);

/// What the index knows of one slot of the socket set.
#[cfg(feature = "alloc")]
#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    /// In `queued` (possibly for an earlier socket in the same slot).
    queued: bool,
    /// The entry this slot has in `timers`.
    timer: Option<Instant>,
    /// The entry this slot has in `demux`.
    key: Option<TcpKey>,
    /// In `touched`.
    touched: bool,
}

/// The index; see the module documentation.
#[derive(Debug, Default)]
pub(crate) struct ReadyIndex {
    #[cfg(feature = "alloc")]
    slots: Vec<Slot>,
    /// Slots to visit in the next egress pass; each at most once.
    #[cfg(feature = "alloc")]
    queued: Vec<usize>,
    /// The last pass's list, kept for its allocation.
    #[cfg(feature = "alloc")]
    spare: Vec<usize>,
    #[cfg(feature = "alloc")]
    timers: BTreeSet<(Instant, usize)>,
    /// Slots whose sockets had news for the application; each at most once.
    #[cfg(feature = "alloc")]
    touched: Vec<usize>,
    #[cfg(feature = "alloc")]
    demux: BTreeMap<TcpKey, usize>,
}

#[cfg(feature = "alloc")]
impl ReadyIndex {
    fn slot(&mut self, index: usize) -> &mut Slot {
        if index >= self.slots.len() {
            self.slots.resize(index + 1, Slot::default());
        }
        &mut self.slots[index]
    }

    /// The socket in `index` may have something new to send.
    pub(crate) fn mark(&mut self, index: usize) {
        let slot = self.slot(index);
        if !slot.queued {
            slot.queued = true;
            self.queued.push(index);
        }
    }

    /// The socket in `index` took a segment or changed state by itself.
    pub(crate) fn touch(&mut self, index: usize) {
        let slot = self.slot(index);
        if !slot.touched {
            slot.touched = true;
            self.touched.push(index);
        }
    }

    /// Calls `f` with each touched slot, once, and forgets them.
    pub(crate) fn drain_touched(&mut self, mut f: impl FnMut(usize)) {
        let touched = core::mem::take(&mut self.touched);
        for &index in &touched {
            self.slot(index).touched = false;
            f(index);
        }
        // Keep the allocation for the next round.
        self.touched = touched;
        self.touched.clear();
    }

    /// Every socket in the first `len` slots may have something to send.
    pub(crate) fn mark_all(&mut self, len: usize) {
        for index in 0..len {
            self.mark(index);
        }
    }

    /// The socket in `index` was removed: its timer and demux entry go.
    /// A queued entry stays; the egress pass skips an empty slot, and a
    /// socket added there later is queued already.
    pub(crate) fn forget(&mut self, index: usize) {
        let slot = self.slot(index);
        let (timer, key) = (slot.timer.take(), slot.key.take());
        if let Some(at) = timer {
            self.timers.remove(&(at, index));
        }
        if let Some(key) = key
            && self.demux.get(&key) == Some(&index)
        {
            self.demux.remove(&key);
        }
    }

    /// Takes the slots an egress pass at `now` visits: the queued ones and
    /// those whose timer is due. Hand the list back with
    /// [`Self::end_pass`].
    pub(crate) fn take_pass(&mut self, now: Instant) -> Vec<usize> {
        while let Some(&(at, index)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.remove(&(at, index));
            self.slot(index).timer = None;
            self.mark(index);
        }
        let mut pass = core::mem::take(&mut self.spare);
        pass.clear();
        core::mem::swap(&mut pass, &mut self.queued);
        for &index in pass.iter() {
            self.slot(index).queued = false;
        }
        pass
    }

    /// Ends a pass that visited the first `visited` slots of `pass`: the
    /// rest (the device was full) are queued again.
    pub(crate) fn end_pass(&mut self, pass: Vec<usize>, visited: usize) {
        for &index in pass.get(visited..).unwrap_or(&[]) {
            self.mark(index);
        }
        self.spare = pass;
    }

    /// Files the socket in `index` after an egress visit, by when it wants
    /// polling next; `waiting` if it waits for a neighbor (checked at every
    /// pass, since the neighbor may appear at any time).
    pub(crate) fn file(&mut self, index: usize, poll_at: PollAt, waiting: bool) {
        if !waiting && matches!(poll_at, PollAt::Time(at) if self.slot(index).timer == Some(at)) {
            // Filed there already.
            return;
        }
        if let Some(at) = self.slot(index).timer.take() {
            self.timers.remove(&(at, index));
        }
        match poll_at {
            _ if waiting => self.mark(index),
            PollAt::Now => self.mark(index),
            PollAt::Time(at) => {
                self.slot(index).timer = Some(at);
                self.timers.insert((at, index));
            }
            PollAt::Ingress => {}
        }
    }

    /// Slots whose sockets must be asked for their `poll_at`.
    pub(crate) fn queued(&self) -> &[usize] {
        &self.queued
    }

    /// The earliest timer of a socket not queued.
    pub(crate) fn first_timer(&self) -> Option<Instant> {
        self.timers.first().map(|&(at, _)| at)
    }

    /// The slot that last took a segment of connection `key`, if any.
    pub(crate) fn lookup(&self, key: &TcpKey) -> Option<usize> {
        self.demux.get(key).copied()
    }

    /// The socket in `index` now carries connection `key`: its earlier
    /// entry, if different, goes (one entry per slot bounds the map).
    pub(crate) fn remember(&mut self, index: usize, key: TcpKey) {
        let slot = self.slot(index);
        if slot.key == Some(key) {
            return;
        }
        let old = slot.key.replace(key);
        if let Some(old) = old
            && self.demux.get(&old) == Some(&index)
        {
            self.demux.remove(&old);
        }
        if let Some(previous) = self.demux.insert(key, index)
            && previous != index
        {
            // Another slot's socket had this connection before (it ended):
            // that slot keeps no entry.
            self.slot(previous).key = None;
        }
    }

    #[cfg(test)]
    pub(crate) fn timer_count(&self) -> usize {
        self.timers.len()
    }

    #[cfg(test)]
    pub(crate) fn demux_len(&self) -> usize {
        self.demux.len()
    }
}

#[cfg(not(feature = "alloc"))]
impl ReadyIndex {
    pub(crate) fn touch(&mut self, _index: usize) {}
    pub(crate) fn mark(&mut self, _index: usize) {}
    pub(crate) fn mark_all(&mut self, _len: usize) {}
    pub(crate) fn forget(&mut self, _index: usize) {}
    pub(crate) fn lookup(&self, _key: &TcpKey) -> Option<usize> {
        None
    }
    pub(crate) fn remember(&mut self, _index: usize, _key: TcpKey) {}
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;
    use crate::wire::IpAddress;

    fn key(port: u16) -> TcpKey {
        let a = IpAddress::v4(10, 0, 0, 1);
        let b = IpAddress::v4(10, 0, 0, 2);
        (IpEndpoint::new(a, 80), IpEndpoint::new(b, port))
    }

    #[test]
    fn a_pass_visits_queued_sockets_and_due_timers_once() {
        let mut ix = ReadyIndex::default();
        ix.mark(3);
        ix.mark(3);
        ix.mark(1);
        ix.file(5, PollAt::Time(Instant::from_millis(10)), false);
        ix.file(6, PollAt::Time(Instant::from_millis(30)), false);
        let mut pass = ix.take_pass(Instant::from_millis(20));
        pass.sort_unstable();
        assert_eq!(pass, [1, 3, 5]);
        assert!(ix.queued().is_empty());
        assert_eq!(ix.first_timer(), Some(Instant::from_millis(30)));
        // Filed by what each wants next.
        ix.file(1, PollAt::Now, false);
        ix.file(3, PollAt::Ingress, false);
        ix.file(5, PollAt::Ingress, true);
        let mut queued = ix.queued().to_vec();
        queued.sort_unstable();
        assert_eq!(queued, [1, 5]);
    }

    #[test]
    fn refiling_replaces_the_timer_and_forgetting_drops_it() {
        let mut ix = ReadyIndex::default();
        ix.file(2, PollAt::Time(Instant::from_millis(50)), false);
        ix.file(2, PollAt::Time(Instant::from_millis(40)), false);
        assert_eq!(ix.timer_count(), 1);
        assert_eq!(ix.first_timer(), Some(Instant::from_millis(40)));
        ix.forget(2);
        assert_eq!(ix.timer_count(), 0);
        assert_eq!(ix.first_timer(), None);
    }

    #[test]
    fn a_pass_cut_short_queues_the_rest_again() {
        let mut ix = ReadyIndex::default();
        for i in 0..4 {
            ix.mark(i);
        }
        let pass = ix.take_pass(Instant::from_millis(0));
        ix.end_pass(pass, 2);
        assert_eq!(ix.queued().len(), 2);
        assert!(ix.queued().iter().all(|&i| i >= 2));
    }

    #[test]
    fn touched_slots_are_named_once_then_forgotten() {
        let mut ix = ReadyIndex::default();
        ix.touch(4);
        ix.touch(2);
        ix.touch(4);
        let mut seen = Vec::new();
        ix.drain_touched(|i| seen.push(i));
        assert_eq!(seen, [4, 2]);
        seen.clear();
        ix.drain_touched(|i| seen.push(i));
        assert!(seen.is_empty());
        ix.touch(4);
        ix.drain_touched(|i| seen.push(i));
        assert_eq!(seen, [4]);
    }

    #[test]
    fn the_demux_holds_one_entry_per_slot() {
        let mut ix = ReadyIndex::default();
        ix.remember(0, key(1000));
        assert_eq!(ix.lookup(&key(1000)), Some(0));
        // The socket in slot 0 now carries another connection.
        ix.remember(0, key(1001));
        assert_eq!(ix.lookup(&key(1000)), None);
        assert_eq!(ix.lookup(&key(1001)), Some(0));
        // Another slot takes over a connection: slot 0 loses its entry.
        ix.remember(1, key(1001));
        assert_eq!(ix.lookup(&key(1001)), Some(1));
        ix.forget(0);
        assert_eq!(ix.lookup(&key(1001)), Some(1));
        ix.forget(1);
        assert_eq!(ix.demux_len(), 0);
    }
}
