//! A C program built with the system compiler against the system's
//! rdma-core headers (tests/c/write_read_send.c), run over the shim: an
//! RDMA Write, an RDMA Read and a Send between two ends in one process,
//! each checked byte for byte, plus completion-channel events, poll(2)
//! on the channel, and `bad_wr` on a refused post.

mod common;

use std::time::Duration;

use common::{build_c, free_port, over_shim, show, Reaped};

/// Builds `tests/c/write_read_send.c` as `name`, runs it over the shim
/// with `args` after its port and `env` set, and checks it printed OK.
fn run_write_read_send(name: &str, args: &[&str], env: &[(&str, &str)]) {
    let Some(exe) = build_c("tests/c/write_read_send.c", name) else {
        return;
    };
    let mut cmd = over_shim(&exe);
    cmd.arg(free_port().to_string())
        .args(args)
        .envs(env.iter().copied());
    let (status, out) = Reaped::spawn(cmd).finish(Duration::from_secs(60));
    let report = show(name, status, &out);
    assert!(status.is_some_and(|s| s.success()), "{report}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "OK",
        "{report}"
    );
    // The program's figures (what an empty poll costs).
    print!("{name}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_c_program_writes_reads_and_sends_over_the_shim() {
    run_write_read_send("write_read_send", &[], &[]);
}

#[test]
fn the_c_program_receives_through_a_shared_receive_queue() {
    run_write_read_send("write_read_send_srq", &["srq"], &[]);
}

#[test]
fn the_c_program_uses_immediate_data_and_atomics_with_rfc7306() {
    run_write_read_send(
        "write_read_send_7306",
        &["rfc7306"],
        &[("IWARP_RFC7306", "1")],
    );
}

/// rsockets is librdmacm's own protocol, not implemented here: every
/// exported `r*` call fails with -1 and EOPNOTSUPP, writing nothing.
#[test]
fn rsocket_calls_fail_cleanly_with_eopnotsupp() {
    let Some(exe) = build_c("tests/c/rsocket_unsupported.c", "rsocket_unsupported") else {
        return;
    };
    let (status, out) = Reaped::spawn(over_shim(&exe)).finish(Duration::from_secs(30));
    let report = show("rsocket_unsupported", status, &out);
    assert!(status.is_some_and(|s| s.success()), "{report}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "OK",
        "{report}"
    );
}

/// rdma_cm calls on a destroyed id or channel fail with EINVAL rather
/// than reach freed memory.
#[test]
fn calls_on_destroyed_ids_and_channels_fail_with_einval() {
    let Some(exe) = build_c("tests/c/stale_handles.c", "stale_handles") else {
        return;
    };
    let (status, out) = Reaped::spawn(over_shim(&exe)).finish(Duration::from_secs(30));
    let report = show("stale_handles", status, &out);
    assert!(status.is_some_and(|s| s.success()), "{report}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "OK",
        "{report}"
    );
}
