//! What the tests that run rdma-core's own programs over the shim share:
//! finding the shim and the programs, free ports, and child processes
//! that are always reaped.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// The profile directory (target/debug or target/release) of this test.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test>-<hash>
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_path_buf()
}

/// The directory holding libibverbs.so.1 and librdmacm.so.1 (build.rs
/// makes the links; cargo builds the cdylib before the tests).
pub fn shim_dir() -> PathBuf {
    let d = profile_dir().join("rdma-shim");
    assert!(
        d.join("libibverbs.so.1").exists(),
        "{} has no libibverbs.so.1: the cdylib was not built",
        d.display()
    );
    d
}

/// `name` on PATH, or a skip (a failure under IWARP_REQUIRE_ALL=1).
pub fn tool(name: &str, package: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        capture::skip::skip(&format!(
            "{name} is not installed (Debian package {package})"
        ));
    }
    found
}

/// The `iwarp` tool of this workspace, if built (cargo test --workspace
/// builds it); a skip otherwise.
pub fn iwarp_tool() -> Option<PathBuf> {
    let p = profile_dir().join("iwarp");
    if p.is_file() {
        Some(p)
    } else {
        capture::skip::skip(&format!(
            "{} is not built (cargo build -p iwarp)",
            p.display()
        ));
        None
    }
}

/// A loopback port nobody listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Compiles `source` (relative to the crate) into the test's scratch
/// directory as the program `name`, or skips.
pub fn build_c(source: &str, name: &str) -> Option<PathBuf> {
    compile(source, name, &[], &["-lrdmacm", "-libverbs"])
}

/// Compiles `source` into a shared object `name` for LD_PRELOAD, or skips.
pub fn build_preload(source: &str, name: &str) -> Option<PathBuf> {
    compile(source, name, &["-shared", "-fPIC"], &["-ldl"])
}

fn compile(source: &str, name: &str, flags: &[&str], libs: &[&str]) -> Option<PathBuf> {
    let cc = tool("cc", "gcc")?;
    for h in [
        "/usr/include/infiniband/verbs.h",
        "/usr/include/rdma/rdma_cma.h",
    ] {
        if !Path::new(h).exists() {
            capture::skip::skip(&format!("{h} is missing (libibverbs-dev, librdmacm-dev)"));
            return None;
        }
    }
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(source);
    let st = Command::new(cc)
        .args(["-Wall", "-Werror", "-O1"])
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .args(libs)
        .status()
        .expect("running cc");
    assert!(st.success(), "cc failed on {}", src.display());
    Some(out)
}

/// A command that loads the shim instead of the system's libraries.
pub fn over_shim(program: &Path) -> Command {
    let mut c = Command::new(program);
    c.env("LD_LIBRARY_PATH", shim_dir());
    c
}

/// A child killed and reaped on drop, so a failed test leaves nothing.
pub struct Reaped(pub Option<Child>);

impl Reaped {
    /// Starts `cmd` with its output captured.
    pub fn spawn(mut cmd: Command) -> Reaped {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        Reaped(Some(cmd.spawn().expect("spawning")))
    }

    /// Waits up to `limit` (a hang guard, not a measurement), killing the
    /// child past it; the output either way.
    pub fn finish(mut self, limit: Duration) -> (Option<ExitStatus>, Output) {
        let mut child = self.0.take().expect("child");
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().expect("try_wait") {
                break Some(s);
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = child.wait_with_output().expect("output");
        (status, out)
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Waits (bounded) until something listens on TCP `port` on loopback, as
/// /proc/net/tcp shows; false if nothing did in time.
pub fn wait_listening(port: u16, limit: Duration) -> bool {
    let want = format!(":{port:04X} ");
    let start = Instant::now();
    while start.elapsed() < limit {
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            if let Ok(t) = std::fs::read_to_string(table) {
                // Column 2 is local address:port, column 4 the state (0A = LISTEN).
                if t.lines().skip(1).any(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    f.len() > 3 && format!("{} ", f[1]).ends_with(&want) && f[3] == "0A"
                }) {
                    return true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Prints a finished program's output, for a failing test's log.
/// Asserts that both ends of a client/server run exited successfully, and
/// returns the report of both (what each printed) for further checks.
pub fn assert_both_succeeded(
    what: &str,
    client: (Option<ExitStatus>, &Output),
    server: (Option<ExitStatus>, &Output),
) -> String {
    let report = format!(
        "{what}\n{}\n{}",
        show("client", client.0, client.1),
        show("server", server.0, server.1)
    );
    assert!(client.0.is_some_and(|s| s.success()), "{report}");
    assert!(server.0.is_some_and(|s| s.success()), "{report}");
    report
}

pub fn show(what: &str, status: Option<ExitStatus>, out: &Output) -> String {
    format!(
        "{what}: {status:?}\n--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
