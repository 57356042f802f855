//! Test helpers shared by the transports' tests: a verifiable byte stream
//! and pumps that move it through any [`Transport`].

use super::{StreamId, Transport, TransportError};
use crate::rng::SplitMix64;

/// Period of the pattern: prime, so it never lines up with buffer sizes.
const PERIOD: usize = 65521;

/// A pseudo-random byte stream both ends can produce from a seed.
#[derive(Clone)]
pub(crate) struct Pattern {
    block: Vec<u8>,
}

impl Pattern {
    pub(crate) fn new(seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed);
        let mut block = Vec::with_capacity(PERIOD + 8);
        while block.len() < PERIOD {
            block.extend_from_slice(&rng.next_u64().to_le_bytes());
        }
        block.truncate(PERIOD);
        Pattern { block }
    }

    /// Copies pattern bytes starting at stream `offset` into `out`.
    pub(crate) fn fill(&self, offset: u64, out: &mut [u8]) {
        let mut at = (offset % PERIOD as u64) as usize;
        let mut done = 0;
        while done < out.len() {
            let n = (PERIOD - at).min(out.len() - done);
            out[done..done + n].copy_from_slice(&self.block[at..at + n]);
            done += n;
            at = 0;
        }
    }

    /// Number of bytes of `data` differing from the pattern at `offset`.
    pub(crate) fn mismatches(&self, offset: u64, data: &[u8]) -> u64 {
        let mut at = (offset % PERIOD as u64) as usize;
        let mut done = 0;
        let mut bad = 0;
        while done < data.len() {
            let n = (PERIOD - at).min(data.len() - done);
            if data[done..done + n] != self.block[at..at + n] {
                bad += data[done..done + n]
                    .iter()
                    .zip(&self.block[at..at + n])
                    .filter(|(a, b)| a != b)
                    .count() as u64;
            }
            done += n;
            at = 0;
        }
        bad
    }
}

/// Sends `total` pattern bytes.
pub(crate) struct Sender {
    pattern: Pattern,
    pub(crate) sent: u64,
    pub(crate) total: u64,
}

impl Sender {
    pub(crate) fn new(seed: u64, total: u64) -> Self {
        Sender {
            pattern: Pattern::new(seed),
            sent: 0,
            total,
        }
    }

    pub(crate) fn done(&self) -> bool {
        self.sent == self.total
    }

    /// Queues as much as the transport takes.
    pub(crate) fn pump(
        &mut self,
        t: &mut dyn Transport,
        s: StreamId,
    ) -> Result<usize, TransportError> {
        if self.done() {
            return Ok(0);
        }
        let (pattern, sent, total) = (&self.pattern, &mut self.sent, self.total);
        t.send_with(s, &mut |buf| {
            let n = buf.len().min((total - *sent) as usize);
            pattern.fill(*sent, &mut buf[..n]);
            *sent += n as u64;
            n
        })
    }
}

/// Receives and checks `total` pattern bytes.
pub(crate) struct Receiver {
    pattern: Pattern,
    pub(crate) received: u64,
    pub(crate) total: u64,
    pub(crate) bad_bytes: u64,
}

impl Receiver {
    pub(crate) fn new(seed: u64, total: u64) -> Self {
        Receiver {
            pattern: Pattern::new(seed),
            received: 0,
            total,
            bad_bytes: 0,
        }
    }

    pub(crate) fn done(&self) -> bool {
        self.received >= self.total
    }

    /// Checks and counts bytes read some other way (a raw socket).
    pub(crate) fn take(&mut self, data: &[u8]) {
        self.bad_bytes += self.pattern.mismatches(self.received, data);
        self.received += data.len() as u64;
    }

    pub(crate) fn drain(
        &mut self,
        t: &mut dyn Transport,
        s: StreamId,
    ) -> Result<usize, TransportError> {
        let (pattern, received, bad) = (&self.pattern, &mut self.received, &mut self.bad_bytes);
        t.recv_with(s, &mut |data| {
            *bad += pattern.mismatches(*received, data);
            *received += data.len() as u64;
            data.len()
        })
    }
}

/// Drives `t` on the real clock until `step` returns true or `limit`
/// passes; sleeps in `wait` (at most 10 ms) whenever a poll moved nothing.
pub(crate) fn drive<T: Transport + ?Sized>(
    t: &mut T,
    limit: std::time::Duration,
    mut step: impl FnMut(&mut T) -> bool,
) -> bool {
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if step(t) {
            return true;
        }
        let now = Instant::now();
        if !t.poll(now) {
            if step(t) {
                return true;
            }
            let d = t
                .poll_delay(Instant::now())
                .unwrap_or(Duration::from_millis(10));
            t.wait(Some(d.min(Duration::from_millis(10))));
        }
    }
    step(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_seeded_and_offset_consistent() {
        let p = Pattern::new(1);
        let mut whole = vec![0u8; 200_000];
        p.fill(0, &mut whole);
        let mut part = vec![0u8; 1000];
        p.fill(65_000, &mut part);
        assert_eq!(part, whole[65_000..66_000]);
        assert_eq!(p.mismatches(0, &whole), 0);
        whole[70_000] ^= 1;
        whole[5] ^= 0x80;
        assert_eq!(p.mismatches(0, &whole), 2);
        let mut other = vec![0u8; 1000];
        Pattern::new(2).fill(0, &mut other);
        assert_ne!(other, whole[..1000]);
    }
}

/// One captured frame: time since the epoch, original length, bytes.
pub(crate) type Record = (std::time::Duration, u32, Vec<u8>);

/// Reads a classic pcap back with the stack's one reader: snapshot length,
/// link type and every record.
pub(crate) fn parse(bytes: &[u8]) -> Result<(u32, u32, Vec<Record>), capture::pcap::PcapError> {
    use capture::pcap::{CaptureReader, Format, PcapError};
    let mut r = CaptureReader::new(bytes)?;
    let Format::Pcap(header) = r.format() else {
        return Err(PcapError::Malformed {
            offset: 0,
            what: "pcapng where the transports write classic pcap",
        });
    };
    let mut records = Vec::new();
    while let Some(p) = r.next_packet()? {
        let t = std::time::Duration::new(p.timestamp.secs(), p.timestamp.subsec_nanos());
        records.push((t, p.original_len, p.data.to_vec()));
    }
    Ok((header.snaplen, u32::from(header.link.0), records))
}

/// A `Write` whose bytes the test can still read after handing it over.
#[derive(Clone, Default)]
pub(crate) struct SharedBuf(pub(crate) std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
