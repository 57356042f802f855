//! The server's side of one connection's ping loop as a state machine with
//! no I/O (rping.c `rping_test_server` and `server_recv`).
//!
//! Per ping: the client's source advertisement arrives → RDMA READ it into
//! the server's buffer → on the READ's completion SEND a go-ahead → the
//! client's sink advertisement arrives → RDMA WRITE the buffer's string
//! (`strlen + 1` bytes) there → on the WRITE's completion SEND a go-ahead.
//!
//! The run ends when the client closes or resets the connection; that is a
//! clean end only between pings (waiting for the next source
//! advertisement).

use verbs::DisconnectReason;

use super::error::{Phase, RpingError};
use hostile::rping::RdmaInfo;

/// What the driver should post next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerStep {
    /// RDMA READ `remote.size` bytes from `remote` into the local buffer
    /// (rping reads the advertised size even if its own buffer is smaller;
    /// the placement then fails and the connection is terminated).
    Read { remote: RdmaInfo },
    /// RDMA WRITE the local buffer's string to `remote`.
    Write { remote: RdmaInfo },
    /// SEND a go-ahead.
    GoAhead,
}

/// One connection's ping loop on the server.
#[derive(Debug, Clone)]
pub struct Server {
    phase: Phase,
    pings: u64,
}

impl Default for Server {
    fn default() -> Self {
        Self::new()
    }
}

impl Server {
    pub fn new() -> Self {
        Server {
            phase: Phase::ReadAdvert,
            pings: 0,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Pings served completely.
    pub fn pings(&self) -> u64 {
        self.pings
    }

    /// A receive completed with `msg` (its first `byte_len` bytes).
    pub fn on_recv(&mut self, msg: &[u8]) -> Result<ServerStep, RpingError> {
        let remote = RdmaInfo::parse(msg).map_err(|e| RpingError::BogusReceive {
            byte_len: e.0.try_into().unwrap_or(u32::MAX),
        })?;
        match self.phase {
            Phase::ReadAdvert => {
                self.phase = Phase::Reading;
                Ok(ServerStep::Read { remote })
            }
            Phase::WriteAdvert => {
                self.phase = Phase::Writing;
                Ok(ServerStep::Write { remote })
            }
            phase => Err(RpingError::Unexpected {
                what: "advertisement from the client",
                phase,
            }),
        }
    }

    /// The RDMA READ completed successfully.
    pub fn on_read_done(&mut self) -> Result<ServerStep, RpingError> {
        self.expect(Phase::Reading, "RDMA READ completion")?;
        self.phase = Phase::WriteAdvert;
        Ok(ServerStep::GoAhead)
    }

    /// The RDMA WRITE completed successfully.
    pub fn on_write_done(&mut self) -> Result<ServerStep, RpingError> {
        self.expect(Phase::Writing, "RDMA WRITE completion")?;
        self.phase = Phase::ReadAdvert;
        self.pings += 1;
        Ok(ServerStep::GoAhead)
    }

    /// The connection ended. Between pings a close or a reset is the end
    /// of the run, as in rping (whose DISCONNECTED event covers both: siw
    /// resets right after the last ping on a lossy link); in the middle of
    /// a ping, or by a TERMINATE, it is an error.
    pub fn on_disconnected(&self, reason: DisconnectReason) -> Result<(), RpingError> {
        match (self.phase, &reason) {
            (Phase::ReadAdvert, DisconnectReason::PeerClosed | DisconnectReason::Reset) => Ok(()),
            (phase, _) => Err(RpingError::Disconnected { reason, phase }),
        }
    }

    fn expect(&self, phase: Phase, what: &'static str) -> Result<(), RpingError> {
        if self.phase == phase {
            Ok(())
        } else {
            Err(RpingError::Unexpected {
                what,
                phase: self.phase,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(addr: u64, rkey: u32, size: u32) -> RdmaInfo {
        RdmaInfo { addr, rkey, size }
    }

    #[test]
    fn one_ping_in_rpings_order() {
        let mut s = Server::new();
        let src = info(0x1000, 0x100, 64);
        let sink = info(0x2000, 0x200, 64);
        assert_eq!(
            s.on_recv(&src.to_bytes()).unwrap(),
            ServerStep::Read { remote: src }
        );
        assert_eq!(s.phase(), Phase::Reading);
        assert_eq!(s.on_read_done().unwrap(), ServerStep::GoAhead);
        assert_eq!(
            s.on_recv(&sink.to_bytes()).unwrap(),
            ServerStep::Write { remote: sink }
        );
        assert_eq!(s.on_write_done().unwrap(), ServerStep::GoAhead);
        assert_eq!(s.pings(), 1);
        assert_eq!(s.phase(), Phase::ReadAdvert);
        assert!(s.on_disconnected(DisconnectReason::PeerClosed).is_ok());
        assert!(s.on_disconnected(DisconnectReason::Reset).is_ok());
    }

    #[test]
    fn closing_or_resetting_mid_ping_is_an_error() {
        let src = info(1, 2, 64).to_bytes();
        for reason in [DisconnectReason::PeerClosed, DisconnectReason::Reset] {
            let mut s = Server::new();
            s.on_recv(&src).unwrap();
            assert!(s.on_disconnected(reason.clone()).is_err());
            s.on_read_done().unwrap();
            assert!(matches!(
                s.on_disconnected(reason.clone()),
                Err(RpingError::Disconnected {
                    phase: Phase::WriteAdvert,
                    ..
                })
            ));
            s.on_recv(&src).unwrap();
            assert!(s.on_disconnected(reason).is_err());
        }
    }

    #[test]
    fn a_terminate_between_pings_is_an_error() {
        let s = Server::new();
        let reason = DisconnectReason::Terminated {
            by_peer: true,
            layer: 0,
            etype: 0,
            code: 0,
        };
        assert!(s.on_disconnected(reason).is_err());
    }

    #[test]
    fn completions_out_of_turn_are_refused() {
        let mut s = Server::new();
        assert!(s.on_read_done().is_err());
        assert!(s.on_write_done().is_err());
        s.on_recv(&info(1, 2, 3).to_bytes()).unwrap();
        assert!(
            s.on_recv(&info(1, 2, 3).to_bytes()).is_err(),
            "a second advertisement while reading"
        );
        assert!(s.on_write_done().is_err());
    }

    #[test]
    fn messages_of_the_wrong_length_are_bogus() {
        let mut s = Server::new();
        assert!(matches!(
            s.on_recv(&[0; 15]),
            Err(RpingError::BogusReceive { byte_len: 15 })
        ));
        assert!(matches!(
            s.on_recv(&[0; 17]),
            Err(RpingError::BogusReceive { byte_len: 17 })
        ));
    }

    #[test]
    fn many_pings() {
        let mut s = Server::new();
        for i in 0..1000u32 {
            let src = info(u64::from(i), i, 26);
            assert!(matches!(
                s.on_recv(&src.to_bytes()),
                Ok(ServerStep::Read { .. })
            ));
            s.on_read_done().unwrap();
            assert!(matches!(
                s.on_recv(&src.to_bytes()),
                Ok(ServerStep::Write { .. })
            ));
            s.on_write_done().unwrap();
        }
        assert_eq!(s.pings(), 1000);
    }
}
