//! What the hostile side knows about its target: the MPA policy its cases
//! start up under and how long it waits.

use std::time::Duration;

use mpa::{InitiatorConfig, ResponderConfig, RtrSet};

/// What the hostile side knows about its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// An MPA Request the target accepts: its revision, CRC, markers and
    /// peer-to-peer policy. Peer-to-peer offers are narrowed to a
    /// zero-length WRITE RTR, which consumes no message number.
    pub mpa: InitiatorConfig,
    /// How long the target waits for an MPA Request before it gives up.
    pub request_timeout: Duration,
    /// How long a target that detected an error may take to say so.
    pub answer_within: Duration,
    /// Connections in the idle flood.
    pub flood: usize,
    /// Seed of the random-FPDU case.
    pub seed: u64,
}

impl Default for Target {
    fn default() -> Self {
        Target {
            mpa: InitiatorConfig::default(),
            request_timeout: Duration::from_secs(10),
            answer_within: Duration::from_secs(5),
            flood: 200,
            seed: 0x1d1e_f00d,
        }
    }
}

impl Target {
    /// The start-up configuration cases use.
    pub fn initiator(&self) -> InitiatorConfig {
        let mut cfg = self.mpa.clone();
        if cfg.peer_to_peer.is_some() {
            cfg.peer_to_peer = Some(RtrSet::only(mpa::Rtr::Write));
        }
        cfg
    }

    /// The Responder policy for playing the target's peer when it
    /// connects to us: its revision and CRC policy, any peer-to-peer RTR.
    pub fn responder(&self) -> ResponderConfig {
        ResponderConfig {
            max_rev: self.mpa.rev,
            crc: self.mpa.crc,
            markers_rx: self.mpa.markers_rx,
            markers_tx: true,
            rtr: self.mpa.peer_to_peer.unwrap_or(RtrSet::ALL),
            request_timeout: self.answer_within,
        }
    }

    /// The target's waiting time for a Request, and then some.
    pub(crate) fn outlast_request_timeout(&self) -> Duration {
        self.request_timeout * 2 + self.answer_within
    }
}
