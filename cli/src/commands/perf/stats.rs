//! Results: bandwidth and message rate, latency percentiles, and how they
//! are printed (a perftest-like table, and one JSON object per line).

use std::fmt::Write as _;
use std::time::Duration;

use super::op::Op;
use super::wire::Verdict;

/// Latency figures in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatStats {
    pub min: f64,
    pub max: f64,
    pub avg: f64,
    pub p50: f64,
    pub p99: f64,
    pub stdev: f64,
}

impl LatStats {
    /// Figures over `samples` (each a round trip), each divided by
    /// `divisor` (2 for a ping-pong's one-way time). None if empty.
    pub fn from_samples(samples: &mut [Duration], divisor: u32) -> Option<LatStats> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let d = f64::from(divisor.max(1));
        let us = |x: Duration| x.as_secs_f64() * 1e6 / d;
        let n = samples.len() as f64;
        let avg = samples.iter().map(|&s| us(s)).sum::<f64>() / n;
        let var = samples.iter().map(|&s| (us(s) - avg).powi(2)).sum::<f64>() / n;
        Some(LatStats {
            min: us(samples[0]),
            max: us(samples[samples.len() - 1]),
            avg,
            p50: us(samples[nearest_rank(samples.len(), 50.0)]),
            p99: us(samples[nearest_rank(samples.len(), 99.0)]),
            stdev: var.sqrt(),
        })
    }
}

/// Index of the `p`th percentile in a sorted list of `n` (nearest rank).
pub fn nearest_rank(n: usize, p: f64) -> usize {
    if n == 0 {
        return 0;
    }
    let rank = (p / 100.0 * n as f64).ceil() as usize;
    rank.clamp(1, n) - 1
}

/// The outcome of one run, as one side saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub op: Op,
    pub role: &'static str,
    pub size: usize,
    pub qps: usize,
    pub tx_depth: usize,
    /// Messages (or ping-pong iterations) completed.
    pub iters: u64,
    /// Payload bytes moved in the measured direction.
    pub bytes: u64,
    pub secs: f64,
    pub lat: Option<LatStats>,
    /// Whether the data checked at the end was right.
    pub verdict: Verdict,
    /// Where the counts come from: "local", or "peer" when the server
    /// repeats the client's figures (it cannot see WRITEs or READs).
    pub source: &'static str,
    /// Send tests: messages the server received, as it reported.
    pub peer_msgs: Option<u64>,
}

impl Report {
    pub fn gbps(&self) -> f64 {
        if self.secs > 0.0 {
            self.bytes as f64 * 8.0 / self.secs / 1e9
        } else {
            0.0
        }
    }

    pub fn msgs_per_s(&self) -> f64 {
        if self.secs > 0.0 {
            self.iters as f64 / self.secs
        } else {
            0.0
        }
    }

    /// A perftest-like header and result line.
    pub fn table(&self) -> String {
        let mut s = String::new();
        if let Some(l) = &self.lat {
            let _ = writeln!(
                s,
                " {:<8} {:<12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}",
                "#bytes",
                "#iterations",
                "t_min[usec]",
                "t_max[usec]",
                "t_typical",
                "t_avg[usec]",
                "t_stdev",
                "99%[usec]"
            );
            let _ = write!(
                s,
                " {:<8} {:<12} {:>12.2} {:>12.2} {:>12.2} {:>12.2} {:>12.2} {:>12.2}",
                self.size, self.iters, l.min, l.max, l.p50, l.avg, l.stdev, l.p99
            );
        } else {
            let _ = writeln!(
                s,
                " {:<8} {:<12} {:>20} {:>16}",
                "#bytes", "#iterations", "BW average[Gb/sec]", "MsgRate[Mpps]"
            );
            let _ = write!(
                s,
                " {:<8} {:<12} {:>20.3} {:>16.6}",
                self.size,
                self.iters,
                self.gbps(),
                self.msgs_per_s() / 1e6
            );
        }
        s
    }

    /// One JSON object on one line.
    pub fn json(&self) -> String {
        let mut s = format!(
            "{{\"op\":\"{}\",\"role\":\"{}\",\"size\":{},\"qps\":{},\"tx_depth\":{},\"iters\":{},\"bytes\":{},\"secs\":{},\"gbps\":{},\"msgs_per_s\":{},\"verified\":{},\"source\":\"{}\"",
            self.op.name(),
            self.role,
            self.size,
            self.qps,
            self.tx_depth,
            self.iters,
            self.bytes,
            num(self.secs),
            num(self.gbps()),
            num(self.msgs_per_s()),
            self.verdict.json(),
            self.source,
        );
        if let Some(m) = self.peer_msgs {
            let _ = write!(s, ",\"peer_msgs\":{m}");
        }
        if let Some(l) = &self.lat {
            let kind = if self.op.halves_round_trip() {
                "half_round_trip"
            } else {
                "round_trip"
            };
            let _ = write!(
                s,
                ",\"lat_kind\":\"{kind}\",\"lat_us_min\":{},\"lat_us_avg\":{},\"lat_us_p50\":{},\"lat_us_p99\":{},\"lat_us_max\":{},\"lat_us_stdev\":{}",
                num(l.min),
                num(l.avg),
                num(l.p50),
                num(l.p99),
                num(l.max),
                num(l.stdev)
            );
        }
        s.push('}');
        s
    }
}

/// A JSON number (JSON has no NaN or infinity).
fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.6}")
    } else {
        "0".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&x| Duration::from_micros(x)).collect()
    }

    #[test]
    fn nearest_rank_percentiles() {
        assert_eq!(nearest_rank(100, 50.0), 49);
        assert_eq!(nearest_rank(100, 99.0), 98);
        assert_eq!(nearest_rank(1, 99.0), 0);
        assert_eq!(nearest_rank(10, 99.0), 9);
        assert_eq!(nearest_rank(3, 50.0), 1);
        assert_eq!(nearest_rank(0, 50.0), 0);
    }

    #[test]
    fn latency_figures() {
        let mut s = us(&[4, 2, 10, 6, 8]);
        let l = LatStats::from_samples(&mut s, 2).unwrap();
        assert_eq!((l.min, l.max, l.avg, l.p50), (1.0, 5.0, 3.0, 3.0));
        assert_eq!(l.p99, 5.0);
        assert!((l.stdev - 2f64.sqrt()).abs() < 1e-9);
        let l = LatStats::from_samples(&mut us(&[7]), 1).unwrap();
        assert_eq!(
            (l.min, l.p50, l.p99, l.max, l.stdev),
            (7.0, 7.0, 7.0, 7.0, 0.0)
        );
        assert!(LatStats::from_samples(&mut [], 1).is_none());
    }

    fn report() -> Report {
        Report {
            op: Op::Write,
            role: "client",
            size: 65536,
            qps: 2,
            tx_depth: 128,
            iters: 1000,
            bytes: 65_536_000,
            secs: 0.5,
            lat: None,
            verdict: Verdict::Match,
            source: "local",
            peer_msgs: None,
        }
    }

    #[test]
    fn bandwidth_and_rate() {
        let r = report();
        assert!((r.gbps() - 1.048576).abs() < 1e-9);
        assert_eq!(r.msgs_per_s(), 2000.0);
        let zero = Report {
            secs: 0.0,
            ..report()
        };
        assert_eq!((zero.gbps(), zero.msgs_per_s()), (0.0, 0.0));
    }

    #[test]
    fn json_has_the_promised_fields() {
        let j = report().json();
        assert!(j.starts_with("{\"op\":\"write\",\"role\":\"client\",\"size\":65536,\"qps\":2,"));
        assert!(j.contains("\"gbps\":1.048576"));
        assert!(j.contains("\"msgs_per_s\":2000.000000"));
        assert!(j.contains("\"verified\":true"));
        assert!(j.ends_with('}') && !j.contains('\n'));
        assert!(!j.contains("lat_us"));

        let mut lat = Report {
            op: Op::SendLat,
            lat: LatStats::from_samples(&mut us(&[10, 20]), 2),
            verdict: Verdict::NotApplicable,
            peer_msgs: Some(3),
            ..report()
        };
        let j = lat.json();
        for key in [
            "\"lat_kind\":\"half_round_trip\"",
            "\"lat_us_p50\":5.000000",
            "\"lat_us_p99\":10.000000",
            "\"lat_us_avg\":7.500000",
            "\"lat_us_max\":10.000000",
            "\"verified\":null",
            "\"peer_msgs\":3",
        ] {
            assert!(j.contains(key), "{key} in {j}");
        }
        lat.op = Op::ReadLat;
        assert!(lat.json().contains("\"lat_kind\":\"round_trip\""));
    }

    #[test]
    fn non_finite_numbers_never_reach_json() {
        assert_eq!(num(f64::NAN), "0");
        assert_eq!(num(f64::INFINITY), "0");
    }

    #[test]
    fn tables() {
        let t = report().table();
        assert!(t.contains("BW average[Gb/sec]"));
        assert!(t.lines().nth(1).unwrap().trim_start().starts_with("65536"));
        let l = Report {
            op: Op::WriteLat,
            lat: LatStats::from_samples(&mut us(&[10]), 2),
            ..report()
        };
        assert!(l.table().contains("t_avg[usec]"));
    }
}
