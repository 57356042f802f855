//! Error paths end to end over kernel TCP on loopback: completion
//! statuses on both sides, TERMINATEs in events and on the wire.

mod common;

use common::suite::errors;
use common::*;

fn kernel() -> Net {
    Net::kernel()
}

error_cases!(kernel);

#[test]
fn peer_exits_mid_transfer() {
    errors::peer_exits_mid_transfer(&kernel);
}
