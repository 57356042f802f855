//! Seeds for the cargo-fuzz targets in `fuzz/`, and the means to run the
//! targets' properties without cargo-fuzz.
//!
//! The reference captures are split into TCP streams ([`capture`]), read
//! as MPA start-up plus FPDUs ([`conversation`]), and cut into inputs in
//! each target's own byte layout ([`encode`], [`seeds`]); captured traffic
//! is also re-aimed at the fuzzed connection's memory ([`retarget`]) so it
//! reaches placement. [`synthetic`] builds seeds from the crates' emit
//! functions for what the captures lack, and for clones without them.
//! [`mutate`] is a small seeded mutator, so `cargo test` runs thousands of
//! fuzz-style inputs through every target deterministically.
//!
//! `cargo run -p iwarp-tests --example fuzz_seeds` writes the corpus to
//! `fuzz/corpus/<target>/`.

pub mod capture;
pub mod conversation;
pub mod corpus;
pub mod encode;
pub mod engine;
pub mod mutate;
pub mod retarget;
pub mod seeds;
pub mod synthetic;
pub mod targets;

pub use corpus::{capture_conversations, Corpus};
pub use seeds::Seed;
pub use targets::Target;
