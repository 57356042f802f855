//! perftest's duration mode as a clock: `margin` seconds of warm-up, a
//! sample window of `duration - 2 * margin` seconds in which completions
//! count, `margin` seconds of cool-down, then the end (perftest's
//! `catch_alarm` states, driven by `alarm()` there and by `Instant`s here).

use std::time::{Duration, Instant};

/// Where a duration run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    WarmUp,
    Sample,
    CoolDown,
    End,
}

#[derive(Debug, Clone, Copy)]
pub struct Phases {
    start: Instant,
    margin: Duration,
    sample: Duration,
}

impl Phases {
    /// `duration` whole seconds as perftest takes them, margin a quarter of
    /// it rounded down (perftest's default), starting `now`.
    pub fn new(now: Instant, duration: Duration) -> Phases {
        let secs = duration.as_secs().max(1);
        let margin = Duration::from_secs(secs / 4);
        let total = Duration::from_secs(secs);
        Phases {
            start: now,
            margin,
            sample: total - 2 * margin,
        }
    }

    pub fn state(&self, now: Instant) -> State {
        let t = now.saturating_duration_since(self.start);
        if t < self.margin {
            State::WarmUp
        } else if t < self.margin + self.sample {
            State::Sample
        } else if t < 2 * self.margin + self.sample {
            State::CoolDown
        } else {
            State::End
        }
    }

    /// The sample window's length: what duration results are divided by.
    pub fn sample(&self) -> Duration {
        self.sample
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn margins_are_a_quarter_of_whole_seconds() {
        let t0 = Instant::now();
        let p = Phases::new(t0, Duration::from_secs(2));
        assert_eq!(
            p.sample(),
            Duration::from_secs(2),
            "2/4 rounds to no margin"
        );
        assert_eq!(p.state(t0), State::Sample);
        assert_eq!(p.state(t0 + Duration::from_millis(1999)), State::Sample);
        assert_eq!(p.state(t0 + Duration::from_secs(2)), State::End);
        let p = Phases::new(t0, Duration::from_secs(5));
        assert_eq!(p.sample(), Duration::from_secs(3));
        assert_eq!(p.state(t0 + Duration::from_millis(500)), State::WarmUp);
        assert_eq!(p.state(t0 + Duration::from_millis(1500)), State::Sample);
        assert_eq!(p.state(t0 + Duration::from_millis(4500)), State::CoolDown);
        assert_eq!(p.state(t0 + Duration::from_secs(5)), State::End);
    }
}
