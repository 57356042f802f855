//! One direction of one TCP connection, put back in order.

use std::collections::BTreeMap;

use super::SeqNumber;

/// Bytes held out of order per direction before we give up waiting for the
/// missing ones and report a gap.
pub const MAX_HELD_BYTES: usize = 8 * 1024 * 1024;
/// Segments held out of order per direction, likewise.
pub const MAX_HELD_SEGMENTS: usize = 4096;

/// What the reassembler hands on, in stream order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEvent<'a> {
    /// In-order bytes starting at stream `offset` (0 = first byte after the SYN).
    Data {
        /// Stream offset of the first byte.
        offset: u64,
        /// The bytes.
        bytes: &'a [u8],
    },
    /// `len` bytes at `offset` that the capture does not have.
    Gap {
        /// Where the hole starts.
        offset: u64,
        /// Its length.
        len: u64,
    },
    /// The sender's FIN, once every byte before it was delivered.
    Fin {
        /// The FIN's stream offset (the stream's length).
        offset: u64,
    },
}

/// Counters a summary prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamStats {
    /// Segments seen, duplicates included.
    pub segments: u64,
    /// Bytes delivered in order.
    pub bytes: u64,
    /// Segments carrying only bytes already delivered.
    pub retransmitted: u64,
    /// Bytes trimmed from segments that partly overlapped delivered data.
    pub overlap_bytes: u64,
    /// Segments that arrived ahead of a hole and were held.
    pub out_of_order: u64,
    /// Holes the capture never filled.
    pub gaps: u64,
    /// Bytes in those holes.
    pub gap_bytes: u64,
    /// Segments with data past the FIN.
    pub after_fin: u64,
    /// True when no SYN was seen and the stream started at the first data.
    pub started_mid_stream: bool,
}

#[derive(Debug)]
struct Held {
    data: Vec<u8>,
    /// Sequence space the segment covers; more than `data` if the capture cut it.
    len: u64,
}

/// Reassembles one direction.
#[derive(Debug, Default)]
pub struct Reassembler {
    /// Sequence number of stream offset 0.
    base: Option<SeqNumber>,
    /// Stream offset of the next byte to deliver.
    delivered: u64,
    held: BTreeMap<u64, Held>,
    held_bytes: usize,
    fin_offset: Option<u64>,
    fin_reported: bool,
    isn: Option<SeqNumber>,
    stats: StreamStats,
}

impl Reassembler {
    /// A reassembler before the SYN.
    pub fn new() -> Self {
        Self::default()
    }

    /// What it counted so far.
    pub fn stats(&self) -> &StreamStats {
        &self.stats
    }

    /// The initial sequence number, if the SYN was seen.
    pub fn isn(&self) -> Option<SeqNumber> {
        self.isn
    }

    /// Stream offset of the next byte not yet delivered.
    pub fn offset(&self) -> u64 {
        self.delivered
    }

    /// True once the FIN was delivered.
    pub fn finished(&self) -> bool {
        self.fin_reported
    }

    /// Takes one segment of this direction. `data` is what the capture holds
    /// of the payload; `len` is the payload length on the wire (larger when
    /// the snapshot length cut the frame).
    pub fn segment(
        &mut self,
        seq: SeqNumber,
        syn: bool,
        fin: bool,
        data: &[u8],
        len: usize,
        out: &mut impl FnMut(StreamEvent<'_>),
    ) {
        self.stats.segments += 1;
        let len = len.max(data.len()) as u64;
        let mut seq = seq;
        if syn {
            if self.base.is_none() {
                self.isn = Some(seq);
                self.base = Some(seq.wrapping_add(1));
            }
            seq = seq.wrapping_add(1);
        }
        if self.base.is_none() {
            if len == 0 && !fin {
                // A bare ACK before any data: the stream position is unknown.
                return;
            }
            self.stats.started_mid_stream = true;
            self.base = Some(seq);
        }
        let Some(base) = self.base else { return };
        // Distance from the next expected byte, so streams may exceed 2^31.
        let expected = base.wrapping_add(self.delivered as u32);
        let start = self.delivered as i64 + seq.distance_from(expected);
        if start < 0 {
            // More than the whole stream so far behind: an old duplicate.
            if len > 0 {
                self.stats.retransmitted += 1;
            }
            return;
        }
        let start = start as u64;
        if fin {
            let fin_at = start + len;
            if self.fin_offset.is_none() {
                self.fin_offset = Some(fin_at);
            }
        }
        if let Some(fin_at) = self.fin_offset {
            if len > 0 && start + len > fin_at {
                self.stats.after_fin += 1;
            }
        }
        if len > 0 {
            self.place(start, data, len, out);
        }
        self.report_fin(out);
    }

    fn place(&mut self, start: u64, data: &[u8], len: u64, out: &mut impl FnMut(StreamEvent<'_>)) {
        let end = start + len;
        if end <= self.delivered {
            self.stats.retransmitted += 1;
            return;
        }
        if start > self.delivered {
            self.hold(start, data, len, out);
            return;
        }
        let skip = self.delivered - start;
        self.stats.overlap_bytes += skip;
        self.deliver(data, len, skip, out);
        self.drain(out);
    }

    /// Delivers the part of a segment from `skip` on; the uncaptured tail is a gap.
    fn deliver(&mut self, data: &[u8], len: u64, skip: u64, out: &mut impl FnMut(StreamEvent<'_>)) {
        let captured = data.get(skip as usize..).unwrap_or_default();
        if !captured.is_empty() {
            out(StreamEvent::Data {
                offset: self.delivered,
                bytes: captured,
            });
            self.delivered += captured.len() as u64;
            self.stats.bytes += captured.len() as u64;
        }
        // `data.len() <= len` holds for every segment we keep.
        let missing = len.saturating_sub(skip.max(data.len() as u64));
        if missing > 0 {
            self.gap(missing, out);
        }
    }

    fn gap(&mut self, len: u64, out: &mut impl FnMut(StreamEvent<'_>)) {
        out(StreamEvent::Gap {
            offset: self.delivered,
            len,
        });
        self.delivered += len;
        self.stats.gaps += 1;
        self.stats.gap_bytes += len;
    }

    fn hold(&mut self, start: u64, data: &[u8], len: u64, out: &mut impl FnMut(StreamEvent<'_>)) {
        self.stats.out_of_order += 1;
        match self.held.get(&start) {
            Some(h) if h.len >= len => {
                self.stats.retransmitted += 1;
                return;
            }
            Some(h) => self.held_bytes -= h.data.len(),
            None => {}
        }
        self.held_bytes += data.len();
        self.held.insert(
            start,
            Held {
                data: data.to_vec(),
                len,
            },
        );
        // Over the bound: stop waiting for the hole before the earliest held
        // segment; it is reported as a gap and what follows is delivered.
        while self.held_bytes > MAX_HELD_BYTES || self.held.len() > MAX_HELD_SEGMENTS {
            let Some((&first, _)) = self.held.first_key_value() else {
                break;
            };
            if first > self.delivered {
                self.gap(first - self.delivered, out);
            }
            self.drain(out);
        }
    }

    /// Delivers held segments that have become contiguous.
    fn drain(&mut self, out: &mut impl FnMut(StreamEvent<'_>)) {
        while let Some(entry) = self.held.first_entry() {
            let start = *entry.key();
            if start > self.delivered {
                break;
            }
            let held = entry.remove();
            self.held_bytes -= held.data.len();
            let end = start + held.len;
            if end <= self.delivered {
                self.stats.retransmitted += 1;
                continue;
            }
            let skip = self.delivered - start;
            self.stats.overlap_bytes += skip;
            self.deliver(&held.data, held.len, skip, out);
        }
    }

    fn report_fin(&mut self, out: &mut impl FnMut(StreamEvent<'_>)) {
        if let Some(fin_at) = self.fin_offset {
            if !self.fin_reported && self.delivered >= fin_at {
                self.fin_reported = true;
                out(StreamEvent::Fin { offset: fin_at });
            }
        }
    }

    /// End of capture: holes before held segments become gaps and the held
    /// data is delivered, so nothing captured goes unseen.
    pub fn finish(&mut self, out: &mut impl FnMut(StreamEvent<'_>)) {
        while let Some((&first, _)) = self.held.first_key_value() {
            if first > self.delivered {
                self.gap(first - self.delivered, out);
            }
            self.drain(out);
        }
        if let Some(fin_at) = self.fin_offset {
            if !self.fin_reported && fin_at > self.delivered {
                self.gap(fin_at - self.delivered, out);
            }
        }
        self.report_fin(out);
    }

    /// Bytes currently held out of order.
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }
}

#[cfg(test)]
mod tests;
