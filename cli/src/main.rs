//! `iwarp`: tools for the userspace iWARP stack. Each subcommand lives in
//! its own module under `commands/`; this file only dispatches.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod commands;

#[derive(Debug, Parser)]
#[command(
    name = "iwarp",
    version,
    about = "Tools for the userspace iWARP (RDMA over TCP) stack"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Bench(commands::bench::Args),
    Decode(commands::decode::Args),
    FuzzPeer(commands::fuzz_peer::Args),
    Link(commands::link::Args),
    Perf(commands::perf::Args),
    Rping(commands::rping::Args),
}

/// The stack's tracing (docs/diagnostics.md) on stderr, filtered by
/// `RUST_LOG` (`RUST_LOG=debug`, `RUST_LOG=verbs=info`, ...); nothing
/// when it is unset or does not parse.
fn init_tracing() {
    use std::io::IsTerminal;
    let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() else {
        return;
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

fn main() -> ExitCode {
    init_tracing();
    match Cli::parse().command {
        Command::Bench(args) => commands::bench::run(&args),
        Command::Decode(args) => commands::decode::run(&args),
        Command::FuzzPeer(args) => commands::fuzz_peer::run(&args),
        Command::Link(args) => commands::link::run(&args),
        Command::Perf(args) => commands::perf::run(&args),
        Command::Rping(args) => commands::rping::run(&args),
    }
}
