//! Two devices joined by a transport, connected, driven from the test's
//! thread (on the real clock or on virtual time) or by progress threads,
//! with bounded loops only; plus captures, a hand-driven raw peer for
//! misbehaviour the verbs API cannot produce, and TAP devices in network
//! namespaces (`::capture::netns`).

#![allow(dead_code)]

pub mod capture;
pub mod fabric;
pub mod net;
pub mod pair;
pub mod raw;
pub mod suite;

use std::time::Duration;

#[allow(unused_imports)]
pub use self::capture::Capture;
#[allow(unused_imports)]
pub use net::{Net, Side};
#[allow(unused_imports)]
pub use pair::{connect, memory_pair, try_connect, Opts, Pair};

#[allow(unused_imports)]
pub use verbs::transport::memory::{FaultConfig, MemoryLinkConfig};

/// Port the server listens on for the smoltcp transports (rping's).
pub const PORT: u16 = 7174;
/// Upper bound on any wait in these tests; a hang fails instead of stalling.
pub const LIMIT: Duration = Duration::from_secs(60);
/// Upper bound on simulated time in virtual-time runs.
pub const VIRTUAL_LIMIT: Duration = Duration::from_secs(3600);

/// Deterministic test data; different seeds give different bytes at
/// almost every offset.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

/// Filler of buffers that should not be written: a byte a placement
/// forgetting its bounds would overwrite with something else.
pub const GUARD: u8 = 0xa5;
