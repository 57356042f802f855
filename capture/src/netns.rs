//! A network namespace that exists for one test or one run and is always
//! deleted: what the TAP transport's tests, the integration suites, the
//! two-process tests and `iwarp bench --transport tap` put their TAP
//! devices, bridges and addresses in, so nothing they do reaches the host's
//! own network.
//!
//! Everything goes through iproute2 (`ip netns add`, `ip -n NAME ...`,
//! `ip netns del`). Entering the namespace from a thread is the TAP
//! transport's business (`transport::tap::netns::in_netns`), which owns the
//! `unsafe` setns(2) call; this crate has none.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A network namespace this process created; deleted on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
    ifaces: AtomicU32,
}

impl Netns {
    /// Creates a namespace named after `tag`, this process and a counter,
    /// with `lo` up. It needs root, /dev/net/tun (every user puts TAP devices
    /// in it) and iproute2; the error says which is missing.
    pub fn create(tag: &str) -> Result<Netns, String> {
        if effective_uid() != Some(0) {
            return Err("not root".into());
        }
        if !Path::new("/dev/net/tun").exists() {
            return Err("no /dev/net/tun".into());
        }
        if Command::new("ip").arg("-V").output().is_err() {
            return Err("no iproute2 (ip)".into());
        }
        let name = format!(
            "iwarp-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        ip(&["netns", "add", &name]).map_err(|e| format!("cannot create a namespace: {e}"))?;
        let ns = Netns {
            name,
            ifaces: AtomicU32::new(0),
        };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// [`Netns::create`] for a test: `None`, with a printed line saying why
    /// `test` skips, where the namespace cannot be made.
    pub fn for_test(test: &str) -> Option<Netns> {
        match Netns::create("t") {
            Ok(ns) => Some(ns),
            Err(why) => {
                crate::skip::skip(&format!("{test}: {why}"));
                None
            }
        }
    }

    /// The name `ip netns` knows it by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `ip ARGS` inside the namespace (`ip -n NAME ARGS`).
    pub fn ip(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// A fresh interface number for this namespace: names and subnets of
    /// devices made one after another never clash.
    pub fn next_iface(&self) -> u32 {
        self.ifaces.fetch_add(1, Ordering::Relaxed)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// Runs `ip ARGS`; the error carries what ip(8) printed.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip(8): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The effective user id, from /proc (no libc, no `unsafe`).
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_uid_is_read() {
        assert!(effective_uid().is_some());
    }

    #[test]
    fn a_namespace_is_made_named_and_deleted() {
        let Some(ns) = Netns::for_test("a_namespace_is_made_named_and_deleted") else {
            return;
        };
        let name = ns.name().to_owned();
        assert!(name.starts_with(&format!("iwarp-t-{}-", std::process::id())));
        assert!(Path::new("/var/run/netns").join(&name).exists());
        assert_eq!((ns.next_iface(), ns.next_iface()), (0, 1));
        ns.ip(&["link", "set", "lo", "down"]).unwrap();
        assert!(ns.ip(&["link", "set", "no-such-link", "up"]).is_err());
        drop(ns);
        assert!(!Path::new("/var/run/netns").join(&name).exists());
    }
}
