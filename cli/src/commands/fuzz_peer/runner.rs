//! Running cases and liveness checks on one transport, towards a target
//! that listens (we connect) or one that connects (we listen).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hostile::driver::conn;
use hostile::driver::{self, Report as CaseReport, ScriptRun};
use hostile::transcript::Transcript;
use hostile::{exchange, Case, Target};
use transport::{ListenerId, Transport};

/// Which way connections go.
#[derive(Debug, Clone, Copy)]
pub enum Role {
    /// The target listens at this address.
    Connect(SocketAddr),
    /// The target connects to our listener.
    Listen(ListenerId),
}

/// What a legitimate exchange came to.
#[derive(Debug)]
pub struct Liveness {
    pub alive: bool,
    pub detail: String,
    pub transcript: Option<Transcript>,
}

pub struct Runner {
    pub t: Box<dyn Transport + Send>,
    pub role: Role,
    pub target: Target,
    pub settle: Duration,
    /// Listening: how long to wait for the target's next connection.
    pub accept_within: Duration,
}

impl Runner {
    /// Whether the cases are played as the Responder.
    pub fn responder(&self) -> bool {
        matches!(self.role, Role::Listen(_))
    }

    /// Plays `case` on fresh connections.
    pub fn play(&mut self, case: &Case) -> Result<(CaseReport, Vec<Transcript>), String> {
        match self.role {
            Role::Connect(addr) => {
                driver::run_on(&mut *self.t, addr, case, self.settle).map_err(|e| e.to_string())
            }
            Role::Listen(l) => {
                let start = Instant::now();
                let mut ids = Vec::new();
                for _ in 0..case.connections {
                    match conn::accept(&mut *self.t, l, self.accept_within) {
                        Some(id) => ids.push(id),
                        None => break,
                    }
                }
                if ids.is_empty() {
                    return Err(format!(
                        "no connection from the target within {:?}",
                        self.accept_within
                    ));
                }
                Ok(driver::play_streams(
                    &mut *self.t,
                    ids,
                    case,
                    self.settle,
                    false,
                    start,
                ))
            }
        }
    }

    /// One legitimate rping ping on a fresh connection: the target still
    /// serves if it completes with no TERMINATE.
    pub fn liveness(&mut self) -> Liveness {
        let patience = self.target.answer_within;
        let (id, script, we_connected) = match self.role {
            Role::Connect(addr) => match conn::connect(&mut *self.t, addr) {
                Ok(id) => (id, exchange::client_ping(&self.target), true),
                Err(e) => {
                    return Liveness {
                        alive: false,
                        detail: e,
                        transcript: None,
                    }
                }
            },
            Role::Listen(l) => match conn::accept(&mut *self.t, l, self.accept_within) {
                Some(id) => (id, exchange::server_ping(&self.target), false),
                None => {
                    return Liveness {
                        alive: false,
                        detail: format!("no new connection within {:?}", self.accept_within),
                        transcript: None,
                    }
                }
            },
        };
        let run: ScriptRun = driver::run_script(
            &mut *self.t,
            id,
            script,
            patience,
            self.settle,
            we_connected,
        );
        let alive = run.clean();
        Liveness {
            alive,
            detail: if alive {
                String::new()
            } else {
                format!("a legitimate ping did not complete: {}", run.observation)
            },
            transcript: Some(run.transcript),
        }
    }

    /// Liveness, tried twice a second apart: a target that is merely slow
    /// to free the last case's connection is not down.
    pub fn alive(&mut self) -> Liveness {
        let first = self.liveness();
        if first.alive {
            return first;
        }
        std::thread::sleep(Duration::from_secs(1));
        let second = self.liveness();
        if second.alive {
            second
        } else {
            first
        }
    }
}
