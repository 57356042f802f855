//! One module per subcommand: its arguments (`Args`) and `run`.

pub mod bench;
pub mod decode;
pub mod fuzz_peer;
pub mod link;
pub mod perf;
pub mod rping;
pub mod transport_args;
pub(crate) mod units;
pub mod wire_count;
pub(crate) mod wire_model;
