//! Percentiles of latency samples, shared by the RDMA runs and the raw
//! TCP baselines so both report the same statistic.

use std::time::Duration;

/// Nearest-rank percentile of sorted samples, in microseconds.
pub(crate) fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let s: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile(&s, 50.0), 50.0);
        assert_eq!(percentile(&s, 99.0), 99.0);
        assert_eq!(percentile(&s[..1], 99.0), 1.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }
}
