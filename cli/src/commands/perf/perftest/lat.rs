//! The latency tests' data phase, as perftest's `run_iter_lat_write`,
//! `run_iter_lat` (READ) and `run_iter_lat_send` run it: one message at a
//! time, each side stamping its posts; the time between consecutive posts
//! is one round trip.

use std::time::{Duration, Instant};

use verbs::{WcOpcode, WorkCompletion};

use super::super::error::PerfError;
use super::bw::Limit;
use super::control::Side;
use super::phase::{Phases, State};
use super::report::{LatDurRow, LatRow, Row};
use super::resources::TestQp;
use super::wire::PingpongDest;

#[derive(Debug, Clone, Copy)]
pub struct LatParams {
    pub size: usize,
    pub limit: Limit,
    pub stall: Duration,
    pub side: Side,
}

/// Completions and stamps of one latency phase.
struct Run<'a> {
    t: &'a TestQp,
    p: LatParams,
    phases: Option<Phases>,
    stamps: Vec<Instant>,
    sent_done: u64,
    recvs: Vec<u64>,
    sampled: u64,
    last_progress: Instant,
}

impl<'a> Run<'a> {
    fn new(t: &'a TestQp, p: LatParams, start_clock: bool) -> Run<'a> {
        let now = Instant::now();
        let phases = match p.limit {
            Limit::For(d) if start_clock => Some(Phases::new(now, d)),
            _ => None,
        };
        Run {
            t,
            p,
            phases,
            stamps: Vec::new(),
            sent_done: 0,
            recvs: Vec::new(),
            sampled: 0,
            last_progress: now,
        }
    }

    fn iters(&self) -> u64 {
        match self.p.limit {
            Limit::Iters(n) => n,
            Limit::For(_) => u64::MAX,
        }
    }

    fn timed(&self) -> bool {
        matches!(self.p.limit, Limit::Iters(_))
    }

    fn ended(&self) -> bool {
        self.phases
            .is_some_and(|ph| ph.state(Instant::now()) == State::End)
    }

    fn in_sample(&self) -> bool {
        self.phases
            .is_some_and(|ph| ph.state(Instant::now()) == State::Sample)
    }

    /// Takes what completed; fails on an error or a stall.
    fn pump(&mut self) -> Result<usize, PerfError> {
        let mut wcs = [WorkCompletion::FILLER; 16];
        let n = self.t.cq.poll(&mut wcs)?;
        let now = Instant::now();
        for wc in &wcs[..n] {
            PerfError::check_completion(wc)?;
            if wc.opcode == WcOpcode::Recv {
                self.recvs.push(wc.wr_id);
            } else {
                self.sent_done += 1;
            }
        }
        if n > 0 {
            self.last_progress = now;
        } else if now.saturating_duration_since(self.last_progress) > self.p.stall {
            return Err(PerfError::Stalled(self.p.stall.as_secs_f64()));
        }
        Ok(n)
    }

    fn stamp(&mut self) {
        if self.timed() {
            self.stamps.push(Instant::now());
        }
    }

    fn row(mut self, rtt_factor: u32) -> Row {
        let size = self.p.size as u64;
        match self.phases {
            Some(ph) => Row::LatDur(LatDurRow::new(size, self.sampled, ph.sample(), rtt_factor)),
            None => {
                let mut deltas: Vec<Duration> = self
                    .stamps
                    .windows(2)
                    .map(|w| w[1].saturating_duration_since(w[0]))
                    .collect();
                let iters = self.stamps.len() as u64;
                self.stamps.clear();
                Row::Lat(LatRow::from_deltas(size, iters, &mut deltas, rtt_factor))
            }
        }
    }
}

/// write_lat: each side WRITEs `size` bytes ending in its iteration count
/// and waits for the peer's WRITE to end in the same count. The server
/// writes first.
pub fn write_lat(t: &TestQp, peer: &PingpongDest, p: LatParams) -> Result<Row, PerfError> {
    let mut r = Run::new(t, p, true);
    let n = r.iters();
    let duration = !r.timed();
    let (mut scnt, mut rcnt) = (0u64, 0u64);
    while scnt < n || rcnt < n || (duration && !r.ended()) {
        if (rcnt < n || duration) && !(scnt < 1 && p.side == Side::Server) {
            rcnt += 1;
            while t.polled_byte(p.size) != rcnt as u8 && !r.ended() {
                r.pump()?;
            }
        }
        if scnt < n || duration {
            r.stamp();
            scnt += 1;
            t.set_post_byte(p.size, scnt as u8);
            t.post_write(scnt, p.size, peer)?;
        }
        if duration && r.ended() {
            break;
        }
        while r.sent_done < scnt && !r.ended() {
            r.pump()?;
        }
        if r.in_sample() {
            r.sampled += 1;
        }
    }
    Ok(r.row(2))
}

/// read_lat (the client): one READ of `size` bytes at a time.
pub fn read_lat(t: &TestQp, peer: &PingpongDest, p: LatParams) -> Result<Row, PerfError> {
    let mut r = Run::new(t, p, true);
    let n = r.iters();
    let duration = !r.timed();
    let mut scnt = 0u64;
    while (scnt < n && !duration) || (duration && !r.ended()) {
        r.stamp();
        scnt += 1;
        t.post_read(scnt, p.size, peer)?;
        while r.sent_done < scnt {
            r.pump()?;
        }
        if r.in_sample() {
            r.sampled += 1;
        }
    }
    Ok(r.row(1))
}

/// send_lat: SEND/receive ping-pong; the client sends first. Receives are
/// re-posted as they complete; the clock of a duration run starts at the
/// first receive, as perftest's does.
pub fn send_lat(t: &TestQp, p: LatParams) -> Result<Row, PerfError> {
    let mut r = Run::new(t, p, false);
    let n = r.iters();
    let duration = !r.timed();
    let (mut scnt, mut rcnt) = (0u64, 0u64);
    loop {
        if !(scnt < n || rcnt < n || (duration && !r.ended())) {
            break;
        }
        if (rcnt < n || duration) && !(scnt < 1 && p.side == Side::Client) {
            while r.recvs.is_empty() && !r.ended() {
                r.pump()?;
            }
            if let Some(id) = r.recvs.pop() {
                if r.phases.is_none() {
                    if let Limit::For(d) = p.limit {
                        r.phases = Some(Phases::new(Instant::now(), d));
                    }
                }
                rcnt += 1;
                if r.in_sample() {
                    r.sampled += 1;
                }
                t.post_recv(id, t.max_size)?;
            }
        }
        if scnt < n || (duration && !r.ended()) {
            r.stamp();
            scnt += 1;
            t.post_send(scnt, p.size)?;
        }
        if duration && r.ended() {
            break;
        }
        // Keep the send queue from filling: one SEND in flight at a time.
        while r.sent_done + 1 < scnt {
            r.pump()?;
        }
    }
    while r.sent_done < scnt {
        r.pump()?;
    }
    Ok(r.row(2))
}
