//! Debian's perftest (ib_*_bw and ib_*_lat with -R, rdma_cm), unmodified,
//! over the shim: against itself, and against this workspace's `iwarp
//! perf` in both roles. Each run must end with both sides exiting 0 and
//! the client printing its result line. Figures are printed, not judged.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{
    assert_both_succeeded, build_preload, free_port, iwarp_tool, over_shim, show, tool,
    wait_listening, Reaped,
};

const LIMIT: Duration = Duration::from_secs(180);

/// (perftest program, `iwarp perf` test name, iterations).
const TESTS: [(&str, &str, &str); 5] = [
    ("ib_write_bw", "write", "500"),
    ("ib_read_bw", "read", "500"),
    ("ib_send_bw", "send", "500"),
    ("ib_write_lat", "write-lat", "500"),
    ("ib_read_lat", "read-lat", "500"),
];

/// Runs `server`, waits for it to listen, then `client`; both must exit 0
/// and the client must print a result row for `iters` iterations.
///
/// perftest's -R server closes the listener of its first connection and
/// listens again for the test's own; a client that connects in between
/// is refused (REJECTED, -111), as it would be on Linux, and perftest
/// then gives up. That one outcome is run again, at most twice.
fn pair(what: &str, make: impl Fn() -> (Command, Command), iters: &str) {
    for attempt in 1..=3 {
        let port = free_port();
        let (mut server, mut client) = make();
        server.args(["-p", &port.to_string(), "-n", iters, "-R"]);
        let s = Reaped::spawn(server);
        assert!(
            wait_listening(port, Duration::from_secs(20)),
            "{what}: the server never listened on {port}"
        );
        client.args(["-p", &port.to_string(), "-n", iters, "-R", "127.0.0.1"]);
        let c = Reaped::spawn(client);
        let (cs, cout) = c.finish(LIMIT);
        let refused = String::from_utf8_lossy(&cout.stdout).contains("REJECTED; error: -111")
            || String::from_utf8_lossy(&cout.stderr).contains("REJECTED; error: -111");
        if refused && attempt < 3 {
            println!("{what}: refused while the server listened again (attempt {attempt}); again");
            continue;
        }
        let (ss, sout) = s.finish(LIMIT);
        let report = assert_both_succeeded(what, (cs, &cout), (ss, &sout));
        let text = String::from_utf8_lossy(&cout.stdout);
        let row = text
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(iters))
            .unwrap_or_else(|| panic!("no result row for {iters} iterations\n{report}"));
        println!("{what}: {row}");
        return;
    }
}

fn perftest(p: &Path) -> Command {
    over_shim(p)
}

fn iwarp_perf(iwarp: &Path, test: &str) -> Command {
    let mut c = Command::new(iwarp);
    c.args(["perf", test]);
    c
}

#[test]
fn perftest_over_the_shim_against_itself() {
    for (prog, _, iters) in TESTS {
        let Some(p) = tool(prog, "perftest") else {
            return;
        };
        pair(
            &format!("{prog} shim/shim"),
            || (perftest(&p), perftest(&p)),
            iters,
        );
    }
}

#[test]
fn perftest_client_over_the_shim_against_iwarp_perf() {
    let Some(iwarp) = iwarp_tool() else { return };
    for (prog, test, iters) in TESTS {
        let Some(p) = tool(prog, "perftest") else {
            return;
        };
        pair(
            &format!("{prog} shim client, iwarp perf server"),
            || (iwarp_perf(&iwarp, test), perftest(&p)),
            iters,
        );
    }
}

#[test]
fn perftest_server_over_the_shim_against_iwarp_perf() {
    let Some(iwarp) = iwarp_tool() else { return };
    for (prog, test, iters) in TESTS {
        let Some(p) = tool(prog, "perftest") else {
            return;
        };
        pair(
            &format!("{prog} shim server, iwarp perf client"),
            || (perftest(&p), iwarp_perf(&iwarp, test)),
            iters,
        );
    }
}

/// With a disconnect grace on both ends (as the siw interop runs set it
/// for the client), each side's disconnect first waits for the other's
/// close: the run still ends, both exiting 0.
#[test]
fn perftest_over_the_shim_ends_with_a_disconnect_grace_on_both_sides() {
    let Some(p) = tool("ib_read_bw", "perftest") else {
        return;
    };
    let graced = || {
        let mut c = perftest(&p);
        c.env("IWARP_DISCONNECT_GRACE_MS", "300");
        c
    };
    pair(
        "ib_read_bw shim/shim with a disconnect grace",
        || (graced(), graced()),
        "500",
    );
}

/// A test connection refused because the server listens late (as a slow
/// siw server does): perftest 4.5's client then retries on ids and a
/// channel it has destroyed. It must end by itself with an error, not be
/// killed by a signal on the way out.
#[test]
fn perftest_client_refused_by_a_late_listener_exits_without_crashing() {
    use std::os::unix::process::ExitStatusExt;

    let Some(p) = tool("ib_read_bw", "perftest") else {
        return;
    };
    let Some(late) = build_preload("tests/c/late_listen.c", "late_listen.so") else {
        return;
    };
    let port = free_port().to_string();
    let mut server = perftest(&p);
    server
        .env("LD_PRELOAD", &late)
        .args(["-p", &port, "-n", "100", "-R"]);
    let s = Reaped::spawn(server);
    assert!(
        wait_listening(port.parse().unwrap(), Duration::from_secs(20)),
        "the server never listened on {port}"
    );
    let mut client = perftest(&p);
    client.args(["-p", &port, "-n", "100", "-R", "127.0.0.1"]);
    let (cs, cout) = Reaped::spawn(client).finish(LIMIT);
    // The server, its client gone, waits for a connection that never
    // comes; dropping it kills it.
    drop(s);
    let report = show("ib_read_bw client", cs, &cout);
    assert!(
        String::from_utf8_lossy(&cout.stderr).contains("REJECTED; error: -111"),
        "the late listener did not refuse the test connection\n{report}"
    );
    let status = cs.unwrap_or_else(|| panic!("the client hung\n{report}"));
    assert_eq!(status.signal(), None, "the client was killed\n{report}");
}
