//! End-to-end RDMA over kernel TCP on loopback (127.0.0.1, ephemeral ports).

mod common;

use common::suite::ops;
use common::*;

fn kernel() -> Net {
    Net::kernel()
}

#[test]
fn send_every_size() {
    ops::send_every_size(&kernel);
}

#[test]
fn write_every_size() {
    ops::write_every_size(&kernel);
}

#[test]
fn read_every_size() {
    ops::read_every_size(&kernel);
}

#[test]
fn solicited_event() {
    ops::solicited_event(&kernel);
}

#[test]
fn send_with_invalidate() {
    ops::send_with_invalidate(&kernel);
}

#[test]
fn scatter_gather() {
    ops::scatter_gather(&kernel);
}

#[test]
fn many_outstanding() {
    ops::many_outstanding(&kernel);
}

#[test]
fn queue_limits() {
    ops::queue_limits(&kernel);
}

#[test]
fn reads_beyond_ord() {
    ops::reads_beyond_ord(&kernel);
}

#[test]
fn sends_queue_behind_a_large_write() {
    ops::sends_queue_behind_a_large_write(&kernel);
}

#[test]
fn both_directions_at_once() {
    ops::both_directions_at_once(&kernel);
}

#[test]
fn unsignaled_requests() {
    ops::unsignaled_requests(&kernel);
}
