//! RDMAP (RFC 5040, RFC 7306): RDMA Write, Read, Send and Terminate, and the
//! per-connection state machine that joins MPA, DDP and RDMAP.
#![forbid(unsafe_code)]

pub mod completion;
pub mod connection;
pub mod opcode;
pub mod read_queue;
pub mod term;
pub mod wire;
pub mod work_request;

#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;

pub use completion::{WcOpcode, WcStatus, WorkCompletion};
pub use connection::{Connection, ConnectionConfig, Event, PeerTerminate, State};
pub use opcode::Opcode;
pub use term::{Attach, Layer, TermCause, TermCode};
pub use work_request::{PostError, RecvWr, SendOp, SendWr, Sge};
