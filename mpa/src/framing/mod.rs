//! FPDU framing (RFC 5044): [`Framer`] on the way out,
//! [`Deframer`] on the way in. Each direction has its own marker setting:
//! M in a frame asks the *other* side to insert markers.

pub mod markers;
mod rx;
mod tx;

pub use rx::Deframer;
pub use tx::{FrameWithError, Framer};

/// The framing of one direction of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FramingConfig {
    /// CRC32c in use (both directions share it).
    pub crc: bool,
    /// Markers in this direction.
    pub markers: bool,
    /// Largest FPDU: for sending, the TCP MSS (RFC 5044 wants FPDU <= EMSS);
    /// for receiving, the largest FPDU accepted from the peer (siw sends
    /// FPDUs beyond the MSS when it may use GSO, so be generous there).
    pub max_fpdu: usize,
}

impl FramingConfig {
    /// MULPDU for sending: the largest ULPDU whose FPDU fits `max_fpdu`
    /// wherever it falls in the stream.
    pub fn max_ulpdu(&self) -> usize {
        tx::max_ulpdu_anywhere(self.max_fpdu, self.markers)
    }

    /// A framer for this direction.
    pub fn framer(&self) -> Framer {
        Framer::new(self.crc, self.markers)
    }

    /// A deframer for this direction, accepting any ULPDU whose FPDU fits
    /// `max_fpdu` without markers (markers never count against the peer).
    pub fn deframer(&self) -> Deframer {
        let max_ulpdu = (self.max_fpdu & !3).saturating_sub(markers::LENGTH_LEN + markers::CRC_LEN);
        Deframer::new(self.crc, self.markers, max_ulpdu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::DeframeError;
    use crate::seq::StreamOffset;
    use core::ops::ControlFlow;
    use proptest::prelude::*;

    /// Frames `ulpdus` from `start`, each split into header and payload at
    /// `split`.
    fn frame_all(crc: bool, markers: bool, start: StreamOffset, ulpdus: &[Vec<u8>]) -> Vec<u8> {
        let mut framer = Framer::at(crc, markers, start);
        let mut stream = Vec::new();
        for u in ulpdus {
            let split = u.len().min(14);
            framer
                .frame_to_vec(&u[..split], &u[split..], &mut stream)
                .expect("frames");
        }
        assert_eq!(framer.position(), start + stream.len());
        stream
    }

    /// Deframes `stream` delivered in the given chunk sizes.
    fn deframe_chunked(
        d: &mut Deframer,
        stream: &[u8],
        chunks: &[usize],
    ) -> (Vec<Vec<u8>>, Option<DeframeError>) {
        let mut got = Vec::new();
        let mut at = 0;
        let mut k = 0;
        while at < stream.len() {
            let size = chunks
                .get(k % chunks.len().max(1))
                .copied()
                .unwrap_or(stream.len());
            k += 1;
            let end = (at + size.max(1)).min(stream.len());
            match d.feed(&stream[at..end], |u| {
                got.push(u.to_vec());
                ControlFlow::Continue(())
            }) {
                Ok(n) => {
                    assert_eq!(n, end - at, "all input is consumed");
                    at = end;
                }
                Err(e) => return (got, Some(e)),
            }
        }
        (got, None)
    }

    fn arb_ulpdus() -> impl Strategy<Value = Vec<Vec<u8>>> {
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..1500), 1..8)
    }

    #[test]
    fn config_builds_matching_ends() {
        let cfg = FramingConfig {
            crc: true,
            markers: true,
            max_fpdu: 1460,
        };
        assert_eq!(cfg.max_ulpdu(), 1442);
        let f = cfg.framer();
        assert!(f.crc() && f.markers());
        let d = cfg.deframer();
        assert!(d.crc() && d.markers());
        assert_eq!(d.max_ulpdu(), 1454);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn framed_streams_deframe_to_the_same_ulpdus(
            ulpdus in arb_ulpdus(),
            crc in any::<bool>(),
            markers in any::<bool>(),
            start in any::<u32>(),
            chunks in proptest::collection::vec(1usize..700, 1..10),
        ) {
            let start = StreamOffset(start & !3);
            let stream = frame_all(crc, markers, start, &ulpdus);
            let mut d = Deframer::at(crc, markers, 65535, start);
            let (got, err) = deframe_chunked(&mut d, &stream, &chunks);
            prop_assert_eq!(err, None);
            prop_assert_eq!(got, ulpdus);
            prop_assert!(d.is_idle());
        }

        #[test]
        fn fpdus_sized_to_a_random_mss_fit_it(
            payload in proptest::collection::vec(any::<u8>(), 0..20000),
            max_fpdu in 64usize..9000,
            markers in any::<bool>(),
            start in any::<u32>(),
        ) {
            // Segment a message the way DDP does, each FPDU within max_fpdu.
            let start = StreamOffset(start & !3);
            let mut framer = Framer::at(true, markers, start);
            let mulpdu = framer.max_ulpdu(max_fpdu);
            prop_assume!(mulpdu > 14);
            let mut stream = Vec::new();
            let mut sent = Vec::new();
            for chunk in payload.chunks(mulpdu - 14) {
                let n = framer.frame_to_vec(&[0xc0; 14], chunk, &mut stream).expect("fits");
                prop_assert!(n <= max_fpdu);
                let mut u = vec![0xc0; 14];
                u.extend_from_slice(chunk);
                sent.push(u);
            }
            let mut d = Deframer::at(true, markers, mulpdu, start);
            let (got, err) = deframe_chunked(&mut d, &stream, &[max_fpdu]);
            prop_assert_eq!(err, None);
            prop_assert_eq!(got, sent);
        }

        #[test]
        fn any_single_bit_flip_is_caught_with_crc(
            ulpdus in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..700), 1..5),
            markers in any::<bool>(),
            bit in any::<proptest::sample::Index>(),
            chunk in 1usize..2000,
        ) {
            let stream = frame_all(true, markers, StreamOffset::ZERO, &ulpdus);
            let mut bad = stream.clone();
            let bit = bit.index(bad.len() * 8);
            bad[bit / 8] ^= 1 << (bit % 8);
            let mut d = Deframer::new(true, markers, 65535);
            let (got, err) = deframe_chunked(&mut d, &bad, &[chunk]);
            // Never a wrong ULPDU: what came out is a prefix of what went in,
            // and the damaged FPDU itself never comes out.
            prop_assert!(got.len() < ulpdus.len());
            prop_assert_eq!(&got[..], &ulpdus[..got.len()]);
            // Either the stream broke, or a damaged ULPDU_Length left it
            // waiting for bytes that never come.
            prop_assert!(err.is_some() || !d.is_idle());
        }

        #[test]
        fn garbage_never_panics_and_is_consumed_or_refused(
            bytes in proptest::collection::vec(any::<u8>(), 0..3000),
            crc in any::<bool>(),
            markers in any::<bool>(),
            max in 0usize..70000,
            chunk in 1usize..600,
        ) {
            let mut d = Deframer::new(crc, markers, max);
            let (got, _) = deframe_chunked(&mut d, &bytes, &[chunk]);
            for u in got {
                prop_assert!(u.len() <= max.min(65535));
            }
        }
    }
}
