//! Arming a completion queue, as `ibv_req_notify_cq` does: the next
//! completion (or the next solicited or failed one) makes the queue's
//! channel readable once, then the arm is spent.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use transport::EventFd;

use crate::types::WorkCompletion;

const DISARMED: u8 = 0;
const ANY: u8 = 1;
const SOLICITED: u8 = 2;

/// The channel a completion queue signals and what it is armed for.
#[derive(Debug, Default)]
pub(crate) struct CqNotify {
    channel: Option<Arc<EventFd>>,
    armed: AtomicU8,
}

impl CqNotify {
    pub(crate) fn new(channel: Option<Arc<EventFd>>) -> Self {
        CqNotify {
            channel,
            armed: AtomicU8::new(DISARMED),
        }
    }

    pub(crate) fn has_channel(&self) -> bool {
        self.channel.is_some()
    }

    /// Arms for the next completion, or with `solicited_only` for the next
    /// one that is a solicited receive or failed (as IBV_CQ_SOLICITED). An
    /// arm for any completion is not narrowed by a later solicited one.
    pub(crate) fn arm(&self, solicited_only: bool) {
        let want = if solicited_only { SOLICITED } else { ANY };
        let _ = self
            .armed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now == DISARMED || (now == SOLICITED && want == ANY)).then_some(want)
            });
    }

    /// Called for every completion pushed: one atomic load when disarmed.
    pub(crate) fn on_push(&self, wc: &WorkCompletion) {
        let armed = self.armed.load(Ordering::Acquire);
        if armed == DISARMED {
            return;
        }
        // A solicited arm skips successful completions the peer did not solicit.
        if armed == SOLICITED && !wc.solicited && wc.is_success() {
            return;
        }
        // Only the push that disarms signals: one event per arm.
        if self.armed.swap(DISARMED, Ordering::AcqRel) != DISARMED {
            if let Some(ch) = &self.channel {
                ch.notify();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{WcStatus, PLACEHOLDER};

    fn wc(solicited: bool, status: WcStatus) -> WorkCompletion {
        WorkCompletion {
            solicited,
            status,
            ..PLACEHOLDER
        }
    }

    #[test]
    fn one_event_per_arm_and_solicited_only_skips_plain_successes() {
        let fd = Arc::new(EventFd::new().unwrap());
        let n = CqNotify::new(Some(fd.clone()));
        n.on_push(&wc(false, WcStatus::Success));
        assert!(!fd.clear(), "not armed: no event");
        n.arm(false);
        n.on_push(&wc(false, WcStatus::Success));
        n.on_push(&wc(false, WcStatus::Success));
        assert!(fd.clear());
        n.on_push(&wc(true, WcStatus::Success));
        assert!(!fd.clear(), "the arm was spent");

        n.arm(true);
        n.on_push(&wc(false, WcStatus::Success));
        assert!(!fd.clear(), "solicited-only ignores a plain completion");
        n.on_push(&wc(true, WcStatus::Success));
        assert!(fd.clear(), "a solicited one fires");
        n.arm(true);
        n.on_push(&wc(false, WcStatus::WrFlushErr));
        assert!(fd.clear(), "so does a failed one");

        n.arm(true);
        n.arm(false);
        n.on_push(&wc(false, WcStatus::Success));
        assert!(fd.clear(), "arming for any widens a solicited arm");
        n.arm(false);
        n.arm(true);
        n.on_push(&wc(false, WcStatus::Success));
        assert!(fd.clear(), "and a solicited arm does not narrow it");
    }
}
