//! Error paths end to end over kernel TCP on loopback: completion
//! statuses on both sides, TERMINATEs in events and on the wire.

mod common;

use common::suite::errors;
use common::*;

fn kernel() -> Net {
    Net::kernel()
}

macro_rules! cases {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            errors::$name(&kernel);
        }
    )*};
}

cases!(
    write_to_invalid_stag,
    read_from_invalid_stag,
    write_to_deregistered_stag,
    read_from_deregistered_stag,
    write_out_of_bounds,
    write_below_the_base,
    read_out_of_bounds,
    write_without_remote_write,
    read_without_remote_read,
    write_to_another_pd,
    read_from_another_pd,
    receive_too_small,
    send_without_receive,
    local_protection_error,
    read_into_read_only_sink,
    disconnect_with_work_outstanding,
    connect_refused,
    reject_with_private_data,
    initiator_times_out,
    invalidate_a_local_only_region,
    invalidate_a_region_of_another_pd,
    write_after_remote_invalidate,
);

#[test]
fn peer_exits_mid_transfer() {
    errors::peer_exits_mid_transfer(&kernel);
}
