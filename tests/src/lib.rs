//! Code shared by the integration tests.

pub mod captures;
pub mod fuzz_seeds;
