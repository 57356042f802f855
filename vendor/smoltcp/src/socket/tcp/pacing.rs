//! Pacing: with a controller that gives a pacing rate (BBR), a data
//! segment waits until the pacing clock lets it leave, and `poll_at`
//! reports that instant, so a caller's loop sleeps until then instead of
//! polling.
//!
//! After each segment the clock moves on by its length at the pacing rate
//! (draft-ietf-ccwg-bbr-06 section 5.6.2, `C.next_send_time`). A sender
//! woken late may catch up by at most one send quantum at once (section
//! 5.6.3): the rate holds over a loop's timer granularity, and no burst
//! exceeds the quantum.

use crate::time::Instant;

use super::rate_sample::RateSample;
use super::Socket;
use super::congestion::AckState;
use crate::iface::Context;
use crate::wire::TcpSeqNumber;

/// The pacing clock, in nanoseconds (a segment at 100 Gbit/s takes
/// about 120 ns; microseconds would round the rate away).
#[derive(Debug, Clone, Copy, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(super) struct Pacer {
    next_send_ns: i64,
}

fn nanos(t: Instant) -> i64 {
    t.total_micros().saturating_mul(1000)
}

impl Pacer {
    /// When the next segment may leave, if that is after `now`.
    pub(super) fn hold_until(&self, now: Instant) -> Option<Instant> {
        (self.next_send_ns > nanos(now))
            .then(|| Instant::from_micros((self.next_send_ns + 999) / 1000))
    }

    /// A segment of `len` octets left at `now`.
    pub(super) fn on_send(&mut self, now: Instant, len: usize, rate: u64, quantum: usize) {
        let rate = rate.max(1) as i128;
        let ns_for = |octets: usize| (octets as i128 * 1_000_000_000 / rate) as i64;
        let credit = ns_for(quantum.saturating_sub(len));
        let base = self.next_send_ns.max(nanos(now) - credit);
        self.next_send_ns = base.saturating_add(ns_for(len));
    }
}

impl Socket<'_> {
    /// When pacing holds data back: the instant the next segment may leave.
    pub(super) fn pacing_hold(&self, now: Instant) -> Option<Instant> {
        self.congestion_controller.inner().pacing_rate()?;
        self.pacer.hold_until(now)
    }

    /// After a data segment left: its delivery snapshot, the controller's
    /// transmit step and the pacing clock, for `len` octets at `start`.
    /// `pipe_before` is the flight estimate before it; `snd_max` SND.MAX
    /// before it.
    pub(super) fn on_data_sent(
        &mut self,
        now: Instant,
        (start, len): (TcpSeqNumber, usize),
        pipe_before: usize,
        snd_max: TcpSeqNumber,
        probe: bool,
    ) {
        let end = start + len;
        let retransmit = start < snd_max;
        self.congestion_controller.inner_mut().on_transmit(
            now,
            pipe_before,
            self.rate.is_app_limited(),
        );
        self.rate
            .on_send(now, (start, end), pipe_before, retransmit, retransmit && !probe);
        let controller = self.congestion_controller.inner();
        if let Some(rate) = controller.pacing_rate() {
            self.pacer
                .on_send(now, len, rate, controller.send_quantum());
        }
        // The sender ran dry with room in the window: what it sent is
        // application-limited (CheckIfApplicationLimited, at a send).
        let pipe = pipe_before + len;
        if self.flight_size() >= self.tx_buffer.len()
            && pipe < controller.window()
            && self.recovery_point.is_none()
        {
            self.rate.mark_app_limited(pipe);
        }
    }

    /// After an acceptable segment's ACK was processed: the rate sample,
    /// the controller's model update, and the statistics.
    pub(super) fn on_ack_delivery(&mut self, cx: &mut Context, ack: TcpSeqNumber, sacks: bool) {
        let now = cx.now();
        let scoreboard = sacks.then_some(&self.scoreboard);
        let rs: RateSample = self
            .rate
            .on_ack(now, ack, scoreboard, self.rtte.min_rtt());
        let pipe = self.pipe();
        let window = self.congestion_controller.inner().window();
        let unsent = self.tx_buffer.len().saturating_sub(self.flight_size());
        let in_recovery = self.recovery_point.is_some() || self.rto_recovery_point.is_some();
        let state = AckState {
            pipe,
            delivered: self.rate.delivered(),
            lost: self.rate.lost(),
            in_recovery,
            cwnd_limited: unsent > 0 && pipe + self.remote_mss > window,
            rand: cx.rand().rand_u32(),
        };
        let controller = self.congestion_controller.inner_mut();
        controller.on_rate_sample(now, &rs, &state);
        if controller.wants_app_limited()
            || (unsent == 0 && pipe < controller.window() && !in_recovery)
        {
            self.rate.mark_app_limited(pipe);
        }
        let stats = &mut self.stats;
        stats.delivered_bytes = self.rate.delivered();
        if let Some(last) = self.rate.last() {
            stats.delivery_rate = last.delivery_rate;
            stats.delivery_rate_app_limited = last.is_app_limited;
        }
        stats.pacing_rate = self
            .congestion_controller
            .inner()
            .pacing_rate()
            .unwrap_or(0);
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::time::Duration;

    /// The interval at which `rate` octets per second send `len` octets.
    fn gap(len: usize, rate: u64) -> Duration {
        Duration::from_micros(len as u64 * 1_000_000 / rate)
    }

    /// At 10 MB/s, 1000-octet segments leave 100 us apart once the
    /// quantum's burst is spent, and a poll too early is told when.
    #[test]
    fn segments_leave_at_the_pacing_rate() {
        let mut p = Pacer::default();
        let rate = 10_000_000;
        let now = Instant::from_millis(10);
        let mut burst = 0;
        while p.hold_until(now).is_none() {
            p.on_send(now, 1000, rate, 4000);
            burst += 1000;
            assert!(burst <= 4000);
        }
        assert_eq!(burst, 4000);
        let next = p.hold_until(now).unwrap();
        assert_eq!(next, now + gap(1000, rate));
        p.on_send(next, 1000, rate, 4000);
        assert_eq!(p.hold_until(next), Some(next + gap(1000, rate)));
    }

    /// A sender polled late catches up by no more than the quantum.
    #[test]
    fn a_late_poll_sends_one_quantum_at_most() {
        let mut p = Pacer::default();
        let rate = 10_000_000;
        p.on_send(Instant::from_millis(0), 1000, rate, 3000);
        let late = Instant::from_millis(50);
        let mut burst = 0;
        while p.hold_until(late).is_none() {
            p.on_send(late, 1000, rate, 3000);
            burst += 1000;
        }
        assert_eq!(burst, 3000);
    }
}
