//! End-to-end RDMA over smoltcp on the in-memory link.

mod common;

use common::suite::ops;
use common::*;

fn memory() -> Net {
    Net::memory(&MemoryLinkConfig::default())
}

#[test]
fn send_every_size() {
    ops::send_every_size(&memory);
}

#[test]
fn write_every_size() {
    ops::write_every_size(&memory);
}

#[test]
fn read_every_size() {
    ops::read_every_size(&memory);
}

#[test]
fn solicited_event() {
    ops::solicited_event(&memory);
}

#[test]
fn send_with_invalidate() {
    ops::send_with_invalidate(&memory);
}

#[test]
fn scatter_gather() {
    ops::scatter_gather(&memory);
}

#[test]
fn many_outstanding() {
    ops::many_outstanding(&memory);
}

#[test]
fn queue_limits() {
    ops::queue_limits(&memory);
}

#[test]
fn reads_beyond_ord() {
    ops::reads_beyond_ord(&memory);
}

#[test]
fn sends_queue_behind_a_large_write() {
    ops::sends_queue_behind_a_large_write(&memory);
}

#[test]
fn both_directions_at_once() {
    ops::both_directions_at_once(&memory);
}

#[test]
fn unsignaled_requests() {
    ops::unsignaled_requests(&memory);
}
