//! Test oracle: Wireshark's own dissectors read a capture back.

use std::path::Path;
use std::process::Command;

const TSHARK: &str = "/usr/bin/tshark";

/// Asserts that tshark reads `bytes` as a pcap with no malformed packet and
/// no error-level expert item (IP and TCP checksums verified). Skips with a
/// printed line where tshark is not installed.
pub(crate) fn tshark_accepts(bytes: &[u8], label: &str) {
    if !Path::new(TSHARK).exists() {
        capture::skip::skip(&format!("tshark check of {label}: {TSHARK} not installed"));
        return;
    }
    let path = std::env::temp_dir().join(format!(
        "iwarp-transport-{label}-{}-{:?}.pcap",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&path, bytes).unwrap();
    let count = Command::new(TSHARK)
        .args(["-n", "-r"])
        .arg(&path)
        .output()
        .unwrap();
    let bad = Command::new(TSHARK)
        .args([
            "-n",
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
            "-Y",
            "_ws.malformed || _ws.expert.severity == error",
            "-r",
        ])
        .arg(&path)
        .output()
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(
        count.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&count.stderr)
    );
    let frames = String::from_utf8_lossy(&count.stdout).lines().count();
    assert!(frames > 0, "tshark read no frames");
    assert!(
        bad.status.success(),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    let bad_lines = String::from_utf8_lossy(&bad.stdout).to_string();
    assert!(
        bad_lines.trim().is_empty(),
        "tshark flags {label}:\n{bad_lines}"
    );
    println!("tshark read {frames} frames of {label}, none malformed");
}
