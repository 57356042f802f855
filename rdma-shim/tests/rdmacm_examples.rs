//! librdmacm's example programs from Debian's rdmacm-utils, unmodified,
//! over the shim against themselves: ucmatose (many connections, sends,
//! migrating ids to a new event channel) and rdma_server/rdma_client
//! (synchronous endpoints: rdma_create_ep, rdma_get_request and the
//! rdma_verbs.h helpers).

mod common;

use std::process::Command;
use std::time::Duration;

use common::{assert_both_succeeded, free_port, over_shim, tool, wait_listening, Reaped};

const LIMIT: Duration = Duration::from_secs(120);

fn pair(what: &str, server: Command, client: Command, port: u16) -> (String, String) {
    let s = Reaped::spawn(server);
    assert!(
        wait_listening(port, Duration::from_secs(20)),
        "{what}: the server never listened"
    );
    let (cs, cout) = Reaped::spawn(client).finish(LIMIT);
    let (ss, sout) = s.finish(LIMIT);
    assert_both_succeeded(what, (cs, &cout), (ss, &sout));
    (
        String::from_utf8_lossy(&cout.stdout).into_owned(),
        String::from_utf8_lossy(&sout.stdout).into_owned(),
    )
}

#[test]
fn ucmatose_many_connections_with_sends() {
    let Some(ucmatose) = tool("ucmatose", "rdmacm-utils") else {
        return;
    };
    for migrate in [false, true] {
        let port = free_port().to_string();
        let mut s = over_shim(&ucmatose);
        s.args(["-p", &port, "-c", "8", "-C", "20"]);
        let mut c = over_shim(&ucmatose);
        c.args(["-s", "127.0.0.1", "-p", &port, "-c", "8", "-C", "20"]);
        if migrate {
            s.arg("-m");
            c.arg("-m");
        }
        let (cout, sout) = pair("ucmatose", s, c, port.parse().unwrap());
        for out in [&cout, &sout] {
            assert!(out.contains("data transfers complete"), "{out}");
            assert!(out.contains("return status 0"), "{out}");
            assert_eq!(
                out.contains("migrating to new event channel"),
                migrate,
                "{out}"
            );
        }
    }
}

#[test]
fn rdma_server_and_rdma_client() {
    let (Some(server), Some(client)) = (
        tool("rdma_server", "rdmacm-utils"),
        tool("rdma_client", "rdmacm-utils"),
    ) else {
        return;
    };
    let port = free_port();
    let mut s = over_shim(&server);
    s.args(["-p", &port.to_string()]);
    let mut c = over_shim(&client);
    c.args(["-s", "127.0.0.1", "-p", &port.to_string()]);
    let (cout, sout) = pair("rdma_server/rdma_client", s, c, port);
    assert!(cout.contains("rdma_client: end 0"), "{cout}");
    assert!(sout.contains("rdma_server: end 0"), "{sout}");
}
