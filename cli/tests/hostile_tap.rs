//! The hostile-peer catalogue against `iwarp rping -s -P` on smoltcp over
//! a TAP device, inside a network namespace the test creates: the hostile
//! peer and the legitimate client use the kernel's TCP in that namespace,
//! so the two stacks meet on the TAP. Needs root and /dev/net/tun (skips
//! with the reason otherwise).

mod hostile_support;
mod two_process;

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::thread;
use std::time::Duration;

use hostile::catalogue;
use hostile_support::{run_case, target, MPA_TIMEOUT_SECS, PINGS};
use two_process::{Netns, Proc};

const LIMIT: Duration = Duration::from_secs(60);

/// Moves the calling thread into network namespace `ns`, so the sockets it
/// opens from then on live there.
fn enter(ns: &Netns) -> Result<(), String> {
    let f = File::open(format!("/var/run/netns/{}", ns.name())).map_err(|e| e.to_string())?;
    // SAFETY: setns on a namespace file we hold open; it changes only this
    // thread's network namespace.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}

fn check(index: u8, name: &'static str) {
    if !Path::new("/dev/net/tun").exists() {
        println!("skipping: no /dev/net/tun");
        return;
    }
    let ns = match Netns::create(&format!("h{index}")) {
        Ok(ns) => ns,
        Err(e) => {
            println!("skipping: cannot make a network namespace: {e}");
            return;
        }
    };
    let tap = format!("iwh{index}");
    let ours = Ipv4Addr::new(10, 97, index, 2);
    let theirs = format!("10.97.{index}.1/24");
    let t = MPA_TIMEOUT_SECS.to_string();
    let ip = format!("{ours}/24");
    let server = Proc::spawn(&[
        "rping",
        "-s",
        "-P",
        "-d",
        "--mpa-timeout",
        &t,
        "--tap",
        &tap,
        "--ip",
        &ip,
        "--netns",
        ns.name(),
    ]);
    assert!(
        server.wait_line(|l| l == "rdma_listen", Duration::from_secs(20)),
        "{}",
        server.stderr()
    );
    ns.ip(&["addr", "add", &theirs, "dev", &tap]).unwrap();
    ns.ip(&["link", "set", &tap, "up"]).unwrap();
    let addr = SocketAddr::from((ours, 7174));
    let case = catalogue::case(&target(), name).expect("a case of that name");
    let ns_name = ns.name().to_string();
    let server_ip = ours.to_string();
    // The hostile side runs on a thread inside the namespace.
    let ns_ref = &ns;
    thread::scope(|s| {
        s.spawn(move || {
            enter(ns_ref).expect("enter the namespace");
            run_case(addr, &case, || {
                let mut c = Proc::spawn_program(
                    "ip",
                    &[
                        "netns",
                        "exec",
                        &ns_name,
                        env!("CARGO_BIN_EXE_iwarp"),
                        "rping",
                        "-c",
                        "-a",
                        &server_ip,
                        "-C",
                        PINGS,
                        "-V",
                    ],
                );
                match c.wait(LIMIT) {
                    Some(0) => Ok(()),
                    other => Err(format!("rping client exit {other:?}: {}", c.stderr())),
                }
            });
        });
    });
    drop(server);
}

macro_rules! cases {
    ($($(#[$attr:meta])* $test:ident => ($index:literal, $name:literal),)*) => {
        $( $(#[$attr])* #[test] fn $test() { check($index, $name); } )*

        #[test]
        fn every_case_of_the_catalogue_has_a_test() {
            let mut listed = vec![$($name),*];
            let mut all: Vec<_> = catalogue::catalogue(&target()).iter().map(|c| c.name).collect();
            listed.sort_unstable();
            all.sort_unstable();
            assert_eq!(listed, all);
        }
    };
}

cases! {
    garbage_request => (1, "garbage-request"),
    bad_key => (2, "bad-key"),
    unknown_revision => (3, "unknown-revision"),
    huge_private_data => (4, "huge-private-data"),
    silence => (5, "silence"),
    bad_crc => (6, "bad-crc"),
    write_to_an_unknown_stag => (7, "write-unknown-stag"),
    read_larger_than_any_region => (8, "read-larger-than-any-region"),
    bad_queue_number => (9, "bad-queue-number"),
    msn_gap => (10, "msn-gap"),
    wrong_ddp_version => (11, "wrong-ddp-version"),
    wrong_rdmap_version => (12, "wrong-rdmap-version"),
    unknown_opcode => (13, "unknown-opcode"),
    ulpdu_too_short => (14, "ulpdu-too-short"),
    huge_ulpdu_then_silence => (15, "huge-ulpdu-then-silence"),
    idle_flood => (16, "idle-flood"),
    random_fpdus => (17, "random-fpdus"),
    unsolicited_read_response => (18, "unsolicited-read-response"),
    terminate_mid_transfer => (19, "terminate-mid-transfer"),
    fin_mid_fpdu => (20, "fin-mid-fpdu"),
}
