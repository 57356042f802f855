//! One rping run (`-C 1000 -V`) over the shim with the client under
//! valgrind's memcheck, against a shim server: no invalid read or write
//! and nothing definitely or indirectly lost. Blocks "possibly lost" and
//! "still reachable" are the stack that lives for the whole process (its
//! progress thread, the device) and are not counted. Skips without
//! valgrind (a failure under IWARP_REQUIRE_ALL=1).

mod common;

use std::process::Command;
use std::time::Duration;

use common::{assert_both_succeeded, free_port, over_shim, shim_dir, tool, wait_listening, Reaped};

/// valgrind slows the client many times over: a hang guard only.
const LIMIT: Duration = Duration::from_secs(600);

#[test]
fn rping_client_over_the_shim_is_clean_under_valgrind() {
    let (Some(rping), Some(valgrind)) =
        (tool("rping", "rdmacm-utils"), tool("valgrind", "valgrind"))
    else {
        return;
    };
    let port = free_port().to_string();
    let common_args = ["-a", "127.0.0.1", "-p", &port, "-C", "1000", "-V"];
    let mut server = over_shim(&rping);
    server.arg("-s").args(common_args);
    let s = Reaped::spawn(server);
    assert!(
        wait_listening(port.parse().unwrap(), Duration::from_secs(20)),
        "the server never listened on {port}"
    );
    let mut client = Command::new(valgrind);
    client
        .env("LD_LIBRARY_PATH", shim_dir())
        .args([
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect",
            "--error-exitcode=99",
        ])
        .arg(&rping)
        .arg("-c")
        .args(common_args);
    let (cs, cout) = Reaped::spawn(client).finish(LIMIT);
    let (ss, sout) = s.finish(LIMIT);
    // Exit status 99 is valgrind's: an invalid access or a counted leak.
    let report = assert_both_succeeded("rping under valgrind", (cs, &cout), (ss, &sout));
    let err = String::from_utf8_lossy(&cout.stderr);
    assert!(err.contains("ERROR SUMMARY: 0 errors"), "{report}");
    for line in err.lines().filter(|l| {
        l.contains("definitely lost:")
            || l.contains("indirectly lost:")
            || l.contains("possibly lost:")
            || l.contains("still reachable:")
    }) {
        println!("{line}");
    }
}
