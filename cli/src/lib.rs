//! The `iwarp` tool's library: capture reading, TCP reassembly and the iWARP
//! dissector behind `iwarp decode`, usable from tests and other tools.
#![forbid(unsafe_code)]

pub mod decode;
pub mod net;
pub mod pcap;
pub mod reassembly;

mod bytes;
#[cfg(test)]
mod testutil;
