//! What the smoltcp-based transports share: a [`Transport`](super::Transport)
//! over any smoltcp device, and the TCP tuning an RDMA stream wants.

mod ring_memory;
mod stack;
mod tuning;

pub use stack::{LinkDevice, SmolStack};
pub use tuning::{CongestionControl, TcpTuning};
