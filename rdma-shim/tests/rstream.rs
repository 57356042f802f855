//! rstream (rdmacm-utils), unmodified, over the shim: rsockets is not
//! implemented (see docs/rdma-shim.md), so both ends must stop at their
//! first `rsocket` call with its error, exit with a failure status of
//! their own, and not crash.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use common::{free_port, over_shim, show, tool, Reaped};

#[test]
fn rstream_fails_cleanly_at_rsocket_in_both_roles() {
    let Some(rstream) = tool("rstream", "rdmacm-utils") else {
        return;
    };
    let port = free_port().to_string();
    for (role, args) in [
        ("server", vec!["-p", &port]),
        ("client", vec!["-s", "127.0.0.1", "-p", &port]),
    ] {
        let mut cmd = over_shim(&rstream);
        cmd.args(&args);
        let (status, out) = Reaped::spawn(cmd).finish(Duration::from_secs(30));
        let report = show(&format!("rstream {role}"), status, &out);
        let status = status.unwrap_or_else(|| panic!("rstream {role} hung: {report}"));
        assert_eq!(status.signal(), None, "rstream {role} crashed: {report}");
        assert!(!status.success(), "{report}");
        assert!(
            String::from_utf8_lossy(&out.stderr)
                .contains("rsocket failed: Operation not supported"),
            "{report}"
        );
    }
}
