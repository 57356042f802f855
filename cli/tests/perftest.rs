//! `iwarp perf` speaking perftest's rdma_cm protocol (the default), both
//! roles of this tool against each other over kernel TCP on 127.0.0.1:
//! every test, the byte accounts of both ends, duration mode, all sizes,
//! the Gb/s unit and the JSON file. Against perftest itself it runs in the
//! siw harness (tests/interop, `perftest-*` cases).

mod two_process;

use std::time::Duration;

use two_process::{free_port, iwarp, Proc, TempPath};

const LIMIT: Duration = Duration::from_secs(120);

fn server(op: &str, port: u16, extra: &[&str]) -> Proc {
    let port = port.to_string();
    let mut args = vec!["perf", op, "-p", &port, "--json", "--wait", "60"];
    args.extend_from_slice(extra);
    let p = Proc::spawn(&args);
    assert!(
        p.wait_line(
            |l| l.contains("Waiting for client to connect"),
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
    let mut args = vec!["perf", op, "127.0.0.1", "-p", &port, "--json"];
    args.extend_from_slice(extra);
    Proc::spawn(&args)
}

/// The first value of `key` in the JSON object `line` (the `results`
/// object comes before `all_results`).
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

/// Runs one test; returns the client's and the server's JSON lines and
/// their whole output.
fn run(op: &str, client_args: &[&str], server_args: &[&str]) -> (String, String, Vec<String>) {
    let port = free_port();
    let mut s = server(op, port, server_args);
    let mut c = client(op, port, client_args);
    let cs = c.wait(LIMIT);
    let ss = s.wait(LIMIT);
    assert_eq!(cs, Some(0), "client {op}: {:?} {}", c.lines(), c.stderr());
    assert_eq!(ss, Some(0), "server {op}: {:?} {}", s.lines(), s.stderr());
    let last = |p: &Proc| p.lines().last().cloned().unwrap_or_default();
    let (cj, sj) = (last(&c), last(&s));
    assert!(cj.starts_with('{') && cj.ends_with('}'), "{cj}");
    assert!(sj.starts_with('{') && sj.ends_with('}'), "{sj}");
    (cj, sj, c.lines())
}

#[test]
fn bandwidth_tests_and_both_byte_accounts() {
    for (op, name) in [
        ("write", "RDMA_Write_BW_Test"),
        ("read", "RDMA_Read_BW_Test"),
        ("send", "Send_BW_Test"),
    ] {
        let args = ["-s", "65536", "-n", "300"];
        let (c, s, out) = run(op, &args, &args);
        assert_eq!(field(&c, "test").as_deref(), Some(name), "{c}");
        assert_eq!(field(&c, "role").as_deref(), Some("client"));
        assert_eq!(num(&c, "MsgSize"), 65536.0, "{c}");
        assert_eq!(num(&c, "n_iterations"), 300.0, "{c}");
        assert!(
            num(&c, "BW_average") > 0.0 && num(&c, "MsgRate") > 0.0,
            "{c}"
        );
        assert!(num(&c, "BW_peak") >= num(&c, "BW_average") * 0.99, "{c}");
        assert_eq!(num(&c, "payload_bytes"), 300.0 * 65536.0, "{c}");
        assert_eq!(num(&c, "report_bytes"), 300.0 * 65536.0, "{c}");
        assert_eq!(field(&c, "disagreement").as_deref(), Some("null"), "{c}");
        assert_eq!(field(&s, "disagreement").as_deref(), Some("null"), "{s}");
        // The table, in perftest's columns and unit.
        assert!(
            out.iter().any(|l| l.contains("BW average[MB/sec]")),
            "{out:?}"
        );
        assert!(
            out.iter().any(|l| l.starts_with(" 65536      300")),
            "{out:?}"
        );
        assert!(
            out.iter().any(|l| l.starts_with(
                " Bytes: payload 19660800 here over the run, 19660800 in the report's iterations"
            )),
            "{out:?}"
        );
        // The TCP payload that carried the test covers the payload.
        let carried = if op == "read" {
            num(&c, "wire_rx_bytes")
        } else {
            num(&c, "wire_tx_bytes")
        };
        assert!(carried >= 300.0 * 65536.0, "{c}");
        if op == "send" {
            // perftest's SEND server measures for itself.
            assert_eq!(num(&s, "n_iterations"), 300.0, "{s}");
            assert_eq!(num(&s, "payload_bytes"), 300.0 * 65536.0, "{s}");
        } else {
            // WRITE and READ servers print the client's report, and check
            // it against the TCP payload they saw; the client checks its
            // count against the server's.
            assert_eq!(num(&s, "n_iterations"), 300.0, "{s}");
            assert_eq!(num(&s, "report_bytes"), 300.0 * 65536.0, "{s}");
            assert_eq!(field(&s, "peer_payload_bytes").as_deref(), Some("null"));
            assert!(num(&c, "peer_payload_bytes") >= 300.0 * 65536.0, "{c}");
        }
    }
}

#[test]
fn latency_tests() {
    for (op, name) in [
        ("write-lat", "RDMA_Write_Latency_Test"),
        ("lat", "RDMA_Write_Latency_Test"),
        ("read-lat", "RDMA_Read_Latency_Test"),
        ("send-lat", "Send_Latency_Test"),
    ] {
        let args = ["-s", "64", "-n", "200"];
        let (c, s, _) = run(op, &args, &args);
        assert_eq!(field(&c, "test").as_deref(), Some(name), "{c}");
        assert_eq!(num(&c, "MsgSize"), 64.0, "{c}");
        assert_eq!(num(&c, "n_iterations"), 200.0, "{c}");
        let (min, typ, avg, p99, max) = (
            num(&c, "t_min"),
            num(&c, "t_typical"),
            num(&c, "t_avg"),
            num(&c, "percentile_99"),
            num(&c, "t_max"),
        );
        assert!(0.0 < min && min <= typ && typ <= p99 && p99 <= max, "{c}");
        assert!(min <= avg && avg <= max, "{c}");
        if op != "read-lat" {
            // Ping-pongs: the server measures too.
            assert_eq!(num(&s, "n_iterations"), 200.0, "{s}");
        }
    }
}

#[test]
fn a_duration_run() {
    let args = ["-s", "4096", "-D", "2"];
    for op in ["write", "send", "send-lat"] {
        let (c, s, _) = run(op, &args, &args);
        assert!(num(&c, "n_iterations") > 0.0, "{c}");
        if op == "write" {
            assert_eq!(num(&c, "BW_peak"), 0.0, "no peak in duration mode: {c}");
        } else {
            assert!(num(&s, "n_iterations") > 0.0, "{s}");
        }
    }
}

/// Duration mode moves data through the warm-up and cool-down margins
/// but counts only the sample window, as perftest does: the two ends
/// must give the same iterations and the same counted bytes, and the
/// whole-run payload must lie between those and the TCP payload that
/// carried it.
#[test]
fn a_duration_runs_accounts_agree_on_both_ends() {
    let size = 262_144.0;
    let args = ["-s", "262144", "-D", "4"];
    for op in ["write", "read"] {
        let (c, s, _) = run(op, &args, &args);
        let iters = num(&c, "n_iterations");
        assert!(iters > 0.0, "{c}");
        assert_eq!(num(&s, "n_iterations"), iters, "{op}: {c}\n{s}");
        assert_eq!(num(&c, "report_bytes"), iters * size, "{c}");
        assert_eq!(num(&s, "report_bytes"), iters * size, "{s}");
        let run_bytes = num(&c, "payload_bytes");
        assert!(run_bytes >= iters * size, "{c}");
        assert_eq!(run_bytes % size, 0.0, "whole messages: {c}");
        // The server saw the whole run on the wire (WRITE in, READ out)
        // and told the client as much.
        let carried = if op == "write" {
            num(&s, "wire_rx_bytes")
        } else {
            num(&s, "wire_tx_bytes")
        };
        assert!(carried >= run_bytes, "{op}: {c}\n{s}");
        assert!(num(&c, "peer_payload_bytes") >= run_bytes, "{c}");
        assert_eq!(field(&s, "peer_payload_bytes").as_deref(), Some("null"));
        assert_eq!(field(&c, "disagreement").as_deref(), Some("null"), "{c}");
        assert_eq!(field(&s, "disagreement").as_deref(), Some("null"), "{s}");
    }
}

#[test]
fn all_sizes() {
    let args = ["-a", "-n", "8"];
    let (c, _, out) = run("send", &args, &args);
    let rows = out
        .iter()
        .filter(|l| l.starts_with(' ') && l.split_whitespace().nth(1) == Some("8"))
        .count();
    assert_eq!(rows, 23, "2 B to 8 MiB: {out:?}");
    assert_eq!(num(&c, "MsgSize"), 8388608.0, "the last size: {c}");
    assert_eq!(c.matches("\"MsgSize\":").count(), 24, "{c}");
}

#[test]
fn gbits_and_the_json_file() {
    let file = TempPath::new("perftest.json");
    let args = ["-s", "8192", "-n", "100", "--report_gbits"];
    let mut cargs = args.to_vec();
    cargs.extend_from_slice(&["--out_json", "--out_json_file", file.as_str()]);
    let (c, _, out) = run("write", &cargs, &args);
    assert!(
        out.iter().any(|l| l.contains("BW average[Gb/sec]")),
        "{out:?}"
    );
    let written = std::fs::read_to_string(file.path()).expect("the JSON file");
    assert_eq!(written.trim(), c, "the file holds the same object");
    assert_eq!(field(&c, "BW_unit").as_deref(), Some("Gb/sec"));
}

#[test]
fn one_queue_pair_only() {
    let out = iwarp(&["perf", "write", "127.0.0.1", "-q", "2", "-n", "5"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-q 1"));
}
