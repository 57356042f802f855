//! Event channels watching the connection events of queue pairs and
//! listeners and the events of shared receive queues: after each progress
//! turn that changed something, a channel whose queue pair, listener or
//! shared receive queue has an event waiting is made readable.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use transport::EventFd;

use crate::engine::Engine;

/// What a channel watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Watched {
    /// A queue pair's connection events, by queue pair number.
    Qp(u32),
    /// A listener's connect requests, by listener id.
    Listener(u32),
    /// A shared receive queue's events, by its number.
    Srq(u32),
}

#[derive(Debug, Default)]
pub(crate) struct Watchers {
    /// Whether the list is non-empty: a device nobody watches pays one
    /// atomic load per changed turn.
    any: AtomicBool,
    list: Mutex<Vec<(Watched, Arc<EventFd>)>>,
}

impl Watchers {
    pub(crate) fn add(&self, what: Watched, channel: &Arc<EventFd>) {
        let mut l = self.list.lock().unwrap_or_else(|e| e.into_inner());
        if !l.iter().any(|(w, c)| *w == what && Arc::ptr_eq(c, channel)) {
            l.push((what, channel.clone()));
        }
        self.any.store(true, Ordering::Release);
    }

    pub(crate) fn remove(&self, what: Watched) {
        let mut l = self.list.lock().unwrap_or_else(|e| e.into_inner());
        l.retain(|(w, _)| *w != what);
        self.any.store(!l.is_empty(), Ordering::Release);
    }

    /// Fires the channels whose queue pair or listener has an event
    /// waiting: level-triggered, after every engine call, so a channel
    /// fires again while an event waits untaken.
    pub(crate) fn signal(&self, e: &Engine) {
        if !self.any.load(Ordering::Acquire) {
            return;
        }
        let l = self.list.lock().unwrap_or_else(|e| e.into_inner());
        for (what, channel) in l.iter() {
            let ready = match *what {
                Watched::Qp(num) => e.has_qp_event(num),
                Watched::Listener(id) => e.has_request(id),
                Watched::Srq(num) => e.has_srq_event(num),
            };
            if ready {
                channel.notify();
            }
        }
    }
}
