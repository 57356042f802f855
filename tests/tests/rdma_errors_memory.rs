//! Error paths end to end over smoltcp on the in-memory link: completion
//! statuses on both sides, TERMINATEs in events and on the wire.

mod common;

use common::suite::errors;
use common::*;

fn memory() -> Net {
    Net::memory(&MemoryLinkConfig::default())
}

error_cases!(memory);

#[test]
fn peer_exits_mid_transfer() {
    errors::peer_exits_mid_transfer(&|| Net::memory_virtual(&MemoryLinkConfig::default()));
}

#[test]
fn peer_goes_silent_mid_transfer() {
    errors::peer_goes_silent_mid_transfer(&|| Net::memory_virtual(&MemoryLinkConfig::default()));
}
