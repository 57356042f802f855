//! The hostile-peer catalogue against `iwarp rping -s -P` on smoltcp over
//! a TAP device, inside a network namespace the test creates: the hostile
//! peer and the legitimate client use the kernel's TCP in that namespace,
//! so the two stacks meet on the TAP. Needs root and /dev/net/tun (skips
//! with the reason otherwise).

#[macro_use]
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

fn check(name: &'static str) {
    // Each case gets its own namespace, TAP and subnet, numbered by its
    // place in the catalogue, so cases running at once never clash.
    let index = catalogue::catalogue(&target())
        .iter()
        .position(|c| c.name == name)
        .expect("a case of that name") as u8
        + 1;
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

catalogue_tests!(check);
