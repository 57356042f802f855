//! A C program built with the system compiler against the system's
//! rdma-core headers (tests/c/write_read_send.c), run over the shim: an
//! RDMA Write, an RDMA Read and a Send between two ends in one process,
//! each checked byte for byte, plus completion-channel events, poll(2)
//! on the channel, and `bad_wr` on a refused post.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{free_port, over_shim, show, tool, Reaped};

/// Compiles `source` into the test's scratch directory, or skips.
pub fn build_c(source: &str, name: &str) -> Option<PathBuf> {
    let cc = tool("cc", "gcc")?;
    for h in [
        "/usr/include/infiniband/verbs.h",
        "/usr/include/rdma/rdma_cma.h",
    ] {
        if !Path::new(h).exists() {
            capture::skip::skip(&format!("{h} is missing (libibverbs-dev, librdmacm-dev)"));
            return None;
        }
    }
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(source);
    let st = Command::new(cc)
        .args(["-Wall", "-Werror", "-O1", "-o"])
        .arg(&out)
        .arg(&src)
        .args(["-lrdmacm", "-libverbs"])
        .status()
        .expect("running cc");
    assert!(st.success(), "cc failed on {}", src.display());
    Some(out)
}

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
