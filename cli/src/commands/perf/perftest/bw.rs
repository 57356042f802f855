//! The bandwidth tests' data phase, as perftest's `run_iter_bw` (the
//! sender) and `run_iter_bw_server` (the SEND receiver) run it: keep
//! `tx_depth` requests outstanding, count completions, and in duration mode
//! count only those of the sample window.

use std::time::{Duration, Instant};

use verbs::{WcOpcode, WorkCompletion};

use super::super::error::PerfError;
use super::super::op::Op;
use super::phase::{Phases, State};
use super::report::{BwRow, Unit};
use super::resources::TestQp;
use super::wire::PingpongDest;

/// When a data phase ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Iters(u64),
    For(Duration),
}

#[derive(Debug, Clone, Copy)]
pub struct BwParams {
    pub op: Op,
    pub size: usize,
    pub limit: Limit,
    pub tx_depth: usize,
    /// SEND: the receiver's posted receives, which the credits pace.
    pub rx_depth: usize,
    pub stall: Duration,
    pub unit: Unit,
}

/// One size's outcome.
#[derive(Debug, Clone)]
pub struct BwResult {
    pub row: BwRow,
    /// Messages over the whole phase, warm-up and cool-down included.
    pub total: u64,
}

/// perftest's `cq_mod`: completions are looked at in groups this large
/// when the peak is computed.
const CQ_MOD: usize = 100;

/// Ids of credit WRITEs, apart from the data's sequence numbers.
const CREDIT_ID: u64 = 1 << 62;

/// The sender: WRITEs, READs or SENDs `size` bytes to `peer` until the
/// limit.
pub fn sender(t: &TestQp, peer: &PingpongDest, p: &BwParams) -> Result<BwResult, PerfError> {
    let mut wcs = [WorkCompletion::FILLER; 64];
    let depth = match p.limit {
        Limit::Iters(n) => p.tx_depth.min(n as usize).max(1),
        Limit::For(_) => p.tx_depth.max(1),
    };
    let rx_window = p.rx_depth.max(1) as u32;
    let start = Instant::now();
    let phases = match p.limit {
        Limit::For(d) => Some(Phases::new(start, d)),
        Limit::Iters(_) => None,
    };
    let want = match p.limit {
        Limit::Iters(n) => n,
        Limit::For(_) => u64::MAX,
    };
    let timed = phases.is_none();
    let mut posted_at: Vec<Instant> = Vec::new();
    let mut done_at: Vec<Instant> = Vec::new();
    let (mut posted, mut completed, mut sampled) = (0u64, 0u64, 0u64);
    let mut last_progress = start;
    loop {
        let now = Instant::now();
        let state = phases.map(|ph| ph.state(now));
        let ended = state == Some(State::End);
        if (timed && completed >= want) || (ended && completed == posted) {
            break;
        }
        while posted < want && !ended && (posted - completed) < depth as u64 {
            if p.op == Op::Send {
                let window = (posted as u32)
                    .wrapping_add(1)
                    .wrapping_sub(t.credit_value());
                if window >= rx_window {
                    break;
                }
            }
            match p.op {
                Op::Write => t.post_write(posted, p.size, peer)?,
                Op::Read => t.post_read(posted, p.size, peer)?,
                _ => t.post_send(posted, p.size)?,
            }
            if timed {
                posted_at.push(Instant::now());
            }
            posted += 1;
        }
        let n = t.cq.poll(&mut wcs)?;
        let now = Instant::now();
        for wc in &wcs[..n] {
            PerfError::check_completion(wc)?;
            if wc.opcode == WcOpcode::Recv {
                continue;
            }
            completed += 1;
            if timed {
                done_at.push(now);
            }
            if phases.map(|ph| ph.state(now)) == Some(State::Sample) {
                sampled += 1;
            }
        }
        if n > 0 {
            last_progress = now;
        } else if now.saturating_duration_since(last_progress) > p.stall {
            return Err(PerfError::Stalled(p.stall.as_secs_f64()));
        }
    }
    let size = p.size as u64;
    let row = match phases {
        Some(ph) => BwRow::new(size, sampled, ph.sample().as_secs_f64(), None, p.unit),
        None => {
            let first = posted_at.first().copied().unwrap_or(start);
            let last = done_at.last().copied().unwrap_or(first);
            let secs = last.saturating_duration_since(first).as_secs_f64();
            BwRow::new(
                size,
                completed,
                secs,
                best_time(&posted_at, &done_at),
                p.unit,
            )
        }
    };
    Ok(BwResult {
        row,
        total: completed,
    })
}

/// perftest's peak: the shortest time per message over any run of
/// messages from a post to a later group's completion.
fn best_time(posted: &[Instant], done: &[Instant]) -> Option<Duration> {
    let n = posted.len().min(done.len());
    if n == 0 {
        return None;
    }
    // Bounded work on long runs: every i up to 20000 posts, sampled beyond.
    let step = (n / 20_000).max(1);
    let mut best: Option<Duration> = None;
    for i in (0..n).step_by(step) {
        let mut j = (i + 1).div_ceil(CQ_MOD) * CQ_MOD - 1;
        let mut consider = |j: usize| {
            let t = done[j].saturating_duration_since(posted[i]) / (j - i + 1) as u32;
            if best.is_none_or(|b| t < b) {
                best = Some(t);
            }
        };
        while j < n {
            consider(j);
            j += CQ_MOD;
        }
        if !n.is_multiple_of(CQ_MOD) {
            consider(n - 1);
        }
    }
    best
}

/// The SEND receiver: counts receives, re-posts them, and RDMA WRITEs its
/// count into the sender's credit counter every `rx_depth / 3` receives.
/// Its clock starts with the first receive, as perftest's does.
pub fn receiver(
    t: &TestQp,
    peer_credit: &PingpongDest,
    p: &BwParams,
) -> Result<BwResult, PerfError> {
    let mut wcs = [WorkCompletion::FILLER; 64];
    let credit_every = (p.rx_depth / 3).max(1) as u64;
    let want = match p.limit {
        Limit::Iters(n) => n,
        Limit::For(_) => u64::MAX,
    };
    let mut phases: Option<Phases> = None;
    let (mut received, mut sampled, mut credits_out) = (0u64, 0u64, 0u64);
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    let mut last_progress = Instant::now();
    loop {
        let now = Instant::now();
        let ended = match (p.limit, phases) {
            (Limit::For(_), Some(ph)) => ph.state(now) == State::End,
            (Limit::For(_), None) => false,
            (Limit::Iters(_), _) => received >= want,
        };
        if ended && credits_out == 0 {
            break;
        }
        let n = t.cq.poll(&mut wcs)?;
        let now = Instant::now();
        for wc in &wcs[..n] {
            PerfError::check_completion(wc)?;
            match wc.opcode {
                WcOpcode::Recv => {}
                _ => {
                    credits_out = credits_out.saturating_sub(1);
                    continue;
                }
            }
            if ended {
                // Late arrivals after the end: keep the receive posted.
                t.post_recv(wc.wr_id, t.max_size)?;
                continue;
            }
            if first.is_none() {
                first = Some(now);
                if let Limit::For(d) = p.limit {
                    phases = Some(Phases::new(now, d));
                }
            }
            received += 1;
            last = now;
            if phases.map(|ph| ph.state(now)) == Some(State::Sample) {
                sampled += 1;
            }
            t.post_recv(wc.wr_id, t.max_size)?;
            if received % credit_every == 0 {
                t.post_credit(CREDIT_ID | received, received, peer_credit)?;
                credits_out += 1;
            }
        }
        if n > 0 {
            last_progress = now;
        } else if now.saturating_duration_since(last_progress) > p.stall {
            return Err(PerfError::Stalled(p.stall.as_secs_f64()));
        }
    }
    let size = p.size as u64;
    let row = match phases {
        Some(ph) => BwRow::new(size, sampled, ph.sample().as_secs_f64(), None, p.unit),
        None => {
            let secs = first.map_or(0.0, |f| last.saturating_duration_since(f).as_secs_f64());
            BwRow::new(size, received, secs, None, p.unit)
        }
    };
    Ok(BwResult {
        row,
        total: received,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_is_the_best_run_per_message() {
        let t0 = Instant::now();
        let us = |n: u64| t0 + Duration::from_micros(n);
        // 200 messages posted at once; completions 10 us apart, except
        // that the second hundred came 2 us apart.
        let posted: Vec<Instant> = (0..200).map(|_| t0).collect();
        let done: Vec<Instant> = (0..200u64)
            .map(|i| {
                if i < 100 {
                    us(10 * (i + 1))
                } else {
                    us(1000 + 2 * (i - 99))
                }
            })
            .collect();
        let best = best_time(&posted, &done).unwrap();
        // Everything posted at once: the best run is the whole of it,
        // 1200 us over 200 messages; the first hundred alone took 10 us
        // each.
        assert_eq!(best, Duration::from_micros(6));
        let late: Vec<Instant> = (0..200u64).map(|i| us(10 * i)).collect();
        // Posted as they completed: 10 us each, however grouped.
        let done: Vec<Instant> = (0..200u64).map(|i| us(10 * (i + 1))).collect();
        assert_eq!(best_time(&late, &done).unwrap(), Duration::from_micros(10));
        assert_eq!(best_time(&[], &[]), None);
    }
}
