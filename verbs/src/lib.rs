//! The verbs facade: devices, protection domains, memory regions, completion
//! queues, queue pairs and a connection manager over pluggable transports.
#![forbid(unsafe_code)]

/// The transports a [`Device`] runs over, re-exported so that a program
/// building a device needs only this crate (`verbs::transport::memory`, ...).
pub use transport;

pub mod cm;
pub mod cq;
mod device;
mod engine;
mod error;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod mr;
pub mod pd;
pub mod qp;

pub use cm::{
    AcceptParams, CmEvent, ConnectParams, ConnectRequest, ConnectionInfo, CrcPolicy,
    DisconnectReason, ListenOptions, Listener, MpaOptions, Rtr, RtrSet,
};
pub use cq::{CompletionQueue, WcOpcode, WcStatus, WorkCompletion};
pub use ddp::memory::{Access, PdId, STag};
pub use device::{Device, ProgressThread};
pub use error::VerbsError;
pub use mr::MemoryRegion;
pub use pd::ProtectionDomain;
pub use qp::{wr, QpInit, QpState, QueuePair, RecvWr, SendOp, SendWr, Sge};
