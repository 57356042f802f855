//! Totals per connection and direction, and whether the capture decoded cleanly.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use rdmap::Opcode;

use super::event::{CrcStatus, Fpdu};
use capture::pcap::{Format, PcapError};
use capture::reassembly::{Direction, StreamStats};

/// What a connection turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionKind {
    /// Both MPA frames seen; FPDUs decoded.
    Iwarp,
    /// One MPA frame seen, the other never (or a frame was malformed).
    MpaIncomplete,
    /// The Reply had the R bit.
    Rejected,
    /// A stream began with something other than an MPA key.
    NotMpa,
    /// No payload in either direction (or its start was not captured).
    NoData,
}

/// Counters for one direction of one connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectionSummary {
    /// FPDUs seen.
    pub fpdus: u64,
    /// Sum of ULPDU lengths.
    pub ulpdu_bytes: u64,
    /// Sum of DDP payload lengths.
    pub payload_bytes: u64,
    /// FPDUs per opcode, indexed by the 4-bit code point.
    pub opcodes: [u64; 16],
    /// FPDUs whose CRC matched.
    pub crc_good: u64,
    /// FPDUs whose CRC did not match.
    pub crc_bad: u64,
    /// FPDUs without a CRC (not negotiated).
    pub crc_off: u64,
    /// FPDUs whose ULPDU is not a valid DDP/RDMAP segment.
    pub malformed: u64,
    /// Stream bytes that could not be decoded (after a gap, a framing
    /// error, a missing peer frame, a partial FPDU before FIN).
    pub undecoded_bytes: u64,
    /// Bytes of a partial FPDU when the capture ends (no FIN).
    pub trailing_partial_bytes: u64,
    /// TCP reassembly counters.
    pub tcp: StreamStats,
}

impl DirectionSummary {
    pub(crate) fn count(&mut self, f: &Fpdu) {
        self.fpdus += 1;
        self.ulpdu_bytes += f.ulpdu_len as u64;
        self.payload_bytes += f.payload_len as u64;
        if let Some(op) = f.opcode {
            self.opcodes[usize::from(op.bits())] += 1;
        }
        match f.crc {
            CrcStatus::Good => self.crc_good += 1,
            CrcStatus::Bad { .. } => self.crc_bad += 1,
            CrcStatus::Off => self.crc_off += 1,
        }
        if f.error.is_some() {
            self.malformed += 1;
        }
    }

    /// FPDUs with `op`.
    pub fn opcode_count(&self, op: Opcode) -> u64 {
        self.opcodes[usize::from(op.bits())]
    }

    /// Opcodes seen, with counts, in code-point order.
    pub fn opcode_counts(&self) -> impl Iterator<Item = (Opcode, u64)> + '_ {
        (0u8..16)
            .map(|b| (Opcode::from_bits(b), self.opcodes[usize::from(b)]))
            .filter(|(_, n)| *n > 0)
    }
}

/// One connection's totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionSummary {
    /// The connection's number.
    pub number: usize,
    /// The side taken as the client.
    pub client: SocketAddr,
    /// The other side.
    pub server: SocketAddr,
    /// What the connection turned out to carry.
    pub kind: ConnectionKind,
    /// The MPA revision the Reply settled, if seen.
    pub mpa_rev: Option<u8>,
    /// Whether FPDUs carry a CRC, if the Reply was seen.
    pub crc: Option<bool>,
    /// Indexed by [`Direction::index`].
    pub directions: [DirectionSummary; 2],
    /// Errors reported about this connection.
    pub errors: u64,
}

impl ConnectionSummary {
    /// The counters of one direction.
    pub fn direction(&self, d: Direction) -> &DirectionSummary {
        &self.directions[d.index()]
    }

    /// Total FPDUs both ways.
    pub fn fpdus(&self) -> u64 {
        self.directions.iter().map(|d| d.fpdus).sum()
    }
}

/// The whole capture's totals.
#[derive(Debug, Default)]
pub struct Summary {
    /// The container, once the file's first bytes were read.
    pub format: Option<Format>,
    /// Packets read.
    pub packets: u64,
    /// Of those, usable TCP segments.
    pub tcp_segments: u64,
    /// Frames that were not usable TCP segments, by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Every connection, in order of appearance.
    pub connections: Vec<ConnectionSummary>,
    /// Segments of connections beyond the tracking limit.
    pub untracked_segments: u64,
    /// Why reading the capture stopped early, if it did.
    pub capture_error: Option<PcapError>,
}

impl Summary {
    /// iWARP connections (MPA start-up seen on at least one side).
    pub fn iwarp_connections(&self) -> impl Iterator<Item = &ConnectionSummary> {
        self.connections
            .iter()
            .filter(|c| !matches!(c.kind, ConnectionKind::NotMpa | ConnectionKind::NoData))
    }

    /// FPDUs in all connections.
    pub fn fpdus(&self) -> u64 {
        self.connections.iter().map(ConnectionSummary::fpdus).sum()
    }

    /// FPDUs with a bad CRC, all connections.
    pub fn crc_errors(&self) -> u64 {
        self.all_directions().map(|d| d.crc_bad).sum()
    }

    /// FPDUs that are not valid DDP/RDMAP, all connections.
    pub fn malformed(&self) -> u64 {
        self.all_directions().map(|d| d.malformed).sum()
    }

    /// Stream bytes that could not be decoded, all connections.
    pub fn undecoded_bytes(&self) -> u64 {
        self.all_directions().map(|d| d.undecoded_bytes).sum()
    }

    fn all_directions(&self) -> impl Iterator<Item = &DirectionSummary> {
        self.connections.iter().flat_map(|c| c.directions.iter())
    }

    /// Why the decode is not clean, one reason per line; empty when the file
    /// was read to its end and every FPDU of every iWARP stream decoded.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(e) = &self.capture_error {
            out.push(format!("capture unreadable: {e}"));
        }
        let crc = self.crc_errors();
        if crc > 0 {
            out.push(format!("{crc} FPDU(s) with a bad CRC"));
        }
        let bad = self.malformed();
        if bad > 0 {
            out.push(format!("{bad} FPDU(s) not valid DDP/RDMAP"));
        }
        for c in &self.connections {
            if c.errors > 0 {
                out.push(format!(
                    "connection {}: {} stream error(s), {} byte(s) not decoded",
                    c.number,
                    c.errors,
                    c.directions.iter().map(|d| d.undecoded_bytes).sum::<u64>()
                ));
            }
        }
        if self.untracked_segments > 0 {
            out.push(format!(
                "{} segment(s) of connections beyond the tracking limit",
                self.untracked_segments
            ));
        }
        out
    }

    /// Whether [`Summary::problems`] found nothing.
    pub fn is_clean(&self) -> bool {
        self.problems().is_empty()
    }
}
