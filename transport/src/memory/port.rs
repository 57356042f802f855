//! The far end of a memory link as a plain frame port, for a switch.

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Instant;

use super::link::{Frame, InFlight, Wire};

/// Lane the host sends on (and the port reads).
pub(crate) const HOST_LANE: usize = 0;
/// Lane the port sends on (and the host reads).
pub(crate) const PORT_LANE: usize = 1;

/// Frames in and out of one [`MemoryHost`](super::MemoryHost) whose link
/// ends here instead of at a second host. Frames the port sends reach the
/// host at once: impairments belong to whatever moves frames between ports.
#[derive(Debug)]
pub struct MemoryPort {
    wire: Arc<Wire>,
    due: VecDeque<Frame>,
    used: Vec<Vec<u8>>,
    spares: Vec<Vec<u8>>,
    out: Vec<InFlight>,
}

impl MemoryPort {
    pub(crate) fn new(wire: Arc<Wire>) -> Self {
        MemoryPort {
            wire,
            due: VecDeque::new(),
            used: Vec::new(),
            spares: Vec::new(),
            out: Vec::new(),
        }
    }

    /// The next frame the host has sent by `now`, appended to `buf`
    /// (cleared first). False if none is waiting.
    pub fn recv(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        if self.due.is_empty() {
            self.wire
                .receive(HOST_LANE, now, &mut self.due, &mut self.used);
        }
        let Some(f) = self.due.pop_front() else {
            return false;
        };
        buf.clear();
        buf.extend_from_slice(f.bytes());
        self.used.push(f.into_buffer());
        true
    }

    /// Hands `frame` to the host, due at `now`. False if its lane was full.
    pub fn send(&mut self, now: Instant, frame: &[u8]) -> bool {
        let buf = self.spares.pop().unwrap_or_default();
        let mut f = Frame::reuse(buf, frame.len(), frame.len());
        f.bytes_mut().copy_from_slice(frame);
        self.out.push(InFlight {
            deliver_at: now,
            frame: f,
        });
        self.wire
            .send(PORT_LANE, &mut self.out, &mut self.spares, 8)
            == 1
    }

    /// A descriptor readable once the host has sent a frame.
    pub fn readiness_fd(&self) -> Option<OwnedFd> {
        self.wire.readiness_fd(HOST_LANE)
    }
}
