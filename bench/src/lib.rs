//! Raw TCP goodput over the memory link, the yardstick RDMA goodput over
//! the same link is divided by, and the programs that measure with it.
//!
//! [`raw_tcp_goodput`] pushes bytes from one host of a fresh memory link
//! to the other, copying each byte once into the send ring and once out
//! of the receive ring, as an RDMA Write pays, and nothing else.
//!
//! The examples are measuring programs, each printing its figures:
//! `raw_goodput` (goodput by MTU and dispatch, and under loss),
//! `long_path` (how much of a long path's rate raw TCP carries) and
//! `cc_compare` (the congestion controllers side by side), run as
//! `cargo run --release -p iwarp-bench --example NAME`. `iwarp bench`
//! measures its own baseline over whichever transport it runs on, in
//! the same run as the RDMA cases.
#![warn(missing_docs)]

mod memory_link;

pub use memory_link::{raw_tcp_goodput, raw_tcp_goodput_with, Dispatch, Measurement};
