//! A network namespace that exists for one test and is always deleted.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

pub struct Netns {
    pub name: String,
    ifaces: AtomicU32,
}

impl Netns {
    /// Creates a namespace with `lo` up, or prints why the test skips.
    pub fn create(test: &str) -> Option<Netns> {
        let root = effective_uid() == Some(0);
        let why = if !root {
            Some("not root")
        } else if !Path::new("/dev/net/tun").exists() {
            Some("no /dev/net/tun")
        } else if Command::new("ip").arg("-V").output().is_err() {
            Some("no iproute2")
        } else {
            None
        };
        if let Some(why) = why {
            println!("skipping {test}: {why}");
            return None;
        }
        let name = format!(
            "iwarp-rdma-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let ok = Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            println!("skipping {test}: cannot create a network namespace");
            return None;
        }
        let ns = Netns {
            name,
            ifaces: AtomicU32::new(0),
        };
        ns.ip(&["link", "set", "lo", "up"]);
        Some(ns)
    }

    /// Runs `ip ARGS` inside the namespace; panics on failure.
    pub fn ip(&self, args: &[&str]) {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.name, "ip"])
            .args(args)
            .output()
            .expect("running ip");
        assert!(
            out.status.success(),
            "ip {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A fresh interface number for this namespace: names and subnets of
    /// devices made one after another never clash.
    pub fn next_iface(&self) -> u32 {
        self.ifaces.fetch_add(1, Ordering::Relaxed)
    }

    /// Runs `f` on a thread inside the namespace.
    pub fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        verbs::transport::tap::netns::in_netns(&self.name, f).expect("entering the namespace")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// The effective user id, from /proc (no libc needed).
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}
