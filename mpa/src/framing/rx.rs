//! The receive side: TCP stream bytes in, verified ULPDUs out.
//!
//! An explicit state machine (length, ULPDU, pad, CRC) fed in arbitrary cuts
//! of the stream. Markers are stripped in their own step keyed on the stream
//! position. ULPDU_Length is checked against the cap before anything is
//! buffered, so the peer cannot make this side hold more than `max_ulpdu`
//! octets. When a whole FPDU lies in the input and markers are off, the
//! ULPDU handed out is a slice of the input itself.

use core::ops::ControlFlow;

use super::markers::{self, CRC_LEN, LENGTH_LEN, MAX_ULPDU};
use crate::crc32c::{crc32c, Crc32c};
use crate::error::DeframeError;
use crate::seq::{StreamOffset, MARKER_LEN};

/// Where in an FPDU the next content octet belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between FPDUs.
    Idle,
    /// Inside ULPDU_Length; `have` octets of it so far.
    Length { have: usize },
    /// Inside the ULPDU; `have` octets buffered so far.
    Ulpdu { have: usize },
    /// Inside the pad; `have` octets of it so far.
    Pad { have: usize },
    /// Inside the CRC field; `have` octets of it so far.
    Crc { have: usize },
}

/// What the fast path did with one whole FPDU.
struct Fast {
    consumed: usize,
    /// The consumer asked to stop after this FPDU.
    stop: bool,
}

/// Turns the peer's FPDU stream back into ULPDUs.
#[derive(Debug, Clone)]
pub struct Deframer {
    crc: bool,
    markers: bool,
    max_ulpdu: usize,
    /// Stream position of the next octet to consume.
    pos: StreamOffset,
    state: State,
    /// CRC over the current FPDU so far (markers included).
    digest: Crc32c,
    /// Stream position of the current FPDU's first octet.
    fpdu_start: StreamOffset,
    /// Position of the current FPDU's ULPDU_Length, once reached.
    header_at: Option<StreamOffset>,
    /// Position of the previous FPDU's ULPDU_Length.
    prev_header_at: Option<StreamOffset>,
    /// A marker being received, and how much of it.
    marker: [u8; MARKER_LEN],
    marker_have: usize,
    length: [u8; LENGTH_LEN],
    ulpdu_len: usize,
    crc_field: [u8; CRC_LEN],
    /// The ULPDU when it cannot be handed out from the input in place.
    buf: Vec<u8>,
    /// Set by the first error; every later call repeats it.
    broken: Option<DeframeError>,
}

impl Deframer {
    /// A deframer at the start of the peer's FPDU stream, accepting ULPDUs
    /// of at most `max_ulpdu` octets (capped at 65535, the most
    /// ULPDU_Length can say).
    pub fn new(crc: bool, markers: bool, max_ulpdu: usize) -> Deframer {
        Deframer::at(crc, markers, max_ulpdu, StreamOffset::ZERO)
    }

    /// A deframer whose next octet is at stream position `pos` (a multiple
    /// of 4, as every FPDU boundary is).
    pub fn at(crc: bool, markers: bool, max_ulpdu: usize, pos: StreamOffset) -> Deframer {
        Deframer {
            crc,
            markers,
            max_ulpdu: max_ulpdu.min(MAX_ULPDU),
            pos,
            state: State::Idle,
            digest: Crc32c::new(),
            fpdu_start: pos,
            header_at: None,
            prev_header_at: None,
            marker: [0; MARKER_LEN],
            marker_have: 0,
            length: [0; LENGTH_LEN],
            ulpdu_len: 0,
            crc_field: [0; CRC_LEN],
            buf: Vec::new(),
            broken: None,
        }
    }

    /// Whether the CRC field is checked (otherwise ignored, as siw sends 0).
    pub fn crc(&self) -> bool {
        self.crc
    }

    /// Whether markers are expected and stripped.
    pub fn markers(&self) -> bool {
        self.markers
    }

    /// The largest ULPDU accepted.
    pub fn max_ulpdu(&self) -> usize {
        self.max_ulpdu
    }

    /// Stream position of the next octet to consume.
    pub fn position(&self) -> StreamOffset {
        self.pos
    }

    /// True between FPDUs: everything fed so far was whole FPDUs. A
    /// connection that ends when this is false ended mid-FPDU.
    pub fn is_idle(&self) -> bool {
        self.state == State::Idle && self.marker_have == 0
    }

    /// The error that broke the stream, if any.
    pub fn error(&self) -> Option<DeframeError> {
        self.broken
    }

    /// Consumes stream bytes, calling `on_ulpdu` once per complete FPDU whose
    /// CRC (when on) and markers check out, with the ULPDU alone (no length,
    /// pad, CRC or markers).
    ///
    /// Returns the bytes consumed: all of `input`, unless `on_ulpdu` breaks,
    /// in which case consumption stops right after that FPDU so the caller
    /// can offer the rest again later. A partial FPDU at the end is kept.
    /// An `Err` means the stream is broken; the deframer then stays broken
    /// and returns the same error.
    pub fn feed<F>(&mut self, input: &[u8], mut on_ulpdu: F) -> Result<usize, DeframeError>
    where
        F: FnMut(&[u8]) -> ControlFlow<()>,
    {
        if let Some(e) = self.broken {
            return Err(e);
        }
        let mut i = 0;
        while i < input.len() {
            if !self.markers && self.state == State::Idle {
                // A run of whole FPDUs, as a stream read in large pieces
                // mostly is: each checked and handed out in place. What
                // is left starts an FPDU the state machine takes.
                while let Some(n) = self.whole_fpdu(&input[i..], &mut on_ulpdu)? {
                    i += n.consumed;
                    if n.stop {
                        return Ok(i);
                    }
                }
                if i == input.len() {
                    break;
                }
            }
            let rest = &input[i..];
            if self.markers && (self.marker_have > 0 || self.pos.is_marker_slot()) {
                i += self.take_marker(rest)?;
                continue;
            }
            // Content octets available before the next marker slot.
            let room = if self.markers {
                rest.len().min(self.pos.until_marker())
            } else {
                rest.len()
            };
            match self.state {
                State::Idle => {
                    self.begin_fpdu();
                    self.state = State::Length { have: 0 };
                }
                State::Length { have } => {
                    if have == 0 {
                        self.header_at = Some(self.pos);
                    }
                    let n = room.min(LENGTH_LEN - have);
                    self.length[have..have + n].copy_from_slice(&rest[..n]);
                    self.absorb(&rest[..n]);
                    i += n;
                    if have + n < LENGTH_LEN {
                        self.state = State::Length { have: have + n };
                        continue;
                    }
                    let len = u16::from_be_bytes(self.length);
                    if usize::from(len) > self.max_ulpdu {
                        return Err(self.fail(DeframeError::UlpduTooLong {
                            len,
                            max: self.max_ulpdu,
                        }));
                    }
                    self.ulpdu_len = usize::from(len);
                    self.state = State::Ulpdu { have: 0 };
                }
                State::Ulpdu { have: 0 } if !self.markers && self.whole_fpdu_in(rest) => {
                    // Zero copy: the ULPDU, pad and CRC are all in `input`.
                    let len = self.ulpdu_len;
                    let tail = len + markers::pad_len(len);
                    self.absorb(&rest[..tail]);
                    self.crc_field.copy_from_slice(&rest[tail..tail + CRC_LEN]);
                    i += tail + CRC_LEN;
                    self.pos += CRC_LEN;
                    self.verify()?;
                    self.end_fpdu();
                    if on_ulpdu(&rest[..len]).is_break() {
                        return Ok(i);
                    }
                }
                State::Ulpdu { have } => {
                    if have == 0 {
                        self.buf.clear();
                    }
                    let n = room.min(self.ulpdu_len - have);
                    self.buf.extend_from_slice(&rest[..n]);
                    self.absorb(&rest[..n]);
                    i += n;
                    self.state = if have + n == self.ulpdu_len {
                        State::Pad { have: 0 }
                    } else {
                        State::Ulpdu { have: have + n }
                    };
                }
                State::Pad { have } => {
                    let pad = markers::pad_len(self.ulpdu_len);
                    let n = room.min(pad - have);
                    self.absorb(&rest[..n]);
                    i += n;
                    self.state = if have + n == pad {
                        State::Crc { have: 0 }
                    } else {
                        State::Pad { have: have + n }
                    };
                }
                State::Crc { have } => {
                    let n = room.min(CRC_LEN - have);
                    self.crc_field[have..have + n].copy_from_slice(&rest[..n]);
                    self.pos += n;
                    i += n;
                    if have + n < CRC_LEN {
                        self.state = State::Crc { have: have + n };
                        continue;
                    }
                    self.verify()?;
                    self.end_fpdu();
                    if on_ulpdu(&self.buf).is_break() {
                        return Ok(i);
                    }
                }
            }
        }
        Ok(i)
    }

    /// The fast path between FPDUs without markers: when a whole FPDU
    /// starts `rest`, check its CRC in one pass and hand its ULPDU out in
    /// place, skipping the state machine. `Ok(None)`: not a whole FPDU (the
    /// state machine takes it from here). Errors are the ones the state
    /// machine reports for the same bytes.
    #[inline]
    fn whole_fpdu<F>(&mut self, rest: &[u8], on_ulpdu: &mut F) -> Result<Option<Fast>, DeframeError>
    where
        F: FnMut(&[u8]) -> ControlFlow<()>,
    {
        let Some(&[hi, lo]) = rest.get(..LENGTH_LEN) else {
            return Ok(None);
        };
        let len = u16::from_be_bytes([hi, lo]);
        let ulpdu_len = usize::from(len);
        if ulpdu_len > self.max_ulpdu {
            // As the state machine says once it has taken the two octets.
            self.pos += LENGTH_LEN;
            return Err(self.fail(DeframeError::UlpduTooLong {
                len,
                max: self.max_ulpdu,
            }));
        }
        let body = LENGTH_LEN + ulpdu_len + markers::pad_len(ulpdu_len);
        let (Some(covered), Some(field)) = (rest.get(..body), rest.get(body..body + CRC_LEN))
        else {
            return Ok(None);
        };
        if self.crc {
            let computed = crc32c(covered);
            let mut received = [0u8; CRC_LEN];
            received.copy_from_slice(field);
            let received = u32::from_le_bytes(received);
            if computed != received {
                self.pos += body + CRC_LEN;
                return Err(self.fail(DeframeError::Crc { computed, received }));
            }
        }
        self.fpdu_start = self.pos;
        self.header_at = Some(self.pos);
        self.pos += body + CRC_LEN;
        self.end_fpdu();
        let ulpdu = &covered[LENGTH_LEN..LENGTH_LEN + ulpdu_len];
        Ok(Some(Fast {
            consumed: body + CRC_LEN,
            stop: on_ulpdu(ulpdu).is_break(),
        }))
    }

    /// Feeds the CRC (when on) and advances the stream position.
    #[inline]
    fn absorb(&mut self, bytes: &[u8]) {
        if self.crc {
            self.digest.update(bytes);
        }
        self.pos += bytes.len();
    }

    fn begin_fpdu(&mut self) {
        self.fpdu_start = self.pos;
        self.header_at = None;
        self.digest.reset();
    }

    fn end_fpdu(&mut self) {
        self.state = State::Idle;
        self.prev_header_at = self.header_at;
    }

    /// True when ULPDU, pad and CRC of the current FPDU are all in `rest`.
    #[inline]
    fn whole_fpdu_in(&self, rest: &[u8]) -> bool {
        rest.len() >= self.ulpdu_len + markers::pad_len(self.ulpdu_len) + CRC_LEN
    }

    /// Consumes (part of) the marker at the current slot.
    fn take_marker(&mut self, rest: &[u8]) -> Result<usize, DeframeError> {
        if self.state == State::Idle && self.marker_have == 0 {
            // A slot met between FPDUs starts the next FPDU.
            self.begin_fpdu();
            self.state = State::Length { have: 0 };
        }
        let have = self.marker_have;
        let n = rest.len().min(MARKER_LEN - have);
        self.marker[have..have + n].copy_from_slice(&rest[..n]);
        self.absorb(&rest[..n]);
        self.marker_have += n;
        if self.marker_have == MARKER_LEN {
            self.marker_have = 0;
            let at = StreamOffset(self.pos.0.wrapping_sub(MARKER_LEN as u32));
            let fpduptr = markers::decode(self.marker);
            if let Err(expected) = markers::check(
                fpduptr,
                at,
                self.fpdu_start,
                self.header_at,
                self.prev_header_at,
            ) {
                return Err(self.fail(DeframeError::Marker {
                    at,
                    fpduptr,
                    expected,
                }));
            }
        }
        Ok(n)
    }

    fn verify(&mut self) -> Result<(), DeframeError> {
        if !self.crc {
            return Ok(());
        }
        let computed = self.digest.finish();
        let received = u32::from_le_bytes(self.crc_field);
        if computed == received {
            Ok(())
        } else {
            Err(self.fail(DeframeError::Crc { computed, received }))
        }
    }

    fn fail(&mut self, e: DeframeError) -> DeframeError {
        self.broken = Some(e);
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::Framer;
    use crate::test_util::hex;

    // rping-crc.pcap, client -> server after the MPA Request: frames 8, 10
    // and 12 (a SEND, a READ response and a SEND), CRC on.
    const CRC_STREAM: &str = concat!(
        "0022414300000000000000000000000100000000000055c3f9fc437056fcbf0000000040172d7ec5",
        "004ec142bdb50f000000559028549f3072646d612d70696e672d303a204142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f70717200809c2a5a",
        "0022414300000000000000000000000200000000000055c3f9fc4550175a5200000000407e618ecc",
    );
    // rping-default.pcap frame 8, CRC off: the field is zero.
    const PLAIN_SEND: &str =
        "002241430000000000000000000000010000000000005580 8dd28370bd94af000000004000000000";

    fn collect(d: &mut Deframer, input: &[u8]) -> Result<(usize, Vec<Vec<u8>>), DeframeError> {
        let mut got = Vec::new();
        let n = d.feed(input, |u| {
            got.push(u.to_vec());
            ControlFlow::Continue(())
        })?;
        Ok((n, got))
    }

    fn ulpdus_of(stream: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < stream.len() {
            let len = usize::from(u16::from_be_bytes([stream[at], stream[at + 1]]));
            out.push(stream[at + 2..at + 2 + len].to_vec());
            at += markers::content_len(len);
        }
        out
    }

    #[test]
    fn captured_stream_deframes_with_crc() {
        let stream = hex(CRC_STREAM);
        let mut d = Deframer::new(true, false, 65535);
        let (n, got) = collect(&mut d, &stream).expect("good CRCs");
        assert_eq!(n, stream.len());
        assert_eq!(got, ulpdus_of(&stream));
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].len(), 0x4e);
        assert!(d.is_idle());
        assert_eq!(d.position(), StreamOffset(stream.len() as u32));
    }

    #[test]
    fn captured_stream_split_at_every_offset() {
        let stream = hex(CRC_STREAM);
        let expected = ulpdus_of(&stream);
        for cut in 0..=stream.len() {
            let mut d = Deframer::new(true, false, 65535);
            let (a, mut got) = collect(&mut d, &stream[..cut]).expect("first part");
            let (b, more) = collect(&mut d, &stream[cut..]).expect("second part");
            assert_eq!(a + b, stream.len());
            got.extend(more);
            assert_eq!(got, expected, "cut at {cut}");
        }
    }

    #[test]
    fn captured_stream_byte_by_byte() {
        let stream = hex(CRC_STREAM);
        let mut d = Deframer::new(true, false, 65535);
        let mut got = Vec::new();
        for b in &stream {
            let (n, more) = collect(&mut d, core::slice::from_ref(b)).expect("ok");
            assert_eq!(n, 1);
            got.extend(more);
        }
        assert_eq!(got, ulpdus_of(&stream));
    }

    #[test]
    fn whole_fpdu_in_input_is_handed_out_in_place() {
        let stream = hex(CRC_STREAM);
        let mut d = Deframer::new(true, false, 65535);
        let mut ptrs = Vec::new();
        d.feed(&stream, |u| {
            ptrs.push(u.as_ptr());
            ControlFlow::Continue(())
        })
        .expect("ok");
        assert_eq!(ptrs[0], stream[2..].as_ptr());
        assert_eq!(ptrs[1], stream[42..].as_ptr());
    }

    #[test]
    fn crc_off_ignores_the_field() {
        let mut fpdu = hex(PLAIN_SEND);
        let mut d = Deframer::new(false, false, 65535);
        let (_, got) = collect(&mut d, &fpdu).expect("no CRC check");
        assert_eq!(got.len(), 1);
        // Even a non-zero CRC field is ignored when CRC is off.
        let n = fpdu.len();
        fpdu[n - 1] = 0x77;
        let mut d = Deframer::new(false, false, 65535);
        assert_eq!(collect(&mut d, &fpdu).expect("ignored").1.len(), 1);
    }

    #[test]
    fn zero_crc_field_fails_when_crc_is_on() {
        let fpdu = hex(PLAIN_SEND);
        let mut d = Deframer::new(true, false, 65535);
        let e = collect(&mut d, &fpdu).expect_err("CRC mismatch");
        assert!(matches!(e, DeframeError::Crc { received: 0, .. }));
        assert_eq!(e.terminate_code(), (0, 2));
    }

    #[test]
    fn broken_stays_broken() {
        let mut stream = hex(CRC_STREAM);
        stream[10] ^= 0x01;
        let mut d = Deframer::new(true, false, 65535);
        let mut calls = 0;
        let e = d
            .feed(&stream, |_| {
                calls += 1;
                ControlFlow::Continue(())
            })
            .expect_err("corrupted");
        assert_eq!(calls, 0, "the corrupted ULPDU is never handed out");
        assert_eq!(d.feed(&stream[40..], |_| ControlFlow::Continue(())), Err(e));
        assert_eq!(d.error(), Some(e));
    }

    #[test]
    fn over_long_length_is_refused_from_two_bytes() {
        let mut d = Deframer::new(true, false, 1454);
        assert_eq!(
            d.feed(&[0x05, 0xaf], |_| ControlFlow::Continue(())),
            Err(DeframeError::UlpduTooLong {
                len: 1455,
                max: 1454
            })
        );
        let mut d = Deframer::new(true, false, 1454);
        assert_eq!(d.feed(&[0x05], |_| ControlFlow::Continue(())), Ok(1));
        assert!(d.feed(&[0xae, 0x00], |_| ControlFlow::Continue(())).is_ok());
    }

    #[test]
    fn cap_is_at_most_ulpdu_length_range() {
        assert_eq!(Deframer::new(true, false, usize::MAX).max_ulpdu(), 65535);
    }

    #[test]
    fn break_stops_right_after_the_fpdu() {
        let stream = hex(CRC_STREAM);
        let mut d = Deframer::new(true, false, 65535);
        let mut got = Vec::new();
        let n = d
            .feed(&stream, |u| {
                got.push(u.to_vec());
                ControlFlow::Break(())
            })
            .expect("ok");
        assert_eq!(n, 40);
        assert_eq!(got.len(), 1);
        assert!(d.is_idle());
        // Offer the rest again.
        let (m, more) = collect(&mut d, &stream[n..]).expect("ok");
        assert_eq!(n + m, stream.len());
        assert_eq!(more.len(), 2);
    }

    #[test]
    fn a_run_of_whole_fpdus_stops_at_a_break_or_a_bad_crc() {
        let stream = hex(CRC_STREAM);
        let whole = ulpdus_of(&stream);
        // The second of three FPDUs in one piece asks to stop.
        let mut d = Deframer::new(true, false, 65535);
        let mut got = Vec::new();
        let n = d
            .feed(&stream, |u| {
                got.push(u.to_vec());
                if got.len() == 2 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .expect("ok");
        assert_eq!(got, whole[..2]);
        assert_eq!(n, stream.len() - 40, "consumed through the second");
        assert!(d.is_idle());
        // A bad CRC on the third: the first two out, then the error.
        let mut bad = stream.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        let mut d = Deframer::new(true, false, 65535);
        let mut got = Vec::new();
        let e = d.feed(&bad, |u| {
            got.push(u.to_vec());
            ControlFlow::Continue(())
        });
        assert!(matches!(e, Err(DeframeError::Crc { .. })));
        assert_eq!(got, whole[..2]);
        assert_eq!(d.error(), e.err());
    }

    #[test]
    fn break_on_a_buffered_fpdu() {
        let stream = hex(CRC_STREAM);
        let mut d = Deframer::new(true, false, 65535);
        assert_eq!(collect(&mut d, &stream[..30]).expect("ok").0, 30);
        let n = d
            .feed(&stream[30..], |_| ControlFlow::Break(()))
            .expect("ok");
        assert_eq!(n, 10);
    }

    #[test]
    fn partial_fpdu_is_kept() {
        let stream = hex(CRC_STREAM);
        let mut d = Deframer::new(true, false, 65535);
        let (n, got) = collect(&mut d, &stream[..39]).expect("ok");
        assert_eq!((n, got.len()), (39, 0));
        assert!(!d.is_idle());
        let (_, got) = collect(&mut d, &stream[39..40]).expect("ok");
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn empty_input_consumes_nothing() {
        let mut d = Deframer::new(true, true, 100);
        assert_eq!(d.feed(&[], |_| ControlFlow::Continue(())), Ok(0));
        assert!(d.is_idle());
    }

    #[test]
    fn zero_length_ulpdus() {
        let mut framer = Framer::new(true, false);
        let mut stream = Vec::new();
        for _ in 0..3 {
            framer.frame_to_vec(&[], &[], &mut stream).expect("frames");
        }
        assert_eq!(stream.len(), 24);
        let mut d = Deframer::new(true, false, 0);
        let (_, got) = collect(&mut d, &stream).expect("ok");
        assert_eq!(got, vec![Vec::<u8>::new(); 3]);
    }

    fn marked_stream() -> (Vec<u8>, Vec<Vec<u8>>) {
        let mut framer = Framer::new(true, true);
        let mut stream = Vec::new();
        let ulpdus: Vec<Vec<u8>> = [600usize, 14, 1000, 466, 3, 2000]
            .iter()
            .enumerate()
            .map(|(k, &n)| (0..n).map(|i| (i * 31 + k) as u8).collect())
            .collect();
        for u in &ulpdus {
            framer.frame_to_vec(u, &[], &mut stream).expect("frames");
        }
        (stream, ulpdus)
    }

    #[test]
    fn markers_are_stripped() {
        let (stream, ulpdus) = marked_stream();
        let mut d = Deframer::new(true, true, 65535);
        let (n, got) = collect(&mut d, &stream).expect("ok");
        assert_eq!(n, stream.len());
        assert_eq!(got, ulpdus);
    }

    #[test]
    fn marked_stream_split_at_every_offset() {
        let (stream, ulpdus) = marked_stream();
        for cut in 0..=stream.len() {
            let mut d = Deframer::new(true, true, 65535);
            let (_, mut got) = collect(&mut d, &stream[..cut]).expect("ok");
            got.extend(collect(&mut d, &stream[cut..]).expect("ok").1);
            assert_eq!(got, ulpdus, "cut at {cut}");
        }
    }

    #[test]
    fn bad_fpduptr_is_a_marker_error() {
        let (mut stream, _) = marked_stream();
        // The marker at 512 points 508 back; make it 500.
        assert_eq!(&stream[512..516], &[0, 0, 0x01, 0xfc]);
        stream[515] = 0xf4;
        let mut d = Deframer::new(false, true, 65535);
        let e = collect(&mut d, &stream).expect_err("bad marker");
        assert_eq!(
            e,
            DeframeError::Marker {
                at: StreamOffset(512),
                fpduptr: 500,
                expected: 508
            }
        );
        assert_eq!(e.terminate_code(), (0, 3));
    }

    #[test]
    fn fpduptr_low_bits_and_reserved_half_are_ignored() {
        let (mut stream, ulpdus) = marked_stream();
        stream[515] |= 0x03;
        stream[512] = 0xff;
        // CRC off, so only the marker check sees the change.
        let mut d = Deframer::new(false, true, 65535);
        assert_eq!(collect(&mut d, &stream).expect("lenient").1, ulpdus);
    }

    #[test]
    fn crc_covers_markers_on_receipt() {
        let (mut stream, _) = marked_stream();
        stream[512] = 0xff; // reserved half of a marker
        let mut d = Deframer::new(true, true, 65535);
        assert!(matches!(
            collect(&mut d, &stream),
            Err(DeframeError::Crc { .. })
        ));
    }

    #[test]
    fn leading_marker_must_be_zero() {
        let (mut stream, _) = marked_stream();
        stream[3] = 8;
        let mut d = Deframer::new(false, true, 65535);
        assert_eq!(
            collect(&mut d, &stream).expect_err("bad leading marker"),
            DeframeError::Marker {
                at: StreamOffset(0),
                fpduptr: 8,
                expected: 0
            }
        );
    }

    #[test]
    fn wrap_of_the_stream_position() {
        let start = StreamOffset(u32::MAX - 1023);
        let mut framer = Framer::at(true, true, start);
        let mut stream = Vec::new();
        let ulpdus: Vec<Vec<u8>> = (0..6).map(|k| vec![k as u8; 300 + 97 * k]).collect();
        for u in &ulpdus {
            framer.frame_to_vec(u, &[], &mut stream).expect("frames");
        }
        assert!(framer.position().0 < 4096, "the position wrapped");
        let mut d = Deframer::at(true, true, 65535, start);
        let (_, got) = collect(&mut d, &stream).expect("ok");
        assert_eq!(got, ulpdus);
        assert_eq!(d.position(), framer.position());
    }

    /// Feeds `stream` in pieces of `piece` octets; the ULPDUs handed out,
    /// the error if any, and the final position.
    fn outcome(
        crc: bool,
        max: usize,
        stream: &[u8],
        piece: usize,
    ) -> (Vec<Vec<u8>>, Option<DeframeError>, StreamOffset) {
        let mut d = Deframer::new(crc, false, max);
        let mut got = Vec::new();
        let mut err = None;
        for chunk in stream.chunks(piece.max(1)) {
            if let Err(e) = d.feed(chunk, |u| {
                got.push(u.to_vec());
                ControlFlow::Continue(())
            }) {
                err = Some(e);
                break;
            }
        }
        (got, err, d.position())
    }

    #[test]
    fn fast_path_reports_a_bad_crc_as_the_state_machine_does() {
        let mut stream = hex(CRC_STREAM);
        let second = 2 + 0x22 + 2 + 4; // the first FPDU: length, ULPDU, pad, CRC
        stream[second + 5] ^= 0x10;
        let whole = outcome(true, 65535, &stream, stream.len());
        let bytes = outcome(true, 65535, &stream, 1);
        assert!(matches!(whole.1, Some(DeframeError::Crc { .. })));
        assert_eq!(whole.0.len(), 1, "the FPDU before the damage came out");
        assert_eq!(whole, bytes);
    }

    #[test]
    fn fast_path_refuses_an_over_long_length_at_once() {
        let mut d = Deframer::new(true, false, 100);
        let mut fpdu = vec![0u8; 200];
        fpdu[..2].copy_from_slice(&101u16.to_be_bytes());
        assert_eq!(
            d.feed(&fpdu, |_| ControlFlow::Continue(())),
            Err(DeframeError::UlpduTooLong { len: 101, max: 100 })
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// Whole FPDUs take the fast path, split ones the state machine:
        /// any delivery of the same (possibly damaged) bytes gives the same
        /// ULPDUs, error and position.
        #[test]
        fn every_delivery_gives_the_same_outcome(
            ulpdus in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600), 1..6),
            crc in proptest::prelude::any::<bool>(),
            flip in proptest::option::of(proptest::prelude::any::<proptest::sample::Index>()),
            max in 0usize..700,
            piece in 1usize..2000,
        ) {
            let mut framer = Framer::new(crc, false);
            let mut stream = Vec::new();
            for u in &ulpdus {
                framer.frame_to_vec(u, &[], &mut stream).expect("frames");
            }
            if let Some(at) = flip {
                let bit = at.index(stream.len() * 8);
                stream[bit / 8] ^= 1 << (bit % 8);
            }
            let whole = outcome(crc, max, &stream, stream.len());
            proptest::prop_assert_eq!(&whole, &outcome(crc, max, &stream, 1));
            proptest::prop_assert_eq!(&whole, &outcome(crc, max, &stream, piece));
        }
    }
}
