//! Two connections back to back: operations, ordering, peer-to-peer
//! start-up, every error path, flushes, chunked delivery.

mod capture;
mod util;

mod errors;
mod fence_inline;
mod fused_crc;
mod message_fields;
mod model;
mod operations;
mod ordering;
mod p2p;
mod replay;
mod rfc7306;
mod send_runs;
mod shared_receive;
mod stats;
mod teardown;
mod transport;
