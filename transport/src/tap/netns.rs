//! Doing things inside a network namespace without moving the process.
//!
//! setns(2) with CLONE_NEWNET changes only the calling thread, so a scoped
//! thread joins the namespace, creates sockets or TAP devices there, and
//! ends. What it created stays in that namespace and stays usable from any
//! thread: a descriptor is bound to its namespace, not to the caller's.

use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

/// Where `ip netns add NAME` mounts a namespace; paths are used as given.
fn netns_path(ns: &str) -> PathBuf {
    if ns.contains('/') {
        PathBuf::from(ns)
    } else {
        PathBuf::from("/var/run/netns").join(ns)
    }
}

/// Runs `f` on a thread inside network namespace `ns` (a name made by
/// `ip netns add`, or a path such as /proc/PID/ns/net) and returns its
/// result.
pub fn in_netns<R: Send>(ns: &str, f: impl FnOnce() -> R + Send) -> io::Result<R> {
    let file = std::fs::File::open(netns_path(ns))?;
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                // SAFETY: plain syscall on an open namespace descriptor; it
                // affects only this thread, which ends after `f`.
                let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                if rc < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(f())
            })
            .join()
            .map_err(|_| io::Error::other("namespace thread panicked"))?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        assert_eq!(netns_path("x"), PathBuf::from("/var/run/netns/x"));
        assert_eq!(
            netns_path("/proc/1/ns/net"),
            PathBuf::from("/proc/1/ns/net")
        );
    }

    #[test]
    fn missing_namespace_is_an_error() {
        let e = in_netns("no-such-namespace-iwarp", || ()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn own_namespace_by_path_runs_the_closure() {
        // Joining the namespace we are already in needs CAP_SYS_ADMIN.
        match in_netns("/proc/self/ns/net", || 41 + 1) {
            Ok(v) => assert_eq!(v, 42),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                println!("skipping: setns needs CAP_SYS_ADMIN");
            }
            Err(e) => panic!("{e}"),
        }
    }
}
