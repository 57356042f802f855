//! The iWARP dissector behind `iwarp decode`: packets in, one [`Event`] per
//! MPA frame, FPDU or anomaly out, and a [`Summary`] at the end.
//!
//! MPA frames, FPDU framing, DDP and RDMAP headers are read with the
//! protocol crates' own parsers (`mpa::wire`, `mpa::Deframer`,
//! `rdmap::wire::MessageRepr`), so the dissector sees the wire exactly as
//! the stack does. Reading captures, frame parsing and TCP reassembly come
//! from the `capture` crate. The `iwarp` tool and the tests share it.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod connection;
mod direction;
mod driver;
pub mod event;
mod framing;
pub mod json;
pub mod names;
pub mod summary;
pub mod text;
mod ulpdu;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod testutil;

pub use driver::{decode, decode_path, Decoder};
pub use event::{
    Connection, CrcStatus, Event, Fpdu, MpaFrame, Negotiated, Note, NoteKind, Severity, Terminate,
    Where,
};
pub use summary::{ConnectionKind, ConnectionSummary, DirectionSummary, Summary};
