//! `iwarp fuzz-peer` end to end over kernel TCP on 127.0.0.1: against our
//! own `iwarp rping -s -P` every catalogue case passes; with `--listen`
//! against our rping client too; a small mutation run leaves the server
//! serving; and a deliberately broken target (a proxy that never passes
//! the server's close on) makes the run fail, with the pcap of each failing
//! case written and replayable.

mod two_process;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::thread;
use std::time::Duration;

use two_process::{free_port, Proc, TempPath};

const LIMIT: Duration = Duration::from_secs(240);

struct Server {
    _proc: Proc,
    port: u16,
}

impl Server {
    fn start() -> Server {
        let port = free_port();
        let p = port.to_string();
        let proc = Proc::spawn(&[
            "rping",
            "-s",
            "-P",
            "-a",
            "127.0.0.1",
            "-p",
            &p,
            "-d",
            "--mpa-timeout",
            "2",
        ]);
        assert!(
            proc.wait_line(|l| l == "rdma_listen", Duration::from_secs(20)),
            "server never listened: {}",
            proc.stderr()
        );
        Server { _proc: proc, port }
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn ping(&self) -> Option<i32> {
        let p = self.port.to_string();
        Proc::spawn(&["rping", "-c", "-a", "127.0.0.1", "-p", &p, "-C", "2", "-V"]).wait(LIMIT)
    }
}

/// Runs fuzz-peer to its end; its exit code, stdout and stderr.
fn fuzz(args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["fuzz-peer"];
    all.extend_from_slice(args);
    let mut p = Proc::spawn(&all);
    let code = p.wait(LIMIT);
    (code, p.lines().join("\n"), p.stderr())
}

/// `"verdict":"X"` occurrences in a JSON report.
fn verdicts(json: &str, v: &str) -> usize {
    json.matches(&format!(r#""verdict":"{v}""#)).count()
}

#[test]
fn every_catalogue_case_passes_against_our_rping_server() {
    let server = Server::start();
    let (code, out, err) = fuzz(&[
        &server.addr(),
        "--target-timeout",
        "2",
        "--flood",
        "50",
        "--json",
    ]);
    let cases = hostile::catalogue(&hostile::Target::default()).len();
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert_eq!(verdicts(&out, "PASS"), cases, "{out}");
    assert!(out.contains(r#""failed":0"#), "{out}");
    assert_eq!(server.ping(), Some(0), "the server still serves");
}

#[test]
fn listen_mode_passes_against_our_rping_client() {
    let port = free_port();
    let p = port.to_string();
    let mut fp = Proc::spawn(&[
        "fuzz-peer",
        "--listen",
        &p,
        "--target-timeout",
        "2",
        "--answer-within",
        "2",
        "--accept-timeout",
        "20",
    ]);
    // rping's client connects once per run: one run per case and check.
    let mut clients = 0;
    while fp.try_status().is_none() && clients < 120 {
        clients += 1;
        let mut c = Proc::spawn(&[
            "rping",
            "-c",
            "-a",
            "127.0.0.1",
            "-p",
            &p,
            "-C",
            "1",
            "-V",
            "--timeout",
            "5",
            "--mpa-timeout",
            "2",
        ]);
        c.wait(LIMIT);
    }
    let code = fp.wait(LIMIT);
    let out = fp.lines().join("\n");
    assert_eq!(code, Some(0), "{out}\n{}", fp.stderr());
    let cases = hostile::responder_catalogue(&hostile::Target::default()).len();
    assert!(
        out.contains(&format!("fuzz-peer: {cases} passed, 0 failed, 0 skipped")),
        "{out}"
    );
}

#[test]
fn a_small_mutation_run_leaves_the_server_serving() {
    let server = Server::start();
    let (code, out, err) = fuzz(&[
        &server.addr(),
        "--mutate",
        "--seed",
        "3",
        "--iterations",
        "12",
        "--answer-within",
        "1",
        "-v",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("PASS  mutation-run-3"), "{out}");
    // Every mutant was played and shown.
    assert_eq!(err.matches("iteration ").count(), 12, "{err}");
    assert_eq!(server.ping(), Some(0));
}

/// A target that answers like our rping server but never closes a
/// connection the server closed: the TERMINATEs come, the FIN does not.
fn broken_proxy(upstream: u16) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    thread::spawn(move || {
        for c in l.incoming().take(400) {
            let Ok(client) = c else { continue };
            let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                continue;
            };
            let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            thread::spawn(move || {
                let mut buf = [0u8; 16384];
                while let Ok(n @ 1..) = c_in.read(&mut buf) {
                    if s_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = s_out.shutdown(Shutdown::Write);
            });
            let (mut s_in, mut c_out) = (server, client);
            thread::spawn(move || {
                let mut buf = [0u8; 16384];
                while let Ok(n @ 1..) = s_in.read(&mut buf) {
                    if c_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                // The broken part: the client's side stays open until the
                // client closes it.
                let mut sink = [0u8; 1];
                let _ = c_out.set_read_timeout(Some(Duration::from_secs(30)));
                let _ = c_out.read(&mut sink);
            });
        }
    });
    port
}

#[test]
fn a_broken_target_fails_and_its_failures_replay() {
    let server = Server::start();
    let proxy = broken_proxy(server.port);
    let out_dir = TempPath::new("fuzz-out");
    let target = format!("127.0.0.1:{proxy}");
    let (code, out, err) = fuzz(&[
        &target,
        "--cases",
        "bad-crc,msn-gap,unknown-revision",
        "--answer-within",
        "1",
        "--out",
        out_dir.as_str(),
        "--json",
    ]);
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert_eq!(verdicts(&out, "FAIL"), 3, "{out}");
    assert!(out.contains("still open"), "{out}");
    for case in ["bad-crc", "msn-gap", "unknown-revision"] {
        let pcap = out_dir.path().join(format!("{case}.pcap"));
        assert!(pcap.exists(), "{}", pcap.display());
    }
    // The saved stream replays against the real server, which survives it.
    let pcap = out_dir.path().join("bad-crc.pcap");
    let (code, out, err) = fuzz(&[
        &server.addr(),
        "--crc",
        "--replay",
        pcap.to_str().unwrap(),
        "--answer-within",
        "1",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("PASS  replay"), "{out}");
    assert!(
        out.contains("TERMINATE 2/0/0x02"),
        "the replay's CRC error is seen again: {out}"
    );
    remove_dir(out_dir.path());
}

fn remove_dir(p: &Path) {
    let _ = std::fs::remove_dir_all(p);
}

#[test]
fn nothing_listening_is_a_setup_error() {
    let port = free_port();
    let (code, _, err) = fuzz(&[&format!("127.0.0.1:{port}"), "--answer-within", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("does not serve"), "{err}");
}

/// From smoltcp on a TAP device (`--tap`) to `iwarp rping -s -P` on the
/// kernel's TCP inside a namespace the test makes: the catalogue passes
/// over the other transport too. Needs root and /dev/net/tun.
#[test]
fn the_catalogue_passes_from_smoltcp_on_a_tap() {
    let Some(ns) = two_process::Netns::for_test("fuzz-peer over TAP") else {
        return;
    };
    let tap = format!("iwfp{}", ns.next_iface());
    // The TAP exists before fuzz-peer opens it, so the namespace's side
    // is up before its first ping.
    ns.ip(&["tuntap", "add", "dev", &tap, "mode", "tap"])
        .unwrap();
    ns.ip(&["addr", "add", "10.96.7.1/24", "dev", &tap])
        .unwrap();
    ns.ip(&["link", "set", &tap, "up"]).unwrap();
    let server = Proc::spawn_in(
        &ns,
        &[
            "rping",
            "-s",
            "-P",
            "-a",
            "10.96.7.1",
            "-p",
            "7174",
            "-d",
            "--mpa-timeout",
            "2",
        ],
    );
    assert!(
        server.wait_line(|l| l == "rdma_listen", Duration::from_secs(20)),
        "{}",
        server.stderr()
    );
    let (code, out, err) = fuzz(&[
        "10.96.7.1:7174",
        "--tap",
        &tap,
        "--ip",
        "10.96.7.2/24",
        "--netns",
        ns.name(),
        "--target-timeout",
        "2",
        "--skip",
        "idle-flood",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("(smoltcp on TAP"), "{out}");
    assert!(out.contains(" 0 failed"), "{out}");
    drop(server);
}

/// A target that wedges on one input: a proxy in front of our rping server
/// that, once a client has sent four 0xff octets in a row, leaves the next
/// two connections unanswered (a stuck target that a restart clears), and
/// otherwise passes everything both ways.
fn wedging_proxy(upstream: u16) -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let wedged = Arc::new(AtomicU32::new(0));
    thread::spawn(move || {
        for c in l.incoming().take(400) {
            let Ok(client) = c else { continue };
            let left = wedged.load(Ordering::SeqCst);
            if left > 0 {
                wedged.store(left - 1, Ordering::SeqCst);
                // Silent: hold the connection until the client gives up.
                thread::spawn(move || {
                    let mut client = client;
                    let mut buf = [0u8; 4096];
                    let _ = client.set_read_timeout(Some(Duration::from_secs(30)));
                    while let Ok(1..) = client.read(&mut buf) {}
                });
                continue;
            }
            let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                continue;
            };
            let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let w = wedged.clone();
            thread::spawn(move || {
                let mut buf = [0u8; 16384];
                let mut run = 0;
                while let Ok(n @ 1..) = c_in.read(&mut buf) {
                    for &b in &buf[..n] {
                        run = if b == 0xff { run + 1 } else { 0 };
                        if run == 4 {
                            w.store(2, Ordering::SeqCst);
                        }
                    }
                    if s_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = s_out.shutdown(Shutdown::Write);
            });
            let (mut s_in, mut c_out) = (server, client);
            thread::spawn(move || {
                let mut buf = [0u8; 16384];
                while let Ok(n @ 1..) = s_in.read(&mut buf) {
                    if c_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = c_out.shutdown(Shutdown::Write);
            });
        }
    });
    port
}

#[test]
fn a_mutant_that_wedges_the_target_is_minimized_saved_and_replays() {
    let server = Server::start();
    let proxy = wedging_proxy(server.port);
    let out_dir = TempPath::new("fuzz-mutants");
    let target = format!("127.0.0.1:{proxy}");
    // Seed 1's iteration 4 is three mutations, one of which sets an MSN
    // to 0xffffffff; iterations 0-3 put no four 0xff octets on the wire.
    let (code, out, err) = fuzz(&[
        &target,
        "--mutate",
        "--seed",
        "1",
        "--iterations",
        "5",
        "--answer-within",
        "1",
        "--out",
        out_dir.as_str(),
    ]);
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(
        out.contains("FAIL  mutant-1-4"),
        "the wedging mutant is reported: {out}"
    );
    assert!(
        out.contains("fpdu2:MsnOrToHigh=0xffffffff (minimized from "),
        "minimized to the one mutation that matters: {out}"
    );
    let pcap = out_dir.path().join("mutant-1-4.pcap");
    assert!(pcap.exists(), "{out}");
    let replay = format!(
        "replay: iwarp fuzz-peer {target} --crc off --mpa-rev 2 --replay {}",
        pcap.display()
    );
    assert!(out.contains(&replay), "{out}");
    // The saved mutant wedges the target again, and only it: the real
    // server behind the proxy takes it and keeps serving.
    let p = pcap.to_str().unwrap();
    let (code, out, _) = fuzz(&[&target, "--replay", p, "--answer-within", "1"]);
    assert_eq!(code, Some(1), "{out}");
    let (code, out, _) = fuzz(&[&server.addr(), "--replay", p, "--answer-within", "1"]);
    assert_eq!(code, Some(0), "{out}");
    remove_dir(out_dir.path());
}

#[test]
fn mutants_can_start_from_a_capture() {
    let server = Server::start();
    let cap = TempPath::new("session.pcap");
    let p = server.port.to_string();
    let mut c = Proc::spawn(&[
        "rping",
        "-c",
        "-a",
        "127.0.0.1",
        "-p",
        &p,
        "-C",
        "2",
        "-V",
        "--pcap",
        cap.as_str(),
    ]);
    assert_eq!(c.wait(LIMIT), Some(0), "{}", c.stderr());
    let (code, out, err) = fuzz(&[
        &server.addr(),
        "--mutate",
        "--from-capture",
        cap.as_str(),
        "--iterations",
        "8",
        "--answer-within",
        "1",
        "-v",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    // rping's two pings: four Sends and two Read Responses from the client.
    assert!(err.contains("iteration 7:"), "{err}");
    assert!(out.contains("PASS  mutation-run-1"), "{out}");
}
