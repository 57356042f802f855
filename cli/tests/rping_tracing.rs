//! `RUST_LOG=debug iwarp rping ...`: one run's tracing on stderr, with the
//! MPA start-up steps, state changes and spans of each side; and none of
//! it with RUST_LOG empty.

mod two_process;

use std::time::Duration;

use two_process::{free_port, Proc};

const LIMIT: Duration = Duration::from_secs(60);

fn run(env: &[(&str, &str)]) -> (String, String) {
    let port = free_port().to_string();
    let mut s = Proc::spawn_with_env(&["rping", "-s", "-a", "127.0.0.1", "-p", &port, "-d"], env);
    assert!(
        s.wait_line(|l| l == "rdma_listen", Duration::from_secs(20)),
        "server never listened: {:?}",
        s.lines()
    );
    let mut c = Proc::spawn_with_env(
        &[
            "rping",
            "-c",
            "-a",
            "127.0.0.1",
            "-p",
            &port,
            "-C",
            "3",
            "-V",
        ],
        env,
    );
    assert_eq!(c.wait(LIMIT), Some(0), "client: {}", c.stderr());
    assert_eq!(s.wait(LIMIT), Some(0), "server: {}", s.stderr());
    (c.stderr(), s.stderr())
}

/// Whether some line of `log` has every one of `parts`.
fn has_line(log: &str, parts: &[&str]) -> bool {
    log.lines().any(|l| parts.iter().all(|p| l.contains(p)))
}

#[test]
fn rust_log_debug_traces_one_rping_run_on_both_sides() {
    let (client, server) = run(&[("RUST_LOG", "debug")]);
    for (log, want) in [
        (
            &client,
            &["DEBUG", "qp{num=1}", "MPA initiator: TCP connecting"][..],
        ),
        (
            &client,
            &[
                "role=\"initiator\"",
                "MPA initiator: TCP connected, sending the Request",
            ],
        ),
        (&client, &["MPA: Request queued whole"]),
        (
            &client,
            &["MPA: start-up complete", "rev=2", "ird=1", "ord=1"],
        ),
        (&client, &["INFO", "connection established", "qp=1"]),
        (
            &client,
            &[
                "queue pair phase",
                "from=awaiting-mpa-reply",
                "to=established",
            ],
        ),
        (
            &client,
            &["queue pair phase", "from=established", "to=closed"],
        ),
        (
            &server,
            &[
                "role=\"responder\"",
                "MPA responder: TCP accepted, awaiting the Request",
            ],
        ),
        (&server, &["MPA responder: Request received", "rev=2"]),
        (&server, &["MPA responder: Request accepted"]),
        (&server, &["qp=1}", "MPA: Reply queued whole"]),
        (&server, &["queue pair phase", "to=awaiting-first-fpdu"]),
        (
            &server,
            &[
                "queue pair phase",
                "from=awaiting-first-fpdu",
                "to=established",
            ],
        ),
        (&server, &["peer closed the stream", "reset=false"]),
    ] {
        assert!(has_line(log, want), "no line with {want:?} in:\n{log}");
    }
    // A clean run sends no TERMINATE.
    assert!(!client.contains("TERMINATE") && !server.contains("TERMINATE"));
}

#[test]
fn without_rust_log_there_is_no_tracing() {
    let (client, server) = run(&[("RUST_LOG", "")]);
    for log in [&client, &server] {
        assert!(
            !log.contains("MPA") && !log.contains("queue pair phase"),
            "{log}"
        );
    }
}
