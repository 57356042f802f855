//! The reference captures of real siw traffic, and tshark as an independent
//! second reading of them. A clone without the captures (or a machine
//! without tshark) skips the tests that need them, saying so.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use iwarp_decode::{decode_path, Event, Summary};

/// The capture directory beside the repository, if present.
pub fn captures_dir() -> Option<PathBuf> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/captures"
    ));
    dir.is_dir().then(|| dir.to_path_buf())
}

/// True when the captures are here; otherwise prints a skip line.
pub fn have_captures() -> bool {
    let here = captures_dir().is_some();
    if !here {
        capture::skip::skip("no ../shared/captures beside the repository");
    }
    here
}

/// A capture by file name; prints a skip line and returns `None` when the
/// captures are not here.
pub fn capture(name: &str) -> Option<PathBuf> {
    match captures_dir() {
        Some(dir) => Some(dir.join(name)),
        None => {
            capture::skip::skip("no ../shared/captures beside the repository");
            None
        }
    }
}

/// Every `.pcap` in the capture directory, sorted by name.
pub fn all_captures() -> Vec<PathBuf> {
    let Some(dir) = captures_dir() else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Decodes a capture file with the `iwarp decode` library.
pub fn decode_file(path: &Path) -> (Vec<Event>, Summary) {
    let mut events = Vec::new();
    let summary = decode_path(path, &mut |e| events.push(e.clone()));
    (events, summary)
}

/// FPDUs per sender and RDMAP opcode (4-bit code point).
pub type OpcodeCounts = BTreeMap<(SocketAddr, u8), u64>;

/// Our FPDU counts, keyed like [`tshark_opcode_counts`].
pub fn our_opcode_counts(events: &[Event], summary: &Summary) -> OpcodeCounts {
    let mut counts = OpcodeCounts::new();
    for e in events {
        if let Event::Fpdu(f) = e {
            let conn = &summary.connections[f.at.connection - 1];
            let sender = match f.at.direction {
                capture::reassembly::Direction::ClientToServer => conn.client,
                capture::reassembly::Direction::ServerToClient => conn.server,
            };
            let op = f.opcode.map_or(0xff, |o| o.bits());
            *counts.entry((sender, op)).or_default() += 1;
        }
    }
    counts
}

/// True when a `tshark` binary runs.
pub fn tshark_available() -> bool {
    Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// tshark's FPDU counts per sender and opcode, from its iwarp_ddp_rdmap
/// dissector (RPC-over-RDMA disabled so SEND payloads are not re-read).
pub fn tshark_opcode_counts(path: &Path) -> Result<OpcodeCounts, String> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["--disable-protocol", "rpcordma", "-Y", "iwarp_ddp_rdmap"])
        .args(["-T", "fields", "-E", "separator=|", "-E", "occurrence=a"])
        .args([
            "-e",
            "ip.src",
            "-e",
            "tcp.srcport",
            "-e",
            "iwarp_rdma.opcode",
        ])
        .output()
        .map_err(|e| format!("tshark: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "tshark failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut counts = OpcodeCounts::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut f = line.split('|');
        let (Some(ip), Some(port), Some(ops)) = (f.next(), f.next(), f.next()) else {
            return Err(format!("unexpected tshark line {line:?}"));
        };
        let sender: SocketAddr = format!("{ip}:{port}")
            .parse()
            .map_err(|e| format!("{line:?}: {e}"))?;
        for op in ops.split(',').filter(|s| !s.is_empty()) {
            let op = u8::from_str_radix(op.trim_start_matches("0x"), 16)
                .map_err(|e| format!("{line:?}: {e}"))?;
            *counts.entry((sender, op)).or_default() += 1;
        }
    }
    Ok(counts)
}
