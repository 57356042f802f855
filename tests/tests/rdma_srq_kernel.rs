//! Shared receive queues end to end over kernel TCP on loopback (127.0.0.1, ephemeral ports).

mod common;

use common::*;

fn net() -> Net {
    Net::kernel()
}

srq_cases!(net);
