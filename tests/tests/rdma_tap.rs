//! End-to-end RDMA between smoltcp on a TAP device and kernel TCP, inside
//! a network namespace each test creates and deletes; both ways round
//! (the TAP side connecting, and the kernel side connecting). Needs root,
//! /dev/net/tun and iproute2, otherwise each test prints why it skips.

mod common;

use common::net::{in_netns, Netns};
use common::suite::MakeNet;
use common::*;

/// Runs `body` inside a fresh namespace with the TAP side as client
/// (`tap_is_client`) or server.
fn in_namespace(test: &str, tap_is_client: bool, body: fn(MakeNet)) {
    let Some(ns) = Netns::for_test(test) else {
        return;
    };
    in_netns(&ns, || body(&|| Net::tap(&ns, tap_is_client)));
}

macro_rules! cases {
    ($module:ident: $($name:ident),* $(,)?) => {
        mod $module {
            use super::*;
            use common::suite::$module as cases;
            mod tap_connects {
                use super::*;
                $(#[test] fn $name() {
                    in_namespace(stringify!($name), true, cases::$name);
                })*
            }
            mod kernel_connects {
                use super::*;
                $(#[test] fn $name() {
                    in_namespace(stringify!($name), false, cases::$name);
                })*
            }
        }
    };
}

cases!(ops:
    send_every_size,
    write_every_size,
    read_every_size,
    scatter_gather,
    many_outstanding,
    reads_beyond_ord,
    both_directions_at_once,
    send_with_invalidate,
);

cases!(errors:
    write_to_invalid_stag,
    read_out_of_bounds,
    write_without_remote_write,
    receive_too_small,
    send_without_receive,
    disconnect_with_work_outstanding,
    connect_refused,
    reject_with_private_data,
    initiator_times_out,
);

// RFC 7306 (both applications agreed): Write and Send with Immediate Data,
// Fetch and Add and Compare and Swap, a refused atomic with its TERMINATE
// decoded from the capture, and the TERMINATE of a peer that did not agree.
cases!(rfc7306:
    write_with_immediate,
    send_with_immediate,
    atomics,
    atomic_to_invalid_stag,
    not_agreed,
);

// Shared receive queues: several queue pairs on one, and the TERMINATE for
// a Send that finds it empty.
cases!(srq:
    several_queue_pairs_share_one,
    empty_terminates,
);

/// The kernel-side client's process ends mid-transfer: its kernel closes
/// the sockets and the TAP-side server sees the stream end. (The other way
/// round, the TAP interface vanishes with the process and the kernel's own
/// TCP retries for many minutes, as it would for a host that went away.)
#[test]
fn kernel_peer_exits_mid_transfer() {
    in_namespace(
        "kernel_peer_exits_mid_transfer",
        false,
        common::suite::errors::peer_exits_mid_transfer,
    );
}

/// A progress thread on each side over TAP: idle without spinning, a post
/// wakes it (the TAP transport waits in poll(2) on the TAP descriptor and
/// an eventfd), counted by the devices' statistics rather than timed.
#[test]
fn progress_threads_over_tap() {
    use std::time::{Duration, Instant};
    use verbs::{wr, Access, WcStatus};
    let Some(ns) = Netns::for_test("progress_threads_over_tap") else {
        return;
    };
    in_netns(&ns, || {
        let p = connect(Net::tap(&ns, true), Opts::default());
        let _a = p.client.spawn_progress_thread();
        let _b = p.server.spawn_progress_thread();
        std::thread::sleep(Duration::from_millis(150));
        for dev in [&p.client, &p.server] {
            let (before, start) = (dev.stats(), Instant::now());
            std::thread::sleep(Duration::from_millis(200));
            let (s, spell) = (dev.stats().since(&before), start.elapsed());
            // At most 6 turns per started 100 ms that really passed: the
            // thread wakes for deadlines only, it does not spin.
            let budget = 6 * (spell.as_millis() as u64 / 100 + 1);
            assert!(
                s.thread_turns <= budget,
                "{} turns in {spell:?} idle",
                s.thread_turns
            );
            assert_eq!((s.woken_by_post, s.woken_by_call), (0, 0), "{s:?}");
        }
        let rx = suite::guarded(&p.server_pd, 64, Access::LOCAL_WRITE);
        let src = suite::holding(&p.client_pd, 0, b"over the tap", 0, Access::NONE);
        const ROUNDS: u64 = 3;
        let mut woken = 0;
        for i in 0..ROUNDS {
            std::thread::sleep(Duration::from_millis(20));
            p.server_qp
                .post_recv(wr::recv(i, vec![rx.sge_all()]))
                .unwrap();
            let before = p.client.stats();
            let start = Instant::now();
            p.client_qp
                .post_send(wr::send(10 + i, vec![src.sge_all()]))
                .unwrap();
            let w = p.server_cq.wait_one(LIMIT).unwrap().expect("receive");
            println!("tap: send to receive {:?}", start.elapsed());
            assert_eq!((w.wr_id, w.status, w.byte_len), (i, WcStatus::Success, 12));
            let d = p.client.stats().since(&before);
            woken += u64::from(d.woken_by_post > 0 || d.sent_by_poster > 0);
        }
        // A post that neither woke the thread nor went out on the posting
        // thread (the transport left in the device by a thread asleep on
        // its readiness descriptor) would be sent only when the thread's
        // idle wait timed out, and no round would count.
        assert!(
            woken > 0,
            "a post went out at once in {woken} of {ROUNDS} rounds"
        );
    });
}
