//! Collects one Request/Reply frame from the stream without reading past
//! its end: what follows belongs to the FPDU stream.

use crate::error::StartupError;
use crate::wire::{FrameKind, HEADER_LEN, KEY_LEN, MAX_PRIVATE_DATA, REPLY_KEY, REQUEST_KEY};

/// Bytes of the largest legal frame.
const MAX_FRAME: usize = HEADER_LEN + MAX_PRIVATE_DATA;

/// A fixed buffer for one frame; the peer cannot make it grow.
#[derive(Debug, Clone)]
pub(crate) struct FrameReader {
    buf: [u8; MAX_FRAME],
    have: usize,
    expected: FrameKind,
}

impl FrameReader {
    pub fn new(expected: FrameKind) -> FrameReader {
        FrameReader {
            buf: [0; MAX_FRAME],
            have: 0,
            expected,
        }
    }

    /// Whether any byte of the frame has arrived.
    pub fn has_input(&self) -> bool {
        self.have > 0
    }

    /// Takes bytes up to the end of the frame. Returns how many were taken
    /// and whether the frame is now complete. The key is checked octet by
    /// octet and PD_Length as soon as the header is in, so garbage and
    /// oversized frames are refused before anything more is buffered.
    pub fn feed(&mut self, input: &[u8]) -> Result<(usize, bool), StartupError> {
        let mut taken = 0;
        if self.have < HEADER_LEN {
            let n = input.len().min(HEADER_LEN - self.have);
            self.buf[self.have..self.have + n].copy_from_slice(&input[..n]);
            self.have += n;
            taken = n;
            self.check_key()?;
            if self.have < HEADER_LEN {
                return Ok((taken, false));
            }
        }
        let pd_length = usize::from(u16::from_be_bytes([self.buf[18], self.buf[19]]));
        if pd_length > MAX_PRIVATE_DATA {
            return Err(StartupError::PrivateDataTooLong { pd_length });
        }
        let total = HEADER_LEN + pd_length;
        let n = (input.len() - taken).min(total - self.have);
        self.buf[self.have..self.have + n].copy_from_slice(&input[taken..taken + n]);
        self.have += n;
        Ok((taken + n, self.have == total))
    }

    /// The frame collected so far.
    pub fn frame(&self) -> &[u8] {
        &self.buf[..self.have]
    }

    fn check_key(&self) -> Result<(), StartupError> {
        let seen = &self.buf[..self.have.min(KEY_LEN)];
        let expected = self.expected.key();
        if expected.starts_with(seen) {
            return Ok(());
        }
        let other = match self.expected {
            FrameKind::Request => (REPLY_KEY, FrameKind::Reply),
            FrameKind::Reply => (REQUEST_KEY, FrameKind::Request),
        };
        if other.0.starts_with(seen) {
            Err(StartupError::UnexpectedFrame {
                expected: self.expected,
                received: other.1,
            })
        } else {
            Err(StartupError::BadKey)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(pd: &[u8]) -> Vec<u8> {
        let mut v = REPLY_KEY.to_vec();
        v.extend_from_slice(&[0x10, 2]);
        v.extend_from_slice(&(pd.len() as u16).to_be_bytes());
        v.extend_from_slice(pd);
        v
    }

    #[test]
    fn never_reads_past_the_frame() {
        let mut bytes = reply(&[0, 1, 0, 1]);
        bytes.extend_from_slice(&[0xde, 0xad]);
        let mut r = FrameReader::new(FrameKind::Reply);
        assert_eq!(r.feed(&bytes), Ok((24, true)));
        assert_eq!(r.frame(), &bytes[..24]);
    }

    #[test]
    fn byte_by_byte() {
        let bytes = reply(b"hello");
        let mut r = FrameReader::new(FrameKind::Reply);
        for (i, b) in bytes.iter().enumerate() {
            let done = i + 1 == bytes.len();
            assert_eq!(r.feed(core::slice::from_ref(b)), Ok((1, done)));
        }
        assert_eq!(r.frame(), &bytes[..]);
    }

    #[test]
    fn garbage_is_refused_at_the_first_wrong_octet() {
        let mut r = FrameReader::new(FrameKind::Reply);
        assert_eq!(r.feed(b"MP"), Ok((2, false)));
        assert_eq!(r.feed(b"X"), Err(StartupError::BadKey));
        let mut r = FrameReader::new(FrameKind::Request);
        assert_eq!(r.feed(b"GET / HTTP/1.1\r\n"), Err(StartupError::BadKey));
    }

    #[test]
    fn the_other_key_is_an_unexpected_frame() {
        let mut r = FrameReader::new(FrameKind::Request);
        assert_eq!(
            r.feed(&reply(&[])),
            Err(StartupError::UnexpectedFrame {
                expected: FrameKind::Request,
                received: FrameKind::Reply
            })
        );
    }

    #[test]
    fn oversized_pd_is_refused_with_the_header() {
        let mut bytes = reply(&[]);
        bytes[18..20].copy_from_slice(&600u16.to_be_bytes());
        let mut r = FrameReader::new(FrameKind::Reply);
        assert_eq!(
            r.feed(&bytes),
            Err(StartupError::PrivateDataTooLong { pd_length: 600 })
        );
    }

    #[test]
    fn empty_input() {
        let mut r = FrameReader::new(FrameKind::Reply);
        assert_eq!(r.feed(&[]), Ok((0, false)));
    }
}
