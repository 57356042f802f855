//! A verbs device facing a hand-driven peer that breaks its agreed IRD,
//! stays silent in start-up or after it, or resets the stream mid-transfer; over the
//! memory link (real and virtual time) and kernel TCP.

mod common;

use common::suite::peer::{self, RawNet};

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        mod memory {
            use super::*;
            $(#[test] fn $name() { peer::$name(&|| RawNet::memory(false)); })*
        }
        mod memory_virtual {
            use super::*;
            $(#[test] fn $name() { peer::$name(&|| RawNet::memory(true)); })*
        }
        mod kernel {
            use super::*;
            $(#[test] fn $name() { peer::$name(&RawNet::kernel); })*
        }
    };
}

cases!(
    read_over_ird,
    responder_times_out,
    silent_after_accept_times_out,
    reset_during_a_read
);
