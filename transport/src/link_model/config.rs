//! What a modelled path does, and the named paths.

use std::time::Duration;

use super::GilbertElliott;

/// Frames held back so that later ones overtake them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reorder {
    /// Probability a frame is held back.
    pub probability: f64,
    /// How long it is held beyond its normal delivery instant.
    pub hold: Duration,
}

/// The impairments of one direction of a path.
///
/// The default is a perfect wire: no delay, no loss, no rate limit.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LinkModelConfig {
    /// One-way propagation delay added to every delivered frame.
    pub delay: Duration,
    /// Extra delay drawn uniformly from `0..=jitter` per frame. Frames
    /// overtake each other when it exceeds their spacing, as with netem.
    pub jitter: Duration,
    /// Probability each frame is lost, independently of the others.
    pub loss: f64,
    /// Bursty loss on top of `loss`.
    pub burst: Option<GilbertElliott>,
    /// Bottleneck rate in bits per second; `None` serializes in no time.
    pub rate_bps: Option<u64>,
    /// Bytes the bottleneck queue holds (the frame being sent included)
    /// before it drops new arrivals; `None` never drops. Only meaningful
    /// with a rate: without one the queue never fills.
    pub queue_bytes: Option<usize>,
    /// Occasional reordering on top of jitter.
    pub reorder: Option<Reorder>,
}

/// A setting a [`LinkModelConfig`] cannot have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LinkConfigError {
    /// A probability outside `0..=1` (or not a number).
    #[error("{0} must be a probability between 0 and 1")]
    Probability(&'static str),
    /// A rate of zero bits per second would never deliver anything.
    #[error("the rate must be above 0 bit/s")]
    ZeroRate,
}

impl LinkModelConfig {
    /// Checks every probability and the rate.
    pub fn validate(&self) -> Result<(), LinkConfigError> {
        let prob = |p: f64, what| {
            if (0.0..=1.0).contains(&p) {
                Ok(())
            } else {
                Err(LinkConfigError::Probability(what))
            }
        };
        prob(self.loss, "loss")?;
        if let Some(g) = &self.burst {
            if !g.is_valid() {
                return Err(LinkConfigError::Probability("each Gilbert-Elliott setting"));
            }
        }
        if let Some(r) = &self.reorder {
            prob(r.probability, "reorder")?;
        }
        if self.rate_bps == Some(0) {
            return Err(LinkConfigError::ZeroRate);
        }
        Ok(())
    }

    /// Whether the model leaves every frame as it is and delivers it at once.
    pub fn is_clean(&self) -> bool {
        self.delay.is_zero()
            && self.jitter.is_zero()
            && self.loss <= 0.0
            && self.burst.is_none()
            && self.rate_bps.is_none()
            && self.reorder.is_none_or(|r| r.probability <= 0.0)
    }

    /// Bytes one round trip holds at the rate: the bandwidth-delay product
    /// of a path with this model in both directions (`None` without a rate).
    pub fn bdp_bytes(&self) -> Option<u64> {
        let rtt = 2 * self.delay;
        self.rate_bps
            .map(|r| (u128::from(r) * rtt.as_nanos() / 8 / 1_000_000_000) as u64)
    }
}

/// Named paths, each with a queue of one bandwidth-delay product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// 1 ms RTT, 1 Gbit/s, 125 KB queue.
    Lan,
    /// 20 ms RTT, 1 Gbit/s, 2.5 MB queue.
    Wan,
    /// 40 ms RTT, 100 Mbit/s, 500 KB queue.
    LossyWan,
}

impl Profile {
    /// Every profile, in the order above.
    pub const ALL: [Profile; 3] = [Profile::Lan, Profile::Wan, Profile::LossyWan];

    /// The name used on command lines and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Lan => "lan",
            Profile::Wan => "wan",
            Profile::LossyWan => "lossy-wan",
        }
    }

    /// The profile called `name`.
    pub fn from_name(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Round-trip time, split evenly over the two directions.
    pub fn rtt(self) -> Duration {
        match self {
            Profile::Lan => Duration::from_millis(1),
            Profile::Wan => Duration::from_millis(20),
            Profile::LossyWan => Duration::from_millis(40),
        }
    }

    /// Bottleneck rate in bits per second.
    pub fn rate_bps(self) -> u64 {
        match self {
            Profile::Lan | Profile::Wan => 1_000_000_000,
            Profile::LossyWan => 100_000_000,
        }
    }

    /// The model of one direction: half the RTT, the rate, and a queue of
    /// one bandwidth-delay product; no loss (add it on top).
    pub fn config(self) -> LinkModelConfig {
        let mut cfg = LinkModelConfig {
            delay: self.rtt() / 2,
            rate_bps: Some(self.rate_bps()),
            ..LinkModelConfig::default()
        };
        cfg.queue_bytes = cfg.bdp_bytes().map(|b| b as usize);
        cfg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_have_a_queue_of_one_bdp() {
        let q = |p: Profile| p.config().queue_bytes.unwrap();
        assert_eq!(q(Profile::Lan), 125_000);
        assert_eq!(q(Profile::Wan), 2_500_000);
        assert_eq!(q(Profile::LossyWan), 500_000);
        for p in Profile::ALL {
            assert_eq!(Profile::from_name(p.name()), Some(p));
            assert_eq!(p.config().delay * 2, p.rtt());
            assert!(p.config().validate().is_ok());
            assert!(!p.config().is_clean());
        }
        assert_eq!(Profile::from_name("moon"), None);
    }

    #[test]
    fn bad_settings_are_typed_errors() {
        let bad = |c: LinkModelConfig| c.validate().unwrap_err();
        let base = LinkModelConfig::default;
        assert!(base().is_clean());
        assert_eq!(
            bad(LinkModelConfig {
                loss: 1.5,
                ..base()
            }),
            LinkConfigError::Probability("loss")
        );
        assert_eq!(
            bad(LinkModelConfig {
                loss: f64::NAN,
                ..base()
            }),
            LinkConfigError::Probability("loss")
        );
        assert_eq!(
            bad(LinkModelConfig {
                rate_bps: Some(0),
                ..base()
            }),
            LinkConfigError::ZeroRate
        );
        let reorder = Some(Reorder {
            probability: -0.1,
            hold: Duration::ZERO,
        });
        assert!(LinkModelConfig { reorder, ..base() }.validate().is_err());
    }
}
