//! The MPA framing seam: every use of `mpa::framing` is here.

use core::ops::ControlFlow;

use mpa::framing::{Deframer, FrameWithError, Framer};
use mpa::StreamOffset;

use crate::term::{TermCause, TermCode};

use super::config::Negotiated;
use super::stats::Traffic;

/// The FPDU's CRC32c register (not inverted) advanced over payload bytes
/// as DDP copies them out of a region: MPA's CRC in the same pass as the
/// copy.
pub(crate) struct FpduCrc<'a>(pub &'a mut u32);

impl ddp::CopyHook for FpduCrc<'_> {
    #[inline]
    fn copy(&mut self, out: &mut [u8], src: &[u8]) {
        *self.0 = crc32c_fold::copy_update(*self.0, out, src);
    }

    #[inline]
    fn copied(&mut self, bytes: &[u8]) {
        *self.0 = crc32c_fold::update(*self.0, bytes);
    }
}

/// Builds FPDUs straight into the caller's buffer.
#[derive(Debug)]
pub(crate) struct FrameTx {
    framer: Framer,
    /// While recording: the stream position recording started at and the
    /// ends of the FPDUs framed since, as offsets from it.
    record: Option<(StreamOffset, Vec<usize>)>,
    /// The recording buffer between recordings, kept for its allocation.
    spare: Vec<usize>,
    /// What was framed.
    pub traffic: Traffic,
}

impl FrameTx {
    pub fn new(negotiated: &Negotiated) -> Self {
        FrameTx {
            framer: Framer::new(negotiated.crc, negotiated.markers_tx),
            record: None,
            spare: Vec::new(),
            traffic: Traffic::default(),
        }
    }

    /// Starts noting where each FPDU framed from now on ends.
    pub fn start_recording(&mut self) {
        let mut ends = core::mem::take(&mut self.spare);
        ends.clear();
        self.record = Some((self.framer.position(), ends));
    }

    /// Stops recording and hands each FPDU end noted, in order, as octets
    /// from where recording started.
    pub fn finish_recording(&mut self, mut each: impl FnMut(usize)) {
        if let Some((_, mut ends)) = self.record.take() {
            ends.drain(..).for_each(&mut each);
            self.spare = ends;
        }
    }

    #[inline]
    fn framed(&mut self, header: &[u8], n: usize) -> usize {
        self.traffic.segment(header);
        if let Some((start, ends)) = &mut self.record {
            ends.push(self.framer.position().wrapping_sub(*start) as usize);
        }
        n
    }

    /// The largest ULPDU an FPDU of at most `max_fpdu` bytes carries.
    pub fn max_ulpdu(&self, max_fpdu: usize) -> usize {
        self.framer.max_ulpdu(max_fpdu)
    }

    /// Bytes one FPDU carrying `ulpdu_len` takes (upper bound with markers).
    #[inline]
    pub fn fpdu_len(&self, ulpdu_len: usize) -> usize {
        self.framer.fpdu_len(ulpdu_len)
    }

    /// Frames `header ++ payload`; `None` (state untouched) if `out` is too
    /// small.
    pub fn frame(&mut self, header: &[u8], payload: &[u8], out: &mut [u8]) -> Option<usize> {
        let n = self.framer.frame(header, payload, out).ok()?;
        Some(self.framed(header, n))
    }

    /// Frames `header` and `payload_len` octets that `fill` writes in place
    /// (straight from registered memory into the transport's buffer).
    /// `Ok(None)`: `out` is too small, `fill` was not called; `Err`: `fill`
    /// failed and nothing was framed.
    /// `fill` gets the CRC register when it is to advance it over the
    /// bytes it writes (CRC on, markers off: see
    /// `mpa::framing::Framer::frame_with_crc`), so the payload is copied
    /// and checksummed in one pass.
    #[inline]
    pub fn frame_with<E>(
        &mut self,
        header: &[u8],
        payload_len: usize,
        out: &mut [u8],
        fill: impl FnOnce(&mut [u8], Option<&mut u32>) -> Result<(), E>,
    ) -> Result<Option<usize>, E> {
        match self.framer.frame_with_crc(header, payload_len, out, fill) {
            Ok(n) => Ok(Some(self.framed(header, n))),
            Err(FrameWithError::Frame(_)) => Ok(None),
            Err(FrameWithError::Fill(e)) => Err(e),
        }
    }
}

/// Recovers ULPDUs from the byte stream.
#[derive(Debug)]
pub(crate) struct FrameRx {
    deframer: Deframer,
    /// What was deframed.
    pub traffic: Traffic,
}

impl FrameRx {
    pub fn new(negotiated: &Negotiated, max_ulpdu: usize) -> Self {
        FrameRx {
            deframer: Deframer::new(negotiated.crc, negotiated.markers_rx, max_ulpdu),
            traffic: Traffic::default(),
        }
    }

    /// Feeds stream bytes; `each` sees every complete ULPDU and may stop
    /// the feed. Returns the bytes consumed, or the LLP TERMINATE triple of
    /// a broken stream (bad CRC, bad marker, oversized length).
    pub fn feed(
        &mut self,
        input: &[u8],
        mut each: impl FnMut(&[u8]) -> ControlFlow<()>,
    ) -> Result<usize, TermCode> {
        let traffic = &mut self.traffic;
        let fed = self.deframer.feed(input, |ulpdu| {
            traffic.segment(ulpdu);
            each(ulpdu)
        });
        if let Ok(n) = fed {
            traffic.bytes(n);
        }
        fed.map_err(|e| TermCause::from(e).code)
    }
}
