//! Playing a case's script on one connection, sans-IO: the target's bytes
//! and the time go in, what to send (or to close) comes out, and at the end
//! the [`Observation`] of everything the target sent. The same player runs
//! over kernel sockets, smoltcp or a scripted peer in a test.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ddp::STag;
use mpa::wire::FrameRepr;
use mpa::{Framer, ReplyParams, Startup, StartupEvent};

use crate::build;
use crate::observe::{Ending, Observation, Observer, ReplySeen};
use crate::script::{Case, Step, Want};

/// The STag of a zero-length WRITE RTR, as siw sends it.
pub const RTR_STAG: STag = STag(1);

/// Largest MPA frame a Request can be (header and 512 octets of private
/// data, plus one so an over-long one shows).
const MAX_FRAME: usize = 20 + 512 + 1;

/// What the player wants done next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send these bytes.
    Send(Vec<u8>),
    /// Close our sending direction (FIN).
    Fin,
    /// Nothing to do before this instant, unless the target sends.
    Wait(Instant),
    /// The observation is over.
    Done,
}

/// Where start-up stands.
enum Phase {
    /// Running script steps.
    Script,
    /// Our Startup machine runs (either role).
    StartingUp(Box<Startup>),
    /// Waiting for a whole Request, which is not answered.
    AwaitingRequest(Vec<u8>),
}

/// Runs one script on one connection.
pub struct Player {
    steps: VecDeque<Step>,
    phase: Phase,
    framer: Option<Framer>,
    observer: Observer,
    /// Bytes to hand out before anything else (a Reply, an RTR).
    queued: VecDeque<Action>,
    /// The wait after start-up before the first FPDU.
    settle: Duration,
    not_before: Option<Instant>,
    patience: Duration,
    /// Start-up and waits must end by this.
    step_deadline: Instant,
    /// Set once the script is over: the observation ends then.
    deadline: Option<Instant>,
    ended: bool,
    /// Whether start-up completed.
    established: bool,
    /// Whether the script was cut short.
    abandoned: bool,
    /// What is being waited for.
    waiting: Option<Wait>,
}

/// A wait on the target's messages.
#[derive(Debug, Clone, Copy)]
enum Wait {
    Messages(Want),
    Reply,
}

impl Player {
    /// A player for `case` on one connection opened at `now`. `settle`
    /// is waited after start-up before the first FPDU: some targets
    /// overlook an FPDU that arrives moments after their Reply.
    pub fn new(case: &Case, settle: Duration, now: Instant) -> Player {
        Player::with_script(case.script.clone(), case.patience, settle, now)
    }

    /// A player for a bare script; the observation lasts `patience` after
    /// the script ends (and bounds each start-up).
    pub fn with_script(
        script: Vec<Step>,
        patience: Duration,
        settle: Duration,
        now: Instant,
    ) -> Player {
        Player {
            steps: script.into(),
            phase: Phase::Script,
            framer: None,
            observer: Observer::new(),
            queued: VecDeque::new(),
            settle,
            not_before: None,
            patience,
            step_deadline: now + patience,
            deadline: None,
            ended: false,
            established: false,
            abandoned: false,
            waiting: None,
        }
    }

    /// Whether the script ran to its end: every step done, every wait met.
    pub fn completed(&self) -> bool {
        !self.abandoned && self.steps.is_empty() && self.deadline.is_some()
    }

    /// Whether MPA start-up completed.
    pub fn established(&self) -> bool {
        self.established
    }

    /// What the target has sent so far.
    pub fn observation(&self) -> &Observation {
        self.observer.observation()
    }

    /// Bytes from the target.
    pub fn on_bytes(&mut self, bytes: &[u8], now: Instant) {
        // A Responder's step reads the Request: it must be under way
        // before the Request's bytes are taken.
        if matches!(self.phase, Phase::Script)
            && self.waiting.is_none()
            && matches!(
                self.steps.front(),
                Some(Step::Accept(_) | Step::AwaitRequest)
            )
        {
            if let Action::Send(b) = self.poll(now) {
                self.queued.push_back(Action::Send(b));
            }
        }
        match &mut self.phase {
            Phase::Script => self.observer.on_bytes(bytes),
            Phase::AwaitingRequest(buf) => {
                let take = bytes.len().min(MAX_FRAME.saturating_sub(buf.len()));
                buf.extend_from_slice(&bytes[..take]);
                let whole = match FrameRepr::parse_bytes(buf) {
                    Ok((_, len)) => Some(len),
                    Err(mpa::wire::Error::Truncated { .. }) if buf.len() < MAX_FRAME => None,
                    // Not a Request we can read: go on with the script.
                    Err(_) => Some(buf.len()),
                };
                if let Some(len) = whole {
                    let rest = buf.split_off(len);
                    let mut rest_all = rest;
                    rest_all.extend_from_slice(&bytes[take..]);
                    self.phase = Phase::Script;
                    self.step_deadline = now + self.patience;
                    if !rest_all.is_empty() {
                        self.observer.on_bytes(&rest_all);
                    }
                }
            }
            Phase::StartingUp(st) => {
                let initiator = st.role() == mpa::Role::Initiator;
                if initiator {
                    // The observer reads the Reply itself.
                    self.observer.on_bytes(bytes);
                }
                let used = st.handle_bytes(bytes, now).unwrap_or(bytes.len());
                self.startup_events(now);
                if !initiator && self.established {
                    if let Some(rest) = bytes.get(used..).filter(|r| !r.is_empty()) {
                        self.observer.on_bytes(rest);
                    }
                }
            }
        }
    }

    /// The target closed its direction or reset the connection.
    pub fn on_end(&mut self, how: Ending, now: Instant) {
        match how {
            Ending::Fin => self.observer.on_fin(),
            Ending::Reset => self.observer.on_reset(),
            Ending::Open => return,
        }
        self.ended = true;
        if let Phase::StartingUp(st) = &mut self.phase {
            st.handle_peer_closed();
        }
        if !matches!(self.phase, Phase::Script) {
            self.abandon(now);
        }
    }

    /// The script cannot go on: the rest is skipped and the observation
    /// runs its course.
    fn abandon(&mut self, now: Instant) {
        if !self.steps.is_empty() || !matches!(self.phase, Phase::Script) || self.waiting.is_some()
        {
            self.abandoned = true;
        }
        self.waiting = None;
        self.steps.clear();
        self.phase = Phase::Script;
        self.deadline.get_or_insert(now + self.patience);
    }

    fn startup_events(&mut self, now: Instant) {
        let Phase::StartingUp(st) = &mut self.phase else {
            return;
        };
        let mut out = Vec::new();
        let mut abandoned = false;
        while let Some(ev) = st.poll_event() {
            match ev {
                StartupEvent::RequestReceived { ird_ord, .. } => {
                    let (ird, ord) = ird_ord.map_or((1, 1), |io| (io.ord, io.ird));
                    let params = ReplyParams {
                        ird,
                        ord,
                        private_data: Vec::new(),
                    };
                    if st.accept(params, now).is_err() {
                        abandoned = true;
                    }
                }
                StartupEvent::Established(n) => {
                    self.established = true;
                    let mut framer = n.framer();
                    if st.role() == mpa::Role::Responder {
                        self.observer.expect_markers(n.markers_rx);
                        self.observer.established(ReplySeen {
                            reject: false,
                            rev: n.rev,
                            crc: n.crc,
                        });
                    } else if n.rtr == Some(mpa::Rtr::Write) {
                        let mut rtr = Vec::new();
                        if framer
                            .frame_to_vec(&build::write(RTR_STAG, 0, &[]), &[], &mut rtr)
                            .is_ok()
                        {
                            // The RTR is the first FPDU: it waits out the
                            // settle time too (siw attaches its RTR upcall
                            // after sending the Reply).
                            self.steps.push_front(Step::Bytes(rtr));
                            self.steps.push_front(Step::Pause(self.settle));
                        }
                    } else if n.rtr.is_some() {
                        // Offers are narrowed to a WRITE RTR.
                        abandoned = true;
                    }
                    self.framer = Some(framer);
                    self.not_before = Some(now + self.settle);
                }
                StartupEvent::Rejected { .. } | StartupEvent::Failed(_) => abandoned = true,
            }
        }
        st.poll_transmit(&mut out);
        if !out.is_empty() {
            // A Reply goes out before anything else.
            self.queued.push_front(Action::Send(out));
        }
        if abandoned {
            self.abandon(now);
        } else if self.established {
            self.phase = Phase::Script;
            self.step_deadline = now + self.patience;
        }
    }

    /// The next thing to do at `now`.
    pub fn poll(&mut self, now: Instant) -> Action {
        if let Some(a) = self.queued.pop_front() {
            return a;
        }
        if let Some(d) = self.deadline {
            return if self.ended || now >= d {
                Action::Done
            } else {
                Action::Wait(d)
            };
        }
        if !matches!(self.phase, Phase::Script) {
            if now >= self.step_deadline || self.ended {
                self.abandon(now);
                return self.poll(now);
            }
            return Action::Wait(self.step_deadline);
        }
        if let Some(w) = self.waiting {
            let o = self.observer.observation();
            let met = match w {
                Wait::Messages(want) => {
                    o.send_count >= want.sends
                        && o.read_request_count >= want.read_requests
                        && o.tagged_count >= want.tagged
                }
                Wait::Reply => o.reply.is_some(),
            };
            if met {
                self.waiting = None;
                // The target's next FPDU may need a moment, as after start-up.
                self.not_before = Some(now + self.settle);
            } else if now >= self.step_deadline || self.ended {
                self.abandon(now);
                return self.poll(now);
            } else {
                return Action::Wait(self.step_deadline);
            }
        }
        let Some(step) = self.steps.pop_front() else {
            self.deadline = Some(now + self.patience);
            return self.poll(now);
        };
        match step {
            Step::StartUp(cfg) => match Startup::initiator(
                {
                    self.observer.expect_markers(cfg.markers_rx);
                    *cfg
                },
                now,
            ) {
                Ok(mut st) => {
                    let mut out = Vec::new();
                    st.poll_transmit(&mut out);
                    self.phase = Phase::StartingUp(Box::new(st));
                    self.step_deadline = now + self.patience;
                    Action::Send(out)
                }
                Err(_) => {
                    self.abandon(now);
                    self.poll(now)
                }
            },
            Step::Accept(cfg) => match Startup::responder(*cfg, now) {
                Ok(st) => {
                    self.phase = Phase::StartingUp(Box::new(st));
                    self.step_deadline = now + self.patience;
                    self.poll(now)
                }
                Err(_) => {
                    self.abandon(now);
                    self.poll(now)
                }
            },
            Step::AwaitRequest => {
                self.phase = Phase::AwaitingRequest(Vec::new());
                self.step_deadline = now + self.patience;
                self.poll(now)
            }
            Step::Pause(d) => {
                self.steps.push_front(Step::Bytes(Vec::new()));
                self.not_before = Some(now + d);
                self.poll(now)
            }
            Step::Bytes(b) if b.is_empty() => {
                if let Some(t) = self.not_before.filter(|&t| now < t) {
                    self.steps.push_front(Step::Bytes(b));
                    return Action::Wait(t);
                }
                self.poll(now)
            }
            Step::Bytes(b) => Action::Send(b),
            Step::Fpdu { ulpdu, mangle } => {
                if let Some(t) = self.not_before.filter(|&t| now < t) {
                    self.steps.push_front(Step::Fpdu { ulpdu, mangle });
                    return Action::Wait(t);
                }
                let Some(f) = self.framer.as_mut() else {
                    self.abandon(now);
                    return self.poll(now);
                };
                let mut out = Vec::new();
                if f.frame_to_vec(&ulpdu, &[], &mut out).is_err() {
                    self.abandon(now);
                    return self.poll(now);
                }
                mangle.apply(&mut out);
                Action::Send(out)
            }
            Step::Fin => Action::Fin,
            Step::Await(want) => {
                self.waiting = Some(Wait::Messages(want));
                self.step_deadline = now + self.patience;
                self.poll(now)
            }
            Step::AwaitReply => {
                self.waiting = Some(Wait::Reply);
                self.step_deadline = now + self.patience;
                self.poll(now)
            }
            Step::Learned { what, mangle } => {
                match build::learned(what, self.observer.observation()) {
                    Some(ulpdu) => self.steps.push_front(Step::Fpdu { ulpdu, mangle }),
                    None => self.abandon(now),
                }
                self.poll(now)
            }
        }
    }

    /// The target no longer takes bytes: the script stops here.
    pub fn on_send_failed(&mut self, now: Instant) {
        self.abandon(now);
    }

    /// The observation, once [`Action::Done`] came.
    pub fn finish(self) -> Observation {
        self.observer.finish()
    }
}

/// One side of a conversation on one connection, sans-IO: a hostile
/// script, or a legitimate exchange checking the target still serves.
pub trait Peer {
    /// Bytes from the target.
    fn on_bytes(&mut self, bytes: &[u8], now: Instant);
    /// The target closed (FIN) or reset the connection.
    fn on_end(&mut self, how: Ending, now: Instant);
    /// The target no longer takes bytes.
    fn on_send_failed(&mut self, now: Instant);
    /// The next thing to do.
    fn poll(&mut self, now: Instant) -> Action;
}

impl Peer for Player {
    fn on_bytes(&mut self, bytes: &[u8], now: Instant) {
        Player::on_bytes(self, bytes, now)
    }
    fn on_end(&mut self, how: Ending, now: Instant) {
        Player::on_end(self, how, now)
    }
    fn on_send_failed(&mut self, now: Instant) {
        Player::on_send_failed(self, now)
    }
    fn poll(&mut self, now: Instant) -> Action {
        Player::poll(self, now)
    }
}
