//! The one way a `Repr`'s `emit` fails: the caller's buffer is too short.

/// `emit` was given a buffer shorter than [`needed`](Self::needed) bytes;
/// nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("buffer of {len} bytes cannot hold the {needed} bytes to emit")]
pub struct EmitError {
    /// Bytes the buffer had.
    pub len: usize,
    /// Bytes the header needs (its `buffer_len()`).
    pub needed: usize,
}

impl EmitError {
    /// `Ok` when `buf` holds at least `needed` bytes. Every `emit` calls
    /// this before its first write, so a failed emit leaves `buf` untouched.
    #[inline]
    pub fn check(buf: &[u8], needed: usize) -> Result<(), EmitError> {
        if buf.len() < needed {
            Err(EmitError {
                len: buf.len(),
                needed,
            })
        } else {
            Ok(())
        }
    }
}
