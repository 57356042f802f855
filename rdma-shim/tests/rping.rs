//! Debian's rping (rdmacm-utils), unmodified, over the shim: against
//! itself and against this workspace's `iwarp rping`, in both roles, on
//! loopback over kernel TCP. Each run validates the data (-V) and must
//! end with both sides exiting 0.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{
    assert_both_succeeded, free_port, iwarp_tool, over_shim, show, tool, wait_listening, Reaped,
};

const LIMIT: Duration = Duration::from_secs(120);
const ARGS: [&str; 5] = ["-C", "100", "-V", "-S", "65000"];

fn rping_args(role: &str, port: u16) -> Vec<String> {
    let mut a = vec![
        role.to_string(),
        "-a".into(),
        "127.0.0.1".into(),
        "-p".into(),
        port.to_string(),
    ];
    a.extend(ARGS.iter().map(|s| s.to_string()));
    a
}

/// Runs `server` until it listens, then `client`; both must succeed.
fn pair(mut server: Command, mut client: Command, port: u16) {
    server.args(rping_args("-s", port));
    client.args(rping_args("-c", port));
    let s = Reaped::spawn(server);
    assert!(
        wait_listening(port, Duration::from_secs(20)),
        "the server never listened on {port}"
    );
    let c = Reaped::spawn(client);
    let (cs, cout) = c.finish(LIMIT);
    let (ss, sout) = s.finish(LIMIT);
    let report = assert_both_succeeded("rping", (cs, &cout), (ss, &sout));
    assert!(
        !String::from_utf8_lossy(&cout.stderr).contains("data mismatch"),
        "{report}"
    );
}

fn iwarp_rping(iwarp: &Path) -> Command {
    let mut c = Command::new(iwarp);
    c.arg("rping");
    c
}

#[test]
fn rping_over_the_shim_against_itself() {
    let Some(rping) = tool("rping", "rdmacm-utils") else {
        return;
    };
    pair(over_shim(&rping), over_shim(&rping), free_port());
}

#[test]
fn rping_client_over_the_shim_against_iwarp_rping() {
    let (Some(rping), Some(iwarp)) = (tool("rping", "rdmacm-utils"), iwarp_tool()) else {
        return;
    };
    pair(iwarp_rping(&iwarp), over_shim(&rping), free_port());
}

#[test]
fn rping_server_over_the_shim_against_iwarp_rping() {
    let (Some(rping), Some(iwarp)) = (tool("rping", "rdmacm-utils"), iwarp_tool()) else {
        return;
    };
    pair(over_shim(&rping), iwarp_rping(&iwarp), free_port());
}

#[test]
fn rping_to_a_port_nobody_listens_on_is_rejected_as_on_linux() {
    let Some(rping) = tool("rping", "rdmacm-utils") else {
        return;
    };
    let mut c = over_shim(&rping);
    c.args(rping_args("-c", free_port()));
    let (status, out) = Reaped::spawn(c).finish(LIMIT);
    let report = show("client", status, &out);
    assert!(status.is_some_and(|s| !s.success()), "{report}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("RDMA_CM_EVENT_REJECTED, error -111"),
        "{report}"
    );
}
