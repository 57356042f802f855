//! RFC 7306 (immediate data, atomics) end to end over smoltcp on the in-memory link.

mod common;

use common::*;

fn net() -> Net {
    Net::memory(&MemoryLinkConfig::default())
}

rfc7306_cases!(net);
