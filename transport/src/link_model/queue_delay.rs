//! How long the frames a model took waited in its queue, as a histogram
//! of fixed size: with the path's fixed delays it gives the round trip a
//! flow kept under load (its median, say), the same way for every stack
//! that crosses the model.

use std::time::Duration;

/// Sub-buckets per power of two: a bucket spans an eighth of an octave,
/// so a value read back is within about 5% of the true one.
const SUB: usize = 8;
/// Octaves of microseconds covered: up to about 67 s.
const OCTAVES: usize = 26;
const BUCKETS: usize = 1 + OCTAVES * SUB;

/// Counts of queueing delays: bucket 0 holds the frames that found the
/// queue empty; above that, eight buckets per power of two microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueDelays {
    buckets: [u64; BUCKETS],
}

impl Default for QueueDelays {
    fn default() -> Self {
        QueueDelays {
            buckets: [0; BUCKETS],
        }
    }
}

fn bucket(d: Duration) -> usize {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    if us == 0 {
        return 0;
    }
    let octave = 63 - us.leading_zeros() as usize;
    if octave >= OCTAVES {
        return BUCKETS - 1;
    }
    // The bits below the leading one pick the sub-bucket.
    let sub = if octave >= 3 {
        ((us >> (octave - 3)) & 7) as usize
    } else {
        ((us << (3 - octave)) & 7) as usize
    };
    1 + octave * SUB + sub
}

/// The middle of bucket `b`, in microseconds.
fn middle(b: usize) -> f64 {
    if b == 0 {
        return 0.0;
    }
    let (octave, sub) = ((b - 1) / SUB, (b - 1) % SUB);
    let base = (1u64 << octave) as f64;
    base * (1.0 + (sub as f64 + 0.5) / SUB as f64)
}

impl QueueDelays {
    /// One frame waited `d` before the rate limit took it.
    pub fn record(&mut self, d: Duration) {
        self.buckets[bucket(d)] += 1;
    }

    /// Frames counted.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The delay below which a share `q` (0..=1) of the frames waited,
    /// to the bucket's resolution; `None` when nothing was counted.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(Duration::from_nanos((middle(b) * 1000.0) as u64));
            }
        }
        None
    }

    /// The median delay.
    pub fn median(&self) -> Option<Duration> {
        self.quantile(0.5)
    }

    /// What was counted after `earlier`, a reading of the same model.
    pub fn since(&self, earlier: &QueueDelays) -> QueueDelays {
        let mut out = *self;
        for (o, e) in out.buckets.iter_mut().zip(&earlier.buckets) {
            *o = o.saturating_sub(*e);
        }
        out
    }

    /// Adds another model's counts.
    pub fn merge(&mut self, other: &QueueDelays) {
        for (o, e) in self.buckets.iter_mut().zip(&other.buckets) {
            *o += e;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_reads_back_within_its_bucket() {
        for us in [
            1u64, 2, 3, 7, 9, 100, 1_000, 12_345, 20_000, 80_000, 1_000_000,
        ] {
            let mut h = QueueDelays::default();
            h.record(Duration::from_micros(us));
            let got = h.median().unwrap().as_secs_f64() * 1e6;
            let err = (got - us as f64).abs() / us as f64;
            assert!(err <= 0.07, "{us} us read back as {got}");
        }
        let mut h = QueueDelays::default();
        h.record(Duration::ZERO);
        assert_eq!(h.median(), Some(Duration::ZERO));
        h.record(Duration::from_secs(1000));
        assert_eq!(h.count(), 2);
        assert_eq!(QueueDelays::default().median(), None);
    }

    #[test]
    fn the_median_is_the_middle_frame() {
        let mut h = QueueDelays::default();
        for _ in 0..10 {
            h.record(Duration::ZERO);
        }
        for _ in 0..11 {
            h.record(Duration::from_millis(20));
        }
        let m = h.median().unwrap();
        assert!(
            m > Duration::from_millis(19) && m < Duration::from_millis(21),
            "{m:?}"
        );
        assert_eq!(h.quantile(0.4), Some(Duration::ZERO));
    }

    #[test]
    fn since_and_merge_are_bucketwise() {
        let mut a = QueueDelays::default();
        a.record(Duration::from_millis(1));
        let before = a;
        a.record(Duration::from_millis(5));
        let span = a.since(&before);
        assert_eq!(span.count(), 1);
        assert!(span.median().unwrap() > Duration::from_millis(4));
        let mut m = before;
        m.merge(&span);
        assert_eq!(m, a);
    }
}
