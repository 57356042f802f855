//! Byte-stream transports beneath the verbs facade.
//!
//! This crate holds everything that touches the host: sockets, the TAP
//! device, poll(2), network namespaces, and so every `unsafe` block of the
//! stack; the protocol crates and `verbs` above it forbid `unsafe`. It knows
//! nothing of iWARP.
//!
//! One seam, [`Transport`], over three network stacks:
//!
//! * [`memory`]: two smoltcp interfaces joined by in-process frame queues,
//!   with seeded fault injection (loss, corruption, latency, reordering);
//! * [`tap`]: smoltcp on a Linux TAP device;
//! * [`kernel`]: the host's TCP through `std::net` sockets.
//!
//! Impairments come from one place, [`link_model`]: the memory link
//! applies it to its frames, and [`switch`] applies it between TAP devices
//! and memory-link hosts, so Linux's TCP and smoltcp's cross the same
//! modelled path.
//!
//! The seam is shaped for the sans-IO protocol connection above it, which
//! writes whole FPDUs into a `&mut [u8]` and consumes received bytes from a
//! `&[u8]`: [`Transport::send_with`] lends free send-buffer space and
//! [`Transport::recv_with`] lends received bytes, so on the smoltcp
//! transports FPDUs are built straight into the TCP send ring and parsed
//! straight out of the receive ring, with no per-message copy or allocation.
//!
//! Progress is the caller's: [`Transport::poll`] moves bytes, and between
//! polls a thread sleeps in [`Transport::wait`] or an event loop watches
//! [`Transport::readiness_fd`] (the memory link's eventfd, the TAP device,
//! an epoll set of the kernel transport's sockets) with a timeout of
//! [`Transport::poll_delay`].
//!
//! Every transport can record what it sends and receives as a pcap file
//! through a [`capture::pcap::PcapSink`].
//!
//! ```
//! use std::time::{Duration, Instant};
//! use transport::memory::{MemoryLinkConfig, MemoryNet};
//! use transport::{StreamState, Transport};
//!
//! let cfg = MemoryLinkConfig::default();
//! let mut net = MemoryNet::new(cfg.clone()).unwrap();
//! let listener = net.b.listen(7174).unwrap();
//! let client = net.a.connect(cfg.endpoint_b(7174)).unwrap();
//! // Virtual time: the clock jumps to each deadline, nothing sleeps.
//! let mut now = Instant::now();
//! let mut server = None;
//! assert!(net.run_virtual(&mut now, 1000, Duration::from_secs(5), |n| {
//!     server = server.or_else(|| n.b.accept(listener));
//!     server.is_some() && n.a.state(client) == StreamState::Established
//! }));
//! let server = server.unwrap();
//! // Build a message straight into A's send ring...
//! let queued = net.a.send_with(client, &mut |buf| {
//!     buf[..5].copy_from_slice(b"hello");
//!     5
//! });
//! assert_eq!(queued.unwrap(), 5);
//! // ...and parse it straight out of B's receive ring.
//! let mut got = Vec::new();
//! assert!(net.run_virtual(&mut now, 1000, Duration::from_secs(5), |n| {
//!     let took = n.b.recv_with(server, &mut |d| {
//!         got.extend_from_slice(d);
//!         d.len()
//!     });
//!     took.unwrap();
//!     got.len() == 5
//! }));
//! assert_eq!(got, b"hello");
//! ```
#![warn(missing_docs)]

#[cfg(feature = "tokio")]
mod async_fd;
mod error;
pub mod kernel;
mod linger;
pub mod link_model;
mod local_hash;
mod loss_stats;
pub mod memory;
#[cfg(test)]
mod pcap_check;
mod readiness;
mod rng;
mod seam;
mod setters;
mod slab;
mod smol;
mod stream_stats;
pub mod switch;
mod synth;
pub mod tap;
#[cfg(test)]
mod testutil;
mod wake;

#[cfg(feature = "tokio")]
pub use async_fd::AsyncReadiness;
pub use error::TransportError;
pub use linger::CLOSE_LINGER;
pub use local_hash::{LocalKeyHasher, LocalKeys};
pub use loss_stats::TcpLossStats;
pub use readiness::poll_readable;
pub use rng::SplitMix64;
pub use seam::{ListenerId, RecordWriter, StreamId, StreamState, Transport};
pub use smol::{CongestionControl, TcpTuning};
pub use stream_stats::TcpStreamStats;
pub use wake::{EventFd, Waker};
