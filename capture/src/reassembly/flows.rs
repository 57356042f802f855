//! The connections of a capture: which segments belong together, which side
//! is the client, and when a reused address pair starts a new connection.

use std::collections::HashMap;
use std::net::SocketAddr;

use super::Reassembler;
use crate::net::{Endpoints, TcpSegment};

/// Connections tracked per capture; later ones are counted, not decoded, so
/// a capture of a port scan cannot exhaust memory.
pub const MAX_CONNECTIONS: usize = 100_000;

/// Which way a segment travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// From the connection's initiator (its SYN's sender).
    ClientToServer,
    /// From the connection's responder.
    ServerToClient,
}

impl Direction {
    /// 0 or 1, to index per-direction arrays.
    pub fn index(self) -> usize {
        match self {
            Direction::ClientToServer => 0,
            Direction::ServerToClient => 1,
        }
    }

    /// The other direction.
    pub fn reverse(self) -> Direction {
        match self {
            Direction::ClientToServer => Direction::ServerToClient,
            Direction::ServerToClient => Direction::ClientToServer,
        }
    }

    /// Short arrow for one-line output: `c>s` or `s>c`.
    pub fn arrow(self) -> &'static str {
        match self {
            Direction::ClientToServer => "c>s",
            Direction::ServerToClient => "s>c",
        }
    }

    /// Both directions, client to server first.
    pub const BOTH: [Direction; 2] = [Direction::ClientToServer, Direction::ServerToClient];
}

/// How the client side of a connection was told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Orientation {
    /// It sent the SYN (or received the SYN-ACK).
    Handshake,
    /// No handshake captured: the sender of the first segment, until
    /// something better (an MPA Request) says otherwise.
    Guessed,
    /// Set by a later layer (for example the MPA Request's sender).
    Decided,
}

/// One connection: both directions' reassembly plus the caller's state.
#[derive(Debug)]
pub struct FlowEntry<T> {
    /// 1-based, in order of first appearance.
    pub number: usize,
    /// `src` is the client, `dst` the server.
    pub endpoints: Endpoints,
    /// How sure the client/server assignment is.
    pub orientation: Orientation,
    /// Indexed by [`Direction::index`].
    pub streams: [Reassembler; 2],
    /// A RST was seen: the connection ended abruptly.
    pub reset: bool,
    /// The caller's per-connection state.
    pub state: T,
}

impl<T> FlowEntry<T> {
    /// The initiating side.
    pub fn client(&self) -> SocketAddr {
        self.endpoints.src
    }

    /// The responding side.
    pub fn server(&self) -> SocketAddr {
        self.endpoints.dst
    }

    /// Which way a segment of this connection travels.
    pub fn direction_of(&self, seg: &Endpoints) -> Direction {
        if seg.src == self.endpoints.src && seg.dst == self.endpoints.dst {
            Direction::ClientToServer
        } else {
            Direction::ServerToClient
        }
    }

    /// Makes `client` the client side, swapping directions if needed; the
    /// caller swaps any per-direction state of its own when this returns true.
    /// A captured handshake outranks any later evidence and is kept.
    pub fn decide_client(&mut self, client: SocketAddr) -> bool {
        if self.orientation == Orientation::Handshake {
            return false;
        }
        self.orientation = Orientation::Decided;
        if client == self.endpoints.src {
            return false;
        }
        self.endpoints = self.endpoints.reversed();
        self.streams.swap(0, 1);
        true
    }

    /// The reassembler of one direction.
    pub fn stream(&mut self, dir: Direction) -> &mut Reassembler {
        &mut self.streams[dir.index()]
    }
}

/// Where a segment goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Index into [`FlowTable::entries`], and the segment's direction.
    Existing(usize, Direction),
    /// Index of a connection just added, and the segment's direction.
    New(usize, Direction),
    /// A new SYN on a pair in use: `old` is finished, `new` begins.
    Replaced {
        /// Index of the finished connection.
        old: usize,
        /// Index of the one that begins.
        new: usize,
        /// The segment's direction in the new one.
        dir: Direction,
    },
    /// Too many connections; the segment is not tracked.
    Full,
}

/// All connections of a capture, in order of appearance.
#[derive(Debug)]
pub struct FlowTable<T> {
    by_pair: HashMap<(SocketAddr, SocketAddr), usize>,
    entries: Vec<FlowEntry<T>>,
    untracked_segments: u64,
}

impl<T> Default for FlowTable<T> {
    fn default() -> Self {
        FlowTable {
            by_pair: HashMap::new(),
            entries: Vec::new(),
            untracked_segments: 0,
        }
    }
}

fn pair_key(e: &Endpoints) -> (SocketAddr, SocketAddr) {
    if e.src <= e.dst {
        (e.src, e.dst)
    } else {
        (e.dst, e.src)
    }
}

impl<T> FlowTable<T> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Connections in order of first appearance.
    pub fn entries(&self) -> &[FlowEntry<T>] {
        &self.entries
    }

    /// Connections in order of first appearance, to update.
    pub fn entries_mut(&mut self) -> &mut [FlowEntry<T>] {
        &mut self.entries
    }

    /// One connection, to update.
    pub fn entry_mut(&mut self, index: usize) -> Option<&mut FlowEntry<T>> {
        self.entries.get_mut(index)
    }

    /// Segments of connections beyond [`MAX_CONNECTIONS`].
    pub fn untracked_segments(&self) -> u64 {
        self.untracked_segments
    }

    /// Finds or creates the connection `seg` belongs to.
    pub fn lookup(&mut self, seg: &TcpSegment<'_>, new_state: impl FnOnce() -> T) -> Lookup {
        let key = pair_key(&seg.endpoints);
        let opening = seg.flags.syn() && !seg.flags.ack();
        let old = match self.by_pair.get(&key) {
            Some(&i) => {
                let entry = &self.entries[i];
                let dir = entry.direction_of(&seg.endpoints);
                // A SYN is new unless it repeats the handshake we already
                // have; a connection picked up mid-stream cannot take a SYN.
                let reopened = opening
                    && (entry.orientation != Orientation::Handshake
                        || entry.streams[dir.index()].isn().map(|isn| isn.0) != Some(seg.seq));
                if !reopened {
                    return Lookup::Existing(i, dir);
                }
                Some(i)
            }
            None => None,
        };
        if self.entries.len() >= MAX_CONNECTIONS {
            self.untracked_segments += 1;
            return Lookup::Full;
        }
        let (endpoints, orientation) = if seg.flags.syn() {
            let e = if seg.flags.ack() {
                seg.endpoints.reversed()
            } else {
                seg.endpoints
            };
            (e, Orientation::Handshake)
        } else {
            (seg.endpoints, Orientation::Guessed)
        };
        let index = self.entries.len();
        self.entries.push(FlowEntry {
            number: index + 1,
            endpoints,
            orientation,
            streams: [Reassembler::new(), Reassembler::new()],
            reset: false,
            state: new_state(),
        });
        self.by_pair.insert(key, index);
        let dir = self.entries[index].direction_of(&seg.endpoints);
        match old {
            Some(old) => Lookup::Replaced {
                old,
                new: index,
                dir,
            },
            None => Lookup::New(index, dir),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::TcpFlags;
    use crate::reassembly::SeqNumber;

    fn seg(src: &str, dst: &str, seq: u32, flags: u8) -> TcpSegment<'static> {
        TcpSegment {
            options: &[],
            endpoints: Endpoints {
                src: src.parse().unwrap(),
                dst: dst.parse().unwrap(),
            },
            seq,
            ack: 0,
            flags: TcpFlags(flags),
            payload: &[],
            payload_len: 0,
        }
    }

    const C: &str = "10.0.0.1:5000";
    const S: &str = "10.0.0.2:7174";

    #[test]
    fn syn_sender_is_the_client() {
        let mut t: FlowTable<()> = FlowTable::new();
        assert_eq!(
            t.lookup(&seg(C, S, 1, 0x02), || ()),
            Lookup::New(0, Direction::ClientToServer)
        );
        assert_eq!(
            t.lookup(&seg(S, C, 9, 0x12), || ()),
            Lookup::Existing(0, Direction::ServerToClient)
        );
        let e = &t.entries()[0];
        assert_eq!(e.client(), C.parse().unwrap());
        assert_eq!(e.orientation, Orientation::Handshake);
        assert_eq!(e.number, 1);
    }

    #[test]
    fn syn_ack_first_still_finds_the_client() {
        let mut t: FlowTable<()> = FlowTable::new();
        assert_eq!(
            t.lookup(&seg(S, C, 9, 0x12), || ()),
            Lookup::New(0, Direction::ServerToClient)
        );
        assert_eq!(t.entries()[0].client(), C.parse().unwrap());
    }

    #[test]
    fn mid_stream_guess_can_be_corrected_once() {
        let mut t: FlowTable<()> = FlowTable::new();
        t.lookup(&seg(S, C, 9, 0x10), || ());
        let e = t.entry_mut(0).unwrap();
        assert_eq!(e.orientation, Orientation::Guessed);
        assert_eq!(e.client(), S.parse().unwrap());
        assert!(e.decide_client(C.parse().unwrap()));
        assert_eq!(e.client(), C.parse().unwrap());
        assert_eq!(e.orientation, Orientation::Decided);
        assert_eq!(
            t.lookup(&seg(C, S, 1, 0x10), || ()),
            Lookup::Existing(0, Direction::ClientToServer)
        );
    }

    #[test]
    fn a_handshake_is_never_overruled() {
        let mut t: FlowTable<()> = FlowTable::new();
        t.lookup(&seg(C, S, 1, 0x02), || ());
        let e = t.entry_mut(0).unwrap();
        assert!(!e.decide_client(S.parse().unwrap()));
        assert_eq!(e.client(), C.parse().unwrap());
        assert_eq!(e.orientation, Orientation::Handshake);
    }

    #[test]
    fn a_new_syn_on_a_used_pair_is_a_new_connection() {
        let mut t: FlowTable<()> = FlowTable::new();
        let first = seg(C, S, 100, 0x02);
        t.lookup(&first, || ());
        // The reassembler records the ISN when the SYN goes through it.
        t.entry_mut(0).unwrap().streams[0].segment(
            SeqNumber(100),
            true,
            false,
            &[],
            0,
            &mut |_| {},
        );
        assert_eq!(
            t.lookup(&first, || ()),
            Lookup::Existing(0, Direction::ClientToServer)
        );
        assert_eq!(
            t.lookup(&seg(C, S, 5000, 0x02), || ()),
            Lookup::Replaced {
                old: 0,
                new: 1,
                dir: Direction::ClientToServer
            }
        );
        assert_eq!(t.entries().len(), 2);
        assert_eq!(t.entries()[1].number, 2);
        assert_eq!(
            t.lookup(&seg(S, C, 1, 0x10), || ()),
            Lookup::Existing(1, Direction::ServerToClient)
        );
    }

    #[test]
    fn different_pairs_are_different_connections() {
        let mut t: FlowTable<u32> = FlowTable::new();
        t.lookup(&seg(C, S, 1, 0x02), || 7);
        t.lookup(&seg("10.0.0.1:5001", S, 1, 0x02), || 8);
        t.lookup(&seg("[fd00::1]:5000", "[fd00::2]:7174", 1, 0x02), || 9);
        let states: Vec<u32> = t.entries().iter().map(|e| e.state).collect();
        assert_eq!(states, [7, 8, 9]);
    }
}
