//! Code shared by the integration tests.

pub mod captures;
