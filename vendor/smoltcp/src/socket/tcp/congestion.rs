use crate::time::Instant;

use super::RttEstimator;
use super::rate_sample::RateSample;

pub(super) mod no_control;

pub(super) mod bbr;

#[cfg(feature = "socket-tcp-cubic")]
pub(super) mod cubic;

#[cfg(feature = "socket-tcp-reno")]
pub(super) mod reno;

/// What the socket knows after processing an ACK, for controllers that
/// model the path from rate samples.
#[derive(Debug, Clone, Copy)]
pub(super) struct AckState {
    /// The RFC 6675 flight estimate ("pipe", C.inflight).
    pub pipe: usize,
    /// C.delivered.
    pub delivered: u64,
    /// C.lost: octets resent as lost.
    pub lost: u64,
    /// In fast recovery or a timeout's recovery.
    pub in_recovery: bool,
    /// Data waits that cwnd keeps from being sent.
    pub cwnd_limited: bool,
    /// A random number, for randomized probing schedules.
    pub rand: u32,
}

#[allow(unused_variables)]
pub(super) trait Controller {
    /// Returns the number of bytes that can be sent.
    fn window(&self) -> usize;

    /// Set the remote window size.
    fn set_remote_window(&mut self, remote_window: usize) {}

    fn on_ack(&mut self, now: Instant, len: usize, in_flight: usize, rtt: &RttEstimator) {}

    /// Fired on each duplicate ack received, after `on_loss` has been called.
    ///
    /// Classic Reno window inflation. The socket does not call it: it counts
    /// duplicate ACKs and SACKed data in its estimate of the data in flight
    /// (RFC 6675 "pipe") and enters recovery with `on_recovery` instead.
    #[allow(dead_code)]
    fn on_dup_ack(&mut self, now: Instant, len: usize, in_flight: usize) {}

    /// Fired on a retransmission timeout.
    fn on_rto(&mut self, now: Instant, in_flight: usize) {}

    /// Fired after an inferred loss via three duplicate acks.
    fn on_loss(&mut self, now: Instant, in_flight: usize) {}

    /// Fired when fast recovery starts (RFC 6675 section 5 step 4.2): like
    /// `on_loss`, but the window is set to ssthresh without inflation, since
    /// the socket's flight estimate already excludes what the receiver holds.
    fn on_recovery(&mut self, now: Instant, in_flight: usize) {
        self.on_loss(now, in_flight)
    }

    /// A loss already repaired when it was found (a tail loss probe
    /// resent the segment, RFC 8985 section 7.4.2): the window is cut as
    /// fast recovery would cut it, and that recovery is over at once.
    fn on_repaired_loss(&mut self, now: Instant, in_flight: usize) {
        self.on_recovery(now, in_flight);
        self.on_recovery_end();
    }

    /// Fast recovery ends without an ACK of new data to end it.
    fn on_recovery_end(&mut self) {}

    /// A retransmission in fast recovery was lost: a second congestion
    /// signal (RFC 5681 section 4.3), so the window is cut again, from
    /// `in_flight` (the socket passes no more than the current window).
    fn on_retransmission_lost(&mut self, now: Instant, in_flight: usize) {
        self.on_recovery_end();
        self.on_recovery(now, in_flight);
    }

    fn pre_transmit(&mut self, now: Instant) {}

    fn post_transmit(&mut self, now: Instant, len: usize) {}

    /// Set the maximum segment size.
    fn set_mss(&mut self, mss: usize) {}

    /// A delivery rate sample (draft-cheng-iccrg-delivery-rate-estimation)
    /// from an ACK, after the socket processed it.
    fn on_rate_sample(&mut self, now: Instant, rs: &RateSample, ack: &AckState) {}

    /// A data segment is about to leave, with `in_flight_before` octets
    /// in the network and the connection application-limited or not.
    fn on_transmit(&mut self, now: Instant, in_flight_before: usize, app_limited: bool) {}

    /// The rate to pace data at, in octets per second; `None` sends as
    /// the window allows.
    fn pacing_rate(&self) -> Option<u64> {
        None
    }

    /// The most data a paced sender may send at one instant.
    fn send_quantum(&self) -> usize {
        usize::MAX
    }

    /// The controller wants rate samples marked application-limited for
    /// now (BBR's ProbeRTT).
    fn wants_app_limited(&self) -> bool {
        false
    }
}

// BBR's model is a few hundred bytes beside Cubic's hundred; boxing it
// would need an allocator, which the crate does not require.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(super) enum AnyController {
    None(no_control::NoControl),

    #[cfg(feature = "socket-tcp-reno")]
    Reno(reno::Reno),

    #[cfg(feature = "socket-tcp-cubic")]
    Cubic(cubic::Cubic),

    Bbr(bbr::Bbr),
}

impl AnyController {
    /// Create a new congestion controller.
    /// `AnyController::new()` selects the best congestion controller based on the features.
    ///
    /// - If `socket-tcp-cubic` feature is enabled, it will use `Cubic`.
    /// - If `socket-tcp-reno` feature is enabled, it will use `Reno`.
    /// - If both `socket-tcp-cubic` and `socket-tcp-reno` features are enabled, it will use `Cubic`.
    ///    - `Cubic` is more efficient regarding throughput.
    ///    - `Reno` is more conservative and is suitable for low-power devices.
    /// - If no congestion controller is available, it will use `NoControl`.
    ///
    /// Users can also select a congestion controller manually by [`super::Socket::set_congestion_control()`]
    /// method at run-time.
    #[allow(unreachable_code)]
    #[inline]
    pub fn new() -> Self {
        #[cfg(feature = "socket-tcp-cubic")]
        {
            return AnyController::Cubic(cubic::Cubic::new());
        }

        #[cfg(feature = "socket-tcp-reno")]
        {
            return AnyController::Reno(reno::Reno::new());
        }

        AnyController::None(no_control::NoControl)
    }

    #[inline]
    pub fn inner_mut(&mut self) -> &mut dyn Controller {
        match self {
            AnyController::None(n) => n,

            #[cfg(feature = "socket-tcp-reno")]
            AnyController::Reno(r) => r,

            #[cfg(feature = "socket-tcp-cubic")]
            AnyController::Cubic(c) => c,

                    AnyController::Bbr(b) => b,
        }
    }

    #[inline]
    pub fn inner(&self) -> &dyn Controller {
        match self {
            AnyController::None(n) => n,

            #[cfg(feature = "socket-tcp-reno")]
            AnyController::Reno(r) => r,

            #[cfg(feature = "socket-tcp-cubic")]
            AnyController::Cubic(c) => c,

                    AnyController::Bbr(b) => b,
        }
    }
}
