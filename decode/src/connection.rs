//! One connection's dissection: both directions, the MPA negotiation that
//! joins them, and the notes that explain anything not decoded.

use mpa::wire::FrameKind;

use super::direction::{DirectionDecoder, Phase, StartOutcome, MAX_PENDING};
use super::event::{Event, Negotiated, Note, NoteKind, Severity, Where};
use super::framing::FpduStream;
use super::summary::ConnectionKind;
use super::ulpdu;
use capture::pcap::Timestamp;
use capture::reassembly::{Direction, StreamEvent};

/// The packet being processed, for stamping what it completes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx {
    pub(crate) time: Timestamp,
    pub(crate) frame: u64,
    pub(crate) connection: usize,
}

impl Ctx {
    fn at(&self, direction: Direction, offset: u64) -> Where {
        Where {
            time: self.time,
            frame: self.frame,
            connection: self.connection,
            direction,
            offset,
        }
    }
}

/// Dissection state of one TCP connection.
#[derive(Debug, Default)]
pub(crate) struct ConnectionDecoder {
    /// Indexed by [`Direction::index`].
    pub(crate) dirs: [DirectionDecoder; 2],
    pub(crate) negotiated: Option<Negotiated>,
    /// The Connection event was emitted.
    pub(crate) announced: bool,
    pub(crate) errors: u64,
    /// An MPA Request came from the side taken as the server (or a Reply
    /// from the client): the driver swaps sides if it only guessed them.
    pub(crate) roles_reversed: bool,
    /// End-of-connection processing is done.
    pub(crate) finished: bool,
}

impl ConnectionDecoder {
    fn note(&mut self, at: Where, severity: Severity, kind: NoteKind, out: &mut Vec<Event>) {
        if severity == Severity::Error {
            self.errors += 1;
        }
        out.push(Event::Note(Note { at, severity, kind }));
    }

    /// True once any payload byte was seen in either direction.
    pub(crate) fn saw_data(&self) -> bool {
        self.dirs.iter().any(|d| d.saw_data)
    }

    /// Exchanges the two directions (the client was mis-guessed).
    pub(crate) fn swap(&mut self) {
        self.dirs.swap(0, 1);
        for d in &mut self.dirs {
            if let Some(f) = &mut d.frame {
                f.at.direction = f.at.direction.reverse();
            }
        }
        if let Some(n) = &mut self.negotiated {
            n.markers.swap(0, 1);
        }
        self.roles_reversed = false;
    }

    /// Handles one in-order event of direction `dir`'s TCP stream.
    pub(crate) fn on_stream(
        &mut self,
        ctx: &Ctx,
        dir: Direction,
        ev: StreamEvent<'_>,
        out: &mut Vec<Event>,
    ) {
        match ev {
            StreamEvent::Data { offset, bytes } => self.on_data(ctx, dir, offset, bytes, out),
            StreamEvent::Gap { offset, len } => self.on_gap(ctx, dir, offset, len, out),
            StreamEvent::Fin { offset } => self.on_fin(ctx, dir, offset, out),
        }
    }

    fn on_data(
        &mut self,
        ctx: &Ctx,
        dir: Direction,
        offset: u64,
        bytes: &[u8],
        out: &mut Vec<Event>,
    ) {
        let i = dir.index();
        self.dirs[i].saw_data = true;
        let len = bytes.len() as u64;
        match &mut self.dirs[i].phase {
            Phase::Start(buf) => {
                let start = offset.saturating_sub(buf.len() as u64);
                let held = buf.len() as u64;
                match DirectionDecoder::feed_start(buf, bytes, ctx.at(dir, start)) {
                    StartOutcome::NeedMore => {}
                    StartOutcome::NotMpa => {
                        self.dirs[i].phase = Phase::NotMpa;
                        self.note(ctx.at(dir, start), Severity::Info, NoteKind::NotMpa, out);
                    }
                    StartOutcome::Bad(msg) => {
                        self.dirs[i].bad_frame = true;
                        self.dirs[i].summary.undecoded_bytes += held + len;
                        self.dirs[i].phase = Phase::Stopped;
                        self.note(
                            ctx.at(dir, start),
                            Severity::Error,
                            NoteKind::BadMpaFrame(msg),
                            out,
                        );
                    }
                    StartOutcome::Frame { frame, rest } => {
                        let d = &mut self.dirs[i];
                        d.frame = Some(frame);
                        d.fpdu_base = offset + len - rest.len() as u64;
                        out.push(Event::Mpa(frame));
                        let from_initiator = frame.kind == FrameKind::Request;
                        if from_initiator != (dir == Direction::ClientToServer) {
                            self.roles_reversed = true;
                        }
                        if frame.reject {
                            self.dirs[i].phase = Phase::Rejected;
                            if !rest.is_empty() {
                                self.after_reject(ctx, dir, rest.len() as u64, out);
                            }
                        } else {
                            self.dirs[i].phase = Phase::AwaitPeer(rest);
                        }
                        self.try_negotiate(ctx, out);
                    }
                }
            }
            Phase::AwaitPeer(pending) => {
                if pending.len() + bytes.len() > MAX_PENDING {
                    let held = pending.len() as u64;
                    self.stop(ctx, dir, offset, held + len, out, || {
                        NoteKind::Broken(format!(
                            "over {MAX_PENDING} bytes after the MPA frame and the peer's frame not seen"
                        ))
                    });
                } else {
                    pending.extend_from_slice(bytes);
                }
            }
            Phase::Fpdus(_) => self.feed_fpdus(ctx, dir, bytes, out),
            Phase::NotMpa | Phase::Finished => {}
            Phase::Rejected => self.after_reject(ctx, dir, len, out),
            Phase::Stopped => self.dirs[i].summary.undecoded_bytes += len,
        }
    }

    /// Reports decoding as stopped at `offset` with `undecoded` bytes lost.
    fn stop(
        &mut self,
        ctx: &Ctx,
        dir: Direction,
        offset: u64,
        undecoded: u64,
        out: &mut Vec<Event>,
        why: impl FnOnce() -> NoteKind,
    ) {
        let d = &mut self.dirs[dir.index()];
        d.summary.undecoded_bytes += undecoded;
        d.phase = Phase::Stopped;
        self.note(ctx.at(dir, offset), Severity::Error, why(), out);
    }

    fn after_reject(&mut self, ctx: &Ctx, dir: Direction, bytes: u64, out: &mut Vec<Event>) {
        let offset = self.dirs[dir.index()].fpdu_base;
        self.stop(ctx, dir, offset, bytes, out, || NoteKind::DataAfterReject {
            bytes,
        });
    }

    /// Once both frames are known: the framing of each direction.
    fn try_negotiate(&mut self, ctx: &Ctx, out: &mut Vec<Event>) {
        if self.negotiated.is_some() {
            return;
        }
        let (Some(a), Some(b)) = (self.dirs[0].frame, self.dirs[1].frame) else {
            // A rejecting Reply ends the connection even without the Request.
            if let Some(f) = self.dirs.iter().find_map(|d| d.frame.filter(|f| f.reject)) {
                self.finish_rejected(ctx, f.at.direction, out);
            }
            return;
        };
        let rejected = a.reject || b.reject;
        let n = Negotiated {
            connection: ctx.connection,
            // RFC 5044 section 7.1.2: CRCs are used if either side asks.
            crc: a.crc || b.crc,
            // Markers go towards whoever asked for them: direction d carries
            // markers if the frame sent the other way had M set.
            markers: [b.markers, a.markers],
            rejected,
        };
        self.negotiated = Some(n);
        out.push(Event::Negotiated(n));
        if a.kind == b.kind {
            for dir in Direction::BOTH {
                let offset = self.dirs[dir.index()].fpdu_base;
                let held = match &self.dirs[dir.index()].phase {
                    Phase::AwaitPeer(p) => p.len() as u64,
                    _ => 0,
                };
                let kind = a.kind;
                self.stop(ctx, dir, offset, held, out, || {
                    NoteKind::Broken(format!("both sides sent an MPA {kind}"))
                });
            }
            return;
        }
        if rejected {
            let by = if a.reject {
                Direction::ClientToServer
            } else {
                Direction::ServerToClient
            };
            self.finish_rejected(ctx, by, out);
            return;
        }
        for dir in Direction::BOTH {
            let i = dir.index();
            let phase = std::mem::replace(
                &mut self.dirs[i].phase,
                Phase::Fpdus(Box::new(FpduStream::new(n.crc, n.markers[i]))),
            );
            if let Phase::AwaitPeer(pending) = phase {
                if !pending.is_empty() {
                    self.feed_fpdus(ctx, dir, &pending, out);
                }
            }
        }
    }

    /// After a rejecting Reply sent in direction `by`: the other side's
    /// bytes after its Request are unexpected.
    fn finish_rejected(&mut self, ctx: &Ctx, by: Direction, out: &mut Vec<Event>) {
        let other = by.reverse();
        let held = match &self.dirs[other.index()].phase {
            Phase::AwaitPeer(p) => Some(p.len() as u64),
            _ => None,
        };
        if let Some(held) = held {
            self.dirs[other.index()].phase = Phase::Rejected;
            if held > 0 {
                self.after_reject(ctx, other, held, out);
            }
        }
    }

    fn feed_fpdus(&mut self, ctx: &Ctx, dir: Direction, bytes: &[u8], out: &mut Vec<Event>) {
        let i = dir.index();
        let d = &mut self.dirs[i];
        let Phase::Fpdus(stream) = &mut d.phase else {
            return;
        };
        let base = d.fpdu_base;
        let summary = &mut d.summary;
        let result = stream.feed(bytes, &mut |f| {
            let at = ctx.at(dir, base + f.start);
            let fpdu = ulpdu::describe(at, f.ulpdu, f.wire_len, f.crc);
            summary.count(&fpdu);
            out.push(Event::Fpdu(fpdu));
        });
        if let Err(broken) = result {
            let at = base + broken.offset;
            self.stop(ctx, dir, at, broken.unconsumed, out, || {
                NoteKind::Broken(broken.reason)
            });
        }
    }

    fn on_gap(&mut self, ctx: &Ctx, dir: Direction, offset: u64, len: u64, out: &mut Vec<Event>) {
        let i = dir.index();
        let held = match &self.dirs[i].phase {
            Phase::Start(buf) if buf.is_empty() => {
                // Nothing seen yet: we cannot tell whether this was iWARP.
                self.dirs[i].phase = Phase::NotMpa;
                let at = ctx.at(dir, offset);
                self.note(at, Severity::Warning, NoteKind::Gap { len }, out);
                return;
            }
            Phase::Start(buf) | Phase::AwaitPeer(buf) => buf.len() as u64,
            Phase::Fpdus(s) => s.buffered() as u64,
            Phase::NotMpa | Phase::Rejected | Phase::Stopped | Phase::Finished => return,
        };
        self.stop(ctx, dir, offset, held, out, || NoteKind::Gap { len });
    }

    fn on_fin(&mut self, ctx: &Ctx, dir: Direction, offset: u64, out: &mut Vec<Event>) {
        let i = dir.index();
        self.dirs[i].saw_fin = true;
        let partial = match &self.dirs[i].phase {
            Phase::Start(buf) if !buf.is_empty() => Some((buf.len() as u64, true)),
            Phase::Fpdus(s) if s.buffered() > 0 => Some((s.buffered() as u64, false)),
            _ => None,
        };
        if let Some((bytes, in_frame)) = partial {
            let at = offset.saturating_sub(bytes);
            self.stop(ctx, dir, at, bytes, out, || {
                if in_frame {
                    NoteKind::PartialMpaFrame { bytes }
                } else {
                    NoteKind::PartialFpduAtFin { bytes }
                }
            });
        }
    }

    /// End of capture: what is left over in each direction.
    pub(crate) fn finish(&mut self, ctx: &Ctx, out: &mut Vec<Event>) {
        let any_frame = self.dirs.iter().any(|d| d.frame.is_some());
        for dir in Direction::BOTH {
            let d = &mut self.dirs[dir.index()];
            let end = d.summary.tcp.bytes + d.summary.tcp.gap_bytes;
            let (offset, severity, kind) = match &d.phase {
                Phase::Start(buf) if !buf.is_empty() => {
                    let bytes = buf.len() as u64;
                    d.summary.trailing_partial_bytes += bytes;
                    (
                        end.saturating_sub(bytes),
                        Severity::Warning,
                        NoteKind::PartialMpaFrame { bytes },
                    )
                }
                Phase::AwaitPeer(p) if !p.is_empty() => {
                    let bytes = p.len() as u64;
                    d.summary.undecoded_bytes += bytes;
                    d.phase = Phase::Stopped;
                    (
                        d.fpdu_base,
                        Severity::Error,
                        NoteKind::PeerFrameMissing { bytes },
                    )
                }
                Phase::Fpdus(s) if s.buffered() > 0 && !d.saw_fin => {
                    let bytes = s.buffered() as u64;
                    d.summary.trailing_partial_bytes += bytes;
                    (
                        end.saturating_sub(bytes),
                        Severity::Info,
                        NoteKind::PartialFpduAtEnd { bytes },
                    )
                }
                Phase::NotMpa if any_frame => (
                    0,
                    Severity::Error,
                    NoteKind::Broken("the peer's stream is MPA but this one is not".into()),
                ),
                _ => continue,
            };
            self.note(ctx.at(dir, offset), severity, kind, out);
        }
        // A finished connection keeps its counters, not its buffers.
        for d in &mut self.dirs {
            if !matches!(d.phase, Phase::NotMpa) {
                d.phase = Phase::Finished;
            }
        }
    }

    /// What the connection turned out to be.
    pub(crate) fn kind(&self) -> ConnectionKind {
        let frames: Vec<_> = self.dirs.iter().filter_map(|d| d.frame).collect();
        if frames.iter().any(|f| f.reject) {
            ConnectionKind::Rejected
        } else if frames.len() == 2 {
            ConnectionKind::Iwarp
        } else if frames.len() == 1 || self.dirs.iter().any(|d| d.bad_frame) {
            ConnectionKind::MpaIncomplete
        } else if self.dirs.iter().any(|d| matches!(d.phase, Phase::NotMpa)) {
            ConnectionKind::NotMpa
        } else {
            ConnectionKind::NoData
        }
    }
}
