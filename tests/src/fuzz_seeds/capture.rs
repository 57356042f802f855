//! TCP byte streams out of a capture file: each connection's two directions
//! put back in order with `iwarp`'s reassembler, the raw material every seed
//! is cut from.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use capture::pcap::{CaptureReader, PcapError};
use capture::reassembly::{Direction, FlowTable, Lookup, SeqNumber, StreamEvent};

/// Bytes kept per direction. The reference captures stay far below this;
/// the cap keeps a stray large capture from filling memory.
pub const MAX_STREAM_BYTES: usize = 4 * 1024 * 1024;

/// One connection's two byte streams, in order, from the first byte after
/// the SYN up to the first hole (a stream with a hole is cut there: bytes
/// after it cannot be framed without guessing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpConversation {
    /// 1-based, in order of first appearance in the capture.
    pub number: usize,
    /// Indexed by [`Direction::index`]: client to server, server to client.
    pub streams: [Vec<u8>; 2],
    /// True for a direction that was cut at a hole or at the size cap.
    pub truncated: [bool; 2],
}

impl TcpConversation {
    pub fn stream(&self, dir: Direction) -> &[u8] {
        &self.streams[dir.index()]
    }
}

#[derive(Debug, Default)]
struct Collected {
    streams: [Vec<u8>; 2],
    stopped: [bool; 2],
}

impl Collected {
    fn take(&mut self, dir: Direction, ev: StreamEvent<'_>) {
        let i = dir.index();
        if self.stopped[i] {
            return;
        }
        match ev {
            StreamEvent::Data { bytes, .. } => {
                let room = MAX_STREAM_BYTES - self.streams[i].len();
                let n = bytes.len().min(room);
                self.streams[i].extend_from_slice(&bytes[..n]);
                self.stopped[i] = n < bytes.len();
            }
            StreamEvent::Gap { .. } => self.stopped[i] = true,
            StreamEvent::Fin { .. } => {}
        }
    }
}

/// Reads every TCP connection of a pcap or pcapng file.
pub fn read_conversations(path: &Path) -> Result<Vec<TcpConversation>, PcapError> {
    let file = File::open(path).map_err(PcapError::from)?;
    let mut reader = CaptureReader::new(BufReader::new(file))?;
    let mut flows: FlowTable<Collected> = FlowTable::new();
    while let Some(p) = reader.next_packet()? {
        let Ok(seg) = capture::net::tcp_segment(p.link, p.data) else {
            continue;
        };
        let (index, dir) = match flows.lookup(&seg, Collected::default) {
            Lookup::Full => continue,
            Lookup::Existing(i, d) | Lookup::New(i, d) => (i, d),
            Lookup::Replaced { new, dir, .. } => (new, dir),
        };
        let Some(entry) = flows.entry_mut(index) else {
            continue;
        };
        let state = &mut entry.state;
        entry.streams[dir.index()].segment(
            SeqNumber(seg.seq),
            seg.flags.syn(),
            seg.flags.fin(),
            seg.payload,
            seg.payload_len,
            &mut |ev| state.take(dir, ev),
        );
    }
    let mut out = Vec::new();
    for entry in flows.entries_mut() {
        let state = &mut entry.state;
        for dir in Direction::BOTH {
            entry.streams[dir.index()].finish(&mut |ev| state.take(dir, ev));
        }
        out.push(TcpConversation {
            number: entry.number,
            streams: std::mem::take(&mut entry.state.streams),
            truncated: entry.state.stopped,
        });
    }
    Ok(out)
}
