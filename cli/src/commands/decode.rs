//! `iwarp decode`: dissect the iWARP traffic in pcap/pcapng captures.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use capture::pcap::{CaptureReader, Timestamp};
use iwarp_decode::{json, text, Decoder, Event, Summary};

/// Exit status when every FPDU of every iWARP stream decoded.
const EXIT_OK: u8 = 0;
/// The capture was read but something in it did not decode: a bad CRC, a
/// malformed FPDU, a stream that broke or has bytes missing.
const EXIT_DECODE_PROBLEMS: u8 = 1;
/// A capture could not be read (missing, not a capture, cut short).
const EXIT_UNREADABLE: u8 = 2;

/// Dissect iWARP (MPA/DDP/RDMAP) traffic in pcap or pcapng captures.
///
/// Prints every MPA Request/Reply and one line per FPDU (time since the
/// first packet, frame number, connection, direction, DDP and RDMAP fields,
/// CRC status), then a summary per connection and direction. Exits 0 when
/// every FPDU decoded, 1 on CRC errors, malformed FPDUs or broken streams,
/// 2 when a file cannot be read.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Capture files (pcap or pcapng; Ethernet, Linux cooked, raw IP or
    /// loopback); `-` reads standard input.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Print one JSON object per line instead of text.
    #[arg(long)]
    json: bool,
    /// Print only the summary, not each MPA frame and FPDU.
    #[arg(long, short = 's')]
    summary_only: bool,
}

/// Writes lines to stdout; remembers a failed write (a closed pipe) so
/// output stops quietly instead of panicking.
struct Out {
    w: BufWriter<io::StdoutLock<'static>>,
    failed: bool,
}

impl Out {
    fn line(&mut self, s: &str) {
        if !self.failed && writeln!(self.w, "{s}").is_err() {
            self.failed = true;
        }
    }
}

pub fn run(args: &Args) -> ExitCode {
    let mut out = Out {
        w: BufWriter::new(io::stdout().lock()),
        failed: false,
    };
    let mut worst = EXIT_OK;
    for path in &args.files {
        if args.files.len() > 1 && !args.json {
            out.line(&format!("== {}", path.display()));
        }
        let code = decode_one(args, path, &mut out);
        worst = worst.max(code);
    }
    let _ = out.w.flush();
    ExitCode::from(worst)
}

/// The capture at `path`; `-` is standard input (`tcpdump -w - | iwarp decode -`).
fn open(path: &Path) -> io::Result<Box<dyn Read>> {
    if path == Path::new("-") {
        Ok(Box::new(io::stdin().lock()))
    } else {
        Ok(Box::new(BufReader::new(File::open(path)?)))
    }
}

fn decode_one(args: &Args, path: &Path, out: &mut Out) -> u8 {
    let input = match open(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("iwarp decode: {}: {e}", path.display());
            return EXIT_UNREADABLE;
        }
    };
    let mut reader = match CaptureReader::new(input) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("iwarp decode: {}: {e}", path.display());
            return EXIT_UNREADABLE;
        }
    };
    let mut decoder = Decoder::new();
    let mut base: Option<Timestamp> = None;
    let mut error = None;
    let print = |ev: &Event, base: Timestamp, out: &mut Out| {
        if args.summary_only {
            return;
        }
        let line = if args.json {
            json::event(ev, base)
        } else {
            text::event(ev, base)
        };
        out.line(&line);
    };
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                let b = *base.get_or_insert(p.timestamp);
                decoder.packet(&p, &mut |ev| print(ev, b, out));
            }
            Ok(None) => break,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let b = base.unwrap_or_default();
    let mut summary = decoder.finish(&mut |ev| print(ev, b, out));
    summary.format = Some(reader.format());
    summary.capture_error = error;
    report(args, path, &summary, out)
}

fn report(args: &Args, path: &Path, summary: &Summary, out: &mut Out) -> u8 {
    let lines = if args.json {
        json::summary(summary)
    } else {
        text::summary(summary)
    };
    for l in &lines {
        out.line(l);
    }
    let problems = summary.problems();
    for p in &problems {
        eprintln!("iwarp decode: {}: {p}", path.display());
    }
    if summary.capture_error.is_some() {
        EXIT_UNREADABLE
    } else if !problems.is_empty() {
        EXIT_DECODE_PROBLEMS
    } else {
        EXIT_OK
    }
}
