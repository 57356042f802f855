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
//! - [`catalogue`](mod@catalogue): the cases, for a [`Target`] policy.
//! - [`observe`]: sans-IO, reads the target's bytes into an [`Observation`]
//!   (its Reply, each TERMINATE decoded in the RFC or siw layout, how the
//!   connection ended).
//! - [`judge`](mod@judge): pure, compares an observation with an expectation.
//! - [`driver`]: runs a case over kernel TCP sockets with bounded waits.
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

pub mod build;
pub mod catalogue;
pub mod driver;
pub mod expect;
pub mod judge;
pub mod observe;
pub mod script;

#[cfg(test)]
mod tests;

pub use catalogue::{case, catalogue, Target};
pub use expect::{Answer, End, Expectation, Outcome, TermMatch, Terminate};
pub use judge::{judge, Mismatch, Verdict};
pub use observe::{Ending, Observation, Observer, ReplySeen, TermSeen};
pub use script::{Case, Mangle, Step};
