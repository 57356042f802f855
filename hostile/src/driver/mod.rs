//! Running a case against a target (kernel TCP by default, any transport
//! with [`run_on`]): each connection plays the script, then the target's
//! answer is read until the connection ends or the case's patience runs
//! out, and judged. Every wait is bounded; nothing here decides what is
//! right, that is [`judge`].
//!
//! [`judge`]: crate::judge::judge

pub mod conn;

use std::io::{self, ErrorKind};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use transport::kernel::{KernelConfig, KernelTransport};
use transport::{StreamId, StreamState, Transport};

use crate::judge::{judge, Verdict};
use crate::observe::{Ending, Observation};
use crate::player::Player;
use crate::script::{Case, Step};
use crate::transcript::{Dir, Transcript};
use conn::Conn;

/// How long a connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest single sleep while waiting for the target.
const SLICE: Duration = Duration::from_millis(5);

/// What one case came to.
#[derive(Debug)]
pub struct Report {
    /// The case's name.
    pub case: &'static str,
    /// One verdict per connection.
    pub verdicts: Vec<Verdict>,
    /// What each connection saw, in the same order.
    pub observations: Vec<Observation>,
    /// Time from the first connect to the last verdict.
    pub elapsed: Duration,
    /// Connections the target refused or reset while they were opened
    /// (judged as reset connections).
    pub refused_at_connect: usize,
    /// Connections whose TCP handshake never completed (judged as open
    /// and silent, or reset, as the transport saw them).
    pub unconnected: usize,
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

/// Runs `case` against the target at `addr` over kernel TCP and judges
/// every connection.
pub fn run(addr: SocketAddr, case: &Case) -> io::Result<Report> {
    let mut t = KernelTransport::new(KernelConfig::default());
    let (report, _) = run_on(&mut t, addr, case, Duration::ZERO)?;
    Ok(report)
}

/// Runs `case` against `addr` over `t`, waiting `settle` after start-up
/// before the first FPDU; the report and each connection's transcript.
pub fn run_on(
    t: &mut dyn Transport,
    addr: SocketAddr,
    case: &Case,
    settle: Duration,
) -> io::Result<(Report, Vec<Transcript>)> {
    let start = Instant::now();
    // The first connection shows whether anything listens there at all;
    // the rest of a flood opens once it is up.
    let first = conn::connect(t, addr).map_err(io::Error::other)?;
    let until = Instant::now() + CONNECT_TIMEOUT;
    while t.state(first) == StreamState::Connecting && Instant::now() < until {
        t.poll(Instant::now());
        t.wait(Some(SLICE));
    }
    let failed = match t.state(first) {
        StreamState::Reset => Some((ErrorKind::ConnectionRefused, "connection refused")),
        StreamState::Connecting => Some((ErrorKind::TimedOut, "no answer to connect")),
        _ => None,
    };
    if let Some((kind, what)) = failed {
        conn::release(t, std::iter::once(first));
        return Err(io::Error::new(kind, format!("{addr}: {what}")));
    }
    let mut ids = vec![first];
    for _ in 1..case.connections {
        match conn::connect(t, addr) {
            Ok(id) => ids.push(id),
            // Out of sockets: the flood is as large as this host allows.
            Err(_) => break,
        }
    }
    Ok(play_streams(t, ids, case, settle, true, start))
}

/// Plays `case` on connections already open (`we_connected`: opened by
/// us, else accepted) and judges each.
pub fn play_streams(
    t: &mut dyn Transport,
    ids: Vec<StreamId>,
    case: &Case,
    settle: Duration,
    we_connected: bool,
    start: Instant,
) -> (Report, Vec<Transcript>) {
    let now = Instant::now();
    let mut players: Vec<Player> = ids.iter().map(|_| Player::new(case, settle, now)).collect();
    let mut conns: Vec<Conn<'_>> = ids
        .iter()
        .zip(players.iter_mut())
        .map(|(&id, p)| Conn::new(t, id, p, we_connected))
        .collect();
    // Start-up, each wait and the observation are bounded by the patience;
    // this bounds the whole, whatever the script.
    let hard = now + case.patience * (case.script.len() as u32 + 2) + CONNECT_TIMEOUT;
    conn::run(t, &mut conns, hard);
    let unconnected = conns.iter().filter(|c| !c.connected()).count();
    let transcripts: Vec<Transcript> = conns.into_iter().map(|c| c.transcript).collect();
    let observations: Vec<Observation> = players.into_iter().map(Player::finish).collect();
    let refused_at_connect = transcripts
        .iter()
        .zip(&observations)
        .filter(|(tr, o)| {
            o.ending == Ending::Reset && tr.stream(Dir::ToTarget).is_empty() && o.bytes == 0
        })
        .count();
    (
        Report {
            case: case.name,
            refused_at_connect,
            unconnected,
            verdicts: observations
                .iter()
                .map(|o| judge(&case.expect, o))
                .collect(),
            observations,
            elapsed: start.elapsed(),
        },
        transcripts,
    )
}

/// A script played to its end, or not.
#[derive(Debug)]
pub struct ScriptRun {
    /// Every step done and every wait met.
    pub completed: bool,
    /// What the target sent, and how the connection ended.
    pub observation: Observation,
    /// Everything the connection carried.
    pub transcript: Transcript,
}

impl ScriptRun {
    /// Completed, with nothing wrong from the target on the way: no
    /// TERMINATE, nothing malformed.
    pub fn clean(&self) -> bool {
        self.completed
            && self.observation.terminates.is_empty()
            && self.observation.malformed.is_none()
    }
}

/// Plays `script` on the open connection `id`, each step and wait bounded
/// by `patience`.
pub fn run_script(
    t: &mut dyn Transport,
    id: StreamId,
    script: Vec<Step>,
    patience: Duration,
    settle: Duration,
    we_connected: bool,
) -> ScriptRun {
    let now = Instant::now();
    let hard = now + patience * (script.len() as u32 + 2) + CONNECT_TIMEOUT;
    let mut player = Player::with_script(script, patience, settle, now);
    let transcript = {
        let mut conns = [Conn::new(t, id, &mut player, we_connected)];
        conn::run(t, &mut conns, hard);
        let [c] = conns;
        c.transcript
    };
    ScriptRun {
        completed: player.completed(),
        observation: player.finish(),
        transcript,
    }
}
