//! Running `iwarp` as child processes: output collected as it comes,
//! waits bounded in time, only our own children killed (by pid).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

pub use capture::netns::Netns;

/// Runs `iwarp` to completion.
pub fn iwarp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iwarp"))
        .args(args)
        .output()
        .expect("run iwarp")
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
///
/// Taken below the kernel's ephemeral range (which starts at 32768 by
/// default), so that no outgoing connection of a test running beside this
/// one can be given it between this check and the child's bind, as a port
/// the kernel handed out for `127.0.0.1:0` could. Ports are taken in turn
/// from a start that depends on the process, and each is checked free.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const BASE: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = (std::process::id() * 97) % SPAN;
    for _ in 0..SPAN {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (BASE + (start + n) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local address").port()
}

/// The reference captures beside the repository, if present.
pub fn captures() -> Option<PathBuf> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/captures"
    ));
    if dir.is_dir() {
        Some(dir.to_path_buf())
    } else {
        capture::skip::skip("no ../shared/captures beside the repository");
        None
    }
}

/// Polls `cond` until it holds or `limit` passes.
pub fn wait_for(mut cond: impl FnMut() -> bool, limit: Duration) -> bool {
    let start = Instant::now();
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// A file path in the temp directory, removed when dropped.
pub struct TempPath(PathBuf);

impl TempPath {
    pub fn new(name: &str) -> TempPath {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        TempPath(
            std::env::temp_dir().join(format!("iwarp-test-{}-{nanos}-{name}", std::process::id())),
        )
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn as_str(&self) -> &str {
        self.0.to_str().expect("temp path is UTF-8")
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A running `iwarp` child with its stdout lines and stderr collected.
pub struct Proc {
    child: Child,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
    status: Option<Option<i32>>,
}

impl Proc {
    pub fn spawn(args: &[&str]) -> Proc {
        Proc::spawn_program(env!("CARGO_BIN_EXE_iwarp"), args)
    }

    /// `iwarp args` inside network namespace `ns` (`ip netns exec`).
    pub fn spawn_in(ns: &Netns, args: &[&str]) -> Proc {
        let mut all = vec!["netns", "exec", ns.name(), env!("CARGO_BIN_EXE_iwarp")];
        all.extend_from_slice(args);
        Proc::spawn_program("ip", &all)
    }

    /// `iwarp args` with `env` added to its environment.
    pub fn spawn_with_env(args: &[&str], env: &[(&str, &str)]) -> Proc {
        Proc::spawn_program_env(env!("CARGO_BIN_EXE_iwarp"), args, env)
    }

    pub fn spawn_program(program: &str, args: &[&str]) -> Proc {
        Proc::spawn_program_env(program, args, &[])
    }

    fn spawn_program_env(program: &str, args: &[&str], env: &[(&str, &str)]) -> Proc {
        let mut child = Command::new(program)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {program}: {e}"));
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let out = child.stdout.take().expect("piped stdout");
        let err = child.stderr.take().expect("piped stderr");
        let lines = stdout.clone();
        let text = stderr.clone();
        let readers = vec![
            thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    lines.lock().unwrap().push(line);
                }
            }),
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut err = err;
                loop {
                    match err.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => text
                            .lock()
                            .unwrap()
                            .push_str(&String::from_utf8_lossy(&buf[..n])),
                    }
                }
            }),
        ];
        Proc {
            child,
            stdout,
            stderr,
            readers,
            status: None,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stdout lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.stdout.lock().unwrap().clone()
    }

    /// Stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until a stdout line satisfies `f`, or `limit` passes.
    pub fn wait_line(&self, mut f: impl FnMut(&str) -> bool, limit: Duration) -> bool {
        wait_for(|| self.stdout.lock().unwrap().iter().any(|l| f(l)), limit)
    }

    /// The exit code if the child has exited (None while it runs, or if a
    /// signal ended it).
    pub fn try_status(&mut self) -> Option<i32> {
        if let Some(s) = self.status {
            return s;
        }
        match self.child.try_wait() {
            Ok(Some(st)) => {
                self.finish_readers();
                self.status = Some(st.code());
                st.code()
            }
            _ => None,
        }
    }

    /// Waits up to `limit` for the child to exit and returns its code; on
    /// timeout kills it and fails the test.
    pub fn wait(&mut self, limit: Duration) -> Option<i32> {
        let start = Instant::now();
        loop {
            if let Some(s) = self.status {
                return s;
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                self.finish_readers();
                self.status = Some(st.code());
                return st.code();
            }
            if start.elapsed() >= limit {
                self.kill();
                panic!(
                    "iwarp (pid {}) still running after {limit:?}\nstdout: {:?}\nstderr: {}",
                    self.child.id(),
                    self.lines(),
                    self.stderr()
                );
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Kills the child (SIGKILL, by its pid) and reaps it.
    pub fn kill(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            let st = self.child.wait().ok();
            self.finish_readers();
            self.status = Some(st.and_then(|s| s.code()));
        }
    }

    fn finish_readers(&mut self) {
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}
