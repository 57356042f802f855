//! The tests `iwarp perf` runs, named as on the command line, on the wire
//! (one byte of the connect request) and in the JSON result.

/// One perf test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// RDMA WRITE bandwidth (ib_write_bw).
    Write,
    /// RDMA READ bandwidth (ib_read_bw).
    Read,
    /// SEND bandwidth (ib_send_bw).
    Send,
    /// RDMA WRITE ping-pong latency, both sides polling the last byte of
    /// their buffer (ib_write_lat).
    WriteLat,
    /// SEND/RECV ping-pong latency (ib_send_lat).
    SendLat,
    /// RDMA READ latency, one READ at a time (ib_read_lat).
    ReadLat,
}

impl Op {
    pub const ALL: [Op; 6] = [
        Op::Write,
        Op::Read,
        Op::Send,
        Op::WriteLat,
        Op::SendLat,
        Op::ReadLat,
    ];

    /// The byte carried in the connect request.
    pub const fn code(self) -> u8 {
        match self {
            Op::Write => 1,
            Op::Read => 2,
            Op::Send => 3,
            Op::WriteLat => 4,
            Op::SendLat => 5,
            Op::ReadLat => 6,
        }
    }

    pub fn from_code(code: u8) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.code() == code)
    }

    /// The name in results ("write", "send_lat", ...).
    pub const fn name(self) -> &'static str {
        match self {
            Op::Write => "write",
            Op::Read => "read",
            Op::Send => "send",
            Op::WriteLat => "write_lat",
            Op::SendLat => "send_lat",
            Op::ReadLat => "read_lat",
        }
    }

    pub const fn is_latency(self) -> bool {
        matches!(self, Op::WriteLat | Op::SendLat | Op::ReadLat)
    }

    /// Whether the client issues RDMA READs (and so needs an ORD).
    pub const fn reads(self) -> bool {
        matches!(self, Op::Read | Op::ReadLat)
    }

    /// Whether data messages are SENDs consuming the peer's receives.
    pub const fn sends(self) -> bool {
        matches!(self, Op::Send | Op::SendLat)
    }

    /// Latency reported per iteration as a fraction of the round trip:
    /// perftest halves the ping-pong round trip of write and send latency
    /// and reports a READ's whole round trip.
    pub const fn halves_round_trip(self) -> bool {
        matches!(self, Op::WriteLat | Op::SendLat)
    }
}

/// The test as typed on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OpArg {
    /// RDMA WRITE bandwidth.
    Write,
    /// RDMA READ bandwidth.
    Read,
    /// SEND bandwidth.
    Send,
    /// RDMA WRITE ping-pong latency (same as write-lat).
    Lat,
    /// RDMA WRITE ping-pong latency.
    WriteLat,
    /// SEND/RECV ping-pong latency.
    SendLat,
    /// RDMA READ latency.
    ReadLat,
}

impl From<OpArg> for Op {
    fn from(a: OpArg) -> Op {
        match a {
            OpArg::Write => Op::Write,
            OpArg::Read => Op::Read,
            OpArg::Send => Op::Send,
            OpArg::Lat | OpArg::WriteLat => Op::WriteLat,
            OpArg::SendLat => Op::SendLat,
            OpArg::ReadLat => Op::ReadLat,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_codes_are_none() {
        for op in Op::ALL {
            assert_eq!(Op::from_code(op.code()), Some(op));
        }
        for code in [0u8, 7, 0x80, 0xff] {
            assert_eq!(Op::from_code(code), None);
        }
    }

    #[test]
    fn names_are_distinct_and_lat_means_write_lat() {
        let mut names: Vec<&str> = Op::ALL.iter().map(|o| o.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 6);
        assert_eq!(Op::from(OpArg::Lat), Op::WriteLat);
        assert_eq!(Op::from(OpArg::ReadLat).name(), "read_lat");
    }

    #[test]
    fn properties() {
        assert!(Op::ReadLat.reads() && Op::Read.reads() && !Op::Write.reads());
        assert!(Op::Send.sends() && Op::SendLat.sends() && !Op::WriteLat.sends());
        assert!(Op::WriteLat.halves_round_trip() && !Op::ReadLat.halves_round_trip());
        assert!(Op::ALL.iter().filter(|o| o.is_latency()).count() == 3);
    }
}
