//! DDP (RFC 5041): tagged and untagged direct data placement.
//! Sans-IO: pure header views, validation and placement bookkeeping.
#![forbid(unsafe_code)]
pub mod memory;
