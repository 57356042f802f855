//! A byte source that knows its offset and tells a clean end from a cut one.

use std::io::{self, Read};

/// Wraps the capture's reader; counts bytes so errors can say where.
pub(crate) struct Source<R> {
    inner: R,
    offset: u64,
}

impl<R: Read> Source<R> {
    pub(crate) fn new(inner: R) -> Self {
        Source { inner, offset: 0 }
    }

    /// Byte offset of the next unread byte.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads until `buf` is full or the input ends; returns how many bytes came.
    pub(crate) fn fill(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            match self.inner.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.offset += got as u64;
        Ok(got)
    }

    /// Replaces `out` with the next `len` bytes, growing it only as bytes
    /// arrive (a lying length field cannot make us allocate it up front).
    /// Returns how many bytes came.
    pub(crate) fn read_into(&mut self, out: &mut Vec<u8>, len: u64) -> io::Result<u64> {
        out.clear();
        let got = (&mut self.inner).take(len).read_to_end(out)? as u64;
        self.offset += got;
        Ok(got)
    }
}
