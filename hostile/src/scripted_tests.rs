//! The player, judge, exchanges, mutator and minimizer against scripted
//! targets, sans-IO: a target here is a small Responder built from the
//! project's own start-up machine and framing, with a behaviour chosen
//! per test (answer as assigned, ignore everything, serve rping, wedge on
//! one mutation), joined to the player with virtual time.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use ddp::STag;
use mpa::{Deframer, Framer, ReplyParams, ResponderConfig, Startup, StartupEvent};
use rdmap::term::TermCode;
use rdmap::wire::{Body, MessageRepr, ReadRequestRepr, TermControl};
use rdmap::Opcode;

use crate::build;
use crate::catalogue;
use crate::exchange;
use crate::judge::judge;
use crate::minimize::ddmin;
use crate::mutate::{self, Field, Mutation};
use crate::observe::{Ending, Observation};
use crate::player::{Action, Player};
use crate::rping::RdmaInfo;
use crate::script::{Mangle, Step};
use crate::target::Target;

/// The STag a scripted rping server reads into.
const SERVER_SINK: STag = STag(0x0000_1234);

#[derive(Clone)]
enum Behaviour {
    /// The first FPDU, or a broken stream, is answered with this
    /// TERMINATE, then FIN.
    TerminateWith(TermCode),
    /// Takes everything and says nothing (and never closes).
    Ignore,
    /// Serves rping's server side for one ping, then waits for FIN.
    RpingServer,
    /// Wedges (answers nothing, on any connection, from then on) once an
    /// untagged FPDU carries MSN 0xffffffff; otherwise as `RpingServer`.
    WedgesOnMaxMsn(Rc<Cell<bool>>),
}

struct Target1 {
    behaviour: Behaviour,
    startup: Startup,
    deframer: Option<Deframer>,
    framer: Option<Framer>,
    out: Vec<u8>,
    closed: bool,
    sends_seen: u32,
    msn_out: u32,
}

impl Target1 {
    fn new(behaviour: Behaviour, now: Instant) -> Target1 {
        let cfg = ResponderConfig {
            crc: mpa::CrcPolicy::Off,
            ..ResponderConfig::default()
        };
        Target1 {
            behaviour,
            startup: Startup::responder(cfg, now).unwrap(),
            deframer: None,
            framer: None,
            out: Vec::new(),
            closed: false,
            sends_seen: 0,
            msn_out: 0,
        }
    }

    fn wedged(&self) -> bool {
        matches!(&self.behaviour, Behaviour::WedgesOnMaxMsn(w) if w.get())
    }

    fn frame(&mut self, ulpdu: &[u8]) {
        if let Some(f) = self.framer.as_mut() {
            f.frame_to_vec(ulpdu, &[], &mut self.out).unwrap();
        }
    }

    fn terminate(&mut self, code: TermCode) {
        let c = TermControl {
            layer: code.layer.bits(),
            etype: code.etype,
            code: code.code,
            ..TermControl::default()
        };
        self.frame(&build::terminate(1, c));
        self.closed = true;
    }

    fn send(&mut self, data: &[u8]) {
        self.msn_out += 1;
        self.frame(&build::send(self.msn_out, data, true));
    }

    fn on_bytes(&mut self, bytes: &[u8], now: Instant) {
        if self.closed || self.wedged() {
            return;
        }
        let mut rest = bytes;
        if self.deframer.is_none() {
            let used = self.startup.handle_bytes(bytes, now).unwrap_or(bytes.len());
            while let Some(ev) = self.startup.poll_event() {
                match ev {
                    StartupEvent::RequestReceived { .. } => {
                        let p = ReplyParams {
                            ird: 1,
                            ord: 1,
                            private_data: Vec::new(),
                        };
                        self.startup.accept(p, now).unwrap();
                    }
                    StartupEvent::Established(n) => {
                        self.deframer = Some(n.deframer(65535));
                        self.framer = Some(n.framer());
                    }
                    _ => self.closed = true,
                }
            }
            self.startup.poll_transmit(&mut self.out);
            rest = &bytes[used..];
        }
        let Some(mut d) = self.deframer.take() else {
            return;
        };
        let mut ulpdus = Vec::new();
        let res = d.feed(rest, |u| {
            ulpdus.push(u.to_vec());
            core::ops::ControlFlow::Continue(())
        });
        self.deframer = Some(d);
        for u in ulpdus {
            self.on_ulpdu(&u);
        }
        if res.is_err() {
            if let Behaviour::TerminateWith(code) = self.behaviour {
                self.terminate(code);
            }
        }
    }

    fn on_ulpdu(&mut self, u: &[u8]) {
        if self.closed {
            return;
        }
        match self.behaviour.clone() {
            Behaviour::TerminateWith(code) => self.terminate(code),
            Behaviour::Ignore => {}
            Behaviour::WedgesOnMaxMsn(w) => {
                let untagged = u.first().is_some_and(|b| b & 0x80 == 0);
                if untagged && u.get(10..14) == Some(&[0xff; 4][..]) {
                    w.set(true);
                    return;
                }
                self.serve_rping(u);
            }
            Behaviour::RpingServer => self.serve_rping(u),
        }
    }

    fn serve_rping(&mut self, u: &[u8]) {
        let Ok(m) = MessageRepr::parse(u) else {
            return;
        };
        match (m.opcode(), m.body) {
            (Opcode::Send, Body::Data(d)) => {
                self.sends_seen += 1;
                let Ok(a) = RdmaInfo::parse(d) else {
                    return;
                };
                if self.sends_seen == 1 {
                    let rr = ReadRequestRepr {
                        sink_stag: SERVER_SINK,
                        sink_to: 0x1000,
                        size: a.size,
                        source_stag: STag(a.rkey),
                        source_to: a.addr,
                    };
                    self.frame(&build::read_request(1, rr));
                } else {
                    let len = a.size.min(4096) as usize;
                    self.frame(&build::write(STag(a.rkey), a.addr, &build::fill(len)));
                    self.send(&[0; 16]);
                }
            }
            (Opcode::ReadResponse, _) => self.send(&[0; 16]),
            _ => {}
        }
    }
}

/// Plays `script` against `target` in virtual time; the player (for
/// `completed`) and what it observed.
fn play(script: Vec<Step>, mut target: Target1) -> (bool, Observation, Target1) {
    let start = Instant::now();
    let mut now = start;
    let mut player = Player::with_script(script, Duration::from_secs(2), Duration::ZERO, now);
    let mut end_told = false;
    for _ in 0..10_000 {
        let action = player.poll(now);
        match action {
            Action::Send(b) => target.on_bytes(&b, now),
            Action::Fin => target.closed = true,
            Action::Wait(t) => now = t.max(now + Duration::from_millis(1)),
            Action::Done => break,
        }
        if !target.out.is_empty() {
            let out = std::mem::take(&mut target.out);
            player.on_bytes(&out, now);
        }
        if target.closed && !end_told {
            end_told = true;
            player.on_end(Ending::Fin, now);
        }
        assert!(
            now - start < Duration::from_secs(600),
            "virtual time ran away"
        );
    }
    let done = player.completed();
    (done, player.finish(), target)
}

fn default_target() -> Target {
    Target {
        mpa: mpa::InitiatorConfig {
            crc: mpa::CrcPolicy::Off,
            ..mpa::InitiatorConfig::default()
        },
        ..Target::default()
    }
}

fn case_against(name: &str, b: Behaviour) -> (crate::script::Case, Observation) {
    let t = default_target();
    let case = catalogue::case(&t, name).unwrap();
    let (_, obs, _) = play(case.script.clone(), Target1::new(b, Instant::now()));
    (case, obs)
}

#[test]
fn a_target_that_answers_as_assigned_passes() {
    let (case, obs) = case_against(
        "write-unknown-stag",
        Behaviour::TerminateWith(TermCode::DDP_T_INVALID_STAG),
    );
    assert!(judge(&case.expect, &obs).is_ok(), "{obs}");
}

#[test]
fn a_target_that_ignores_bad_input_fails() {
    let (case, obs) = case_against("write-unknown-stag", Behaviour::Ignore);
    let m = judge(&case.expect, &obs).unwrap_err();
    assert!(obs.terminates.is_empty());
    assert!(m.to_string().contains("still open"), "{m}");
}

#[test]
fn a_terminate_with_another_code_fails() {
    let (case, obs) = case_against(
        "msn-gap",
        Behaviour::TerminateWith(TermCode::DDP_UT_INVALID_QN),
    );
    assert_eq!(obs.terminates.len(), 1);
    assert!(judge(&case.expect, &obs).is_err());
}

#[test]
fn the_rping_ping_completes_and_names_the_targets_buffer() {
    let (done, obs, _) = play(
        exchange::client_ping(&default_target()),
        Target1::new(Behaviour::RpingServer, Instant::now()),
    );
    assert!(done, "{obs}");
    assert!(
        obs.terminates.is_empty() && obs.malformed.is_none(),
        "{obs}"
    );
    assert_eq!(obs.read_requests[0].sink_stag, SERVER_SINK);
    assert_eq!((obs.send_count, obs.tagged_count), (2, 1));
}

#[test]
fn a_silent_target_fails_the_ping() {
    let (done, obs, _) = play(
        exchange::client_ping(&default_target()),
        Target1::new(Behaviour::Ignore, Instant::now()),
    );
    assert!(!done, "{obs}");
}

#[test]
fn the_beyond_region_write_goes_to_the_buffer_the_target_named() {
    let t = default_target();
    let case = catalogue::case(&t, "write-beyond-region").unwrap();
    // Record what the target receives after the exchange: the last FPDU.
    let (_, obs, target) = play(
        case.script.clone(),
        Target1::new(Behaviour::RpingServer, Instant::now()),
    );
    assert_eq!(obs.read_requests.len(), 1, "{obs}");
    assert!(!target.wedged());
    let w = build::learned(
        crate::script::Learned::WriteToReadSink {
            offset: 1 << 20,
            len: 16,
        },
        &obs,
    )
    .unwrap();
    let m = MessageRepr::parse(&w).unwrap();
    match m.ddp {
        ddp::wire::SegmentRepr::Tagged(h) => {
            assert_eq!((h.stag, h.to), (SERVER_SINK, 0x1000 + (1 << 20)));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn minimizing_finds_the_one_mutation_that_wedges_the_target() {
    let t = default_target();
    let base = mutate::base_session(&t);
    let culprit = Mutation::Field {
        fpdu: 1,
        field: Field::MsnOrToHigh,
        value: 0xffff_ffff,
    };
    let muts = vec![
        Mutation::Header {
            fpdu: 0,
            at: 20,
            mask: 0x10,
        },
        Mutation::Framing {
            fpdu: 3,
            mangle: Mangle::Xor { at: 30, mask: 4 },
        },
        culprit,
        Mutation::Duplicate { fpdu: 2 },
    ];
    let mut tries = 0;
    let mut fails = |m: &[Mutation]| {
        tries += 1;
        // A fresh target per try; the wedge lasts across its connections.
        let wedge = Rc::new(Cell::new(false));
        let now = Instant::now();
        let b = Behaviour::WedgesOnMaxMsn(wedge.clone());
        play(mutate::apply(&base, m), Target1::new(b.clone(), now));
        let (alive, _, _) = play(exchange::client_ping(&t), Target1::new(b, now));
        !alive
    };
    assert!(fails(&muts), "the whole mutant wedges the target");
    assert!(!fails(&[]), "the base session does not");
    assert_eq!(ddmin(&muts, &mut fails, 50), vec![culprit]);
    assert!(tries < 20, "{tries} tries");
}
