//! One line of text per event, and the closing summary.

use std::fmt::Write as _;

use ddp::wire::SegmentRepr;

use super::event::{
    CrcStatus, Event, Fpdu, MpaFrame, NoteKind, Rfc7306, Severity, Terminate, Where,
};
use super::names;
use super::summary::{ConnectionKind, ConnectionSummary, DirectionSummary, Summary};
use capture::pcap::Timestamp;
use capture::reassembly::Direction;

fn prefix(w: &Where, base: Timestamp) -> String {
    let d = w.time.since(base);
    format!(
        "{:>4}.{:09} {:>7} #{} {}",
        d.as_secs(),
        d.subsec_nanos(),
        w.frame,
        w.connection,
        w.direction.arrow()
    )
}

/// The DDP header in a few words.
pub fn ddp(d: &SegmentRepr) -> String {
    match d {
        SegmentRepr::Tagged(t) => format!(
            "tagged{} stag {:#010x} to {:#x}",
            if t.last { " L" } else { "" },
            t.stag.0,
            t.to
        ),
        SegmentRepr::Untagged(u) => {
            let mut s = format!(
                "untagged{} qn {} msn {} mo {}",
                if u.last { " L" } else { "" },
                u.qn,
                u.msn,
                u.mo
            );
            if u.rsvd_ulp2 != 0 {
                let _ = write!(s, " inval {:#010x}", u.rsvd_ulp2);
            }
            s
        }
    }
}

fn crc(c: CrcStatus) -> String {
    match c {
        CrcStatus::Good => "crc good".into(),
        CrcStatus::Off => "crc off".into(),
        CrcStatus::Bad { received, computed } => {
            format!("crc BAD (received {received:#010x}, computed {computed:#010x})")
        }
    }
}

fn read_request(r: &rdmap::wire::ReadRequestRepr) -> String {
    format!(
        "sink {:#010x}:{:#x} len {} source {:#010x}:{:#x}",
        r.sink_stag.0, r.sink_to, r.size, r.source_stag.0, r.source_to
    )
}

/// The TERMINATE's cause and attachments.
pub fn terminate(t: &Terminate) -> String {
    let c = &t.control;
    let mut s = format!(
        "layer {} ({}) etype {} ({}) code {:#04x} ({}), {} layout",
        c.layer,
        names::layer(c.layer),
        c.etype,
        names::etype(c.layer, c.etype),
        c.code,
        names::code(c.layer, c.etype, c.code),
        match t.layout {
            rdmap::wire::TermLayout::Rfc5040 => "RFC 5040",
            rdmap::wire::TermLayout::Siw => "siw",
        }
    );
    let flags: String = [(c.m, 'M'), (c.d, 'D'), (c.r, 'R')]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, f)| *f)
        .collect();
    if !flags.is_empty() {
        let _ = write!(s, ", hdrct {flags}");
    }
    if let Some(len) = t.segment_len {
        let _ = write!(s, ", segment len {len}");
    }
    if let Some(h) = &t.ddp_header {
        let op = rdmap::wire::Control(h.rsvd_ulp()).opcode();
        let _ = write!(s, ", terminated {} {}", names::opcode(op), ddp(h));
    }
    if let Some(r) = &t.read_request {
        let _ = write!(s, ", read request {}", read_request(r));
    }
    s
}

fn fpdu(f: &Fpdu) -> String {
    let op = f.opcode.map_or_else(|| "?".to_string(), names::opcode);
    let mut s = format!("{op:<10}");
    if let Some(d) = &f.ddp {
        let _ = write!(s, " {}", ddp(d));
    }
    let _ = write!(
        s,
        " ulpdu {} payload {} {}",
        f.ulpdu_len,
        f.payload_len,
        crc(f.crc)
    );
    if let Some(r) = &f.read_request {
        let _ = write!(s, " {}", read_request(r));
    }
    if let Some(t) = &f.terminate {
        let _ = write!(s, " TERMINATE {}", terminate(t));
    }
    match f.rfc7306.as_deref() {
        Some(Rfc7306::Immediate(i)) => {
            let _ = write!(s, " imm {:#010x} (64-bit {:#018x})", i.imm(), i.data);
        }
        Some(Rfc7306::AtomicRequest(r)) => {
            let _ = write!(
            s,
            " {} id {} target {:#010x}:{:#x} add/swap {:#x} mask {:#x} compare {:#x} mask {:#x}",
            r.op,
            r.request_id,
            r.stag.0,
            r.to,
            r.add_swap_data,
            r.add_swap_mask,
            r.compare_data,
            r.compare_mask
        );
        }
        Some(Rfc7306::AtomicResponse(r)) => {
            let _ = write!(s, " id {} original {:#x}", r.request_id, r.original);
        }
        None => {}
    }
    if let Some(e) = &f.error {
        let _ = write!(s, " MALFORMED: {e}");
    }
    s
}

fn mpa(m: &MpaFrame) -> String {
    let mut s = format!(
        "MPA {} rev {} M={} C={} R={}",
        m.kind, m.rev, m.markers as u8, m.crc as u8, m.reject as u8
    );
    match &m.enhanced {
        Some(e) => {
            let rtr: Vec<&str> = [
                (e.rtr.send, "send"),
                (e.rtr.write, "write"),
                (e.rtr.read, "read"),
            ]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect();
            let _ = write!(
                s,
                " enhanced ird {} ord {} p2p={} rtr={}",
                e.ird,
                e.ord,
                e.peer_to_peer as u8,
                if rtr.is_empty() {
                    "-".to_string()
                } else {
                    rtr.join("+")
                }
            );
        }
        None => s.push_str(" basic"),
    }
    let _ = write!(s, " private data {} bytes", m.pd_length);
    if m.reserved != 0 {
        let _ = write!(s, " reserved bits {:#x}", m.reserved);
    }
    s
}

/// What a note says, without its place.
pub fn note_message(k: &NoteKind) -> String {
    match k {
        NoteKind::NotMpa => "stream does not start with an MPA Request/Reply: not iWARP, skipped".into(),
        NoteKind::BadMpaFrame(e) => format!("malformed MPA frame: {e}"),
        NoteKind::Gap { len } => format!("{len} byte(s) missing from the capture"),
        NoteKind::Broken(why) => format!("stream no longer decodable: {why}"),
        NoteKind::PeerFrameMissing { bytes } => format!(
            "{bytes} byte(s) after the MPA frame not decoded: the peer's frame (CRC, markers) was not seen"
        ),
        NoteKind::PartialFpduAtEnd { bytes } => {
            format!("capture ends inside an FPDU ({bytes} byte(s) of it seen)")
        }
        NoteKind::PartialFpduAtFin { bytes } => format!("FIN inside an FPDU ({bytes} byte(s) of it sent)"),
        NoteKind::DataAfterReject { bytes } => {
            format!("{bytes} byte(s) after a Reply that rejected the connection")
        }
        NoteKind::PartialMpaFrame { bytes } => {
            format!("stream ends inside the MPA frame ({bytes} byte(s) of it seen)")
        }
        NoteKind::RolesReversed => {
            "MPA Request sent by the side that answered the TCP handshake".into()
        }
    }
}

/// One event as one line.
pub fn event(ev: &Event, base: Timestamp) -> String {
    match ev {
        Event::Connection(c) => format!(
            "connection #{} {} -> {}{}",
            c.number,
            c.client,
            c.server,
            if c.handshake_seen {
                ""
            } else {
                " (handshake not captured)"
            }
        ),
        Event::Mpa(m) => format!("{} {}", prefix(&m.at, base), mpa(m)),
        Event::Negotiated(n) => format!(
            "connection #{}: {}CRC {}, markers c>s {} s>c {}",
            n.connection,
            if n.rejected { "REJECTED, " } else { "" },
            if n.crc { "on" } else { "off" },
            if n.markers[0] { "on" } else { "off" },
            if n.markers[1] { "on" } else { "off" },
        ),
        Event::Fpdu(f) => format!("{} {}", prefix(&f.at, base), fpdu(f)),
        Event::Note(n) => {
            let level = match n.severity {
                Severity::Info => "note",
                Severity::Warning => "warning",
                Severity::Error => "ERROR",
            };
            format!(
                "{} {level}: {} (stream offset {})",
                prefix(&n.at, base),
                note_message(&n.kind),
                n.at.offset
            )
        }
    }
}

fn kind(c: &ConnectionSummary) -> String {
    match c.kind {
        ConnectionKind::Iwarp => format!(
            "iWARP, MPA rev {}, CRC {}",
            c.mpa_rev.unwrap_or(0),
            if c.crc == Some(true) { "on" } else { "off" }
        ),
        ConnectionKind::MpaIncomplete => "MPA start-up incomplete".into(),
        ConnectionKind::Rejected => "MPA rejected".into(),
        ConnectionKind::NotMpa => "not iWARP".into(),
        ConnectionKind::NoData => "no payload".into(),
    }
}

fn direction(dir: Direction, d: &DirectionSummary, iwarp: bool) -> String {
    let mut s = format!("  {} ", dir.arrow());
    if iwarp {
        let _ = write!(
            s,
            "{} FPDU(s), {} ULPDU byte(s), {} payload byte(s)",
            d.fpdus, d.ulpdu_bytes, d.payload_bytes
        );
        let ops: Vec<String> = d
            .opcode_counts()
            .map(|(op, n)| format!("{} {n}", names::opcode(op)))
            .collect();
        if !ops.is_empty() {
            let _ = write!(s, "; {}", ops.join(", "));
        }
        let _ = write!(
            s,
            "; CRC good {} bad {} off {}",
            d.crc_good, d.crc_bad, d.crc_off
        );
        if d.malformed > 0 {
            let _ = write!(s, "; {} malformed", d.malformed);
        }
        if d.undecoded_bytes > 0 {
            let _ = write!(s, "; {} byte(s) not decoded", d.undecoded_bytes);
        }
        if d.trailing_partial_bytes > 0 {
            let _ = write!(
                s,
                "; {} byte(s) of a partial FPDU at capture end",
                d.trailing_partial_bytes
            );
        }
        s.push_str("; ");
    }
    let t = &d.tcp;
    let _ = write!(s, "tcp {} byte(s) in {} segment(s)", t.bytes, t.segments);
    if t.retransmitted > 0 {
        let _ = write!(s, ", {} retransmitted", t.retransmitted);
    }
    if t.out_of_order > 0 {
        let _ = write!(s, ", {} out of order", t.out_of_order);
    }
    if t.gaps > 0 {
        let _ = write!(s, ", {} gap(s) of {} byte(s)", t.gaps, t.gap_bytes);
    }
    if t.started_mid_stream {
        s.push_str(", no SYN seen");
    }
    s
}

/// The closing summary, one line each.
pub fn summary(s: &Summary) -> Vec<String> {
    let mut lines = vec![format!(
        "summary: {} packet(s), {} TCP segment(s), {} connection(s) ({} iWARP), {} FPDU(s), {} CRC error(s)",
        s.packets,
        s.tcp_segments,
        s.connections.len(),
        s.iwarp_connections().count(),
        s.fpdus(),
        s.crc_errors()
    )];
    for c in &s.connections {
        lines.push(format!(
            "connection #{} {} -> {}: {}",
            c.number,
            c.client,
            c.server,
            kind(c)
        ));
        let iwarp = !matches!(c.kind, ConnectionKind::NotMpa | ConnectionKind::NoData);
        for dir in Direction::BOTH {
            lines.push(direction(dir, c.direction(dir), iwarp));
        }
    }
    if !s.skipped.is_empty() {
        let parts: Vec<String> = s.skipped.iter().map(|(k, n)| format!("{k} {n}")).collect();
        lines.push(format!("skipped frames: {}", parts.join(", ")));
    }
    lines
}
