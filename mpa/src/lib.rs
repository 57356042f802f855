//! MPA (RFC 5044, RFC 6581): connection start-up and FPDU framing over a TCP
//! byte stream. Sans-IO: bytes and time in; bytes, events and deadlines out.
#![forbid(unsafe_code)]

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
pub use startup::{Startup, StartupEvent};
pub use wire::{IrdOrd, Rtr, RtrSet};

#[cfg(test)]
mod test_util;
