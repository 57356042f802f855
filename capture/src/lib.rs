//! Packet captures, written once for the whole stack: the transports record
//! through [`pcap::PcapSink`], `iwarp decode` and the tests read with
//! [`pcap::CaptureReader`], dissect frames down to TCP with [`net`] and put
//! the byte streams back together with [`reassembly`]. [`netns`] gives tests
//! and tools a network namespace of their own that is always deleted;
//! [`skip`] is how a test says it cannot run here.
//!
//! Nothing here knows iWARP: the protocol crates' tests may depend on it.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod net;
pub mod netns;
pub mod pcap;
pub mod reassembly;
pub mod skip;

mod bytes;
