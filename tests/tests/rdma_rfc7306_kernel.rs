//! RFC 7306 (immediate data, atomics) end to end over kernel TCP on loopback (127.0.0.1, ephemeral ports).

mod common;

use common::*;

fn net() -> Net {
    Net::kernel()
}

rfc7306_cases!(net);
