//! Shared receive queues end to end over smoltcp on the in-memory link.

mod common;

use common::suite::srq;
use common::*;

fn net() -> Net {
    Net::memory(&MemoryLinkConfig::default())
}

#[test]
fn several_queue_pairs_share_one() {
    srq::several_queue_pairs_share_one(&net);
}

#[test]
fn limit_event_fires_once() {
    srq::limit_event_fires_once(&net);
}

#[test]
fn empty_terminates() {
    srq::empty_terminates(&net);
}

#[test]
fn queue_pairs_going_leave_its_work_requests() {
    srq::queue_pairs_going_leave_its_work_requests(&net);
}

#[test]
fn destroy_returns_what_is_posted() {
    srq::destroy_returns_what_is_posted(&net);
}
