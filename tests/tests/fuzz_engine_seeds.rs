//! The `verbs_engine` seeds mean what they claim: each aimed stream
//! reaches the part of the endpoint it names (a receive, the remote-write
//! window, the endpoint's own Read, a refusal), and every run ends with
//! every work request completed.

use iwarp_tests::fuzz_seeds::engine::{aimed, input};
use verbs::fuzzing::{engine_outcome, Outcome, RECVS};
use verbs::{DisconnectReason, WcOpcode, WcStatus};

fn run(name: &str, crc: bool) -> Outcome {
    let (_, ulpdus) = aimed()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no aimed stream {name}"));
    engine_outcome(&input(crc, &ulpdus).encode())
}

fn status(o: &Outcome, opcode: WcOpcode, wr_id: u64) -> WcStatus {
    o.completions
        .iter()
        .find(|w| w.opcode == opcode && w.wr_id == wr_id)
        .unwrap_or_else(|| panic!("no {opcode:?} {wr_id}: {:?}", o.completions))
        .status
}

fn terminated_by_us(o: &Outcome) -> bool {
    matches!(
        o.ended,
        Some(DisconnectReason::Terminated { by_peer: false, .. })
    )
}

#[test]
fn a_send_lands_in_the_first_receive() {
    for crc in [false, true] {
        let o = run("send", crc);
        assert_eq!(status(&o, WcOpcode::Recv, 0), WcStatus::Success, "{o:?}");
        assert!(!terminated_by_us(&o), "{o:?}");
    }
}

#[test]
fn sends_fill_every_receive() {
    let o = run("send-every-receive", false);
    for k in 0..RECVS {
        assert_eq!(status(&o, WcOpcode::Recv, k), WcStatus::Success);
    }
}

#[test]
fn a_write_lands_in_the_window() {
    let o = run("write-window", false);
    assert_eq!(o.window_changed, 64, "{o:?}");
    assert!(!terminated_by_us(&o), "{o:?}");
}

#[test]
fn the_endpoints_own_read_is_answered() {
    let o = run("send-then-read-response", false);
    assert_eq!(
        status(&o, WcOpcode::RdmaRead, 100),
        WcStatus::Success,
        "{o:?}"
    );
}

#[test]
fn refusals_terminate_and_flush() {
    for name in [
        "write-no-access",
        "write-read-only",
        "write-past-window",
        "read-no-access",
        "read-past-readable",
        "send-too-long",
        "send-then-msn-gap",
    ] {
        let o = run(name, false);
        assert!(terminated_by_us(&o), "{name}: {o:?}");
        assert_eq!(o.window_changed, 0, "{name}");
    }
}

#[test]
fn a_peer_terminate_ends_the_connection() {
    let o = run("terminate", false);
    assert!(
        matches!(
            o.ended,
            Some(DisconnectReason::Terminated { by_peer: true, .. })
        ),
        "{o:?}"
    );
}

/// The same streams with the receives on a shared receive queue: Sends
/// take them in order, and what no Send took is handed back when the
/// queue goes, not flushed with the queue pair.
#[test]
fn shared_receives_are_taken_or_handed_back() {
    let srq = |name: &str| {
        let (_, ulpdus) = aimed().into_iter().find(|(n, _)| *n == name).unwrap();
        let mut i = input(false, &ulpdus);
        i.srq = true;
        engine_outcome(&i.encode())
    };
    let o = srq("send");
    assert_eq!(status(&o, WcOpcode::Recv, 0), WcStatus::Success, "{o:?}");
    assert_eq!(o.handed_back, (1..RECVS).collect::<Vec<_>>(), "{o:?}");
    let o = srq("send-every-receive");
    for k in 0..RECVS {
        assert_eq!(status(&o, WcOpcode::Recv, k), WcStatus::Success);
    }
    assert!(o.handed_back.is_empty(), "{o:?}");
    // A Send too long for the receive it took: that one fails, the
    // others stay the queue's.
    let o = srq("send-too-long");
    assert_eq!(status(&o, WcOpcode::Recv, 0), WcStatus::LocLenErr, "{o:?}");
    assert!(terminated_by_us(&o), "{o:?}");
    assert_eq!(o.handed_back, (1..RECVS).collect::<Vec<_>>(), "{o:?}");
}
