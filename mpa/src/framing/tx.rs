//! The transmit side: ULPDUs in, FPDUs out, written straight into the
//! caller's buffer (typically the free space of a TCP send buffer).
//!
//! ```text
//! +-------------------------------+-------------------------------+
//! |         ULPDU_Length          |                               |
//! +-------------------------------+                               +
//! ~               ULPDU (DDP header and payload)                  ~
//! |                               +---------------+---------------+
//! |                               |     PAD (0-3 octets, zero)    |
//! +-------------------------------+---------------+---------------+
//! |                  CRC32c (least significant octet first)       |
//! +---------------------------------------------------------------+
//! ```
//! with markers, when negotiated, overlaid every 512 octets of the stream
//! (see [`super::markers`]).

use super::markers::{self, CRC_LEN, LENGTH_LEN, MAX_ULPDU};
use crate::crc32c::crc32c;
use crate::error::FrameError;
use crate::seq::{StreamOffset, MARKER_INTERVAL, MARKER_LEN};

/// Frames ULPDUs into FPDUs and tracks the stream position for markers.
#[derive(Debug, Clone)]
pub struct Framer {
    crc: bool,
    markers: bool,
    /// Stream position of the next FPDU's first octet.
    pos: StreamOffset,
}

impl Framer {
    /// A framer at the start of the FPDU stream (position 0: the first octet
    /// after the MPA Request/Reply).
    pub fn new(crc: bool, markers: bool) -> Framer {
        Framer::at(crc, markers, StreamOffset::ZERO)
    }

    /// A framer whose next FPDU starts at `pos` (for resuming, and for
    /// testing the stream position's wrap). `pos` is a multiple of 4, as
    /// every FPDU boundary is.
    pub fn at(crc: bool, markers: bool, pos: StreamOffset) -> Framer {
        Framer { crc, markers, pos }
    }

    /// Whether CRC32c is computed (otherwise the CRC field is zero).
    pub fn crc(&self) -> bool {
        self.crc
    }

    /// Whether markers are inserted.
    pub fn markers(&self) -> bool {
        self.markers
    }

    /// Stream position of the next FPDU.
    pub fn position(&self) -> StreamOffset {
        self.pos
    }

    /// Stream octets of an FPDU carrying `ulpdu_len` octets, framed now.
    #[inline]
    pub fn fpdu_len(&self, ulpdu_len: usize) -> usize {
        markers::fpdu_len_at(self.pos, ulpdu_len, self.markers)
    }

    /// MULPDU: the largest ULPDU whose FPDU fits `max_fpdu` octets (e.g. the
    /// TCP MSS) wherever in the stream it falls, so it can be fixed per
    /// connection. Without markers this is `max_fpdu - 6` rounded down to
    /// keep the FPDU a multiple of 4; with markers it also reserves
    /// `4 * ceil(max_fpdu / 512)` octets for them (RFC 5044's
    /// MULPDU = EMSS - (6 + 4 * Ceiling(EMSS / 512) + EMSS mod 4)), and keeps
    /// every marker within reach of a 16-bit FPDUPTR. Zero when not even an
    /// empty ULPDU fits.
    pub fn max_ulpdu(&self, max_fpdu: usize) -> usize {
        max_ulpdu_anywhere(max_fpdu, self.markers)
    }

    /// The largest ULPDU whose FPDU, framed now, fits `max_fpdu` octets;
    /// `None` when not even an empty one does. Never less than
    /// [`Framer::max_ulpdu`].
    pub fn max_ulpdu_here(&self, max_fpdu: usize) -> Option<usize> {
        let fits = |n: usize| {
            self.fpdu_len(n) <= max_fpdu
                && (!self.markers
                    || markers::last_marker_offset(self.pos, n)
                        .is_none_or(|o| o <= usize::from(u16::MAX)))
        };
        if !fits(0) {
            return None;
        }
        // fpdu_len grows with the ULPDU: binary search for the last fit.
        let (mut lo, mut hi) = (0usize, MAX_ULPDU + 1);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }

    /// Writes one FPDU carrying `header ‖ payload` into the start of `out`
    /// and returns its length. The stream position advances only on
    /// success; on error nothing is written. Allocates nothing.
    pub fn frame(
        &mut self,
        header: &[u8],
        payload: &[u8],
        out: &mut [u8],
    ) -> Result<usize, FrameError> {
        let ulpdu_len = header.len() + payload.len();
        let fpdu_len = self.check(ulpdu_len, out.len())?;
        let out = &mut out[..fpdu_len];
        // Cannot truncate: checked against MAX_ULPDU above.
        let length = (ulpdu_len as u16).to_be_bytes();
        let pad = [0u8; 3];
        let pad = &pad[..markers::pad_len(ulpdu_len)];
        let body_len = if self.markers {
            let mut w = MarkerWriter {
                out: &mut *out,
                at: 0,
                pos: self.pos,
                header_at: None,
            };
            w.put_header(&length);
            w.put(header);
            w.put(payload);
            w.put(pad);
            // A slot right before the CRC is inside this FPDU.
            w.marker_if_due();
            w.at
        } else {
            out[..LENGTH_LEN].copy_from_slice(&length);
            let mut at = LENGTH_LEN;
            for part in [header, payload] {
                out[at..at + part.len()].copy_from_slice(part);
                at += part.len();
            }
            // The pad as one fixed-size store (the CRC field after it is
            // written by `seal`), as in `frame_with_crc`.
            out[at..at + CRC_LEN].copy_from_slice(&[0; CRC_LEN]);
            at + pad.len()
        };
        Ok(self.seal(out, body_len))
    }

    /// Like [`Framer::frame`], but the `payload_len` payload octets are
    /// written in place by `fill`, which gets exactly that many: a sender
    /// gathers a message segment from its buffers straight into the TCP
    /// send buffer, with no staging copy. `fill` runs only once the FPDU is
    /// known to fit. If it fails, the position does not advance, the error
    /// is handed back, and `out` holds partial bytes within the FPDU's
    /// length (nothing beyond it is touched).
    ///
    /// Without markers the payload lands where it stays. With markers it is
    /// written contiguously and then moved forward around the marker slots
    /// within `out` (one extra pass; markers are rare on the wire).
    pub fn frame_with<E>(
        &mut self,
        header: &[u8],
        payload_len: usize,
        out: &mut [u8],
        fill: impl FnOnce(&mut [u8]) -> Result<(), E>,
    ) -> Result<usize, FrameWithError<E>> {
        self.frame_with_crc(header, payload_len, out, |buf, register| {
            fill(&mut *buf)?;
            if let Some(r) = register {
                *r = crc32c_fold::update(*r, buf);
            }
            Ok(())
        })
    }

    /// Like [`Framer::frame_with`], but `fill` may compute the CRC as it
    /// writes, so the payload is read once: when the CRC is on and
    /// markers are off, `fill` gets the CRC register (not inverted, as
    /// `crc32c_fold::update` keeps it) over the FPDU's octets before the
    /// payload, and must leave it advanced over exactly the octets it
    /// wrote (`crc32c_fold::copy_update` does both). Otherwise it gets
    /// `None` and the framer computes the CRC after it (with markers the
    /// payload still moves around the marker slots).
    #[inline]
    pub fn frame_with_crc<E>(
        &mut self,
        header: &[u8],
        payload_len: usize,
        out: &mut [u8],
        fill: impl FnOnce(&mut [u8], Option<&mut u32>) -> Result<(), E>,
    ) -> Result<usize, FrameWithError<E>> {
        let ulpdu_len = header.len() + payload_len;
        let fpdu_len = self.check(ulpdu_len, out.len())?;
        let out = &mut out[..fpdu_len];
        let pad_len = markers::pad_len(ulpdu_len);
        let content = LENGTH_LEN + ulpdu_len + pad_len;
        // Marker octets in this FPDU: the content is laid out after them,
        // then spread forward into its places.
        let gap = fpdu_len - CRC_LEN - content;
        let (length_at, header_at) = (gap, gap + LENGTH_LEN);
        let payload_at = header_at + header.len();
        let pad_at = payload_at + payload_len;
        // Cannot truncate: checked against MAX_ULPDU above.
        out[length_at..header_at].copy_from_slice(&(ulpdu_len as u16).to_be_bytes());
        out[header_at..payload_at].copy_from_slice(header);
        // One call of `fill` (it then inlines here): with the CRC fused,
        // it gets the register over the octets before the payload.
        let fused = self.crc && !self.markers;
        let mut register = if fused {
            Some(crc32c_fold::update(!0, &out[..payload_at]))
        } else {
            None
        };
        fill(&mut out[payload_at..pad_at], register.as_mut()).map_err(FrameWithError::Fill)?;
        let pad_end = pad_at + pad_len;
        // The pad (0 to 3 octets) as one fixed-size store rather than a
        // call of `memset` per FPDU: the CRC field follows the pad
        // (`pad_end + CRC_LEN == fpdu_len`), so four octets from `pad_at`
        // stay within the FPDU, and every path below writes that field.
        out[pad_at..pad_at + CRC_LEN].copy_from_slice(&[0; CRC_LEN]);
        if let Some(mut register) = register {
            // No markers: the content is the whole body, in place. A
            // full-size FPDU has no pad (MULPDU keeps it 4-aligned).
            if pad_len > 0 {
                register = crc32c_fold::update(register, &out[pad_at..pad_end]);
            }
            debug_assert_eq!(!register, crc32c(&out[..content]), "fill's CRC");
            return Ok(self.seal_as(out, content, !register));
        }
        if !self.crc && !self.markers {
            // Nothing to compute: the CRC field is zero.
            return Ok(self.seal_as(out, content, 0));
        }
        let body_len = if self.markers {
            spread_around_markers(out, gap, content, self.pos)
        } else {
            content
        };
        Ok(self.seal(out, body_len))
    }

    /// The FPDU length for `ulpdu_len`, once it is known to be framable
    /// into `available` octets here.
    #[inline]
    fn check(&self, ulpdu_len: usize, available: usize) -> Result<usize, FrameError> {
        if ulpdu_len > MAX_ULPDU {
            return Err(FrameError::UlpduTooLong { len: ulpdu_len });
        }
        let fpdu_len = self.fpdu_len(ulpdu_len);
        if self.markers
            && markers::last_marker_offset(self.pos, ulpdu_len)
                .is_some_and(|o| o > usize::from(u16::MAX))
        {
            return Err(FrameError::MarkerPointerOverflow { fpdu_len });
        }
        if fpdu_len > available {
            return Err(FrameError::OutTooSmall {
                needed: fpdu_len,
                available,
            });
        }
        Ok(fpdu_len)
    }

    /// Writes the CRC field after `body_len` octets of `fpdu` and advances
    /// the stream position past it.
    fn seal(&mut self, fpdu: &mut [u8], body_len: usize) -> usize {
        let crc = if self.crc {
            crc32c(&fpdu[..body_len])
        } else {
            0
        };
        self.seal_as(fpdu, body_len, crc)
    }

    /// Writes `crc` as the CRC field after `body_len` octets of `fpdu` and
    /// advances the stream position past it.
    #[inline]
    fn seal_as(&mut self, fpdu: &mut [u8], body_len: usize, crc: u32) -> usize {
        debug_assert_eq!(body_len + CRC_LEN, fpdu.len());
        fpdu[body_len..].copy_from_slice(&crc.to_le_bytes());
        self.pos += fpdu.len();
        fpdu.len()
    }

    /// Frames into the end of `out`, growing it by the FPDU's length.
    pub fn frame_to_vec(
        &mut self,
        header: &[u8],
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<usize, FrameError> {
        let start = out.len();
        out.resize(start + self.fpdu_len(header.len() + payload.len()), 0);
        let result = self.frame(header, payload, &mut out[start..]);
        if result.is_err() {
            out.truncate(start);
        }
        result
    }
}

/// MULPDU for an FPDU limit, independent of the stream position.
pub(crate) fn max_ulpdu_anywhere(max_fpdu: usize, with_markers: bool) -> usize {
    let mut limit = max_fpdu & !3;
    let mut overhead = LENGTH_LEN + CRC_LEN;
    if with_markers {
        // Markers deeper than 65535 octets cannot point back to the header.
        limit = limit.min(usize::from(u16::MAX) + 1);
        overhead += MARKER_LEN * limit.div_ceil(MARKER_INTERVAL);
    }
    limit.saturating_sub(overhead).min(MAX_ULPDU)
}

/// Copies FPDU content into the output, inserting a marker at each slot.
struct MarkerWriter<'a> {
    out: &'a mut [u8],
    at: usize,
    pos: StreamOffset,
    header_at: Option<StreamOffset>,
}

impl MarkerWriter<'_> {
    fn marker_if_due(&mut self) {
        if self.pos.is_marker_slot() {
            // Checked by the caller: every marker's FPDUPTR fits.
            let ptr = markers::fpduptr(self.pos, self.header_at).unwrap_or(0);
            self.out[self.at..self.at + MARKER_LEN].copy_from_slice(&markers::encode(ptr));
            self.at += MARKER_LEN;
            self.pos += MARKER_LEN;
        }
    }

    fn put_header(&mut self, length: &[u8; LENGTH_LEN]) {
        // FPDUs start 4-aligned, so a marker cannot split ULPDU_Length.
        self.marker_if_due();
        self.header_at = Some(self.pos);
        self.put(length);
    }

    fn put(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            self.marker_if_due();
            let n = data.len().min(self.pos.until_marker());
            let (now, rest) = data.split_at(n);
            self.out[self.at..self.at + n].copy_from_slice(now);
            self.at += n;
            self.pos += n;
            data = rest;
        }
    }
}

/// Moves `content` octets found at `out[gap..]` to the front of `out`,
/// inserting a marker at every slot from stream position `pos` on, exactly
/// as [`MarkerWriter`] lays them out; returns the octets now in front.
///
/// `gap` is the room the markers take, so every destination is at or
/// before its source, and a marker is only written once at least its own
/// four octets of the gap remain: nothing is overwritten before it moved.
fn spread_around_markers(out: &mut [u8], gap: usize, content: usize, pos: StreamOffset) -> usize {
    let mut w = MarkerWriter {
        out,
        at: 0,
        pos,
        header_at: None,
    };
    // FPDUs start 4-aligned, so a marker cannot split ULPDU_Length.
    w.marker_if_due();
    w.header_at = Some(w.pos);
    let (mut src, end) = (gap, gap + content);
    while src < end {
        w.marker_if_due();
        let n = (end - src).min(w.pos.until_marker());
        w.out.copy_within(src..src + n, w.at);
        w.at += n;
        w.pos += n;
        src += n;
    }
    // A slot right before the CRC is inside this FPDU.
    w.marker_if_due();
    debug_assert_eq!(w.at, gap + content);
    w.at
}

/// Why [`Framer::frame_with`] framed nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameWithError<E> {
    /// The FPDU cannot be built here (see [`FrameError`]); `fill` was not
    /// called.
    Frame(FrameError),
    /// `fill` failed with this error.
    Fill(E),
}

impl<E> From<FrameError> for FrameWithError<E> {
    fn from(e: FrameError) -> Self {
        FrameWithError::Frame(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::markers::{content_len, fpdu_len_at};
    use crate::test_util::hex;

    // rping-crc.pcap frame 8 (client -> server): the first SEND, CRC on.
    const CRC_SEND: &str =
        "0022 414300000000000000000000000100000000000055c3f9fc437056fcbf00000000 40172d7ec5";
    // rping-default.pcap frame 8: the same SEND with CRC off (zero CRC field).
    const PLAIN_SEND: &str =
        "0022 4143000000000000000000000001000000000000 55808dd28370bd94af0000000040 00000000";
    // rping-cxgb.pcap frame 8: the zero-length RDMA WRITE RTR, CRC on.
    const RTR_WRITE: &str = "000e c140000000010000000000000000 ebd34c5f";
    // rping-crc.pcap frame 10: an 78-byte READ response (no pad needed).
    const CRC_READ_RESPONSE: &str = "004e c142bdb50f000000559028549f3072646d612d70696e672d303a204142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172 00809c2a5a";

    fn reframe(fpdu: &[u8], crc: bool) -> Vec<u8> {
        let ulpdu = &fpdu[2..fpdu.len() - 4 - pad_of(fpdu)];
        let mut framer = Framer::new(crc, false);
        let mut out = vec![0xa5u8; fpdu.len() + 7];
        let n = framer
            .frame(
                &ulpdu[..14.min(ulpdu.len())],
                &ulpdu[14.min(ulpdu.len())..],
                &mut out,
            )
            .expect("frames");
        assert_eq!(n, fpdu.len());
        assert_eq!(&out[n..], &[0xa5; 7], "bytes past the FPDU untouched");
        assert_eq!(framer.position(), StreamOffset(n as u32));
        out.truncate(n);
        out
    }

    fn pad_of(fpdu: &[u8]) -> usize {
        markers::pad_len(usize::from(u16::from_be_bytes([fpdu[0], fpdu[1]])))
    }

    #[test]
    fn captured_send_with_crc_is_byte_exact() {
        let fpdu = hex(CRC_SEND);
        assert_eq!(reframe(&fpdu, true), fpdu);
    }

    #[test]
    fn captured_send_without_crc_has_a_zero_crc_field() {
        let fpdu = hex(PLAIN_SEND);
        assert_eq!(reframe(&fpdu, false), fpdu);
    }

    #[test]
    fn captured_rtr_is_byte_exact() {
        let fpdu = hex(RTR_WRITE);
        assert_eq!(reframe(&fpdu, true), fpdu);
    }

    #[test]
    fn captured_read_response_is_byte_exact() {
        let fpdu = hex(CRC_READ_RESPONSE);
        assert_eq!(reframe(&fpdu, true), fpdu);
    }

    #[test]
    fn crc_is_sent_least_significant_byte_first() {
        let mut framer = Framer::new(true, false);
        let mut out = [0u8; 8];
        framer.frame(&[], b"", &mut out).expect("frames");
        // Length 0, pad 2, then the CRC of 00 00 00 00.
        assert_eq!(&out[..4], &[0, 0, 0, 0]);
        assert_eq!(out[4..], crc32c(&[0, 0, 0, 0]).to_le_bytes());
    }

    #[test]
    fn pad_is_zero() {
        let mut framer = Framer::new(false, false);
        let mut out = [0xa5u8; 12];
        let n = framer.frame(b"abc", b"", &mut out).expect("frames");
        assert_eq!(n, 12);
        assert_eq!(out, [0, 3, b'a', b'b', b'c', 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn out_too_small_changes_nothing() {
        let mut framer = Framer::new(true, false);
        let mut out = [0xa5u8; 39];
        assert_eq!(
            framer.frame(&[1; 14], &[2; 20], &mut out),
            Err(FrameError::OutTooSmall {
                needed: 40,
                available: 39
            })
        );
        assert_eq!(out, [0xa5; 39]);
        assert_eq!(framer.position(), StreamOffset::ZERO);
    }

    #[test]
    fn ulpdu_over_65535_is_refused() {
        let mut framer = Framer::new(false, false);
        let big = vec![0u8; 65536];
        let mut out = vec![0u8; 70000];
        assert_eq!(
            framer.frame(&big[..14], &big[14..], &mut out),
            Err(FrameError::UlpduTooLong { len: 65536 })
        );
        assert_eq!(framer.frame(&big[..14], &big[15..], &mut out), Ok(65544));
    }

    #[test]
    fn positions_advance_fpdu_by_fpdu() {
        let mut framer = Framer::new(false, true);
        let mut out = vec![0u8; 4096];
        let mut expected = StreamOffset::ZERO;
        for len in [14, 30, 500, 1000, 3] {
            let want = framer.fpdu_len(len);
            let n = framer.frame(&vec![7; len], &[], &mut out).expect("frames");
            assert_eq!(n, want);
            expected += n;
            assert_eq!(framer.position(), expected);
        }
    }

    /// Figure: an FPDU starting at stream offset 0 with markers (RFC 5044
    /// FPDU format): a leading marker, the header, a marker 512 octets in
    /// pointing 508 octets back to ULPDU_Length, the rest, pad, CRC.
    #[test]
    fn markers_in_the_first_fpdu() {
        let ulpdu: Vec<u8> = (0..600u32).map(|i| i as u8).collect();
        let mut framer = Framer::new(true, true);
        let mut out = vec![0xa5u8; 700];
        let n = framer
            .frame(&ulpdu[..14], &ulpdu[14..], &mut out)
            .expect("frames");
        assert_eq!(n, 4 + 2 + 600 + 2 + 4 + 4);
        let mut expected = vec![0, 0, 0, 0];
        expected.extend_from_slice(&600u16.to_be_bytes());
        expected.extend_from_slice(&ulpdu[..506]);
        expected.extend_from_slice(&[0, 0, 0x01, 0xfc]); // FPDUPTR 508
        expected.extend_from_slice(&ulpdu[506..]);
        expected.extend_from_slice(&[0, 0]);
        let crc = crc32c(&expected);
        expected.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(&out[..n], &expected[..]);
        assert_eq!(&out[n..], &[0xa5; 700 - 616]);
    }

    #[test]
    fn marker_between_pad_and_crc() {
        // Start at 44: a 466-octet ULPDU takes 2 + 466 + 0 = 468 octets up to
        // 512, so the slot falls between the (empty) pad and the CRC.
        let start = StreamOffset(44);
        let mut framer = Framer::at(true, true, start);
        let ulpdu = vec![0x5au8; 466];
        let mut out = vec![0u8; 600];
        let n = framer.frame(&ulpdu, &[], &mut out).expect("frames");
        assert_eq!(n, content_len(466) + 4);
        // Marker right before the CRC, pointing back to the header at 44.
        assert_eq!(&out[468..472], &[0, 0, 0x01, 0xd4]); // 512 - 44 = 468
        let crc = crc32c(&out[..472]);
        assert_eq!(out[472..476], crc.to_le_bytes());
    }

    #[test]
    fn fpdu_ending_on_a_slot_leaves_the_marker_to_the_next() {
        let start = StreamOffset(40);
        let mut framer = Framer::at(false, true, start);
        // Content 2 + 466 + 0 + 4 = 472 octets ends exactly at 512.
        let ulpdu = vec![1u8; 466];
        let mut out = vec![0u8; 1200];
        let n = framer.frame(&ulpdu, &[], &mut out).expect("frames");
        assert_eq!(n, 472);
        assert_eq!(framer.position(), StreamOffset(512));
        let n2 = framer.frame(&[9; 14], &[], &mut out[n..]).expect("frames");
        assert_eq!(&out[n..n + 4], &[0, 0, 0, 0], "leading marker, FPDUPTR 0");
        assert_eq!(&out[n + 4..n + 6], &[0, 14]);
        assert_eq!(n2, 4 + 20);
    }

    #[test]
    fn crc_covers_markers() {
        let mut framer = Framer::new(true, true);
        let mut out = [0u8; 24];
        let n = framer.frame(&[3; 14], &[], &mut out).expect("frames");
        assert_eq!(n, 24);
        assert_eq!(out[20..24], crc32c(&out[..20]).to_le_bytes());
    }

    #[test]
    fn mulpdu_for_ethernet() {
        assert_eq!(Framer::new(true, false).max_ulpdu(1460), 1454);
        assert_eq!(Framer::new(true, false).max_ulpdu(1463), 1454);
        // RFC 5044: MULPDU = 1460 - (6 + 4 * ceil(1460 / 512) + 1460 % 4).
        assert_eq!(Framer::new(true, true).max_ulpdu(1460), 1442);
        assert_eq!(Framer::new(true, true).max_ulpdu(5), 0);
        assert_eq!(Framer::new(true, false).max_ulpdu(0), 0);
    }

    #[test]
    fn mulpdu_is_capped_by_ulpdu_length() {
        assert_eq!(Framer::new(false, false).max_ulpdu(1 << 20), 65535);
        let markers = Framer::new(false, true);
        let m = markers.max_ulpdu(1 << 20);
        for start in (0..512).step_by(4) {
            let f = Framer::at(false, true, StreamOffset(start));
            let mut out = vec![0u8; 70000];
            assert!(
                f.clone().frame(&vec![0; m], &[], &mut out).is_ok(),
                "start {start}"
            );
        }
    }

    #[test]
    fn mulpdu_fits_at_every_position() {
        for max_fpdu in (0..4200).chain([8952, 9000, 16384, 65535, 65536, 65544]) {
            for markers in [false, true] {
                let m = max_ulpdu_anywhere(max_fpdu, markers);
                if m == 0 && fpdu_len_at(StreamOffset(0), 0, markers) > max_fpdu {
                    continue;
                }
                for start in (0..512).step_by(4) {
                    let len = fpdu_len_at(StreamOffset(start), m, markers);
                    assert!(
                        len <= max_fpdu,
                        "max {max_fpdu} markers {markers} start {start}: {len}"
                    );
                }
            }
        }
    }

    #[test]
    fn mulpdu_here_is_tight() {
        for start in (0..1024).step_by(4) {
            for max_fpdu in [64, 536, 1460, 9000] {
                for markers in [false, true] {
                    let f = Framer::at(true, markers, StreamOffset(start));
                    let here = f.max_ulpdu_here(max_fpdu).expect("something fits");
                    assert!(here >= f.max_ulpdu(max_fpdu));
                    assert!(f.fpdu_len(here) <= max_fpdu);
                    assert!(f.fpdu_len(here + 1) > max_fpdu);
                }
            }
        }
        assert_eq!(Framer::new(true, true).max_ulpdu_here(11), None);
        assert_eq!(Framer::new(true, false).max_ulpdu_here(8), Some(2));
    }

    #[test]
    fn marker_pointer_overflow() {
        let mut framer = Framer::new(false, true);
        let mut out = vec![0u8; 70000];
        let big = vec![0u8; 65535];
        assert!(matches!(
            framer.frame(&big, &[], &mut out),
            Err(FrameError::MarkerPointerOverflow { .. })
        ));
        assert_eq!(framer.position(), StreamOffset::ZERO);
    }

    #[test]
    fn frame_to_vec_appends() {
        let mut framer = Framer::new(true, false);
        let mut v = vec![1, 2, 3];
        let n = framer
            .frame_to_vec(&[0; 14], b"xy", &mut v)
            .expect("frames");
        assert_eq!(v.len(), 3 + n);
        assert_eq!(&v[..3], &[1, 2, 3]);
        let mut v2 = Vec::new();
        let mut big = Framer::new(true, false);
        assert!(big.frame_to_vec(&vec![0; 65536], &[], &mut v2).is_err());
        assert!(v2.is_empty());
    }

    /// `frame_with` filling `payload` in place, into a buffer of 0xa5.
    fn frame_in_place(framer: &mut Framer, header: &[u8], payload: &[u8], room: usize) -> Vec<u8> {
        let mut out = vec![0xa5u8; room];
        let n = framer
            .frame_with(header, payload.len(), &mut out, |buf| {
                assert_eq!(buf.len(), payload.len(), "fill gets the payload's length");
                buf.copy_from_slice(payload);
                Ok::<(), ()>(())
            })
            .expect("frames");
        assert!(
            out[n..].iter().all(|&b| b == 0xa5),
            "bytes past the FPDU untouched"
        );
        out.truncate(n);
        out
    }

    /// Every pad length (0 to 3) with CRC on and off and with markers:
    /// the in-place framing over a buffer of 0xa5 zeroes the pad and writes
    /// the CRC field over whatever the pad's store left there.
    #[test]
    fn frame_with_pads_every_length_over_stale_bytes() {
        for (crc, markers) in [(false, false), (true, false), (false, true), (true, true)] {
            for payload_len in 0..8usize {
                let payload: Vec<u8> = (0..payload_len).map(|i| 0x31 + i as u8).collect();
                let header = [0x5au8; 14];
                let mut by_copy = Framer::new(crc, markers);
                let mut want = vec![0u8; 64];
                let n = by_copy.frame(&header, &payload, &mut want).expect("frames");
                want.truncate(n);
                let mut framer = Framer::new(crc, markers);
                let got = frame_in_place(&mut framer, &header, &payload, 64);
                assert_eq!(got, want, "crc {crc} markers {markers} len {payload_len}");
                let pad = markers::pad_len(header.len() + payload_len);
                let pad_at = n - CRC_LEN - pad;
                assert!(
                    got[pad_at..n - CRC_LEN].iter().all(|&b| b == 0),
                    "pad zeroed"
                );
            }
        }
    }

    #[test]
    fn in_place_and_fused_framing_match_captured_fpdus() {
        for (text, crc) in [
            (CRC_SEND, true),
            (PLAIN_SEND, false),
            (RTR_WRITE, true),
            (CRC_READ_RESPONSE, true),
        ] {
            let fpdu = hex(text);
            let len = usize::from(u16::from_be_bytes([fpdu[0], fpdu[1]]));
            let ulpdu = &fpdu[2..2 + len];
            let split = 14.min(ulpdu.len());
            let mut framer = Framer::new(crc, false);
            let got = frame_in_place(
                &mut framer,
                &ulpdu[..split],
                &ulpdu[split..],
                fpdu.len() + 9,
            );
            assert_eq!(got, fpdu);
            assert_eq!(framer.position(), StreamOffset(fpdu.len() as u32));
            // The fused path too (CRC computed while the payload is copied).
            let mut framer = Framer::new(crc, false);
            let (got, fused) = frame_fused(
                &mut framer,
                &ulpdu[..split],
                &ulpdu[split..],
                fpdu.len() + 9,
            );
            assert_eq!(got, fpdu);
            assert_eq!(fused, crc, "the register goes to fill exactly with CRC on");
            assert_eq!(framer.position(), StreamOffset(fpdu.len() as u32));
        }
    }

    #[test]
    fn frame_with_equals_frame_at_every_marker_phase() {
        let payload: Vec<u8> = (0..1500u32).map(|i| (i * 7 + 3) as u8).collect();
        for start in (0..1024).step_by(4) {
            for len in [
                0, 1, 2, 3, 4, 5, 462, 466, 490, 506, 507, 508, 509, 1000, 1442,
            ] {
                let at = StreamOffset(start);
                let mut a = Framer::at(true, true, at);
                let mut b = Framer::at(true, true, at);
                let mut want = vec![0xa5u8; 1600];
                let n = a
                    .frame(&[0xc1; 14], &payload[..len], &mut want)
                    .expect("frames");
                want.truncate(n);
                let got = frame_in_place(&mut b, &[0xc1; 14], &payload[..len], 1600);
                assert_eq!(got, want, "start {start} len {len}");
                assert_eq!(a.position(), b.position());
            }
        }
    }

    #[test]
    fn frame_with_fill_error_frames_nothing() {
        let mut framer = Framer::at(true, true, StreamOffset(500));
        let mut out = vec![0xa5u8; 200];
        let r = framer.frame_with(&[1; 14], 100, &mut out, |_| Err("gone"));
        assert_eq!(r, Err(FrameWithError::Fill("gone")));
        assert_eq!(framer.position(), StreamOffset(500));
        let fpdu_len = framer.fpdu_len(114);
        assert!(out[fpdu_len..].iter().all(|&b| b == 0xa5));
        // The next FPDU is built as if the failed one never was.
        let good = frame_in_place(&mut framer, &[1; 14], &[2; 100], 200);
        let mut want = vec![0u8; 200];
        let n = Framer::at(true, true, StreamOffset(500))
            .frame(&[1; 14], &[2; 100], &mut want)
            .expect("frames");
        assert_eq!(good, want[..n]);
    }

    #[test]
    fn frame_with_refuses_before_filling() {
        let mut framer = Framer::new(true, false);
        let mut called = false;
        let mut out = [0xa5u8; 39];
        let r = framer.frame_with(&[1; 14], 20, &mut out, |_| {
            called = true;
            Ok::<(), ()>(())
        });
        assert_eq!(
            r,
            Err(FrameWithError::Frame(FrameError::OutTooSmall {
                needed: 40,
                available: 39
            }))
        );
        assert!(!called);
        assert_eq!(out, [0xa5; 39]);
        let mut big = vec![0u8; 70000];
        assert_eq!(
            framer.frame_with(&[0; 14], 65522, &mut big, |_| Ok::<(), ()>(())),
            Err(FrameWithError::Frame(FrameError::UlpduTooLong {
                len: 65536
            }))
        );
        let mut m = Framer::new(false, true);
        assert!(matches!(
            m.frame_with(&[], 65535, &mut big, |_| Ok::<(), ()>(())),
            Err(FrameWithError::Frame(
                FrameError::MarkerPointerOverflow { .. }
            ))
        ));
        assert_eq!(framer.position(), StreamOffset::ZERO);
        assert_eq!(m.position(), StreamOffset::ZERO);
    }

    /// `frame_with_crc` filling `payload` in place with the fused copy and
    /// CRC, into a buffer of 0xa5; also reports whether `fill` got the
    /// register.
    fn frame_fused(
        framer: &mut Framer,
        header: &[u8],
        payload: &[u8],
        room: usize,
    ) -> (Vec<u8>, bool) {
        let mut out = vec![0xa5u8; room];
        let mut fused = false;
        let n = framer
            .frame_with_crc(header, payload.len(), &mut out, |buf, register| {
                match register {
                    Some(r) => {
                        fused = true;
                        *r = crc32c_fold::copy_update(*r, buf, payload);
                    }
                    None => buf.copy_from_slice(payload),
                }
                Ok::<(), ()>(())
            })
            .expect("frames");
        assert!(
            out[n..].iter().all(|&b| b == 0xa5),
            "bytes past the FPDU untouched"
        );
        out.truncate(n);
        (out, fused)
    }

    #[test]
    fn frame_with_crc_fill_error_frames_nothing() {
        for markers in [false, true] {
            let mut framer = Framer::at(true, markers, StreamOffset(500));
            let mut out = vec![0xa5u8; 2000];
            let r = framer.frame_with_crc(&[1; 14], 1400, &mut out, |buf, register| {
                buf[..10].fill(7);
                if let Some(r) = register {
                    *r = 0;
                }
                Err("gone")
            });
            assert_eq!(r, Err(FrameWithError::Fill("gone")));
            assert_eq!(framer.position(), StreamOffset(500));
            let fpdu_len = framer.fpdu_len(1414);
            assert!(out[fpdu_len..].iter().all(|&b| b == 0xa5));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// `frame_with` (payload written in place) and `frame_with_crc`
        /// (CRC computed while the payload is written) frame the same
        /// octets as `frame`, CRC on and off, markers on and off, at any
        /// stream position.
        #[test]
        fn in_place_and_fused_framing_are_byte_identical_to_frame(
            header in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            payload in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3000),
            crc in proptest::prelude::any::<bool>(),
            markers in proptest::prelude::any::<bool>(),
            start in proptest::prelude::any::<u32>(),
            slack in 0usize..16,
        ) {
            let at = StreamOffset(start & !3);
            let mut a = Framer::at(crc, markers, at);
            let mut in_place = Framer::at(crc, markers, at);
            let mut fused = Framer::at(crc, markers, at);
            let room = a.fpdu_len(header.len() + payload.len()) + slack;
            let mut want = vec![0xa5u8; room];
            let n = a.frame(&header, &payload, &mut want).expect("frames");
            want.truncate(n);
            let got = frame_in_place(&mut in_place, &header, &payload, room);
            proptest::prop_assert_eq!(&got, &want);
            let (got, was_fused) = frame_fused(&mut fused, &header, &payload, room);
            proptest::prop_assert_eq!(got, want);
            proptest::prop_assert_eq!(was_fused, crc && !markers);
            proptest::prop_assert_eq!(a.position(), in_place.position());
            proptest::prop_assert_eq!(a.position(), fused.position());
        }
    }
}
