//! BBR congestion control, version 3, as specified in
//! draft-ietf-ccwg-bbr-06 (July 2026), without ECN: the path model
//! (BBR.max_bw, BBR.min_rtt), the state machine (Startup, Drain, ProbeBW
//! DOWN / CRUISE / REFILL / UP, ProbeRTT) and the loss response, with the
//! short-term bounds (`bw_shortterm`, `inflight_shortterm`) adapted once
//! per round with loss and the long-term bound (`inflight_longterm`) set
//! when a bandwidth probe loses more than `LOSS_THRESH`.
//!
//! Section numbers below are the draft's. Three places depart from the
//! draft's pseudocode where the transport must decide; the first and
//! third follow Linux's `tcp_bbr.c` (BBRv3, google/bbr):
//! - Loss is judged per ACK from the rate sample (the losses since the
//!   newest delivered data was sent, against what was in flight then), as
//!   Linux's `bbr_is_inflight_too_high`, not per lost packet.
//! - After a timeout, samples of resent data do not judge whether
//!   inflight was too high: the socket counts losses when it resends, so
//!   such a sample pairs the recovery's flight of a segment or two with
//!   losses found at the timeout (see `is_inflight_too_high`).
//! - Fast recovery starts with packet conservation for one round
//!   (Linux's `bbr_set_cwnd_to_recover_or_restore`): cwnd drops to what
//!   is in flight less the segment found lost, and grows only with what
//!   is delivered. So the window is cut when a loss episode begins, as
//!   RFC 5681 asks of every controller here.

use crate::time::{Duration, Instant};

use super::super::RttEstimator;
use super::super::rate_sample::RateSample;
use super::{AckState, Controller};

const STARTUP_PACING_GAIN: f64 = 2.77;
const DRAIN_PACING_GAIN: f64 = 0.5;
const DEFAULT_CWND_GAIN: f64 = 2.0;
/// ProbeBW_UP's cwnd gain (section 5.6.1's table).
const PROBE_UP_CWND_GAIN: f64 = 2.25;
const PROBE_UP_PACING_GAIN: f64 = 1.25;
const PROBE_DOWN_PACING_GAIN: f64 = 0.9;
const PROBE_RTT_CWND_GAIN: f64 = 0.5;
const PACING_MARGIN: f64 = 0.99;
/// BBR.LossThresh: the most loss per round a bandwidth probe may cause.
pub(in super::super) const LOSS_THRESH: f64 = 0.02;
const BETA: f64 = 0.7;
const HEADROOM: f64 = 0.15;
/// Rounds without 25% growth before the pipe is deemed full.
const FULL_BW_COUNT: u32 = 3;
const FULL_BW_GROWTH: f64 = 1.25;
/// BBRStartupFullLossCnt: discontiguous losses in a round that end Startup.
const STARTUP_FULL_LOSS_CNT: u32 = 6;
const MIN_RTT_FILTER_LEN: Duration = Duration::from_secs(10);
const PROBE_RTT_INTERVAL: Duration = Duration::from_secs(5);
const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// Rounds per slot of the two-slot BBR.extra_acked filter (10 in all).
const EXTRA_ACKED_SLOT_ROUNDS: u32 = 5;
const INITIAL_CWND_SEGMENTS: usize = 10;
const DEFAULT_MSS: usize = 1024;

/// The state machine's states (section 5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum BbrState {
    Startup,
    Drain,
    ProbeBwDown,
    ProbeBwCruise,
    ProbeBwRefill,
    ProbeBwUp,
    ProbeRtt,
}

/// BBR.ack_phase: where the ACKs of a bandwidth probe stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

#[derive(Debug, Clone)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Bbr {
    mss: usize,
    cwnd: usize,
    state: BbrState,
    pacing_gain: f64,
    cwnd_gain: f64,
    /// Octets per second.
    pacing_rate: u64,
    send_quantum: usize,

    // Round counting (section 5.5.1).
    round_count: u64,
    round_start: bool,
    next_round_delivered: u64,

    // Bandwidth (sections 5.5.2-5.5.6): a max filter over two ProbeBW
    // cycles, one slot each, as Linux's `bw_hi[2]`.
    max_bw_slots: [u64; 2],
    max_bw: u64,
    bw: u64,
    bw_shortterm: u64,
    inflight_shortterm: usize,
    inflight_longterm: usize,
    bw_latest: u64,
    inflight_latest: usize,

    // Minimum RTT and ProbeRTT (sections 5.3.4, 5.5.7).
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    probe_rtt_min_delay: Option<Duration>,
    probe_rtt_min_stamp: Instant,
    probe_rtt_expired: bool,
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    prior_cwnd: usize,
    idle_restart: bool,

    // ACK aggregation (section 5.5.9), a two-slot max filter by rounds.
    extra_acked_interval_start: Instant,
    extra_acked_delivered: u64,
    extra_acked_slots: [usize; 2],
    extra_acked_slot_rounds: u32,

    // Full pipe estimation (section 5.3.1.2).
    full_bw_reached: bool,
    full_bw_now: bool,
    full_bw: u64,
    full_bw_count: u32,

    // ProbeBW (section 5.3.3).
    cycle_stamp: Instant,
    bw_probe_wait: Duration,
    rounds_since_probe_up: u64,
    bw_probe_up_rounds: u32,
    bw_probe_up_acked: usize,
    probe_up_acked_per_inc: usize,
    prev_probe_too_high: bool,
    prev_probe_precautionary: bool,
    is_bw_probe_sample: bool,
    ack_phase: AckPhase,
    drain_start_round: u64,

    // Loss (section 5.5.10).
    loss_round_delivered: u64,
    loss_round_start: bool,
    is_loss_in_round: bool,
    loss_events_in_round: u32,
    lost_seen: u64,

    // Recovery (section 5.6.4.4).
    in_recovery: bool,
    /// The recovery began with a timeout: until it ends, a resend leaves
    /// with only the other resends in flight.
    after_rto: bool,
    packet_conservation: bool,
    /// cwnd as the loss left it: conservation does not grow past it, so
    /// the episode's cut stands even when the model had cwnd below what
    /// was in flight.
    conservation_cap: usize,
    /// A loss began conservation since the last ACK: its round starts
    /// once that ACK's deliveries are counted.
    conservation_pending: bool,

    /// ProbeRTT episodes entered, for tests and statistics.
    probe_rtts: u32,
    /// The round in which the pipe was found full.
    full_bw_round: Option<u64>,
    /// The last round whose delivery rate grew by 25% in Startup.
    last_growth_round: u64,
}

impl Bbr {
    pub fn new() -> Bbr {
        let mss = DEFAULT_MSS;
        let mut bbr = Bbr {
            mss,
            cwnd: INITIAL_CWND_SEGMENTS * mss,
            state: BbrState::Startup,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: DEFAULT_CWND_GAIN,
            pacing_rate: 0,
            send_quantum: 2 * mss,
            round_count: 0,
            round_start: false,
            next_round_delivered: 0,
            max_bw_slots: [0; 2],
            max_bw: 0,
            bw: 0,
            bw_shortterm: u64::MAX,
            inflight_shortterm: usize::MAX,
            inflight_longterm: usize::MAX,
            bw_latest: 0,
            inflight_latest: 0,
            min_rtt: None,
            min_rtt_stamp: Instant::ZERO,
            probe_rtt_min_delay: None,
            probe_rtt_min_stamp: Instant::ZERO,
            probe_rtt_expired: false,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0,
            idle_restart: false,
            extra_acked_interval_start: Instant::ZERO,
            extra_acked_delivered: 0,
            extra_acked_slots: [0; 2],
            extra_acked_slot_rounds: 0,
            full_bw_reached: false,
            full_bw_now: false,
            full_bw: 0,
            full_bw_count: 0,
            cycle_stamp: Instant::ZERO,
            bw_probe_wait: Duration::ZERO,
            rounds_since_probe_up: 0,
            bw_probe_up_rounds: 0,
            bw_probe_up_acked: 0,
            probe_up_acked_per_inc: usize::MAX,
            prev_probe_too_high: false,
            prev_probe_precautionary: false,
            is_bw_probe_sample: false,
            ack_phase: AckPhase::Init,
            drain_start_round: 0,
            loss_round_delivered: 0,
            loss_round_start: false,
            is_loss_in_round: false,
            loss_events_in_round: 0,
            lost_seen: 0,
            in_recovery: false,
            after_rto: false,
            packet_conservation: false,
            conservation_cap: usize::MAX,
            conservation_pending: false,
            probe_rtts: 0,
            full_bw_round: None,
            last_growth_round: 0,
        };
        bbr.init_pacing_rate(None);
        bbr
    }

    /// The state the machine is in.
    pub fn state(&self) -> BbrState {
        self.state
    }

    /// BBR.max_bw, octets per second.
    pub fn max_bw(&self) -> u64 {
        self.max_bw
    }

    /// BBR.inflight_longterm; `usize::MAX` while unset.
    pub fn inflight_longterm(&self) -> usize {
        self.inflight_longterm
    }

    /// ProbeRTT episodes entered.
    pub fn probe_rtts(&self) -> u32 {
        self.probe_rtts
    }

    /// The round in which Startup found the pipe full, and the last round
    /// before it whose delivery rate grew by 25%.
    pub fn full_bw_rounds(&self) -> Option<(u64, u64)> {
        self.full_bw_round.map(|r| (r, self.last_growth_round))
    }

    /// BBR.min_rtt.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    fn initial_cwnd(&self) -> usize {
        INITIAL_CWND_SEGMENTS * self.mss
    }

    fn min_pipe_cwnd(&self) -> usize {
        4 * self.mss
    }

    fn is_probe_bw(&self) -> bool {
        matches!(
            self.state,
            BbrState::ProbeBwDown
                | BbrState::ProbeBwCruise
                | BbrState::ProbeBwRefill
                | BbrState::ProbeBwUp
        )
    }

    fn is_probing_bw(&self) -> bool {
        matches!(
            self.state,
            BbrState::Startup | BbrState::ProbeBwRefill | BbrState::ProbeBwUp
        )
    }

    // Section 5.6.2.
    fn init_pacing_rate(&mut self, srtt: Option<Duration>) {
        let micros = srtt.map_or(1000, |d| d.total_micros().max(1));
        let nominal = self.initial_cwnd() as u64 * 1_000_000 / micros;
        self.pacing_rate = (STARTUP_PACING_GAIN * nominal as f64) as u64;
    }

    fn set_pacing_rate_with_gain(&mut self, gain: f64) {
        let rate = (gain * self.bw as f64 * PACING_MARGIN) as u64;
        if rate > 0 && (self.full_bw_reached || rate > self.pacing_rate) {
            self.pacing_rate = rate;
        }
    }

    // Section 5.6.3.
    fn set_send_quantum(&mut self) {
        let quantum = (self.pacing_rate / 1000) as usize;
        self.send_quantum = quantum.min(64 * 1024).max(2 * self.mss);
    }

    /// BBR.bdp times `gain` (section 5.6.4.2).
    fn bdp_multiple(&self, gain: f64) -> usize {
        match self.min_rtt {
            None => self.initial_cwnd(),
            Some(rtt) => {
                let bdp = self.bw as f64 * rtt.total_micros() as f64 / 1e6;
                (gain * bdp) as usize
            }
        }
    }

    fn quantization_budget(&self, cap: usize) -> usize {
        let offload_budget = 3 * self.send_quantum;
        let mut cap = cap.max(offload_budget).max(self.min_pipe_cwnd());
        if self.state == BbrState::ProbeBwUp {
            cap += 2 * self.mss;
        }
        cap
    }

    fn inflight(&self, gain: f64) -> usize {
        self.quantization_budget(self.bdp_multiple(gain))
    }

    fn max_inflight(&self) -> usize {
        let cap = self.bdp_multiple(self.cwnd_gain) + self.extra_acked();
        self.quantization_budget(cap)
    }

    fn extra_acked(&self) -> usize {
        self.extra_acked_slots[0].max(self.extra_acked_slots[1])
    }

    fn inflight_with_headroom(&self) -> usize {
        if self.inflight_longterm == usize::MAX {
            return usize::MAX;
        }
        let headroom = self
            .mss
            .max((HEADROOM * self.inflight_longterm as f64) as usize);
        self.inflight_longterm
            .saturating_sub(headroom)
            .max(self.min_pipe_cwnd())
    }

    fn target_inflight(&self) -> usize {
        self.bdp_multiple(1.0).min(self.cwnd)
    }

    fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    fn reset_short_term_model(&mut self) {
        self.bw_shortterm = u64::MAX;
        self.inflight_shortterm = usize::MAX;
    }

    fn reset_congestion_signals(&mut self) {
        self.is_loss_in_round = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    fn start_round(&mut self, delivered: u64) {
        self.next_round_delivered = delivered;
    }

    fn enter_startup(&mut self) {
        self.state = BbrState::Startup;
        self.pacing_gain = STARTUP_PACING_GAIN;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
    }

    fn enter_drain(&mut self) {
        self.state = BbrState::Drain;
        self.pacing_gain = DRAIN_PACING_GAIN;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
        self.drain_start_round = self.round_count;
    }

    fn enter_probe_bw(&mut self, now: Instant, delivered: u64, rand: u32) {
        self.cwnd_gain = DEFAULT_CWND_GAIN;
        self.start_probe_bw_down(now, delivered, rand);
    }

    fn start_probe_bw_down(&mut self, now: Instant, delivered: u64, rand: u32) {
        self.reset_congestion_signals();
        self.probe_up_acked_per_inc = usize::MAX;
        // PickProbeWait: 0 or 1 rounds, and 2 to 3 seconds.
        self.rounds_since_probe_up = (rand & 1) as u64;
        self.bw_probe_wait = Duration::from_millis(2000 + ((rand >> 1) % 1000) as u64);
        self.cycle_stamp = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round(delivered);
        self.state = BbrState::ProbeBwDown;
        self.pacing_gain = PROBE_DOWN_PACING_GAIN;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
    }

    fn start_probe_bw_cruise(&mut self) {
        self.state = BbrState::ProbeBwCruise;
        self.pacing_gain = 1.0;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
    }

    fn start_probe_bw_refill(&mut self, delivered: u64) {
        self.reset_short_term_model();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acked = 0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round(delivered);
        self.state = BbrState::ProbeBwRefill;
        self.pacing_gain = 1.0;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
    }

    fn start_probe_bw_up(&mut self, rs: &RateSample, delivered: u64) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round(delivered);
        self.reset_full_bw();
        self.full_bw = rs.delivery_rate;
        self.state = BbrState::ProbeBwUp;
        self.pacing_gain = PROBE_UP_PACING_GAIN;
        self.cwnd_gain = PROBE_UP_CWND_GAIN;
        self.raise_inflight_longterm_slope();
    }

    fn raise_inflight_longterm_slope(&mut self) {
        let growth_this_round = 1usize << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.probe_up_acked_per_inc = (self.cwnd / growth_this_round).max(self.mss);
    }

    fn probe_inflight_longterm_upward(&mut self, rs: &RateSample, cwnd_limited: bool) {
        if !cwnd_limited || self.cwnd < self.inflight_longterm {
            return;
        }
        self.bw_probe_up_acked += rs.newly_acked;
        if self.bw_probe_up_acked >= self.probe_up_acked_per_inc {
            let delta = self.bw_probe_up_acked / self.probe_up_acked_per_inc;
            self.bw_probe_up_acked -= delta * self.probe_up_acked_per_inc;
            self.inflight_longterm = self.inflight_longterm.saturating_add(delta * self.mss);
        }
        if self.round_start {
            self.raise_inflight_longterm_slope();
        }
    }

    /// IsInflightTooHigh (section 5.5.10.2), with SACK. After a timeout,
    /// a sample of resent data (it has no RTT) is not judged: the socket
    /// counts a loss when it resends the data, not when it finds it lost,
    /// so such a resend's snapshot holds a flight of a segment or two
    /// while every resend after it, of data found lost at the timeout,
    /// counts against it. The draft judges a lost packet against the
    /// flight it was first sent into (BBRHandleLostPacket); the resend's
    /// sample would instead set `inflight_longterm` to a few segments,
    /// from which ProbeBW_UP grows it back one segment per round at
    /// first.
    fn is_inflight_too_high(&self, rs: &RateSample) -> bool {
        if self.after_rto && rs.rtt.is_none() {
            return false;
        }
        rs.tx_in_flight > 0 && rs.lost as f64 > rs.tx_in_flight as f64 * LOSS_THRESH
    }

    fn handle_inflight_too_high(&mut self, rs: &RateSample, now: Instant, ack: &AckState) {
        self.prev_probe_too_high = true;
        self.is_bw_probe_sample = false;
        if !rs.is_app_limited {
            let target = (self.target_inflight() as f64 * BETA) as usize;
            self.inflight_longterm = rs.tx_in_flight.max(target);
        }
        if self.state == BbrState::ProbeBwUp {
            self.start_probe_bw_down(now, ack.delivered, ack.rand);
        }
    }

    /// AdaptLongTermModel (section 5.3.3.9); true if it changed state.
    fn adapt_long_term_model(&mut self, rs: &RateSample, ack: &AckState) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.is_bw_probe_sample = false;
            self.ack_phase = AckPhase::Init;
            if self.is_probe_bw() && !rs.is_app_limited {
                // AdvanceMaxBwFilter.
                self.max_bw_slots[0] = self.max_bw_slots[1];
                self.max_bw_slots[1] = 0;
            }
            if self.is_probe_bw() && self.prev_probe_precautionary && !self.prev_probe_too_high {
                self.start_probe_bw_refill(ack.delivered);
                return true;
            }
        }
        if !self.is_inflight_too_high(rs) {
            if self.inflight_longterm == usize::MAX {
                return false;
            }
            if rs.tx_in_flight > self.inflight_longterm {
                self.inflight_longterm = rs.tx_in_flight;
            }
            if self.state == BbrState::ProbeBwUp {
                self.probe_inflight_longterm_upward(rs, ack.cwnd_limited);
            }
        }
        false
    }

    fn is_time_to_probe_bw(&mut self, now: Instant, delivered: u64) -> bool {
        let reno_rounds = (self.target_inflight() / self.mss) as u64;
        if now > self.cycle_stamp + self.bw_probe_wait
            || self.rounds_since_probe_up >= reno_rounds.min(63)
        {
            self.start_probe_bw_refill(delivered);
            return true;
        }
        false
    }

    fn is_time_to_cruise(&self, in_flight: usize) -> bool {
        in_flight <= self.inflight_with_headroom() && in_flight <= self.inflight(1.0)
    }

    fn is_time_to_go_down(&mut self, rs: &RateSample, ack: &AckState) -> bool {
        if self.prev_probe_too_high && ack.pipe >= self.inflight_longterm {
            self.prev_probe_precautionary = true;
            return true;
        }
        if ack.cwnd_limited && self.cwnd >= self.inflight_longterm {
            self.reset_full_bw();
            self.full_bw = rs.delivery_rate;
        } else if self.full_bw_now {
            return true;
        }
        false
    }

    fn update_probe_bw_cycle_phase(&mut self, now: Instant, rs: &RateSample, ack: &AckState) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_long_term_model(rs, ack) {
            return;
        }
        let state = self.state;
        match state {
            BbrState::ProbeBwDown => {
                if self.is_time_to_probe_bw(now, ack.delivered) {
                    return;
                }
                if self.is_time_to_cruise(ack.pipe) {
                    self.start_probe_bw_cruise();
                }
            }
            BbrState::ProbeBwCruise => {
                self.is_time_to_probe_bw(now, ack.delivered);
            }
            // After one round of REFILL, UP.
            BbrState::ProbeBwRefill if self.round_start => {
                self.is_bw_probe_sample = true;
                self.start_probe_bw_up(rs, ack.delivered);
            }
            BbrState::ProbeBwUp if self.is_time_to_go_down(rs, ack) => {
                self.prev_probe_too_high = false;
                self.start_probe_bw_down(now, ack.delivered, ack.rand);
            }
            _ => {}
        }
    }

    // Section 5.5.1 and 5.5.5.
    fn update_round_and_max_bw(&mut self, rs: &RateSample, delivered: u64) {
        if rs.newly_acked > 0 && rs.prior_delivered >= self.next_round_delivered {
            self.start_round(delivered);
            self.round_count += 1;
            self.rounds_since_probe_up += 1;
            self.round_start = true;
            self.packet_conservation = false;
        } else {
            self.round_start = false;
        }
        if rs.delivery_rate > 0 && (rs.delivery_rate >= self.max_bw || !rs.is_app_limited) {
            self.max_bw_slots[1] = self.max_bw_slots[1].max(rs.delivery_rate);
            self.max_bw = self.max_bw_slots[0].max(self.max_bw_slots[1]);
        }
    }

    // Section 5.5.10.3.
    fn update_latest_delivery_signals(&mut self, rs: &RateSample, delivered: u64) {
        self.loss_round_start = false;
        self.bw_latest = self.bw_latest.max(rs.delivery_rate);
        self.inflight_latest = self.inflight_latest.max(rs.delivered as usize);
        if rs.newly_acked > 0 && rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = delivered;
            self.loss_round_start = true;
        }
    }

    fn advance_latest_delivery_signals(&mut self, rs: &RateSample) {
        if self.loss_round_start {
            self.bw_latest = rs.delivery_rate;
            self.inflight_latest = rs.delivered as usize;
        }
    }

    fn update_congestion_signals(&mut self, rs: &RateSample, delivered: u64) {
        self.update_round_and_max_bw(rs, delivered);
        if !self.loss_round_start {
            return;
        }
        // AdaptLowerBoundsFromCongestion, once per round.
        if !self.is_probing_bw() && self.is_loss_in_round {
            if self.bw_shortterm == u64::MAX {
                self.bw_shortterm = self.max_bw;
            }
            if self.inflight_shortterm == usize::MAX {
                self.inflight_shortterm = self.cwnd;
            }
            self.bw_shortterm = self
                .bw_latest
                .max((BETA * self.bw_shortterm as f64) as u64);
            self.inflight_shortterm = self
                .inflight_latest
                .max((BETA * self.inflight_shortterm as f64) as usize);
        }
        self.is_loss_in_round = false;
    }

    // Section 5.5.9.
    fn update_ack_aggregation(&mut self, now: Instant, rs: &RateSample) {
        if self.round_start {
            self.extra_acked_slot_rounds += 1;
            let rounds = if self.full_bw_reached {
                EXTRA_ACKED_SLOT_ROUNDS
            } else {
                1
            };
            if self.extra_acked_slot_rounds >= rounds {
                self.extra_acked_slot_rounds = 0;
                self.extra_acked_slots[0] = self.extra_acked_slots[1];
                self.extra_acked_slots[1] = 0;
            }
        }
        let interval = (now - self.extra_acked_interval_start).total_micros();
        let mut expected = self.bw as f64 * interval as f64 / 1e6;
        if self.extra_acked_delivered as f64 <= expected {
            self.extra_acked_delivered = 0;
            self.extra_acked_interval_start = now;
            expected = 0.0;
        }
        self.extra_acked_delivered += rs.newly_acked as u64;
        let extra = (self.extra_acked_delivered as f64 - expected).max(0.0) as usize;
        let extra = extra.min(self.cwnd);
        self.extra_acked_slots[1] = self.extra_acked_slots[1].max(extra);
    }

    // Section 5.3.1.2.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_now || !self.round_start || rs.is_app_limited {
            return;
        }
        if rs.delivery_rate as f64 >= self.full_bw as f64 * FULL_BW_GROWTH {
            self.reset_full_bw();
            self.full_bw = rs.delivery_rate;
            if !self.full_bw_reached {
                self.last_growth_round = self.round_count;
            }
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= FULL_BW_COUNT;
        if self.full_bw_now && !self.full_bw_reached {
            self.full_bw_reached = true;
            self.full_bw_round = Some(self.round_count);
        }
    }

    // Section 5.3.1.3, counted as Linux counts `loss_events_in_round`.
    fn check_startup_high_loss(&mut self, rs: &RateSample, newly_lost: u64, in_recovery: bool) {
        if self.full_bw_reached {
            return;
        }
        if newly_lost > 0 {
            self.loss_events_in_round = (self.loss_events_in_round + 1).min(15);
        }
        if self.loss_round_start
            && in_recovery
            && self.loss_events_in_round >= STARTUP_FULL_LOSS_CNT
            && self.is_inflight_too_high(rs)
        {
            self.full_bw_reached = true;
            self.full_bw_round = Some(self.round_count);
            self.inflight_longterm = self.bdp_multiple(1.0).max(self.inflight_latest);
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    fn check_startup_done(&mut self, rs: &RateSample, newly_lost: u64, in_recovery: bool) {
        self.check_startup_high_loss(rs, newly_lost, in_recovery);
        if self.state == BbrState::Startup && self.full_bw_reached {
            self.enter_drain();
        }
    }

    fn check_drain_done(&mut self, now: Instant, ack: &AckState) {
        if self.state == BbrState::Drain
            && (ack.pipe <= self.inflight(1.0) || self.round_count > self.drain_start_round + 3)
        {
            self.enter_probe_bw(now, ack.delivered, ack.rand);
        }
    }

    // Section 5.3.4.3.
    fn update_min_rtt(&mut self, now: Instant, rs: &RateSample) {
        self.probe_rtt_expired = now > self.probe_rtt_min_stamp + PROBE_RTT_INTERVAL;
        if let Some(rtt) = rs.rtt
            && (self.probe_rtt_min_delay.is_none_or(|min| rtt < min) || self.probe_rtt_expired)
        {
            self.probe_rtt_min_delay = Some(rtt);
            self.probe_rtt_min_stamp = now;
        }
        let min_rtt_expired = now > self.min_rtt_stamp + MIN_RTT_FILTER_LEN;
        if let Some(delay) = self.probe_rtt_min_delay
            && (self.min_rtt.is_none_or(|min| delay < min) || min_rtt_expired)
        {
            self.min_rtt = Some(delay);
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
    }

    fn save_cwnd(&mut self) {
        if !self.in_recovery && self.state != BbrState::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    fn probe_rtt_cwnd(&self) -> usize {
        self.bdp_multiple(PROBE_RTT_CWND_GAIN)
            .max(self.min_pipe_cwnd())
    }

    fn check_probe_rtt(&mut self, now: Instant, rs: &RateSample, ack: &AckState) {
        if self.state != BbrState::ProbeRtt && self.probe_rtt_expired && !self.idle_restart {
            self.state = BbrState::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = PROBE_RTT_CWND_GAIN;
            self.probe_rtts += 1;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round(ack.delivered);
        }
        if self.state == BbrState::ProbeRtt {
            self.handle_probe_rtt(now, ack);
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    fn handle_probe_rtt(&mut self, now: Instant, ack: &AckState) {
        // The socket marks the connection application-limited while
        // ProbeRTT lasts (`wants_app_limited`).
        match self.probe_rtt_done_stamp {
            None if ack.pipe <= self.probe_rtt_cwnd() => {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.start_round(ack.delivered);
            }
            Some(_) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now, ack);
                }
            }
            None => {}
        }
    }

    fn check_probe_rtt_done(&mut self, now: Instant, ack: &AckState) {
        if self.probe_rtt_done_stamp.is_some_and(|done| now > done) {
            self.probe_rtt_min_stamp = now;
            self.restore_cwnd();
            // ExitProbeRTT.
            self.reset_short_term_model();
            if self.full_bw_reached {
                self.start_probe_bw_down(now, ack.delivered, ack.rand);
                self.start_probe_bw_cruise();
            } else {
                self.enter_startup();
            }
        }
    }

    // Section 5.6.4.6 and 5.6.4.7, with packet conservation in the first
    // round of fast recovery.
    fn set_cwnd(&mut self, rs: &RateSample, ack: &AckState) {
        let max_inflight = self.max_inflight();
        if self.packet_conservation {
            self.cwnd = self
                .cwnd
                .max(ack.pipe + rs.newly_acked)
                .min(self.conservation_cap);
        } else if self.full_bw_reached {
            self.cwnd = (self.cwnd + rs.newly_acked).min(max_inflight);
        } else if self.cwnd < max_inflight || ack.delivered < self.initial_cwnd() as u64 {
            self.cwnd += rs.newly_acked;
        }
        if !self.packet_conservation && !ack.in_recovery {
            self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        }
        if self.state == BbrState::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
        // BoundCwndForModel.
        let mut cap = usize::MAX;
        if self.is_probe_bw() && self.state != BbrState::ProbeBwCruise {
            cap = self.inflight_longterm;
        } else if matches!(self.state, BbrState::ProbeRtt | BbrState::ProbeBwCruise) {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_shortterm).max(self.min_pipe_cwnd());
        self.cwnd = self.cwnd.min(cap).max(self.mss);
    }

    /// Recovery begins or ends (Linux's `bbr_set_cwnd_to_recover_or_restore`).
    fn track_recovery(&mut self, in_recovery: bool, delivered: u64) {
        if in_recovery && !self.in_recovery {
            self.save_cwnd();
            self.in_recovery = true;
            self.packet_conservation = true;
            self.start_round(delivered);
        } else if !in_recovery && self.in_recovery {
            self.in_recovery = false;
            self.after_rto = false;
            self.packet_conservation = false;
            self.restore_cwnd();
        }
    }

    fn note_loss(&mut self, delivered: u64) {
        if !self.is_loss_in_round {
            self.loss_round_delivered = delivered;
        }
        self.is_loss_in_round = true;
    }
}

impl Default for Bbr {
    fn default() -> Self {
        Self::new()
    }
}

impl Controller for Bbr {
    fn window(&self) -> usize {
        self.cwnd
    }

    fn on_ack(&mut self, _now: Instant, _len: usize, _in_flight: usize, _rtt: &RttEstimator) {}

    fn on_rate_sample(&mut self, now: Instant, rs: &RateSample, ack: &AckState) {
        let newly_lost = ack.lost.saturating_sub(self.lost_seen);
        self.lost_seen = ack.lost;
        if newly_lost > 0 {
            self.note_loss(ack.delivered);
        }
        // UpdateModelAndState (section 5.2.3).
        self.update_latest_delivery_signals(rs, ack.delivered);
        self.update_congestion_signals(rs, ack.delivered);
        if self.conservation_pending {
            self.conservation_pending = false;
            self.packet_conservation = true;
            self.start_round(ack.delivered);
        }
        self.update_ack_aggregation(now, rs);
        self.check_full_bw_reached(rs);
        self.check_startup_done(rs, newly_lost, ack.in_recovery);
        self.check_drain_done(now, ack);
        if self.is_bw_probe_sample && self.is_inflight_too_high(rs) {
            self.handle_inflight_too_high(rs, now, ack);
        }
        self.update_probe_bw_cycle_phase(now, rs, ack);
        self.update_min_rtt(now, rs);
        self.check_probe_rtt(now, rs, ack);
        self.advance_latest_delivery_signals(rs);
        self.bw = self.max_bw.min(self.bw_shortterm);
        // UpdateControlParameters.
        if self.bw > 0 {
            self.set_pacing_rate_with_gain(self.pacing_gain);
        }
        self.set_send_quantum();
        self.track_recovery(ack.in_recovery, ack.delivered);
        self.set_cwnd(rs, ack);
    }

    fn on_transmit(&mut self, now: Instant, in_flight_before: usize, app_limited: bool) {
        // HandleRestartFromIdle (section 5.4.1).
        if in_flight_before == 0 && app_limited {
            self.idle_restart = true;
            self.extra_acked_interval_start = now;
            if self.is_probe_bw() {
                if self.bw > 0 {
                    self.pacing_rate = (self.bw as f64 * PACING_MARGIN) as u64;
                }
            } else if self.state == BbrState::ProbeRtt
                && self.probe_rtt_done_stamp.is_some_and(|done| now > done)
            {
                self.probe_rtt_min_stamp = now;
                self.restore_cwnd();
                self.reset_short_term_model();
                if self.full_bw_reached {
                    self.start_probe_bw_cruise();
                    self.cycle_stamp = now;
                } else {
                    self.enter_startup();
                }
            }
        }
    }

    fn on_rto(&mut self, _now: Instant, _in_flight: usize) {
        // OnEnterRTO (section 5.6.4.4): everything in flight is resent, so
        // C.inflight + 1 is one segment.
        if !self.in_recovery {
            self.save_cwnd();
            self.in_recovery = true;
        }
        self.after_rto = true;
        self.packet_conservation = false;
        self.is_loss_in_round = true;
        self.cwnd = self.mss;
    }

    fn on_recovery(&mut self, _now: Instant, in_flight: usize) {
        // The flight less the segment found lost; packet conservation
        // then keeps cwnd at what is in flight plus what is delivered.
        if !self.in_recovery {
            self.save_cwnd();
            self.in_recovery = true;
        }
        // Conservation lasts until data sent from now on is delivered.
        self.packet_conservation = true;
        self.conservation_pending = true;
        self.is_loss_in_round = true;
        self.cwnd = self
            .cwnd
            .min(in_flight.saturating_sub(self.mss))
            .max(self.mss);
        self.conservation_cap = self.cwnd;
    }

    fn on_retransmission_lost(&mut self, _now: Instant, in_flight: usize) {
        self.is_loss_in_round = true;
        self.packet_conservation = true;
        self.conservation_pending = true;
        self.cwnd = self
            .cwnd
            .min(in_flight.saturating_sub(self.mss))
            .max(self.mss);
        self.conservation_cap = self.cwnd;
    }

    fn on_repaired_loss(&mut self, _now: Instant, _in_flight: usize) {
        // One loss, repaired: BBR answers it in its model (the round's
        // loss lowers the short-term bounds), not with a cwnd cut.
        self.is_loss_in_round = true;
    }

    fn on_recovery_end(&mut self) {
        self.after_rto = false;
        if self.in_recovery {
            self.in_recovery = false;
            self.packet_conservation = false;
            self.restore_cwnd();
        }
    }

    fn pacing_rate(&self) -> Option<u64> {
        (self.pacing_rate > 0).then_some(self.pacing_rate)
    }

    fn send_quantum(&self) -> usize {
        self.send_quantum
    }

    fn wants_app_limited(&self) -> bool {
        self.state == BbrState::ProbeRtt
    }

    fn set_mss(&mut self, mss: usize) {
        let initial = self.cwnd == self.initial_cwnd();
        self.mss = mss.max(1);
        if initial {
            self.cwnd = self.initial_cwnd();
        }
        if self.bw == 0 {
            self.init_pacing_rate(None);
        }
        self.set_send_quantum();
    }
}

#[cfg(test)]
mod test {
    use super::*;

    const MSS: usize = 1000;

    /// Drives a controller with synthetic rate samples: a path delivering
    /// `rate` octets per second with a round trip of `rtt`, the controller
    /// keeping cwnd in flight each round.
    struct Path {
        bbr: Bbr,
        now: Instant,
        delivered: u64,
        lost: u64,
        rtt: Duration,
    }

    impl Path {
        fn new(rtt: Duration) -> Path {
            let mut bbr = Bbr::new();
            bbr.set_mss(MSS);
            Path {
                bbr,
                now: Instant::ZERO,
                delivered: 0,
                lost: 0,
                rtt,
            }
        }

        /// One round: what cwnd (and `rate`) allows is delivered in one ACK
        /// per segment; `loss` of it is lost.
        fn round(&mut self, rate: u64, loss: f64) {
            let prior = self.delivered;
            let cwnd = self.bbr.window();
            let capacity = (rate as f64 * self.rtt.total_micros() as f64 / 1e6) as usize;
            let in_flight = cwnd.min(capacity.max(MSS));
            let segments = in_flight / MSS;
            let lost_segments = (segments as f64 * loss).round() as u64;
            let step = self.rtt / segments.max(1) as u32;
            for i in 0..segments {
                self.now += step;
                self.delivered += MSS as u64;
                if (i as u64) < lost_segments {
                    self.lost += MSS as u64;
                }
                let rs = RateSample {
                    delivery_rate: rate.min(in_flight as u64 * 1_000_000 / self.rtt.total_micros()),
                    delivered: in_flight as u64,
                    interval: self.rtt,
                    prior_delivered: prior,
                    newly_acked: MSS,
                    is_app_limited: false,
                    lost: self.lost.min(lost_segments * MSS as u64),
                    tx_in_flight: in_flight,
                    rtt: Some(self.rtt),
                };
                let ack = AckState {
                    pipe: in_flight - (i + 1) * MSS,
                    delivered: self.delivered,
                    lost: self.lost,
                    in_recovery: false,
                    cwnd_limited: in_flight >= cwnd,
                    rand: 7,
                };
                self.bbr.on_rate_sample(self.now, &rs, &ack);
            }
        }
    }

    #[test]
    fn startup_grows_then_drains_into_probe_bw() {
        let mut p = Path::new(Duration::from_millis(10));
        let rate = 10_000_000;
        for _ in 0..30 {
            p.round(rate, 0.0);
        }
        assert!(p.bbr.full_bw_reached);
        assert!(p.bbr.is_probe_bw(), "{:?}", p.bbr.state);
        let (full, grew) = p.bbr.full_bw_rounds().unwrap();
        assert_eq!(full - grew, FULL_BW_COUNT as u64);
        assert!(p.bbr.max_bw() >= rate * 9 / 10 && p.bbr.max_bw() <= rate);
        // cwnd is the model's: twice the BDP (100 kB), plus aggregation.
        assert!(p.bbr.window() <= 2 * 100_000 + 2 * 100_000 / 10, "{}", p.bbr.window());
    }

    #[test]
    fn loss_above_threshold_in_probe_up_sets_inflight_longterm() {
        let mut p = Path::new(Duration::from_millis(10));
        let rate = 10_000_000;
        for _ in 0..30 {
            p.round(rate, 0.0);
        }
        assert_eq!(p.bbr.inflight_longterm(), usize::MAX);
        // Drive it into ProbeBW_UP by the clock.
        for _ in 0..400 {
            p.round(rate, 0.0);
            if p.bbr.state == BbrState::ProbeBwUp {
                break;
            }
        }
        assert_eq!(p.bbr.state, BbrState::ProbeBwUp);
        p.round(rate, 0.05);
        assert!(p.bbr.inflight_longterm() < usize::MAX);
        // The probe ended at once: DOWN, and CRUISE once the queue drained.
        assert!(
            matches!(p.bbr.state, BbrState::ProbeBwDown | BbrState::ProbeBwCruise),
            "{:?}",
            p.bbr.state
        );
        assert!(p.bbr.prev_probe_too_high);
    }

    #[test]
    fn loss_below_threshold_in_probe_up_keeps_inflight_longterm_unset() {
        let mut p = Path::new(Duration::from_millis(10));
        let rate = 10_000_000;
        for _ in 0..30 {
            p.round(rate, 0.0);
        }
        for _ in 0..400 {
            p.round(rate, 0.0);
            if p.bbr.state == BbrState::ProbeBwUp {
                break;
            }
        }
        assert_eq!(p.bbr.state, BbrState::ProbeBwUp);
        // 1 segment in 100+ lost: under 2%.
        p.round(rate, 0.01);
        assert_eq!(p.bbr.inflight_longterm(), usize::MAX);
    }

    /// One ACK in ProbeBW_UP whose newest delivered data left with
    /// `tx_in_flight` in flight and saw `lost` octets lost since.
    fn probe_up_sample(p: &mut Path, tx_in_flight: usize, lost: u64, rtt: Option<Duration>) {
        p.now += Duration::from_millis(1);
        p.delivered += MSS as u64;
        p.lost += lost;
        let rs = RateSample {
            delivery_rate: 10_000_000,
            delivered: tx_in_flight as u64,
            interval: p.rtt,
            prior_delivered: p.delivered - MSS as u64,
            newly_acked: MSS,
            is_app_limited: false,
            lost,
            tx_in_flight,
            rtt,
        };
        let ack = AckState {
            pipe: tx_in_flight,
            delivered: p.delivered,
            lost: p.lost,
            in_recovery: true,
            cwnd_limited: true,
            rand: 7,
        };
        p.bbr.on_rate_sample(p.now, &rs, &ack);
    }

    fn into_probe_up(p: &mut Path) {
        for _ in 0..30 {
            p.round(10_000_000, 0.0);
        }
        for _ in 0..400 {
            p.round(10_000_000, 0.0);
            if p.bbr.state == BbrState::ProbeBwUp {
                return;
            }
        }
        panic!("never in ProbeBW_UP");
    }

    /// After a timeout a resent segment's sample (no RTT: Karn) says
    /// nothing of the flight the losses came from: it left with one
    /// segment in flight while everything resent after it counts as lost.
    /// It leaves `inflight_longterm` alone; the same sample from data sent
    /// once sets it.
    #[test]
    fn after_a_timeout_a_resent_segments_sample_does_not_set_inflight_longterm() {
        let mut p = Path::new(Duration::from_millis(10));
        into_probe_up(&mut p);
        p.bbr.on_rto(p.now, 100 * MSS);
        probe_up_sample(&mut p, 2 * MSS, 50 * MSS as u64, None);
        assert_eq!(p.bbr.inflight_longterm(), usize::MAX);
        let rtt = p.rtt;
        probe_up_sample(&mut p, 100 * MSS, 50 * MSS as u64, Some(rtt));
        assert!(p.bbr.inflight_longterm() >= 70 * MSS, "{}", p.bbr.inflight_longterm());
        assert!(p.bbr.inflight_longterm() < usize::MAX);
    }

    #[test]
    fn probe_rtt_comes_after_five_seconds_without_a_lower_rtt() {
        let mut p = Path::new(Duration::from_millis(10));
        for _ in 0..700 {
            p.round(10_000_000, 0.0);
        }
        assert!(p.bbr.probe_rtts() >= 1);
    }
}
