//! The per-frame decision: loss, queue, rate, delay.

use std::time::{Duration, Instant};

use super::queue_delay::QueueDelays;
use super::LinkModelConfig;
use crate::rng::SplitMix64;

/// Why a frame did not make it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drop {
    /// Independent random loss.
    Random,
    /// The Gilbert-Elliott chain lost it.
    Burst,
    /// The bottleneck queue was full (drop-tail).
    QueueFull,
}

/// The fate of one offered frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Hand the frame over at this instant.
    Deliver(Instant),
    /// The frame is gone.
    Dropped(Drop),
}

/// What a model has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Frames offered.
    pub frames_in: u64,
    /// Bytes of the frames offered.
    pub bytes_in: u64,
    /// Frames lost to independent random loss.
    pub lost_random: u64,
    /// Frames lost to the Gilbert-Elliott chain.
    pub lost_burst: u64,
    /// Frames dropped because the queue was full.
    pub overflowed: u64,
    /// Frames given a delivery instant.
    pub delivered: u64,
    /// Bytes of those frames.
    pub delivered_bytes: u64,
    /// How long the frames the queue took waited in it.
    pub queue_delay: QueueDelays,
    /// How long after its delivery instant each delivered frame was
    /// taken: by the receiving host on a memory link, by the forwarding
    /// thread of a switch (which writes it to a TAP device or a memory
    /// port). On the real clock it is how far the polls lag the path, and
    /// adds to the round trip every TCP timer and the congestion control
    /// see. A bare model counts none.
    pub taken_late: QueueDelays,
}

impl LinkCounters {
    /// Frames lost to either kind of loss.
    pub fn lost(&self) -> u64 {
        self.lost_random + self.lost_burst
    }

    /// Frames that did not get through, for any reason.
    pub fn dropped(&self) -> u64 {
        self.lost() + self.overflowed
    }

    /// Frames that did not get through as a share of the frames offered
    /// (0 when none were).
    pub fn dropped_share(&self) -> f64 {
        if self.frames_in == 0 {
            0.0
        } else {
            self.dropped() as f64 / self.frames_in as f64
        }
    }

    /// What was counted after `earlier`, a reading of the same model: the
    /// figures of one measured span.
    pub fn since(&self, earlier: &LinkCounters) -> LinkCounters {
        LinkCounters {
            frames_in: self.frames_in.saturating_sub(earlier.frames_in),
            bytes_in: self.bytes_in.saturating_sub(earlier.bytes_in),
            lost_random: self.lost_random.saturating_sub(earlier.lost_random),
            lost_burst: self.lost_burst.saturating_sub(earlier.lost_burst),
            overflowed: self.overflowed.saturating_sub(earlier.overflowed),
            delivered: self.delivered.saturating_sub(earlier.delivered),
            delivered_bytes: self.delivered_bytes.saturating_sub(earlier.delivered_bytes),
            queue_delay: self.queue_delay.since(&earlier.queue_delay),
            taken_late: self.taken_late.since(&earlier.taken_late),
        }
    }

    /// Adds another model's counts (the other direction, say).
    pub fn merge(&mut self, o: &LinkCounters) {
        self.frames_in += o.frames_in;
        self.bytes_in += o.bytes_in;
        self.lost_random += o.lost_random;
        self.lost_burst += o.lost_burst;
        self.overflowed += o.overflowed;
        self.delivered += o.delivered;
        self.delivered_bytes += o.delivered_bytes;
        self.queue_delay.merge(&o.queue_delay);
        self.taken_late.merge(&o.taken_late);
    }
}

/// One direction of a modelled path (see the [module](super) docs).
///
/// A frame offered at `now` meets, in this order: random loss and bursty
/// loss (as a router's forwarding path drops before its egress queue, so a
/// lost frame takes no share of the rate); the drop-tail queue, which
/// holds whatever the rate limit has not yet sent; serialization at the
/// rate; then the one-way delay, jitter and the reordering hold. Offers
/// must come in non-decreasing `now`; an earlier one is treated as now.
#[derive(Debug, Clone)]
pub struct LinkModel {
    cfg: LinkModelConfig,
    rng: SplitMix64,
    /// The Gilbert-Elliott chain is in its bad state.
    bad: bool,
    /// When the rate limit finishes sending what it has accepted.
    busy_until: Option<Instant>,
    counters: LinkCounters,
}

impl LinkModel {
    /// A model of `cfg` with its own random stream from `seed`. Settings
    /// outside their range are clamped as they are used (a probability
    /// above 1 acts as 1); call [`LinkModelConfig::validate`] to refuse them.
    pub fn new(cfg: LinkModelConfig, seed: u64) -> Self {
        LinkModel {
            cfg,
            rng: SplitMix64::new(seed),
            bad: false,
            busy_until: None,
            counters: LinkCounters::default(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &LinkModelConfig {
        &self.cfg
    }

    /// What the model has done so far.
    pub fn counters(&self) -> LinkCounters {
        self.counters
    }

    /// Bytes waiting for the rate limit at `now`, the one being sent
    /// included (0 without a rate).
    pub fn queued_bytes(&self, now: Instant) -> u64 {
        match (self.cfg.rate_bps, self.busy_until) {
            (Some(rate), Some(busy)) => {
                let left = busy.saturating_duration_since(now).as_nanos();
                (left * u128::from(rate) / 8 / 1_000_000_000) as u64
            }
            _ => 0,
        }
    }

    /// Decides the fate of a frame of `len` bytes offered at `now`.
    pub fn offer(&mut self, now: Instant, len: usize) -> Verdict {
        let c = &mut self.counters;
        c.frames_in += 1;
        c.bytes_in += len as u64;
        if self.rng.chance(self.cfg.loss) {
            self.counters.lost_random += 1;
            return Verdict::Dropped(Drop::Random);
        }
        if self.burst_loses() {
            self.counters.lost_burst += 1;
            return Verdict::Dropped(Drop::Burst);
        }
        let Some(departure) = self.enqueue(now, len) else {
            self.counters.overflowed += 1;
            return Verdict::Dropped(Drop::QueueFull);
        };
        let mut at = departure + self.cfg.delay;
        if !self.cfg.jitter.is_zero() {
            let span = u64::try_from(self.cfg.jitter.as_nanos()).unwrap_or(u64::MAX);
            at += Duration::from_nanos(self.rng.below(span.saturating_add(1)));
        }
        if let Some(r) = self.cfg.reorder {
            if self.rng.chance(r.probability) {
                at += r.hold;
            }
        }
        self.counters.delivered += 1;
        self.counters.delivered_bytes += len as u64;
        Verdict::Deliver(at)
    }

    /// Steps the Gilbert-Elliott chain (when there is one) and draws the
    /// frame's loss in the state it lands in.
    fn burst_loses(&mut self) -> bool {
        let Some(g) = self.cfg.burst else {
            return false;
        };
        let flip = if self.bad {
            g.bad_to_good
        } else {
            g.good_to_bad
        };
        if self.rng.chance(flip) {
            self.bad = !self.bad;
        }
        self.rng
            .chance(if self.bad { g.loss_bad } else { g.loss_good })
    }

    /// Puts `len` bytes behind the rate limit; the instant its last bit
    /// leaves, or `None` if the queue has no room. Without a rate it leaves
    /// at once. The queue is not stored: at a fixed rate the bytes still
    /// waiting are the time the limit stays busy, times the rate.
    fn enqueue(&mut self, now: Instant, len: usize) -> Option<Instant> {
        let Some(rate) = self.cfg.rate_bps.filter(|&r| r > 0) else {
            return Some(now);
        };
        if let Some(limit) = self.cfg.queue_bytes {
            if self.queued_bytes(now).saturating_add(len as u64) > limit as u64 {
                return None;
            }
        }
        let start = self.busy_until.map_or(now, |b| b.max(now));
        self.counters.queue_delay.record(start - now);
        // Rounded up, so a run of frames never leaves faster than the rate.
        let bits = len as u128 * 8 * 1_000_000_000;
        let nanos = bits.div_ceil(u128::from(rate));
        let done = start + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
        self.busy_until = Some(done);
        Some(done)
    }
}
