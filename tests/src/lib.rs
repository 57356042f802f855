//! The integration tests of the whole stack (`tests/tests/`: verbs over
//! every transport, faults, hostile peers, captures read back by tshark),
//! and the code they share: the reference captures of real siw traffic
//! ([`captures`]) and the seeds and property runs of the fuzz targets
//! ([`fuzz_seeds`]). Nothing here is part of the stack itself.

pub mod captures;
pub mod fuzz_seeds;
