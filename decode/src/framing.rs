//! FPDUs out of one direction's byte stream, with the mpa crate's deframer.
//!
//! A receiver stops at the first bad CRC; a dissector should show the bad
//! FPDU and go on, since the length field that framed it was intact. So on
//! a CRC error we take the bad FPDU's bytes (kept since the last FPDU
//! boundary), read its ULPDU again with CRC checking off, report it with the
//! received and computed CRC, and restart the deframer right after it.

use std::ops::ControlFlow;

use mpa::framing::markers::MAX_ULPDU;
use mpa::{DeframeError, Deframer, StreamOffset};

use super::event::CrcStatus;

/// One FPDU read from the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FpduOut<'a> {
    /// Offset of the FPDU's first byte from the start of the FPDU stream.
    pub(crate) start: u64,
    pub(crate) ulpdu: &'a [u8],
    /// Stream bytes the FPDU took, markers included.
    pub(crate) wire_len: usize,
    pub(crate) crc: CrcStatus,
}

/// Why the FPDU stream cannot be followed further.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Broken {
    pub(crate) reason: String,
    /// Offset (from the FPDU stream start) of the FPDU that broke it.
    pub(crate) offset: u64,
    /// Captured bytes from there on that were not decoded.
    pub(crate) unconsumed: u64,
}

/// Deframes one direction, reporting every FPDU.
#[derive(Debug)]
pub(crate) struct FpduStream {
    crc: bool,
    markers: bool,
    deframer: Deframer,
    /// Offset of the current FPDU's first byte.
    boundary: u64,
    /// Bytes of the current, incomplete FPDU (bounded by the largest FPDU).
    raw: Vec<u8>,
    /// The last ULPDU handed out by the deframer.
    ulpdu: Vec<u8>,
}

impl FpduStream {
    pub(crate) fn new(crc: bool, markers: bool) -> Self {
        FpduStream {
            crc,
            markers,
            deframer: Deframer::new(crc, markers, MAX_ULPDU),
            boundary: 0,
            raw: Vec::new(),
            ulpdu: Vec::new(),
        }
    }

    /// Bytes of a partial FPDU held.
    pub(crate) fn buffered(&self) -> usize {
        self.raw.len()
    }

    fn position(&self) -> StreamOffset {
        StreamOffset(self.boundary as u32)
    }

    /// Feeds in-order stream bytes, calling `on_fpdu` for each whole FPDU.
    pub(crate) fn feed(
        &mut self,
        mut input: &[u8],
        on_fpdu: &mut dyn FnMut(FpduOut<'_>),
    ) -> Result<(), Broken> {
        while !input.is_empty() {
            let before = self.deframer.position();
            let ulpdu = &mut self.ulpdu;
            let mut complete = false;
            let result = self.deframer.feed(input, |u| {
                ulpdu.clear();
                ulpdu.extend_from_slice(u);
                complete = true;
                ControlFlow::Break(())
            });
            match result {
                Ok(n) => {
                    let (used, rest) = input.split_at(n.min(input.len()));
                    input = rest;
                    if !complete {
                        self.raw.extend_from_slice(used);
                        continue;
                    }
                    let wire_len = self.raw.len() + used.len();
                    self.raw.clear();
                    let crc = if self.crc {
                        CrcStatus::Good
                    } else {
                        CrcStatus::Off
                    };
                    on_fpdu(FpduOut {
                        start: self.boundary,
                        ulpdu: &self.ulpdu,
                        wire_len,
                        crc,
                    });
                    self.boundary += wire_len as u64;
                }
                Err(DeframeError::Crc { computed, received }) => {
                    // The deframer stops right after the bad FPDU's CRC field.
                    let n = self.deframer.position().wrapping_sub(before) as usize;
                    let (used, rest) = input.split_at(n.min(input.len()));
                    input = rest;
                    self.raw.extend_from_slice(used);
                    self.report_bad_crc(computed, received, on_fpdu)?;
                }
                Err(e) => {
                    return Err(Broken {
                        reason: e.to_string(),
                        offset: self.boundary,
                        unconsumed: (self.raw.len() + input.len()) as u64,
                    });
                }
            }
        }
        Ok(())
    }

    /// Reports the FPDU in `raw` whose CRC failed, then restarts after it.
    fn report_bad_crc(
        &mut self,
        computed: u32,
        received: u32,
        on_fpdu: &mut dyn FnMut(FpduOut<'_>),
    ) -> Result<(), Broken> {
        let wire_len = self.raw.len();
        let mut reread = Deframer::at(false, self.markers, MAX_ULPDU, self.position());
        let ulpdu = &mut self.ulpdu;
        let mut complete = false;
        let reread_ok = reread
            .feed(&self.raw, |u| {
                ulpdu.clear();
                ulpdu.extend_from_slice(u);
                complete = true;
                ControlFlow::Break(())
            })
            .is_ok();
        if !(reread_ok && complete) {
            return Err(Broken {
                reason: format!(
                    "FPDU with a bad CRC (received {received:#010x}, computed {computed:#010x}) cannot be re-read"
                ),
                offset: self.boundary,
                unconsumed: wire_len as u64,
            });
        }
        on_fpdu(FpduOut {
            start: self.boundary,
            ulpdu: &self.ulpdu,
            wire_len,
            crc: CrcStatus::Bad { received, computed },
        });
        self.raw.clear();
        self.boundary += wire_len as u64;
        self.deframer = Deframer::at(self.crc, self.markers, MAX_ULPDU, self.position());
        Ok(())
    }
}

#[cfg(test)]
mod tests;
