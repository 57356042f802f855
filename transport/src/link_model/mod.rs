//! One impaired path, the same code wherever frames cross it.
//!
//! A [`LinkModel`] decides each frame's fate from its length and the instant
//! it is offered: dropped by random loss, by bursty (Gilbert-Elliott) loss,
//! by a full drop-tail queue in front of a rate limit, or delivered at an
//! instant made of queueing, serialization, one-way delay, jitter and an
//! occasional reordering hold. It owns no frames, threads or clock
//! (frames' lengths and `Instant`s in, verdicts out), so it runs the same
//! on virtual time in a test, inside the memory link, and in a forwarder
//! between TAP devices whose far ends are the kernel's TCP.
//!
//! [`DelayLine`] is the companion for callers that hold the frames
//! themselves: it keeps them until their delivery instant and reports the
//! next deadline.
//!
//! Every random draw comes from one seeded generator, in a fixed order per
//! frame, so the same seed and the same offered frames replay the same
//! fates.

mod config;
mod delay_line;
mod gilbert;
mod model;
mod queue_delay;

pub use config::{LinkConfigError, LinkModelConfig, Profile, Reorder};
pub use delay_line::DelayLine;
pub use gilbert::GilbertElliott;
pub use model::{Drop, LinkCounters, LinkModel, Verdict};
pub use queue_delay::QueueDelays;

#[cfg(test)]
mod tests;
