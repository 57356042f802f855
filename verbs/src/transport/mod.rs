//! Byte-stream transports beneath the verbs facade.
//!
//! One seam, [`Transport`], over three network stacks:
//!
//! * [`memory`]: two smoltcp interfaces joined by in-process frame queues,
//!   with seeded fault injection (loss, corruption, latency, reordering);
//! * [`tap`]: smoltcp on a Linux TAP device;
//! * [`kernel`]: the host's TCP through `std::net` sockets.
//!
//! The seam is shaped for the sans-IO protocol connection above it, which
//! writes whole FPDUs into a `&mut [u8]` and consumes received bytes from a
//! `&[u8]`: [`Transport::send_with`] lends free send-buffer space and
//! [`Transport::recv_with`] lends received bytes, so on the smoltcp
//! transports FPDUs are built straight into the TCP send ring and parsed
//! straight out of the receive ring, with no per-message copy or allocation.
//!
//! Every transport can record what it sends and receives as a pcap file
//! ([`pcap`]); [`baseline`] measures raw TCP goodput over the memory link,
//! the figure RDMA goodput is compared against.

pub mod baseline;
mod error;
pub mod kernel;
pub mod memory;
pub mod pcap;
#[cfg(test)]
mod pcap_check;
mod rng;
mod seam;
mod slab;
mod smol;
mod synth;
pub mod tap;
#[cfg(test)]
mod testutil;

pub use error::TransportError;
pub use seam::{ListenerId, StreamId, StreamState, Transport};
pub use smol::{CongestionControl, TcpTuning};
