//! The `iwarp` tool's library: the iWARP dissector behind `iwarp decode`,
//! usable from tests and other tools. Reading captures, frame parsing and
//! TCP reassembly come from the `capture` crate.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod decode;
#[cfg(test)]
mod testutil;
