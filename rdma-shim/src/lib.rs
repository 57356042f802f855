//! `libibverbs.so.1` and `librdmacm.so.1` for unmodified rdma-core
//! programs (rping, perftest, ibv_devinfo...) over this userspace iWARP
//! stack: the C ABI of rdma-core 44 (Debian 12), one device `iwarp0`
//! whose verbs run on [`verbs::Device`].
//!
//! Layers:
//! * [`sys`]: the C types, generated from the system headers and checked
//!   against them by `tests/layout.rs`;
//! * [`guard`]: every exported function runs inside it, so a Rust panic
//!   becomes an error return and a log line, never an unwind into C;
//! * `exports`: the symbol table (name, version, implementation);
//! * `ibv/` (device, context, PD, MR, CQ, QP, SRQ) and `cm/` (event
//!   channels, ids, address resolution, connect/accept) implement them.
//!   `cm/` sits on `ibv/`, never the other way: what `ibv_destroy_qp`
//!   must clear in an id (its `qp` field) is listed in `qp_holders`,
//!   below both.
//!
//! Unsafe code lives in this crate only: raw pointers handed in by C,
//! the user's memory registered in place ([`foreign`]), and the exported
//! symbols' aliases. Each block says why it holds.

mod cm;
mod exports;
pub mod foreign;
pub mod guard;
mod ibv;
mod live;
mod qp_holders;
pub mod stack;
mod stubs;
pub mod sys;
