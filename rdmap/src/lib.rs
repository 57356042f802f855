//! RDMAP (RFC 5040, RFC 7306): RDMA Write, Read, Send and Terminate, and the
//! per-connection state machine that joins MPA, DDP and RDMAP.
#![forbid(unsafe_code)]

pub mod opcode;
pub mod wire;

pub use opcode::Opcode;
