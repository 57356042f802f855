//! The verbs facade: devices, protection domains, memory regions, completion
//! queues, queue pairs and a connection manager over pluggable transports.
//!
//! The modules form layers, and each uses only the layers below it:
//!
//! ```text
//! handles   cm, cq, qp, srq, mr,  what the program holds; each also adds
//!           pd, channel, query,   its constructor to `Device`; `tokio`
//!           tokio                 (feature) wraps them in futures
//!   |
//! device    device                the engine behind a lock, waits without
//!                                 it, the progress thread, counters
//!   |
//! engine    engine                queue pairs, listeners and start-ups on
//!                                 one transport; owns the completion-queue
//!                                 storage and the registration table
//!   |
//! types     types                 plain data: parameters, events,
//!                                 completions, states, work requests, errors
//! ```
//!
//! So the engine never names a handle, and a handle is never kept inside
//! the engine (a queue pair's slot holds its completion queues' storage,
//! not the queue handles, which hold the device). The public paths
//! (`verbs::cm::CmEvent`, `verbs::cq::WorkCompletion`, `verbs::qp::wr`...)
//! re-export the plain types from the handle module they belong with.
//!
//! Waiting: blocking calls (`CompletionQueue::wait`, `Listener::request`,
//! `QueuePair::wait_event`), an [`EventChannel`] for epoll/mio/tokio event
//! loops, or the futures of `verbs::tokio` with the `tokio`
//! feature. `verbs/examples/` has a client/server pair (`memory_pair`) and
//! an async ping-pong (`async_pingpong`); both run without privileges.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// The transports a [`Device`] runs over, re-exported so that a program
/// building a device needs only this crate (`verbs::transport::memory`, ...).
pub use transport;

#[macro_use]
mod trace;

pub mod channel;
pub mod cm;
pub mod cq;
mod device;
mod engine;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod mr;
mod mr_buffer;
pub mod pd;
pub mod qp;
mod qp_stats;
mod query;
pub mod srq;
#[cfg(feature = "tokio")]
pub mod tokio;
mod types;

pub use channel::EventChannel;
pub use cm::{
    AcceptParams, CmEvent, ConnectParams, ConnectRequest, ConnectionInfo, CrcPolicy,
    DisconnectReason, ListenOptions, Listener, MpaOptions, Rtr, RtrSet,
};
pub use cq::{CompletionQueue, NotifyOn, WcOpcode, WcStatus, WorkCompletion};
pub use ddp::memory::{Access, PdId, STag};
pub use device::{Device, DeviceStats, ProgressThread};
pub use mr::MemoryRegion;
pub use mr_buffer::RegionBuffer;
pub use pd::ProtectionDomain;
pub use qp::{wr, AtomicArgs, AtomicOp, QpInit, QpState, QueuePair, RecvWr, SendOp, SendWr, Sge};
pub use qp_stats::{ConnectionStats, MpaPhase, QpStats, TcpStreamStats, TerminateRecord};
pub use query::{DeviceAttr, QpAttr, QpCap};
pub use srq::{SharedReceiveQueue, SrqAttr, SrqEvent, SrqInUse, SrqInit};
pub use types::{ConnectError, MpaFailure, MpaSettingsError, PostListError, VerbsError};

/// The README's code, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// The code of the RFC 7306 and verbs extras page, compiled and run as a
/// doctest.
#[cfg(doctest)]
#[doc = include_str!("../../docs/rfc7306-and-verbs-extras.md")]
pub struct ExtrasDoctests;
