//! MPA (RFC 5044, RFC 6581): connection start-up and FPDU framing over a TCP
//! byte stream. Sans-IO: bytes and time in; bytes, events and deadlines out.
//!
//! Start-up: a [`Startup`] per side exchanges the MPA Request and Reply and
//! settles CRC, markers, revision, IRD/ORD and the peer-to-peer RTR into a
//! [`Negotiated`]. Framing: a [`Framer`] turns ULPDUs (DDP segments) into
//! FPDUs, a [`Deframer`] turns the peer's stream back into verified ULPDUs.
//!
//! ```
//! use std::ops::ControlFlow;
//! use std::time::Instant;
//! use mpa::{InitiatorConfig, ReplyParams, ResponderConfig, Startup, StartupEvent};
//!
//! let now = Instant::now();
//! let mut client = Startup::initiator(InitiatorConfig::default(), now)?;
//! let mut server = Startup::responder(ResponderConfig::default(), now)?;
//!
//! // The Request travels client -> server.
//! let mut wire = Vec::new();
//! client.poll_transmit(&mut wire);
//! server.handle_bytes(&wire, now)?;
//! assert!(matches!(server.poll_event(), Some(StartupEvent::RequestReceived { .. })));
//! server.accept(ReplyParams { ird: 8, ord: 8, private_data: vec![] }, now)?;
//!
//! // The Reply travels back; the Initiator then sends the first FPDU.
//! let mut wire = Vec::new();
//! server.poll_transmit(&mut wire);
//! assert_eq!(client.handle_bytes(&wire, now)?, wire.len());
//! let Some(StartupEvent::Established(ours)) = client.poll_event() else { unreachable!() };
//! let mut fpdus = Vec::new();
//! ours.framer().frame_to_vec(b"a DDP header..", b"and payload", &mut fpdus)?;
//!
//! // On the server, start-up is over and takes none of the FPDU stream.
//! let Some(StartupEvent::Established(theirs)) = server.poll_event() else { unreachable!() };
//! assert_eq!(server.handle_bytes(&fpdus, now)?, 0);
//! let mut deframer = theirs.deframer(65535);
//! deframer.feed(&fpdus, |ulpdu| {
//!     assert_eq!(ulpdu, b"a DDP header..and payload");
//!     ControlFlow::Continue(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod crc32c;
mod error;
pub mod framing;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod negotiate;
mod seq;
mod startup;
pub mod wire;

pub use error::{llp, ConfigError, DeframeError, FrameError, StartupError};
pub use framing::{Deframer, Framer, FramingConfig};
pub use negotiate::{CrcPolicy, InitiatorConfig, Negotiated, ReplyParams, ResponderConfig, Role};
pub use seq::{StreamOffset, MARKER_INTERVAL, MARKER_LEN};
pub use startup::{Startup, StartupEvent, StartupTerminate};
pub use wire::{IrdOrd, Rtr, RtrSet};

#[cfg(test)]
mod test_util;
