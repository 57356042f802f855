//! The client's side of the ping loop as a state machine with no I/O: it
//! is told what completed and answers with what to post next.
//!
//! Per ping (rping.c `rping_test_client`):
//! 1. fill the source buffer with the ping data, SEND its advertisement;
//! 2. on the server's go-ahead (it has READ the source), SEND the sink
//!    buffer's advertisement;
//! 3. on the second go-ahead (it has WRITTEN the sink), compare the source
//!    and sink buffers when validating, print the sink when verbose.
//!
//! After `count` pings (never, when `count` is 0) the client disconnects.

use super::error::{Phase, RpingError};
use super::pattern::{as_c_str, PingPattern};
use hostile::rping::INFO_LEN;

/// What the driver should do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientStep {
    /// Write `data` into the source buffer and SEND its advertisement.
    Ping { data: Vec<u8> },
    /// SEND the sink buffer's advertisement.
    AdvertiseSink,
    /// The echo is in the sink: call [`Client::finish_ping`] with both
    /// buffers.
    CheckEcho,
    /// Every ping is done: disconnect.
    Done,
}

/// The client's ping loop.
#[derive(Debug, Clone)]
pub struct Client {
    count: u32,
    validate: bool,
    verbose: bool,
    pattern: PingPattern,
    done: u32,
    phase: Phase,
}

impl Client {
    /// `count` pings of `size` bytes (`count` 0 = until something fails).
    pub fn new(size: usize, count: u32, validate: bool, verbose: bool) -> Self {
        Client {
            count,
            validate,
            verbose,
            pattern: PingPattern::new(size),
            done: 0,
            phase: Phase::Connecting,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Pings completed so far.
    pub fn completed(&self) -> u32 {
        self.done
    }

    /// Whether every ping asked for has completed.
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Finished
    }

    /// Starts the next ping, or says the run is over.
    pub fn next_ping(&mut self) -> Result<ClientStep, RpingError> {
        if !matches!(self.phase, Phase::Connecting | Phase::Idle) {
            return Err(RpingError::Unexpected {
                what: "start of a ping",
                phase: self.phase,
            });
        }
        if self.count != 0 && self.done >= self.count {
            self.phase = Phase::Finished;
            return Ok(ClientStep::Done);
        }
        self.phase = Phase::ReadAdvert;
        Ok(ClientStep::Ping {
            data: self.pattern.next_vec(),
        })
    }

    /// A receive completed with `byte_len` bytes (rping checks only the
    /// length of the server's messages).
    pub fn on_recv(&mut self, byte_len: u32) -> Result<ClientStep, RpingError> {
        if byte_len as usize != INFO_LEN {
            return Err(RpingError::BogusReceive { byte_len });
        }
        match self.phase {
            Phase::ReadAdvert => {
                self.phase = Phase::WriteAdvert;
                Ok(ClientStep::AdvertiseSink)
            }
            Phase::WriteAdvert => {
                self.phase = Phase::Writing;
                Ok(ClientStep::CheckEcho)
            }
            phase => Err(RpingError::Unexpected {
                what: "message from the server",
                phase,
            }),
        }
    }

    /// Ends the ping whose echo arrived: compares `source` and `sink` when
    /// validating (rping's memcmp over the whole size), and returns the line
    /// to print when verbose.
    pub fn finish_ping(
        &mut self,
        source: &[u8],
        sink: &[u8],
    ) -> Result<Option<String>, RpingError> {
        if self.phase != Phase::Writing {
            return Err(RpingError::Unexpected {
                what: "echo check",
                phase: self.phase,
            });
        }
        let ping = self.pattern.ping().wrapping_sub(1);
        if self.validate && source != sink {
            return Err(RpingError::DataMismatch { ping });
        }
        self.done += 1;
        self.phase = Phase::Idle;
        Ok(self
            .verbose
            .then(|| format!("ping data: {}", as_c_str(sink))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_ping(c: &mut Client) -> Vec<u8> {
        let ClientStep::Ping { data } = c.next_ping().unwrap() else {
            panic!("expected a ping");
        };
        assert_eq!(c.on_recv(16).unwrap(), ClientStep::AdvertiseSink);
        assert_eq!(c.on_recv(16).unwrap(), ClientStep::CheckEcho);
        data
    }

    #[test]
    fn three_pings_then_done() {
        let mut c = Client::new(64, 3, true, true);
        for i in 0..3 {
            let data = run_ping(&mut c);
            let line = c.finish_ping(&data, &data).unwrap().unwrap();
            assert_eq!(line, format!("ping data: {}", as_c_str(&data)));
            assert!(line.starts_with(&format!("ping data: rdma-ping-{i}: ")));
            assert_eq!(c.completed(), i + 1);
        }
        assert_eq!(c.next_ping().unwrap(), ClientStep::Done);
        assert!(c.is_finished());
    }

    #[test]
    fn count_zero_never_finishes() {
        let mut c = Client::new(26, 0, false, false);
        for _ in 0..500 {
            let d = run_ping(&mut c);
            assert_eq!(c.finish_ping(&d, &d).unwrap(), None);
        }
        assert!(!c.is_finished());
    }

    #[test]
    fn mismatch_fails_only_when_validating() {
        let mut c = Client::new(64, 2, true, false);
        let d = run_ping(&mut c);
        let mut bad = d.clone();
        bad[20] ^= 1;
        assert!(matches!(
            c.finish_ping(&d, &bad),
            Err(RpingError::DataMismatch { ping: 0 })
        ));

        let mut c = Client::new(64, 2, false, false);
        let d = run_ping(&mut c);
        assert_eq!(c.finish_ping(&d, &[0; 64]).unwrap(), None);
        assert_eq!(c.completed(), 1);
    }

    #[test]
    fn a_message_of_any_other_length_is_bogus() {
        for len in [0, 8, 15, 17, 64] {
            let mut c = Client::new(64, 1, false, false);
            c.next_ping().unwrap();
            assert!(matches!(
                c.on_recv(len),
                Err(RpingError::BogusReceive { byte_len }) if byte_len == len
            ));
        }
    }

    #[test]
    fn out_of_order_events_are_refused() {
        let mut c = Client::new(64, 1, false, false);
        assert!(matches!(
            c.on_recv(16),
            Err(RpingError::Unexpected {
                phase: Phase::Connecting,
                ..
            })
        ));
        assert!(c.finish_ping(&[], &[]).is_err());
        c.next_ping().unwrap();
        assert!(c.next_ping().is_err(), "a ping is already under way");
        c.on_recv(16).unwrap();
        c.on_recv(16).unwrap();
        assert!(matches!(
            c.on_recv(16),
            Err(RpingError::Unexpected {
                phase: Phase::Writing,
                ..
            })
        ));
    }
}
