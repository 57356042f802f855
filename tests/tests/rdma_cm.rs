//! The connection manager end to end over the memory link and kernel TCP.

mod common;

use common::*;

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        mod memory {
            use super::*;
            $(#[test] fn $name() {
                common::suite::cm::$name(&|| Net::memory(&MemoryLinkConfig::default()));
            })*
        }
        mod kernel {
            use super::*;
            $(#[test] fn $name() { common::suite::cm::$name(&Net::kernel); })*
        }
    };
}

cases!(
    many_connections_one_listener,
    backlog_refuses_the_excess,
    unlisten_resets_pending_startups,
    unanswered_request_is_rejected,
    private_data_and_ird_ord,
    peer_to_peer_each_rtr,
    peer_to_peer_granted_by_default,
    responder_waits_for_the_first_fpdu,
    mpa_revision_1,
    crc_policies,
    markers_both_ways,
    cq_overflow_is_reported,
    local_misuse_is_refused,
    dropping_a_queue_pair_closes,
    failed_accept_rejects,
);
