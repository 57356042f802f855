//! Bursty loss: the two-state Gilbert-Elliott channel.

/// A Markov chain of a good and a bad state, each with its own loss
/// probability; the state moves once per frame offered. Loss then comes in
/// runs whose mean length is `1 / bad_to_good` when the bad state loses
/// everything, as on a path that fades or a queue that overflows in
/// spells, which independent loss cannot model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GilbertElliott {
    /// Probability of moving from good to bad, per frame.
    pub good_to_bad: f64,
    /// Probability of moving from bad to good, per frame.
    pub bad_to_good: f64,
    /// Probability a frame is lost in the good state.
    pub loss_good: f64,
    /// Probability a frame is lost in the bad state.
    pub loss_bad: f64,
}

impl GilbertElliott {
    /// The Gilbert special case (nothing lost in the good state, everything
    /// in the bad one) with a long-run loss rate of `rate` and runs of
    /// `mean_burst` frames on average. `None` unless `0 < rate < 1` and
    /// `mean_burst >= 1`, or if the rate needs more than one move to the
    /// bad state per frame (`rate / (1 - rate) > 1 / mean_burst` fails the
    /// other way round: a burst of 1 caps the rate at 50 %).
    pub fn with_rate_and_burst(rate: f64, mean_burst: f64) -> Option<Self> {
        let usable = rate > 0.0 && rate < 1.0 && mean_burst >= 1.0 && mean_burst.is_finite();
        if !usable {
            return None;
        }
        let bad_to_good = 1.0 / mean_burst;
        // Stationary P(bad) = p / (p + r) = rate  =>  p = r * rate / (1 - rate).
        let good_to_bad = bad_to_good * rate / (1.0 - rate);
        (good_to_bad <= 1.0).then_some(GilbertElliott {
            good_to_bad,
            bad_to_good,
            loss_good: 0.0,
            loss_bad: 1.0,
        })
    }

    /// The long-run share of frames lost: the stationary probability of
    /// each state times its loss probability.
    pub fn stationary_loss(&self) -> f64 {
        let (p, r) = (self.good_to_bad, self.bad_to_good);
        if p + r <= 0.0 {
            return self.loss_good;
        }
        (r * self.loss_good + p * self.loss_bad) / (p + r)
    }

    /// Whether every probability lies in `0..=1`.
    pub fn is_valid(&self) -> bool {
        [
            self.good_to_bad,
            self.bad_to_good,
            self.loss_good,
            self.loss_bad,
        ]
        .iter()
        .all(|p| (0.0..=1.0).contains(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_and_burst_give_the_chain_back() {
        let g = GilbertElliott::with_rate_and_burst(0.01, 4.0).unwrap();
        assert!((g.stationary_loss() - 0.01).abs() < 1e-12);
        assert!((g.bad_to_good - 0.25).abs() < 1e-12);
        assert!(g.is_valid());
    }

    #[test]
    fn impossible_settings_are_refused() {
        assert!(GilbertElliott::with_rate_and_burst(0.0, 4.0).is_none());
        assert!(GilbertElliott::with_rate_and_burst(1.0, 4.0).is_none());
        assert!(GilbertElliott::with_rate_and_burst(0.1, 0.5).is_none());
        assert!(GilbertElliott::with_rate_and_burst(f64::NAN, 2.0).is_none());
        assert!(GilbertElliott::with_rate_and_burst(0.6, 1.0).is_none());
        assert!(GilbertElliott::with_rate_and_burst(0.5, 1.0).is_some());
    }
}
