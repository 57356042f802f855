//! Hostile iWARP peers: a catalogue of misbehaviours, each with the answer
//! RFC 5040/5041/5044/6581 assign, and a judge of what a target sent back.
//!
//! An RDMA stack lets a remote host write into its memory, so the checks it
//! makes on the peer's bytes are its security boundary. Each [`Case`] is a
//! name, a [`script`] of what the hostile peer sends on a fresh TCP
//! connection (a valid MPA start-up under the target's policy where the
//! case needs one, then the bad bytes, all built with the project's own
//! `mpa`, `ddp` and `rdmap` wire types), and an [`Expectation`]: the MPA
//! Reply, TERMINATE and close the RFCs allow.
//!
//! - [`catalogue`](mod@catalogue): the cases, for a [`Target`] policy, as the Initiator
//!   or (for a target that connects) as the Responder.
//! - [`player`]: sans-IO, plays a script on one connection in either role.
//! - [`exchange`]: legitimate rping pings as scripts (liveness, and the
//!   buffer a target hands out).
//! - [`observe`]: sans-IO, reads the target's bytes into an [`Observation`]
//!   (its Reply, each TERMINATE decoded in the RFC or siw layout, how the
//!   connection ended).
//! - [`judge`](mod@judge): pure, compares an observation with an expectation.
//! - [`mutate`], [`minimize`]: pure, seeded structure-aware mutants of a
//!   session, and delta debugging of a failing one.
//! - [`transcript`]: what a connection carried, to and from pcap.
//! - [`rping`]: rping's one message, which the players' rping halves use.
//! - [`driver`]: the only I/O, running cases and scripts against a target
//!   ([`driver::conn`] pumps each connection's bytes through its player)
//!   over any of the project's transports with bounded waits.
//!
//! ```no_run
//! use hostile::{catalogue, driver, Target};
//!
//! let target = Target::default();
//! for case in catalogue(&target) {
//!     let report = driver::run("127.0.0.1:7174".parse()?, &case)?;
//!     println!("{}: {}", case.name, if report.passed() { "ok" } else { "FAILED" });
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod build;
pub mod catalogue;
pub mod driver;
pub mod exchange;
pub mod expect;
pub mod judge;
pub mod minimize;
pub mod mutate;
pub mod observe;
pub mod player;
pub mod rping;
pub mod script;
pub mod target;
pub mod transcript;

#[cfg(test)]
mod tests;

pub use catalogue::{case, case_in, catalogue, responder_catalogue};
pub use expect::{Answer, End, Expectation, Outcome, TermMatch, Terminate};
pub use judge::{judge, Mismatch, Verdict};
pub use observe::{Ending, Observation, Observer, ReplySeen, TermSeen};
pub use player::{Action, Peer, Player};
pub use script::{Case, Learned, Mangle, Step, Want};
pub use target::Target;
#[cfg(test)]
mod scripted_tests;
