//! Capture timestamps: whole seconds plus nanoseconds, from any resolution.

use std::fmt;
use std::time::Duration;

/// When a packet was captured, as seconds since the Unix epoch and nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Timestamp {
    secs: u64,
    nanos: u32,
}

/// The unit of a raw timestamp count: 10^-n or 2^-n seconds (pcapng `if_tsresol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Units of 10^-n seconds.
    Decimal(u8),
    /// Units of 2^-n seconds.
    Binary(u8),
}

impl Resolution {
    /// Microseconds: classic pcap's and pcapng's default.
    pub const MICROS: Resolution = Resolution::Decimal(6);
    /// Nanoseconds: classic pcap with the nanosecond magic.
    pub const NANOS: Resolution = Resolution::Decimal(9);

    /// Decodes pcapng's `if_tsresol` byte; `None` for units we cannot represent
    /// exactly enough in 64-bit counts (finer than 10^-19 or 2^-64 s).
    pub fn from_tsresol(byte: u8) -> Option<Resolution> {
        let n = byte & 0x7f;
        if byte & 0x80 == 0 {
            (n <= 19).then_some(Resolution::Decimal(n))
        } else {
            (n <= 64).then_some(Resolution::Binary(n))
        }
    }

    fn units_per_second(self) -> u128 {
        match self {
            Resolution::Decimal(n) => 10u128.pow(u32::from(n)),
            Resolution::Binary(n) => 1u128 << n,
        }
    }
}

impl Timestamp {
    /// A timestamp; `nanos` beyond a second carry into `secs`.
    pub fn new(secs: u64, nanos: u32) -> Timestamp {
        Timestamp {
            secs: secs.saturating_add(u64::from(nanos / 1_000_000_000)),
            nanos: nanos % 1_000_000_000,
        }
    }

    /// Converts a raw count of `resolution` units since the epoch.
    pub fn from_units(count: u64, resolution: Resolution) -> Timestamp {
        let per_sec = resolution.units_per_second();
        let count = u128::from(count);
        let secs = u64::try_from(count / per_sec).unwrap_or(u64::MAX);
        // (count % per_sec) < 2^64 and 10^9 < 2^30, so this cannot overflow u128.
        let nanos = ((count % per_sec) * 1_000_000_000 / per_sec) as u32;
        Timestamp { secs, nanos }
    }

    /// Shifts by a signed number of seconds (pcapng `if_tsoffset`), saturating.
    pub fn offset_by(self, secs: i64) -> Timestamp {
        Timestamp {
            secs: self.secs.saturating_add_signed(secs),
            nanos: self.nanos,
        }
    }

    /// Whole seconds since the Unix epoch.
    pub fn secs(self) -> u64 {
        self.secs
    }

    /// Nanoseconds past the whole second.
    pub fn subsec_nanos(self) -> u32 {
        self.nanos
    }

    /// Time since `earlier`, zero if `earlier` is later (captures are not
    /// always in time order).
    pub fn since(self, earlier: Timestamp) -> Duration {
        let a = Duration::new(self.secs, self.nanos);
        let b = Duration::new(earlier.secs, earlier.nanos);
        a.saturating_sub(b)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}", self.secs, self.nanos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_and_nano_units() {
        let t = Timestamp::from_units(1_700_000_000_123_456, Resolution::MICROS);
        assert_eq!((t.secs(), t.subsec_nanos()), (1_700_000_000, 123_456_000));
        let t = Timestamp::from_units(1_700_000_000_123_456_789, Resolution::NANOS);
        assert_eq!((t.secs(), t.subsec_nanos()), (1_700_000_000, 123_456_789));
    }

    #[test]
    fn binary_units() {
        // 2^-10 s units: 1024 units = 1 s, 512 units = 0.5 s.
        let t = Timestamp::from_units(1024 * 3 + 512, Resolution::Binary(10));
        assert_eq!((t.secs(), t.subsec_nanos()), (3, 500_000_000));
        let t = Timestamp::from_units(u64::MAX, Resolution::Binary(64));
        assert_eq!(t.secs(), 0);
        assert_eq!(t.subsec_nanos(), 999_999_999);
    }

    #[test]
    fn coarse_and_fine_decimal() {
        assert_eq!(
            Timestamp::from_units(42, Resolution::Decimal(0)),
            Timestamp::new(42, 0)
        );
        let t = Timestamp::from_units(12_345_678_901_234_567_890, Resolution::Decimal(19));
        assert_eq!((t.secs(), t.subsec_nanos()), (1, 234_567_890));
    }

    #[test]
    fn tsresol_byte() {
        assert_eq!(Resolution::from_tsresol(6), Some(Resolution::MICROS));
        assert_eq!(Resolution::from_tsresol(9), Some(Resolution::NANOS));
        assert_eq!(Resolution::from_tsresol(0x8a), Some(Resolution::Binary(10)));
        assert_eq!(Resolution::from_tsresol(20), None);
        assert_eq!(Resolution::from_tsresol(0xc1), None);
    }

    #[test]
    fn display_and_since() {
        let a = Timestamp::new(10, 5);
        assert_eq!(a.to_string(), "10.000000005");
        let b = Timestamp::new(9, 1_999_999_999);
        assert_eq!(b, Timestamp::new(10, 999_999_999));
        assert_eq!(b.since(a), Duration::new(0, 999_999_994));
        assert_eq!(a.since(b), Duration::ZERO);
        assert_eq!(a.offset_by(-20), Timestamp::new(0, 5));
        assert_eq!(a.offset_by(5), Timestamp::new(15, 5));
    }
}
