//! Test bodies shared by every transport: each takes a factory of fresh
//! [`Net`]s and connects as many pairs as it needs.

pub mod cm;
pub mod errors;
pub mod ops;
pub mod peer;
pub mod rfc7306;
pub mod srq;

use verbs::{Access, MemoryRegion, ProtectionDomain, WcOpcode, WcStatus, WorkCompletion};

use super::{Net, GUARD};

/// Declares one `#[test]` per named body of `common::suite::$module`, each
/// on fresh `Net`s from `$net`, so every transport's test file runs the
/// same list (see `srq_cases!`, `rfc7306_cases!`, `error_cases!`).
#[macro_export]
macro_rules! suite_tests {
    ($module:ident, $net:expr; $($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            $crate::common::suite::$module::$name(&$net);
        }
    )*};
}

/// Makes a fresh, unconnected pair of devices.
pub type MakeNet<'a> = &'a dyn Fn() -> Net;

/// Every right a peer can be given.
pub const REMOTE: Access = Access::ALL;

std::thread_local! {
    /// Every region the helpers made on this test's thread. The bodies
    /// hand STags to the peer and drop their handles while the peer still
    /// uses them, and a region goes with its last handle: these keep the
    /// registrations until the test (its thread) ends.
    static HELD: std::cell::RefCell<Vec<MemoryRegion>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Registers `bytes` and keeps the registration for the rest of the test.
fn held(pd: &ProtectionDomain, bytes: Vec<u8>, access: Access) -> MemoryRegion {
    let mr = pd.register_vec(bytes, access).unwrap();
    HELD.with(|h| h.borrow_mut().push(mr.clone()));
    mr
}

/// A region of `len` guard bytes.
pub fn guarded(pd: &ProtectionDomain, len: usize, access: Access) -> MemoryRegion {
    held(pd, vec![GUARD; len], access)
}

/// A region holding `bytes` after `offset` guard bytes, and `tail` more.
pub fn holding(
    pd: &ProtectionDomain,
    offset: usize,
    bytes: &[u8],
    tail: usize,
    access: Access,
) -> MemoryRegion {
    let mut v = vec![GUARD; offset];
    v.extend_from_slice(bytes);
    v.resize(offset + bytes.len() + tail, GUARD);
    held(pd, v, access)
}

/// Asserts `mr` holds `bytes` at `offset` and guard bytes everywhere else.
#[track_caller]
pub fn assert_exactly(mr: &MemoryRegion, offset: usize, bytes: &[u8], what: &str) {
    mr.with_bytes(|b| {
        assert!(b.len() >= offset + bytes.len(), "{what}: region too short");
        if let Some(i) = b[..offset].iter().position(|&x| x != GUARD) {
            panic!("{what}: byte {i} before the data was written");
        }
        if b[offset..offset + bytes.len()] != *bytes {
            let i = b[offset..]
                .iter()
                .zip(bytes)
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "{what}: data differs at {i} of {} (got {:#04x}, want {:#04x})",
                bytes.len(),
                b[offset + i],
                bytes[i]
            );
        }
        if let Some(i) = b[offset + bytes.len()..].iter().position(|&x| x != GUARD) {
            panic!("{what}: byte {i} after the data was written");
        }
    });
}

/// Asserts one completion's id, status, opcode and length.
#[track_caller]
pub fn assert_wc(wc: &WorkCompletion, id: u64, status: WcStatus, opcode: WcOpcode, len: u32) {
    assert_eq!(
        (wc.wr_id, wc.status, wc.opcode, wc.byte_len),
        (id, status, opcode, len),
        "{wc:?}"
    );
}

/// Message sizes around every boundary that matters: empty, tiny, the
/// 4-byte MPA padding, one FPDU's payload at MTU 1500 (1436 untagged and
/// 1440 tagged bytes with CRC on smoltcp's 1460-byte MSS; 1432 and 1436 on
/// a 1456-byte one) and multiples, 64 KiB, and several MiB.
pub const SIZES: &[usize] = &[
    0,
    1,
    2,
    3,
    4,
    5,
    63,
    64,
    65,
    1431,
    1432,
    1433,
    1435,
    1436,
    1437,
    1439,
    1440,
    1441,
    2863,
    2864,
    2865,
    2871,
    2872,
    2873,
    2880,
    2881,
    4096,
    65535,
    65536,
    65537,
    1 << 20,
    (3 << 20) + 3,
];
