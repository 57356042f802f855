//! JSON lines: one object per event, then per-connection and capture totals.
//! Written by hand (a few value kinds, no nesting beyond one level) to keep
//! the tool free of a serialisation stack.

use std::fmt::Write as _;

use ddp::wire::SegmentRepr;

use super::event::{CrcStatus, Event, Fpdu, NoteKind, Rfc7306, Severity, Terminate, Where};
use super::names;
use super::summary::{ConnectionKind, ConnectionSummary, DirectionSummary, Summary};
use capture::pcap::Timestamp;
use capture::reassembly::Direction;

/// Builds one JSON object.
#[derive(Debug)]
pub struct Obj {
    buf: String,
    empty: bool,
}

/// Appends `s` as a JSON string literal.
pub fn quote(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Default for Obj {
    fn default() -> Self {
        Self::new()
    }
}

impl Obj {
    /// An empty object.
    pub fn new() -> Self {
        Obj {
            buf: String::from("{"),
            empty: true,
        }
    }

    fn key(&mut self, k: &str) {
        if !self.empty {
            self.buf.push(',');
        }
        self.empty = false;
        quote(&mut self.buf, k);
        self.buf.push(':');
    }

    /// Adds a string member, escaped.
    pub fn str(mut self, k: &str, v: &str) -> Self {
        self.key(k);
        quote(&mut self.buf, v);
        self
    }

    /// Adds a number member.
    pub fn num(mut self, k: &str, v: impl Into<u64>) -> Self {
        self.key(k);
        let _ = write!(self.buf, "{}", v.into());
        self
    }

    /// Adds a boolean member.
    pub fn bool(mut self, k: &str, v: bool) -> Self {
        self.key(k);
        self.buf.push_str(if v { "true" } else { "false" });
        self
    }

    /// A value already in JSON form (a number with a fraction, an object).
    pub fn raw(mut self, k: &str, json: &str) -> Self {
        self.key(k);
        self.buf.push_str(json);
        self
    }

    /// The object as JSON text.
    pub fn finish(mut self) -> String {
        self.buf.push('}');
        self.buf
    }
}

fn seconds(t: Timestamp, base: Timestamp) -> String {
    let d = t.since(base);
    format!("{}.{:09}", d.as_secs(), d.subsec_nanos())
}

fn at(obj: Obj, kind: &str, w: &Where, base: Timestamp) -> Obj {
    obj.str("type", kind)
        .raw("time", &seconds(w.time, base))
        .str("epoch", &w.time.to_string())
        .num("frame", w.frame)
        .num("conn", w.connection as u64)
        .str("dir", w.direction.arrow())
        .num("offset", w.offset)
}

fn ddp_fields(mut obj: Obj, ddp: &SegmentRepr) -> Obj {
    match ddp {
        SegmentRepr::Tagged(t) => {
            obj = obj
                .str("ddp", "tagged")
                .bool("last", t.last)
                .num("stag", t.stag.0)
                .num("to", t.to);
        }
        SegmentRepr::Untagged(u) => {
            obj = obj
                .str("ddp", "untagged")
                .bool("last", u.last)
                .num("qn", u.qn)
                .num("msn", u.msn)
                .num("mo", u.mo);
            if u.rsvd_ulp2 != 0 {
                obj = obj.num("inval_stag", u.rsvd_ulp2);
            }
        }
    }
    obj
}

fn terminate_json(t: &Terminate) -> String {
    let c = &t.control;
    let mut o = Obj::new()
        .num("layer", c.layer)
        .str("layer_name", names::layer(c.layer))
        .num("etype", c.etype)
        .str("etype_name", names::etype(c.layer, c.etype))
        .num("code", c.code)
        .str("code_name", names::code(c.layer, c.etype, c.code))
        .str(
            "layout",
            match t.layout {
                rdmap::wire::TermLayout::Rfc5040 => "rfc5040",
                rdmap::wire::TermLayout::Siw => "siw",
            },
        )
        .bool("m", c.m)
        .bool("d", c.d)
        .bool("r", c.r);
    if let Some(len) = t.segment_len {
        o = o.num("segment_len", len);
    }
    if let Some(h) = &t.ddp_header {
        o = o.raw("ddp_header", &ddp_fields(Obj::new(), h).finish());
    }
    if let Some(r) = &t.read_request {
        o = o.raw("read_request", &read_request_json(r));
    }
    o.finish()
}

fn read_request_json(r: &rdmap::wire::ReadRequestRepr) -> String {
    Obj::new()
        .num("sink_stag", r.sink_stag.0)
        .num("sink_to", r.sink_to)
        .num("size", r.size)
        .num("source_stag", r.source_stag.0)
        .num("source_to", r.source_to)
        .finish()
}

fn fpdu_json(f: &Fpdu, base: Timestamp) -> String {
    let mut o = at(Obj::new(), "fpdu", &f.at, base)
        .num("ulpdu_len", f.ulpdu_len as u64)
        .num("wire_len", f.wire_len as u64);
    o = match f.crc {
        CrcStatus::Good => o.str("crc", "good"),
        CrcStatus::Off => o.str("crc", "off"),
        CrcStatus::Bad { received, computed } => o
            .str("crc", "bad")
            .num("crc_received", received)
            .num("crc_computed", computed),
    };
    if let Some(d) = &f.ddp {
        o = ddp_fields(o, d);
    }
    if let Some(op) = f.opcode {
        o = o
            .str("opcode", &names::opcode(op))
            .num("opcode_bits", op.bits());
    }
    o = o.num("payload_len", f.payload_len as u64);
    if let Some(r) = &f.read_request {
        o = o.raw("read_request", &read_request_json(r));
    }
    if let Some(t) = &f.terminate {
        o = o.raw("terminate", &terminate_json(t));
    }
    match f.rfc7306.as_deref() {
        Some(Rfc7306::Immediate(i)) => {
            o = o.num("imm_data", i.imm()).num("imm_data64", i.data);
        }
        Some(Rfc7306::AtomicRequest(r)) => {
            let a = Obj::new()
                .str("op", &r.op.to_string())
                .num("aopcode", r.op.bits())
                .num("request_id", r.request_id)
                .num("stag", r.stag.0)
                .num("to", r.to)
                .num("add_swap_data", r.add_swap_data)
                .num("add_swap_mask", r.add_swap_mask)
                .num("compare_data", r.compare_data)
                .num("compare_mask", r.compare_mask)
                .finish();
            o = o.raw("atomic_request", &a);
        }
        Some(Rfc7306::AtomicResponse(r)) => {
            let a = Obj::new()
                .num("request_id", r.request_id)
                .num("original", r.original)
                .finish();
            o = o.raw("atomic_response", &a);
        }
        None => {}
    }
    if let Some(e) = &f.error {
        o = o.str("error", e);
    }
    o.finish()
}

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Info => "info",
        Severity::Warning => "warning",
        Severity::Error => "error",
    }
}

/// One event as a JSON object (no trailing newline).
pub fn event(ev: &Event, base: Timestamp) -> String {
    match ev {
        Event::Connection(c) => Obj::new()
            .str("type", "connection")
            .raw("time", &seconds(c.time, base))
            .num("frame", c.frame)
            .num("conn", c.number as u64)
            .str("client", &c.client.to_string())
            .str("server", &c.server.to_string())
            .bool("handshake_seen", c.handshake_seen)
            .finish(),
        Event::Mpa(m) => {
            let mut o = at(Obj::new(), "mpa", &m.at, base)
                .str("kind", &m.kind.to_string())
                .num("rev", m.rev)
                .bool("markers", m.markers)
                .bool("crc", m.crc)
                .bool("reject", m.reject)
                .num("pd_length", m.pd_length as u64);
            if let Some(e) = &m.enhanced {
                o = o
                    .num("ird", e.ird)
                    .num("ord", e.ord)
                    .bool("peer_to_peer", e.peer_to_peer)
                    .bool("rtr_send", e.rtr.send)
                    .bool("rtr_write", e.rtr.write)
                    .bool("rtr_read", e.rtr.read);
            }
            o.finish()
        }
        Event::Negotiated(n) => Obj::new()
            .str("type", "negotiated")
            .num("conn", n.connection as u64)
            .bool("crc", n.crc)
            .bool("markers_c2s", n.markers[Direction::ClientToServer.index()])
            .bool("markers_s2c", n.markers[Direction::ServerToClient.index()])
            .bool("rejected", n.rejected)
            .finish(),
        Event::Fpdu(f) => fpdu_json(f, base),
        Event::Note(n) => {
            let o = at(Obj::new(), "note", &n.at, base)
                .str("severity", severity(n.severity))
                .str("kind", note_kind(&n.kind))
                .str("message", &super::text::note_message(&n.kind));
            o.finish()
        }
    }
}

fn note_kind(k: &NoteKind) -> &'static str {
    match k {
        NoteKind::NotMpa => "not_mpa",
        NoteKind::BadMpaFrame(_) => "bad_mpa_frame",
        NoteKind::Gap { .. } => "gap",
        NoteKind::Broken(_) => "broken",
        NoteKind::PeerFrameMissing { .. } => "peer_frame_missing",
        NoteKind::PartialFpduAtEnd { .. } => "partial_fpdu_at_end",
        NoteKind::PartialFpduAtFin { .. } => "partial_fpdu_at_fin",
        NoteKind::DataAfterReject { .. } => "data_after_reject",
        NoteKind::PartialMpaFrame { .. } => "partial_mpa_frame",
        NoteKind::RolesReversed => "roles_reversed",
    }
}

fn kind_name(k: ConnectionKind) -> &'static str {
    match k {
        ConnectionKind::Iwarp => "iwarp",
        ConnectionKind::MpaIncomplete => "mpa_incomplete",
        ConnectionKind::Rejected => "rejected",
        ConnectionKind::NotMpa => "not_mpa",
        ConnectionKind::NoData => "no_data",
    }
}

fn direction_json(d: &DirectionSummary) -> String {
    let mut ops = Obj::new();
    for (op, n) in d.opcode_counts() {
        ops = ops.num(&names::opcode(op), n);
    }
    Obj::new()
        .num("fpdus", d.fpdus)
        .num("ulpdu_bytes", d.ulpdu_bytes)
        .num("payload_bytes", d.payload_bytes)
        .raw("opcodes", &ops.finish())
        .num("crc_good", d.crc_good)
        .num("crc_bad", d.crc_bad)
        .num("crc_off", d.crc_off)
        .num("malformed", d.malformed)
        .num("undecoded_bytes", d.undecoded_bytes)
        .num("trailing_partial_bytes", d.trailing_partial_bytes)
        .num("tcp_bytes", d.tcp.bytes)
        .num("tcp_segments", d.tcp.segments)
        .num("tcp_retransmitted", d.tcp.retransmitted)
        .num("tcp_out_of_order", d.tcp.out_of_order)
        .num("tcp_gaps", d.tcp.gaps)
        .num("tcp_gap_bytes", d.tcp.gap_bytes)
        .finish()
}

/// One connection's totals as a JSON object.
pub fn connection_summary(c: &ConnectionSummary) -> String {
    let mut o = Obj::new()
        .str("type", "connection_summary")
        .num("conn", c.number as u64)
        .str("client", &c.client.to_string())
        .str("server", &c.server.to_string())
        .str("kind", kind_name(c.kind));
    if let Some(rev) = c.mpa_rev {
        o = o.num("mpa_rev", rev);
    }
    if let Some(crc) = c.crc {
        o = o.bool("crc", crc);
    }
    o.raw(
        "c2s",
        &direction_json(c.direction(Direction::ClientToServer)),
    )
    .raw(
        "s2c",
        &direction_json(c.direction(Direction::ServerToClient)),
    )
    .num("errors", c.errors)
    .finish()
}

/// The capture's totals as JSON objects, one per line.
pub fn summary(s: &Summary) -> Vec<String> {
    let mut lines: Vec<String> = s.connections.iter().map(connection_summary).collect();
    let mut skipped = Obj::new();
    for (reason, n) in &s.skipped {
        skipped = skipped.num(reason, *n);
    }
    let mut problems = String::from("[");
    for (i, p) in s.problems().iter().enumerate() {
        if i > 0 {
            problems.push(',');
        }
        quote(&mut problems, p);
    }
    problems.push(']');
    lines.push(
        Obj::new()
            .str("type", "summary")
            .num("packets", s.packets)
            .num("tcp_segments", s.tcp_segments)
            .num("connections", s.connections.len() as u64)
            .num("iwarp_connections", s.iwarp_connections().count() as u64)
            .num("fpdus", s.fpdus())
            .num("crc_errors", s.crc_errors())
            .raw("skipped", &skipped.finish())
            .raw("problems", &problems)
            .bool("ok", s.is_clean())
            .finish(),
    );
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        let mut s = String::new();
        quote(&mut s, "a\"b\\c\nd\u{1}é");
        assert_eq!(s, r#""a\"b\\c\nd\u0001é""#);
    }

    #[test]
    fn object_building() {
        let o = Obj::new()
            .str("k", "v")
            .num("n", 7u32)
            .bool("b", false)
            .raw("r", "1.5")
            .finish();
        assert_eq!(o, r#"{"k":"v","n":7,"b":false,"r":1.5}"#);
        assert_eq!(Obj::new().finish(), "{}");
    }
}
