//! Running a case against a target over kernel TCP (`std::net`): each
//! connection runs the script, then the target's answer is read until the
//! connection ends or the case's patience runs out, and judged. Every wait
//! is bounded; nothing here decides what is right, that is [`judge`].
//!
//! [`judge`]: crate::judge::judge

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use ddp::STag;
use mpa::{Negotiated, Startup, StartupEvent};

use crate::build;
use crate::judge::{judge, Verdict};
use crate::observe::{Observation, Observer};
use crate::script::{Case, Mangle, Step};

/// How long a connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest single sleep while waiting for the target.
const SLICE: Duration = Duration::from_millis(5);
/// The STag of a zero-length WRITE RTR, as siw sends it.
const RTR_STAG: STag = STag(1);

/// What one case came to.
#[derive(Debug)]
pub struct Report {
    pub case: &'static str,
    /// One verdict per connection.
    pub verdicts: Vec<Verdict>,
    /// Time from the first connect to the last verdict.
    pub elapsed: Duration,
    /// Connections the target refused or reset while they were opened
    /// (judged as reset connections).
    pub refused_at_connect: usize,
}

impl Report {
    /// Whether every connection met an allowed outcome.
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(Result::is_ok)
    }

    /// The first mismatch, if any, as text.
    pub fn failure(&self) -> Option<String> {
        let bad = self.verdicts.iter().filter(|v| v.is_err()).count();
        self.verdicts
            .iter()
            .find_map(|v| v.as_ref().err())
            .map(|m| {
                format!(
                    "{}: {bad} of {} connection(s) failed; first: {m}",
                    self.case,
                    self.verdicts.len()
                )
            })
    }
}

/// One connection of a case.
struct Conn {
    stream: TcpStream,
    observer: Observer,
    ended: bool,
}

impl Conn {
    /// Takes what the target sent, without blocking; false once the
    /// stream has ended.
    fn pump(&mut self) -> bool {
        let mut buf = [0u8; 16 * 1024];
        while !self.ended {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    self.observer.on_fin();
                    self.ended = true;
                }
                Ok(n) => self.observer.on_bytes(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
                    return true
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.observer.on_reset();
                    self.ended = true;
                }
            }
        }
        false
    }

    /// Sends bytes; false if the target no longer takes them.
    fn send(&mut self, bytes: &[u8]) -> bool {
        self.stream.set_nonblocking(false).is_ok() && self.stream.write_all(bytes).is_ok() && {
            let _ = self.stream.set_nonblocking(true);
            true
        }
    }

    /// Runs start-up to its end, or until `deadline`.
    fn start_up(&mut self, cfg: mpa::InitiatorConfig, deadline: Instant) -> Option<Negotiated> {
        let now = Instant::now();
        let mut st = Startup::initiator(cfg, now).ok()?;
        let mut request = Vec::new();
        st.poll_transmit(&mut request);
        if !self.send(&request) {
            return None;
        }
        let mut buf = [0u8; 4096];
        while Instant::now() < deadline && !self.ended {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    self.observer.on_fin();
                    self.ended = true;
                }
                Ok(n) => {
                    self.observer.on_bytes(&buf[..n]);
                    // Start-up takes only the Reply; the rest is FPDUs the
                    // observer already has.
                    let _ = st.handle_bytes(&buf[..n], Instant::now());
                    while let Some(ev) = st.poll_event() {
                        match ev {
                            StartupEvent::Established(n) => return Some(n),
                            StartupEvent::Rejected { .. } | StartupEvent::Failed(_) => return None,
                            StartupEvent::RequestReceived { .. } => {}
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
                    thread::sleep(SLICE)
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.observer.on_reset();
                    self.ended = true;
                }
            }
        }
        None
    }

    /// Runs `script`; stops early when start-up fails or the target stops
    /// taking bytes.
    fn run(&mut self, script: &[Step], deadline: Instant) {
        let mut framer = None;
        for step in script {
            let ok = match step {
                Step::StartUp(cfg) => match self.start_up((**cfg).clone(), deadline) {
                    Some(n) => {
                        let mut f = n.framer();
                        let ok = match n.rtr {
                            Some(mpa::Rtr::Write) => {
                                let mut out = Vec::new();
                                let rtr = build::write(RTR_STAG, 0, &[]);
                                f.frame_to_vec(&rtr, &[], &mut out).is_ok() && self.send(&out)
                            }
                            // Offers are narrowed to a WRITE RTR.
                            Some(_) => false,
                            None => true,
                        };
                        framer = Some(f);
                        ok
                    }
                    None => false,
                },
                Step::Bytes(b) => self.send(b),
                Step::Fpdu { ulpdu, mangle } => {
                    let Some(f) = framer.as_mut() else {
                        return;
                    };
                    let mut out = Vec::new();
                    if f.frame_to_vec(ulpdu, &[], &mut out).is_err() {
                        return;
                    }
                    match *mangle {
                        Mangle::None => {}
                        Mangle::FlipCrc => {
                            if let Some(last) = out.last_mut() {
                                // The CRC's most significant octet is last.
                                *last ^= 0x01;
                            }
                        }
                        Mangle::Cut(n) => out.truncate(n),
                    }
                    self.send(&out)
                }
                Step::Fin => self.stream.shutdown(Shutdown::Write).is_ok(),
            };
            if !ok {
                return;
            }
        }
    }
}

/// Whether a connect failed because the target turned it away.
fn refusal(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
    )
}

/// Runs `case` against the target at `addr` and judges every connection.
pub fn run(addr: SocketAddr, case: &Case) -> io::Result<Report> {
    let start = Instant::now();
    let mut conns = Vec::with_capacity(case.connections);
    let mut refused = Vec::new();
    for i in 0..case.connections {
        let stream = match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(s) => s,
            // A target shedding a flood may refuse or reset connections:
            // an answer like any other. Failing the first one is not.
            Err(e) if i > 0 && refusal(&e) => {
                let mut o = Observer::new();
                o.on_reset();
                refused.push(o.finish());
                continue;
            }
            Err(e) => return Err(e),
        };
        stream.set_nodelay(true)?;
        // A target that stops reading cannot hold a send forever.
        stream.set_write_timeout(Some(CONNECT_TIMEOUT))?;
        stream.set_nonblocking(true)?;
        conns.push(Conn {
            stream,
            observer: Observer::new(),
            ended: false,
        });
    }
    for c in &mut conns {
        c.run(&case.script, Instant::now() + case.patience);
    }
    let deadline = Instant::now() + case.patience;
    loop {
        let mut open = 0;
        for c in &mut conns {
            if c.pump() {
                open += 1;
            }
        }
        if open == 0 || Instant::now() >= deadline {
            break;
        }
        thread::sleep(SLICE);
    }
    let refused_at_connect = refused.len();
    let observations: Vec<Observation> = conns
        .into_iter()
        .map(|c| c.observer.finish())
        .chain(refused)
        .collect();
    Ok(Report {
        case: case.name,
        refused_at_connect,
        verdicts: observations
            .iter()
            .map(|o| judge(&case.expect, o))
            .collect(),
        elapsed: start.elapsed(),
    })
}
