//! RDMAP (RFC 5040, RFC 7306): RDMA Write, Read, Send and Terminate, and the
//! per-connection state machine that joins MPA, DDP and RDMAP.
//!
//! - [`wire`]: the RDMAP control byte, Read Request and Terminate headers as
//!   checked views and `Repr`s, and whole message segments over DDP
//!   ([`wire::MessageRepr`]). Terminates are emitted in RFC 5040's layout and
//!   read in either RFC's or Linux siw's ([`wire::TermLayout`]).
//! - [`term`]: TERMINATE causes (the Layer/EType/Code triple shared with DDP
//!   and MPA) and what headers go with them.
//! - [`read_queue`]: outbound READs limited by ORD, inbound ones by IRD.
//! - [`connection::Connection`]: the sans-IO state machine a transport drives
//!   after MPA start-up: stream bytes in, whole FPDUs out, completions and
//!   terminations as events, no clocks, sockets or threads.
//!
//! # Example
//!
//! Two connections back to back, one Send:
//!
//! ```
//! use ddp::memory::{Access, PdId, RegionTable, STag};
//! use rdmap::{Connection, ConnectionConfig, Event, RecvWr, SendOp, SendWr, Sge, WcStatus};
//!
//! let negotiated = |role| mpa::Negotiated {
//!     rev: 2, crc: true, markers_tx: false, markers_rx: false, ird: 1, ord: 1,
//!     rtr: None, peer_private_data: Vec::new(), role, peer_ird_ord: None,
//! };
//! let pd = PdId(1);
//! let mut a = Connection::new(ConnectionConfig::new(negotiated(mpa::Role::Initiator), pd, 1460));
//! let mut b = Connection::new(ConnectionConfig::new(negotiated(mpa::Role::Responder), pd, 1460));
//! let (mut mem_a, mut mem_b) = (RegionTable::new(), RegionTable::new());
//! mem_a.register(STag(0x100), pd, 0, Access::NONE, b"hello".to_vec(), false);
//! mem_b.register(STag(0x200), pd, 0, Access::LOCAL_WRITE, vec![0; 5], false);
//!
//! b.post_recv(RecvWr::new(7, vec![Sge { stag: STag(0x200), to: 0, len: 5 }]))?;
//! a.post_send(SendWr::new(
//!     1,
//!     SendOp::Send { solicited: false, invalidate: None },
//!     vec![Sge { stag: STag(0x100), to: 0, len: 5 }],
//! ))?;
//!
//! let mut wire = [0u8; 1500];
//! let n = a.poll_transmit(&mem_a, &mut wire);
//! assert_eq!(b.handle_bytes(&mut mem_b, &wire[..n]), n);
//! assert_eq!(mem_b.bytes(STag(0x200)), Some(&b"hello"[..]));
//! match b.poll_event() {
//!     Some(Event::Completion(wc)) => assert_eq!((wc.wr_id, wc.status, wc.byte_len), (7, WcStatus::Success, 5)),
//!     other => panic!("{other:?}"),
//! }
//! # Ok::<(), rdmap::PostError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod completion;
pub mod connection;
mod fifo;
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
pub use work_request::{AtomicArgs, AtomicOp, PostError, RecvWr, SendOp, SendWr, Sge};
