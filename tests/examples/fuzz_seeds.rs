//! Writes the fuzz targets' seed corpus: `fuzz/corpus/<target>/seed-*`.
//!
//! ```text
//! cargo run -p iwarp-tests --example fuzz_seeds -- [--captures DIR] [--out DIR]
//! ```
//!
//! Seeds come from every `.pcap`/`.pcapng` in the captures directory
//! (default: `../shared/captures` beside the repository) and from the
//! crates' emit functions; without captures only the latter are written.
//! The output directory defaults to `fuzz/corpus` in the repository.
//! Files a fuzzer already added to the corpus are left in place.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use iwarp_tests::fuzz_seeds::{capture_conversations, Corpus, Target};

const USAGE: &str = "usage: fuzz_seeds [--captures DIR] [--out DIR]";

fn main() -> ExitCode {
    // The repository root: this package sits one level below it.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.parent().unwrap_or(manifest);
    let mut captures = root.parent().unwrap_or(root).join("shared/captures");
    let mut out = root.join("fuzz/corpus");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let slot = match arg.as_str() {
            "--captures" => &mut captures,
            "--out" => &mut out,
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            _ => {
                eprintln!("unknown argument {arg:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        };
        match args.next() {
            Some(v) => *slot = PathBuf::from(v),
            None => {
                eprintln!("{arg} needs a value\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }

    let conversations = if captures.is_dir() {
        match capture_conversations(&captures) {
            Ok(c) => {
                println!("{} iWARP conversations in {}", c.len(), captures.display());
                c
            }
            Err(e) => {
                eprintln!("reading captures: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        println!(
            "no captures at {}: writing synthetic seeds only",
            captures.display()
        );
        Vec::new()
    };
    let corpus = Corpus::with_captures(&conversations);
    match corpus.write(&out) {
        Ok(written) => {
            for target in Target::ALL {
                let n = written.get(&target).copied().unwrap_or(0);
                let bytes: usize = corpus.get(target).iter().map(|s| s.data.len()).sum();
                println!(
                    "{:<17} {n:>4} seeds, {bytes:>7} bytes -> {}",
                    target.name(),
                    out.join(target.name()).display()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("writing {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}
