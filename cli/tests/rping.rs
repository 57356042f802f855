//! `iwarp rping` as two processes over kernel TCP on 127.0.0.1: pings at
//! rping's sizes, the persistent server, failures that must end quickly
//! and non-zero, and the wire compared with a real siw rping capture.

mod two_process;

use std::path::Path;
use std::time::Duration;

use two_process::{free_port, iwarp, Netns, Proc, TempPath};

/// Every run here ends well within this, or the test fails.
const LIMIT: Duration = Duration::from_secs(60);

fn server(port: u16, extra: &[&str]) -> Proc {
    let port = port.to_string();
    let mut args = vec!["rping", "-s", "-a", "127.0.0.1", "-p", &port, "-d"];
    args.extend_from_slice(extra);
    let p = Proc::spawn(&args);
    assert!(
        p.wait_line(|l| l == "rdma_listen", Duration::from_secs(20)),
        "server never listened: {:?}",
        p.lines()
    );
    p
}

fn client(port: u16, extra: &[&str]) -> Proc {
    let port = port.to_string();
    let mut args = vec!["rping", "-c", "-a", "127.0.0.1", "-p", &port];
    args.extend_from_slice(extra);
    Proc::spawn(&args)
}

#[test]
fn a_hundred_verified_pings_at_rpings_sizes() {
    for size in ["26", "64", "4000", "65000"] {
        let port = free_port();
        let mut s = server(port, &["-S", size, "-V"]);
        let mut c = client(port, &["-S", size, "-C", "100", "-V", "-v"]);
        let c_status = c.wait(LIMIT);
        let s_status = s.wait(LIMIT);
        assert_eq!(c_status, Some(0), "client -S {size}: {:?}", c.stderr());
        assert_eq!(s_status, Some(0), "server -S {size}: {:?}", s.stderr());
        let pings: Vec<String> = c
            .lines()
            .into_iter()
            .filter(|l| l.starts_with("ping data: "))
            .collect();
        assert_eq!(pings.len(), 100, "size {size}");
        assert!(pings[0].starts_with("ping data: rdma-ping-0: ABCDEFG"));
        assert!(pings[99].starts_with("ping data: rdma-ping-99: "));
        let size: usize = size.parse().unwrap();
        assert!(pings
            .iter()
            .all(|l| l.len() == "ping data: ".len() + size - 1));
        assert!(c.stderr().contains("client DISCONNECT EVENT..."));
        assert!(s.stderr().contains("server DISCONNECT EVENT..."));
    }
}

#[test]
fn quiet_without_v_like_rping() {
    let port = free_port();
    let mut s = server(port, &[]);
    let mut c = client(port, &["-C", "5"]);
    assert_eq!(c.wait(LIMIT), Some(0), "{}", c.stderr());
    assert_eq!(s.wait(LIMIT), Some(0), "{}", s.stderr());
    assert!(c.lines().is_empty(), "{:?}", c.lines());
}

#[test]
fn the_persistent_server_serves_two_clients_in_turn_then_two_at_once() {
    let port = free_port();
    let mut s = server(port, &["-P", "-S", "4000", "--max-clients", "4"]);
    for count in ["3", "7"] {
        let mut c = client(port, &["-C", count, "-V"]);
        assert_eq!(c.wait(LIMIT), Some(0), "{}", c.stderr());
    }
    let mut a = client(port, &["-C", "40", "-V", "-S", "4000"]);
    let mut b = client(port, &["-C", "60", "-V", "-S", "1000"]);
    assert_eq!(a.wait(LIMIT), Some(0), "{}", a.stderr());
    assert_eq!(b.wait(LIMIT), Some(0), "{}", b.stderr());
    assert_eq!(s.wait(LIMIT), Some(0), "{}", s.stderr());
    let served = s.stderr().matches("server DISCONNECT EVENT...").count();
    assert_eq!(served, 4);
    let stats = s.lines();
    assert!(
        stats
            .iter()
            .any(|l| l.contains("served: 4, failed: 0, pings: 110")),
        "{stats:?}"
    );
}

#[test]
fn a_persistent_server_runs_until_killed() {
    let port = free_port();
    let mut s = server(port, &["-P"]);
    for _ in 0..2 {
        let mut c = client(port, &["-C", "2", "-V"]);
        assert_eq!(c.wait(LIMIT), Some(0), "{}", c.stderr());
    }
    assert_eq!(s.try_status(), None, "still serving");
    s.kill();
}

#[test]
fn no_server_means_a_quick_non_zero_exit() {
    let port = free_port();
    let mut c = client(port, &["-C", "1"]);
    let status = c.wait(Duration::from_secs(20));
    assert_eq!(status, Some(1), "{}", c.stderr());
    assert!(c.stderr().contains("connect"), "{}", c.stderr());
}

#[test]
fn the_client_fails_when_the_server_is_killed_mid_run() {
    let port = free_port();
    let mut s = server(port, &["-S", "4000"]);
    let mut c = client(port, &["-C", "0", "-S", "4000", "-V", "-v"]);
    assert!(
        c.wait_line(|l| l.starts_with("ping data: rdma-ping-20:"), LIMIT),
        "{}",
        c.stderr()
    );
    s.kill();
    let status = c.wait(Duration::from_secs(20));
    assert_eq!(status, Some(1), "{}", c.stderr());
    assert!(c.stderr().contains("rping client failed"), "{}", c.stderr());
}

#[test]
fn the_server_fails_when_the_client_is_killed_mid_run() {
    let port = free_port();
    let mut s = server(port, &["-S", "4000"]);
    let mut c = client(port, &["-C", "0", "-S", "4000", "-v"]);
    assert!(c.wait_line(|l| l.starts_with("ping data: rdma-ping-20:"), LIMIT));
    c.kill();
    let status = s.wait(Duration::from_secs(40));
    // Killed between two pings the server may see a clean close; mid-ping
    // it must fail. Either way it ends, and never with a hang.
    assert!(matches!(status, Some(0) | Some(1)), "{status:?}");
    if status == Some(1) {
        assert!(s.stderr().contains("rping server failed"), "{}", s.stderr());
    }
}

#[test]
fn a_client_larger_than_the_servers_buffer_terminates_both() {
    // rping-mismatch-crc.pcap: server -S 64, client -S 100.
    let port = free_port();
    let pcap = TempPath::new("mismatch.pcap");
    let mut s = server(port, &["-S", "64", "--crc"]);
    let mut c = client(
        port,
        &[
            "-S",
            "100",
            "-C",
            "3",
            "-V",
            "--crc",
            "--pcap",
            pcap.as_str(),
        ],
    );
    assert_eq!(c.wait(LIMIT), Some(1), "{}", c.stderr());
    assert_eq!(s.wait(LIMIT), Some(1), "{}", s.stderr());
    assert!(
        c.stderr().contains("TERMINATE from the peer"),
        "{}",
        c.stderr()
    );
    assert!(
        s.stderr().contains("TERMINATE sent to the peer"),
        "{}",
        s.stderr()
    );
    let decoded = iwarp(&["decode", pcap.as_str()]);
    let text = String::from_utf8_lossy(&decoded.stdout);
    assert!(text.contains("terminate"), "{text}");
    assert!(text.contains("C=1"), "CRC was asked for: {text}");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["rping", "-c", "-a", "127.0.0.1", "-S", "25"],
        vec!["rping", "-c", "-a", "127.0.0.1", "-S", "65536"],
        vec!["rping", "-a", "127.0.0.1"],
        vec!["rping", "-c", "-C", "-1", "-a", "127.0.0.1"],
        vec!["rping", "-s", "-c"],
        vec!["rping", "-c", "-a", "127.0.0.1", "--mpa-rev", "3"],
        vec!["rping", "-c", "--max-clients", "2", "-a", "127.0.0.1"],
    ] {
        let out = iwarp(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    let out = iwarp(&["rping", "-c"]);
    assert_eq!(out.status.code(), Some(1), "a client needs -a");
}

/// `(direction, opcode)` of every FPDU in a capture, from `iwarp decode --json`.
fn opcode_sequence(pcap: &Path) -> Vec<(String, String)> {
    let out = iwarp(&["decode", "--json", pcap.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("\"type\":\"fpdu\""))
        .map(|l| (json_str(l, "dir"), json_str(l, "opcode")))
        .collect()
}

fn json_str(line: &str, key: &str) -> String {
    let pat = format!("\"{key}\":\"");
    let start = line.find(&pat).map(|i| i + pat.len()).unwrap_or(0);
    line[start..].split('"').next().unwrap_or("").to_string()
}

#[test]
fn the_wire_matches_a_real_rping_capture() {
    let Some(dir) = two_process::captures() else {
        return;
    };
    let port = free_port();
    let pcap = TempPath::new("default.pcap");
    let mut s = server(port, &[]);
    let mut c = client(port, &["-C", "3", "--pcap", pcap.as_str()]);
    assert_eq!(c.wait(LIMIT), Some(0), "{}", c.stderr());
    assert_eq!(s.wait(LIMIT), Some(0), "{}", s.stderr());
    let ours = opcode_sequence(pcap.path());
    let siw = opcode_sequence(&dir.join("rping-default.pcap"));
    assert_eq!(ours.len(), 21);
    assert_eq!(ours, siw);
    // The MPA exchange too: rev 2, enhanced, IRD = ORD = 1, no CRC.
    let text = String::from_utf8_lossy(&iwarp(&["decode", pcap.as_str()]).stdout).into_owned();
    for want in [
        "MPA Request rev 2 M=0 C=0 R=0 enhanced ird 1 ord 1 p2p=0",
        "MPA Reply rev 2 M=0 C=0 R=0 enhanced ird 1 ord 1 p2p=0",
        "c>s 9 FPDU(s), 438 ULPDU byte(s), 288 payload byte(s)",
        "s>c 12 FPDU(s), 576 ULPDU byte(s), 372 payload byte(s)",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
}

#[test]
fn crc_markers_and_mpa_rev_1_interoperate_between_our_two_sides() {
    for flags in [
        vec!["--crc", "required"],
        vec!["--markers"],
        vec!["--markers", "--crc"],
        vec!["--p2p", "write"],
        vec!["--p2p", "read"],
        vec!["--p2p", "send"],
        vec!["--mpa-rev", "1"],
        vec!["--mpa-rev", "1", "--crc", "required", "--markers"],
    ] {
        let port = free_port();
        let mut sargs = vec!["-S", "3000"];
        sargs.extend_from_slice(&flags);
        let mut s = server(port, &sargs);
        let mut args = vec!["-C", "10", "-V", "-S", "3000"];
        args.extend_from_slice(&flags);
        let mut c = client(port, &args);
        assert_eq!(c.wait(LIMIT), Some(0), "{flags:?}: {}", c.stderr());
        assert_eq!(s.wait(LIMIT), Some(0), "{flags:?}: {}", s.stderr());
    }
}

#[test]
fn debug_output_traces_the_client() {
    let port = free_port();
    let mut s = server(port, &[]);
    let mut c = client(port, &["-C", "1", "-d"]);
    assert_eq!(c.wait(LIMIT), Some(0), "{}", c.stderr());
    assert_eq!(s.wait(LIMIT), Some(0));
    let lines = c.lines();
    assert!(lines
        .iter()
        .any(|l| l.starts_with("RDMA addr ") && l.ends_with("len 64")));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("ESTABLISHED: MPA rev 2")));
}

/// Our server on smoltcp over a TAP interface in a namespace of its own,
/// our client on the kernel's TCP inside that namespace: the two stacks
/// meet on the TAP. Needs root (skips otherwise).
#[test]
fn over_smoltcp_on_a_tap_interface() {
    let ns = match Netns::create("rping") {
        Ok(ns) => ns,
        Err(e) => {
            capture::skip::skip(&format!("cannot make a network namespace: {e}"));
            return;
        }
    };
    let pcap = TempPath::new("tap.pcap");
    let mut s = Proc::spawn(&[
        "rping",
        "-s",
        "-d",
        "-V",
        "-S",
        "9000",
        "--tap",
        "iwt0",
        "--ip",
        "10.98.7.2/24",
        "--netns",
        ns.name(),
        "--pcap",
        pcap.as_str(),
    ]);
    assert!(
        s.wait_line(|l| l == "rdma_listen", Duration::from_secs(20)),
        "{}",
        s.stderr()
    );
    ns.ip(&["addr", "add", "10.98.7.1/24", "dev", "iwt0"])
        .unwrap();
    ns.ip(&["link", "set", "iwt0", "up"]).unwrap();
    let mut c = Proc::spawn_in(
        &ns,
        &[
            "rping",
            "-c",
            "-a",
            "10.98.7.2",
            "-C",
            "50",
            "-S",
            "9000",
            "-V",
            "-v",
        ],
    );
    assert_eq!(c.wait(LIMIT), Some(0), "{}", c.stderr());
    assert_eq!(s.wait(LIMIT), Some(0), "{}", s.stderr());
    assert_eq!(
        c.lines()
            .iter()
            .filter(|l| l.starts_with("ping data: "))
            .count(),
        50
    );
    // The TAP capture holds real frames: 9000-byte pings span segments.
    let text =
        String::from_utf8_lossy(&iwarp(&["decode", "-s", pcap.as_str()]).stdout).into_owned();
    assert!(text.contains("0 CRC error(s)"), "{text}");
    assert!(
        text.contains("read_resp") && text.contains("write"),
        "{text}"
    );
}
