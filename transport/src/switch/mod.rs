//! A two-sided switch whose crossing is one impaired path.
//!
//! Ports sit on the left or the right. A frame from a left port crosses
//! the left-to-right [`LinkModel`] and reaches the right port that owns
//! its destination MAC address (learned from the frames each port sends),
//! or every right port if that is not known yet; the other direction
//! likewise. Every flow across the switch therefore shares one bottleneck
//! queue per direction, whatever its ports are: a Linux TCP flow between
//! two TAP devices and an RDMA flow between two memory-link hosts meet in
//! the same queue and the same losses. Frames between ports on the same
//! side are not carried.
//!
//! With one TAP port on each side the switch is a forwarder that puts two
//! Linux hosts (in two namespaces) behind exactly the model the memory
//! link applies.

mod port;

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::kernel::sys::ppoll;
use crate::link_model::{
    DelayLine, LinkCounters, LinkModel, LinkModelConfig, QueueDelays, Verdict,
};

pub use port::{Port, TapPort};

/// Which side of the switch a port is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Frames from here cross the left-to-right model.
    Left,
    /// Frames from here cross the right-to-left model.
    Right,
}

impl Side {
    fn index(self) -> usize {
        match self {
            Side::Left => 0,
            Side::Right => 1,
        }
    }
}

/// Frames one step reads from a port at most, so one busy port cannot
/// starve the others or the frames falling due.
const READ_BURST: usize = 256;
/// Frames held per direction at most (queued, in flight or waiting to be
/// written), a bound on memory when the model has no rate.
const HELD_FRAMES: usize = 1 << 16;

/// A frame crossing the switch.
#[derive(Debug)]
struct Crossing {
    frame: Vec<u8>,
    /// Its delivery instant, to count how late it leaves.
    at: Instant,
}

/// Ports on two sides joined by one modelled path per direction.
#[derive(Debug)]
pub struct Switch {
    ports: Vec<(Side, Port)>,
    models: [LinkModel; 2],
    lines: [DelayLine<Crossing>; 2],
    /// Which port each source MAC address was last seen on.
    learned: HashMap<[u8; 6], usize>,
    /// Frames the destination port had no room for.
    port_drops: u64,
    /// Frames the model delivered that found [`HELD_FRAMES`] already held.
    held_drops: u64,
    /// Per direction, how late after its delivery instant each frame was
    /// written to its port.
    released_late: [QueueDelays; 2],
    scratch: Vec<u8>,
}

impl Switch {
    /// A switch whose crossing is `model` in each direction, seeded from
    /// `seed` (each direction its own stream).
    pub fn new(model: &LinkModelConfig, seed: u64) -> Self {
        Switch {
            ports: Vec::new(),
            models: [
                LinkModel::new(model.clone(), seed),
                LinkModel::new(model.clone(), seed ^ 0x5851_f42d_4c95_7f2d),
            ],
            lines: [DelayLine::new(HELD_FRAMES), DelayLine::new(HELD_FRAMES)],
            learned: HashMap::new(),
            port_drops: 0,
            held_drops: 0,
            released_late: [QueueDelays::default(); 2],
            scratch: Vec::new(),
        }
    }

    /// Adds `port` on `side`; returns its index.
    pub fn add_port(&mut self, side: Side, port: Port) -> usize {
        self.ports.push((side, port));
        self.ports.len() - 1
    }

    /// What the model of frames leaving `from` has done, with how late
    /// after falling due the switch wrote each to its port as
    /// [`LinkCounters::taken_late`].
    pub fn counters(&self, from: Side) -> LinkCounters {
        LinkCounters {
            taken_late: self.released_late[from.index()],
            ..self.models[from.index()].counters()
        }
    }

    /// Frames a destination port had no room for.
    pub fn port_drops(&self) -> u64 {
        self.port_drops
    }

    /// Frames dropped because the switch already held its bound of frames
    /// in one direction (only a path with no rate limit gets there).
    pub fn held_drops(&self) -> u64 {
        self.held_drops
    }

    /// Reads what the ports have sent, offers it to the models, and writes
    /// out what has fallen due by `now`. True if any frame moved.
    pub fn step(&mut self, now: Instant) -> io::Result<bool> {
        let mut moved = false;
        for i in 0..self.ports.len() {
            for _ in 0..READ_BURST {
                let (side, port) = &mut self.ports[i];
                let side = *side;
                if !port.recv(now, &mut self.scratch)? {
                    break;
                }
                moved = true;
                let frame = std::mem::take(&mut self.scratch);
                if let Some(src) = mac(&frame, 6) {
                    self.learned.insert(src, i);
                }
                let d = side.index();
                if let Verdict::Deliver(at) = self.models[d].offer(now, frame.len()) {
                    if self.lines[d].push(at, Crossing { frame, at }).is_err() {
                        self.held_drops += 1;
                    }
                }
            }
        }
        for d in 0..2 {
            let to = if d == 0 { Side::Right } else { Side::Left };
            while let Some(c) = self.lines[d].pop_due(now) {
                moved = true;
                self.released_late[d].record(now.saturating_duration_since(c.at));
                self.deliver(now, to, &c.frame)?;
            }
        }
        Ok(moved)
    }

    /// Writes `frame` to its destination's port on side `to`, or to every
    /// port there if the destination is not known on that side.
    fn deliver(&mut self, now: Instant, to: Side, frame: &[u8]) -> io::Result<()> {
        let known = mac(frame, 0)
            .and_then(|dst| self.learned.get(&dst).copied())
            .filter(|&i| self.ports[i].0 == to);
        for (i, (side, port)) in self.ports.iter_mut().enumerate() {
            if *side != to || known.is_some_and(|k| k != i) {
                continue;
            }
            if !port.send(now, frame)? {
                self.port_drops += 1;
            }
        }
        Ok(())
    }

    /// When the next frame falls due.
    pub fn next_due(&self) -> Option<Instant> {
        self.lines.iter().filter_map(DelayLine::next_due).min()
    }

    /// Forwards until `stop` is set: sleeps in ppoll(2) on every port until
    /// a frame arrives or the next one falls due (at most `tick`, so `stop`
    /// is seen).
    pub fn run(&mut self, stop: &AtomicBool, tick: Duration) -> io::Result<()> {
        let mut keep = Vec::new();
        let mut fds = Vec::new();
        for (_, p) in &self.ports {
            if let Some((owned, pfd)) = p.pollfd() {
                keep.push(owned);
                fds.push(pfd);
            }
        }
        while !stop.load(Ordering::Acquire) {
            let now = Instant::now();
            if self.step(now)? {
                continue;
            }
            let wait = self
                .next_due()
                .map_or(tick, |d| d.saturating_duration_since(now).min(tick));
            for f in &mut fds {
                f.revents = 0;
            }
            ppoll(&mut fds, Some(wait))?;
        }
        drop(keep);
        Ok(())
    }
}

/// The MAC address at `at` (0: destination, 6: source) of an Ethernet frame.
fn mac(frame: &[u8], at: usize) -> Option<[u8; 6]> {
    frame.get(at..at + 6)?.try_into().ok()
}

#[cfg(test)]
mod tests;
