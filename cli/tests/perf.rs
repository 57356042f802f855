//! `iwarp perf --proto iwarp` (the tool's own protocol) as two processes
//! over kernel TCP on 127.0.0.1: every test, its JSON result checked for
//! sane and consistent figures, several connections, a duration limit, and
//! the failures. perftest's protocol, the default, is in perftest.rs.

mod two_process;

use std::time::Duration;

use two_process::{free_port, iwarp, Proc};

const LIMIT: Duration = Duration::from_secs(90);

fn server(op: &str, port: u16, extra: &[&str]) -> Proc {
    let port = port.to_string();
    let mut args = vec![
        "perf", op, "--server", "-p", &port, "--json", "--proto", "iwarp",
    ];
    if !extra.contains(&"--wait") {
        args.extend_from_slice(&["--wait", "60"]);
    }
    args.extend_from_slice(extra);
    let p = Proc::spawn(&args);
    assert!(
        p.wait_line(
            |l| l.contains("Waiting for client"),
            Duration::from_secs(20)
        ),
        "server never listened: {:?} {}",
        p.lines(),
        p.stderr()
    );
    p
}

fn client(op: &str, port: u16, extra: &[&str]) -> Proc {
    let port = port.to_string();
    let mut args = vec![
        "perf",
        op,
        "127.0.0.1",
        "-p",
        &port,
        "--json",
        "--proto",
        "iwarp",
    ];
    args.extend_from_slice(extra);
    Proc::spawn(&args)
}

/// A value of the JSON object on `line` (numbers, strings, literals).
fn field(line: &str, key: &str) -> Option<String> {
    let pat = format!("\"{key}\":");
    let rest = &line[line.find(&pat)? + pat.len()..];
    let v = if let Some(s) = rest.strip_prefix('"') {
        s.split('"').next()?
    } else {
        rest.split([',', '}']).next()?
    };
    Some(v.to_string())
}

fn num(line: &str, key: &str) -> f64 {
    field(line, key)
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        .parse()
        .unwrap_or_else(|e| panic!("{key} in {line}: {e}"))
}

/// Runs one test and returns the client's and the server's JSON lines.
fn run(op: &str, client_args: &[&str], server_args: &[&str]) -> (String, String) {
    let port = free_port();
    let mut s = server(op, port, server_args);
    let mut c = client(op, port, client_args);
    let cs = c.wait(LIMIT);
    let ss = s.wait(LIMIT);
    assert_eq!(cs, Some(0), "client {op}: {}", c.stderr());
    assert_eq!(ss, Some(0), "server {op}: {}", s.stderr());
    let last = |p: &Proc| p.lines().last().cloned().unwrap_or_default();
    let (cj, sj) = (last(&c), last(&s));
    assert!(cj.starts_with('{') && cj.ends_with('}'), "{cj}");
    assert!(sj.starts_with('{') && sj.ends_with('}'), "{sj}");
    (cj, sj)
}

/// Checks what every result must satisfy.
fn sane(j: &str, op: &str, size: f64, qps: f64, iters: f64) {
    assert_eq!(field(j, "op").as_deref(), Some(op), "{j}");
    assert_eq!(num(j, "size"), size, "{j}");
    assert_eq!(num(j, "qps"), qps, "{j}");
    assert_eq!(num(j, "iters"), iters, "{j}");
    assert_eq!(num(j, "bytes"), iters * size, "{j}");
    let (secs, gbps, rate) = (num(j, "secs"), num(j, "gbps"), num(j, "msgs_per_s"));
    assert!(secs > 0.0 && gbps > 0.0 && rate > 0.0, "{j}");
    let want_gbps = iters * size * 8.0 / secs / 1e9;
    assert!((gbps - want_gbps).abs() <= want_gbps * 1e-3 + 1e-6, "{j}");
    assert!((rate - iters / secs).abs() <= rate * 1e-3 + 1e-3, "{j}");
    assert_ne!(field(j, "verified").as_deref(), Some("false"), "{j}");
}

#[test]
fn write_bandwidth() {
    let (c, s) = run("write", &["-s", "65536", "-n", "300"], &[]);
    sane(&c, "write", 65536.0, 1.0, 300.0);
    assert_eq!(field(&c, "verified").as_deref(), Some("true"));
    assert_eq!(field(&s, "role").as_deref(), Some("server"));
    assert_eq!(num(&s, "iters"), 300.0);
}

#[test]
fn read_bandwidth() {
    let (c, _) = run("read", &["-s", "16384", "-n", "300", "-t", "16"], &[]);
    sane(&c, "read", 16384.0, 1.0, 300.0);
    assert_eq!(field(&c, "verified").as_deref(), Some("true"));
}

#[test]
fn send_bandwidth_counts_agree_on_both_sides() {
    let (c, s) = run("send", &["-s", "4096", "-n", "2000"], &["-r", "64"]);
    sane(&c, "send", 4096.0, 1.0, 2000.0);
    assert_eq!(num(&c, "peer_msgs"), 2000.0);
    sane(&s, "send", 4096.0, 1.0, 2000.0);
    assert_eq!(field(&s, "source").as_deref(), Some("local"));
}

#[test]
fn latency_tests() {
    for (op, name) in [
        ("lat", "write_lat"),
        ("write-lat", "write_lat"),
        ("send-lat", "send_lat"),
        ("read-lat", "read_lat"),
    ] {
        let (c, _) = run(op, &["-n", "200", "-s", "64"], &[]);
        sane(&c, name, 64.0, 1.0, 200.0);
        let (min, p50, p99, max, avg) = (
            num(&c, "lat_us_min"),
            num(&c, "lat_us_p50"),
            num(&c, "lat_us_p99"),
            num(&c, "lat_us_max"),
            num(&c, "lat_us_avg"),
        );
        assert!(0.0 < min && min <= p50 && p50 <= p99 && p99 <= max, "{c}");
        assert!(min <= avg && avg <= max, "{c}");
        let kind = if name == "read_lat" {
            "round_trip"
        } else {
            "half_round_trip"
        };
        assert_eq!(field(&c, "lat_kind").as_deref(), Some(kind));
    }
}

#[test]
fn several_connections() {
    for op in ["write", "send", "read", "send-lat"] {
        let (c, s) = run(op, &["-q", "3", "-n", "100", "-s", "2048"], &[]);
        let name = op.replace('-', "_");
        sane(&c, &name, 2048.0, 3.0, 300.0);
        assert_eq!(num(&s, "qps"), 3.0, "{s}");
    }
}

#[test]
fn a_duration_instead_of_a_count() {
    let (c, _) = run("write", &["-D", "0.5", "-s", "4096"], &[]);
    let secs = num(&c, "secs");
    assert!((0.4..20.0).contains(&secs), "{c}");
    assert!(num(&c, "iters") > 0.0);
}

#[test]
fn mpa_options_apply() {
    let (c, _) = run(
        "write",
        &["-n", "100", "-s", "10000", "--crc", "required", "--markers"],
        &["--crc", "required", "--markers"],
    );
    sane(&c, "write", 10000.0, 1.0, 100.0);
}

#[test]
fn a_server_running_another_test_refuses() {
    let port = free_port();
    let mut s = server("read", port, &["--wait", "3"]);
    let mut c = client("write", port, &["-n", "10"]);
    assert_eq!(c.wait(LIMIT), Some(1));
    assert!(c.stderr().contains("refused"), "{}", c.stderr());
    assert_eq!(s.wait(LIMIT), Some(1), "no run started within --wait");
    assert!(s.stderr().contains("no client"), "{}", s.stderr());
}

#[test]
fn no_server_is_a_quick_failure() {
    let port = free_port();
    let mut c = client("write", port, &["-n", "10"]);
    assert_eq!(c.wait(Duration::from_secs(30)), Some(1), "{}", c.stderr());
}

#[test]
fn the_client_fails_cleanly_when_the_server_dies() {
    let port = free_port();
    let mut s = server("write", port, &[]);
    let mut c = client("write", port, &["-D", "30", "-s", "4096"]);
    std::thread::sleep(Duration::from_millis(500));
    s.kill();
    assert_eq!(c.wait(Duration::from_secs(40)), Some(1), "{}", c.stderr());
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["perf", "write", "--server", "127.0.0.1"],
        vec!["perf", "atomic", "127.0.0.1"],
        vec!["perf", "write", "127.0.0.1", "-s", "0"],
        vec!["perf", "write", "127.0.0.1", "-n", "5", "-D", "1"],
        vec!["perf", "write", "127.0.0.1", "-q", "0"],
        vec!["perf", "write", "127.0.0.1", "--bind", "127.0.0.1"],
    ] {
        assert_eq!(iwarp(&args).status.code(), Some(2), "{args:?}");
    }
}
