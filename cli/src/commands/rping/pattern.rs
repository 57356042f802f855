//! The ping data rping puts in the client's source buffer, and the length
//! the server echoes back.
//!
//! rping.c fills the buffer with `snprintf(buf, size, "rdma-ping-%d: ", ping)`
//! followed by printable characters cycling through 'A'..='z' from a start
//! character that advances by one per ping, and ends it with a NUL at
//! `size - 1`. The server writes back `strlen(buf) + 1` bytes.

/// Smallest ping size rping accepts: room for "rdma-ping-" plus any `int`,
/// ": " and the NUL (`sizeof(stringify(INT_MAX)) + sizeof(RPING_MSG_FMT)`).
pub const MIN_SIZE: usize = 26;
/// Largest ping size (`RPING_BUFSIZE - 1`).
pub const MAX_SIZE: usize = 65535;
/// Default ping size.
pub const DEFAULT_SIZE: usize = 64;

const FIRST: u8 = b'A';
const LAST: u8 = b'z';

/// Produces the ping data of each iteration in turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PingPattern {
    size: usize,
    /// rping counts pings in a C `int`; past `i32::MAX` it wraps as
    /// two's-complement arithmetic does.
    ping: i32,
    start: u8,
}

impl PingPattern {
    /// Patterns of `size` bytes (clamped to at least [`MIN_SIZE`], which the
    /// argument parser enforces anyway, so the header always fits).
    pub fn new(size: usize) -> Self {
        PingPattern {
            size: size.max(MIN_SIZE),
            ping: 0,
            start: FIRST,
        }
    }

    /// The number of the next ping.
    pub fn ping(&self) -> i32 {
        self.ping
    }

    /// Writes the next ping's data into `buf` (exactly the pattern size)
    /// and advances.
    pub fn fill_next(&mut self, buf: &mut [u8]) {
        let header = format!("rdma-ping-{}: ", self.ping);
        let size = buf.len();
        // snprintf writes at most size - 1 characters and a NUL.
        let n = header.len().min(size.saturating_sub(1));
        buf[..n].copy_from_slice(&header.as_bytes()[..n]);
        let mut c = self.start;
        for b in buf.iter_mut().skip(header.len()) {
            *b = c;
            c = if c >= LAST { FIRST } else { c + 1 };
        }
        if let Some(last) = buf.last_mut() {
            *last = 0;
        }
        self.start = if self.start >= LAST {
            FIRST
        } else {
            self.start + 1
        };
        self.ping = self.ping.wrapping_add(1);
    }

    /// The next ping's data as a new vector.
    pub fn next_vec(&mut self) -> Vec<u8> {
        let mut v = vec![0; self.size];
        self.fill_next(&mut v);
        v
    }
}

/// What rping's server writes back: `strlen(rdma_buf) + 1`, bounded by
/// the buffer (rping itself would read past an unterminated buffer).
pub fn echo_len(buf: &[u8]) -> usize {
    buf.iter()
        .position(|&b| b == 0)
        .map_or(buf.len(), |i| i + 1)
}

/// The buffer as C's `printf("%s")` shows it: up to the first NUL.
pub fn as_c_str(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The READ response payloads of rping-default.pcap's three pings (64 B).
    const CAPTURED: [&str; 3] = [
        "rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr",
        "rdma-ping-1: BCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrs",
        "rdma-ping-2: CDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrst",
    ];

    #[test]
    fn matches_the_captured_pings_byte_for_byte() {
        let mut p = PingPattern::new(64);
        for want in CAPTURED {
            let mut buf = [0xa5u8; 64];
            p.fill_next(&mut buf);
            assert_eq!(&buf[..63], want.as_bytes());
            assert_eq!(buf[63], 0);
        }
        assert_eq!(p.ping(), 3);
    }

    #[test]
    fn the_minimum_size_holds_the_header_and_a_nul() {
        let mut p = PingPattern::new(MIN_SIZE);
        let v = p.next_vec();
        assert_eq!(v.len(), 26);
        assert_eq!(&v[..13], b"rdma-ping-0: ");
        assert_eq!(&v[13..25], b"ABCDEFGHIJKL");
        assert_eq!(v[25], 0);
        assert_eq!(echo_len(&v), 26);
    }

    #[test]
    fn the_widest_ping_number_still_fits_the_minimum() {
        let mut p = PingPattern {
            size: MIN_SIZE,
            ping: i32::MIN,
            start: b'z',
        };
        let v = p.next_vec();
        assert_eq!(as_c_str(&v), "rdma-ping--2147483648: zA");
        assert_eq!(v.len(), 26);
        assert_eq!(v[23], b'z');
        assert_eq!(v[24], b'A', "the cycle wraps from 'z' to 'A'");
        assert_eq!(v[25], 0);
        // The next ping starts from 'A' again and the counter went on.
        assert_eq!(p.ping(), i32::MIN + 1);
        assert_eq!(p.start, b'A');
    }

    #[test]
    fn the_counter_wraps_like_a_c_int() {
        let mut p = PingPattern {
            size: 64,
            ping: i32::MAX,
            start: b'A',
        };
        assert!(as_c_str(&p.next_vec()).starts_with("rdma-ping-2147483647: "));
        assert!(as_c_str(&p.next_vec()).starts_with("rdma-ping--2147483648: "));
    }

    #[test]
    fn start_character_cycles_through_58_values() {
        let mut p = PingPattern::new(64);
        let firsts: Vec<u8> = (0..59)
            .map(|i| {
                let header = format!("rdma-ping-{i}: ").len();
                p.next_vec()[header]
            })
            .collect();
        assert_eq!(firsts[0], b'A');
        assert_eq!(firsts[57], b'z');
        assert_eq!(firsts[58], b'A');
    }

    #[test]
    fn echo_len_is_strlen_plus_one_bounded() {
        assert_eq!(echo_len(b"ab\0cd"), 3);
        assert_eq!(echo_len(b"\0"), 1);
        assert_eq!(echo_len(b"abc"), 3);
        assert_eq!(echo_len(b""), 0);
    }

    #[test]
    fn c_string_view() {
        assert_eq!(as_c_str(b"ping\0junk"), "ping");
        assert_eq!(as_c_str(b"no nul"), "no nul");
    }

    proptest! {
        #[test]
        fn every_ping_is_printable_nul_terminated_and_echoed_whole(
            size in MIN_SIZE..=2048usize,
            skip in 0usize..200,
        ) {
            let mut p = PingPattern::new(size);
            for _ in 0..skip {
                p.next_vec();
            }
            let v = p.next_vec();
            prop_assert_eq!(v.len(), size);
            prop_assert_eq!(v[size - 1], 0);
            prop_assert!(v[..size - 1].iter().all(|b| (0x20..0x7f).contains(b)));
            prop_assert_eq!(echo_len(&v), size);
            let header = format!("rdma-ping-{skip}: ");
            prop_assert!(v.starts_with(header.as_bytes()));
        }

        #[test]
        fn consecutive_pings_differ(size in MIN_SIZE..=512usize) {
            let mut p = PingPattern::new(size);
            let a = p.next_vec();
            let b = p.next_vec();
            prop_assert_ne!(a, b);
        }
    }
}
