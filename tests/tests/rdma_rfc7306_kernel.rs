//! RFC 7306 (immediate data, atomics) end to end over kernel TCP on loopback (127.0.0.1, ephemeral ports).

mod common;

use common::suite::rfc7306;
use common::*;

fn net() -> Net {
    Net::kernel()
}

#[test]
fn write_with_immediate() {
    rfc7306::write_with_immediate(&net);
}

#[test]
fn send_with_immediate() {
    rfc7306::send_with_immediate(&net);
}

#[test]
fn atomics() {
    rfc7306::atomics(&net);
}

#[test]
fn many_atomics_both_ways() {
    rfc7306::many_atomics_both_ways(&net);
}

#[test]
fn not_agreed() {
    rfc7306::not_agreed(&net);
}

#[test]
fn atomic_without_remote_atomic() {
    rfc7306::atomic_without_remote_atomic(&net);
}

#[test]
fn atomic_out_of_bounds() {
    rfc7306::atomic_out_of_bounds(&net);
}

#[test]
fn atomic_to_invalid_stag() {
    rfc7306::atomic_to_invalid_stag(&net);
}

#[test]
fn immediate_without_receive() {
    rfc7306::immediate_without_receive(&net);
}
