//! What the verbs suites share: two devices joined by a memory link.

use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::{Device, ProgressThread};

/// A client and a server device on the two ends of a default memory link,
/// each with its own progress thread (kept running while the handles
/// live), and the link's configuration (for `endpoint_b`).
pub fn linked_devices() -> (
    MemoryLinkConfig,
    Device,
    Device,
    (ProgressThread, ProgressThread),
) {
    let cfg = MemoryLinkConfig::default();
    let (a, b) = MemoryLink::pair(&cfg).unwrap();
    let (client, server) = (Device::new(Box::new(a)), Device::new(Box::new(b)));
    let threads = (
        client.spawn_progress_thread(),
        server.spawn_progress_thread(),
    );
    (cfg, client, server, threads)
}
