//! Shared receive queues end to end over smoltcp on the in-memory link.

mod common;

use common::*;

fn net() -> Net {
    Net::memory(&MemoryLinkConfig::default())
}

srq_cases!(net);
