//! Segments carry whole FPDUs: `iwarp bench` captures of small, medium and
//! multi-FPDU messages (64 B, 5000 B, 70000 B; Write, Read and Send at
//! once), read by Wireshark's MPA dissector. That dissector does no
//! reassembly: it reads an FPDU at the start of each TCP segment, so every
//! FPDU a segment splits shows up as a segment it cannot read or as a bad
//! CRC.
//!
//! What tshark legitimately leaves unread is stated exactly:
//! - a TCP retransmission (tshark hands resent data to no dissector);
//! - on the memory link, where sender-side silly window avoidance is off,
//!   a segment that fills the peer's receive window (tshark: "TCP window
//!   full") ends where the window does, and the next segment of that
//!   direction completes the FPDU it cut;
//! - with markers, everything from the first segment that ends exactly on
//!   a marker slot: the dissector counts that slot (which belongs to the
//!   next FPDU, before its ULPDU_Length, as RFC 5044's FPDUPTR of 0 for a
//!   leading marker says) as one of the segment's own markers, misreads the
//!   FPDU and loses the stream. One FPDU end in 128 falls there, so a
//!   stream meets it within a few hundred FPDUs; the segments before it
//!   are checked.
//!
//! Needs tshark; the TAP case needs root and network namespaces (each
//! skips otherwise, through the capture crate's skip helper).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A file in the temp directory, removed when dropped.
struct TempPath(PathBuf);

impl TempPath {
    fn new(name: &str) -> TempPath {
        TempPath(std::env::temp_dir().join(format!(
            "iwarp-fpdu-alignment-{}-{name}",
            std::process::id()
        )))
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn tshark_available() -> bool {
    Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs a short bench writing its capture to `pcap`.
fn bench(extra: &[&str], pcap: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_iwarp"))
        .args(["bench", "--sizes", "64,5000,70000", "--duration", "0.1"])
        .args(["--no-baseline", "--pcap"])
        .arg(pcap)
        .args(extra)
        .output()
        .expect("run iwarp bench");
    assert!(
        out.status.success(),
        "bench {extra:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn tshark(pcap: &Path, args: &[&str]) -> String {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(["--disable-protocol", "rpcordma"])
        .args(args)
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One TCP segment with data, as tshark reads it.
#[derive(Debug)]
struct Segment {
    frame: u64,
    port: u16,
    /// Relative sequence number.
    seq: u64,
    len: u64,
    /// Read as MPA (request, reply or FPDU).
    mpa: bool,
    /// The MPA request or reply.
    startup: bool,
    resent: bool,
    /// Fills the peer's receive window.
    window_full: bool,
}

fn segments(pcap: &Path) -> Vec<Segment> {
    let text = tshark(
        pcap,
        &[
            "-Y",
            "tcp.len > 0",
            "-T",
            "fields",
            "-E",
            "separator=|",
            "-e",
            "frame.number",
            "-e",
            "tcp.srcport",
            "-e",
            "tcp.seq",
            "-e",
            "tcp.len",
            "-e",
            "frame.protocols",
            "-e",
            "iwarp_mpa.req",
            "-e",
            "iwarp_mpa.rep",
            "-e",
            "tcp.analysis.retransmission",
            "-e",
            "tcp.analysis.fast_retransmission",
            "-e",
            "tcp.analysis.spurious_retransmission",
            "-e",
            "tcp.analysis.window_full",
        ],
    );
    text.lines()
        .map(|line| {
            let f: Vec<&str> = line.split('|').collect();
            assert_eq!(f.len(), 11, "unexpected tshark line {line:?}");
            Segment {
                frame: f[0].parse().unwrap(),
                port: f[1].parse().unwrap(),
                seq: f[2].parse().unwrap(),
                len: f[3].parse().unwrap(),
                mpa: f[4].split(':').any(|p| p == "iwarp_mpa"),
                startup: !f[5].is_empty() || !f[6].is_empty(),
                resent: f[7..10].iter().any(|s| !s.is_empty()),
                window_full: !f[10].is_empty(),
            }
        })
        .collect()
}

/// Frames with an FPDU whose CRC tshark found bad, and how many FPDUs it
/// found good.
fn crc_checks(pcap: &Path) -> (Vec<u64>, usize) {
    let text = tshark(pcap, &["-Y", "iwarp_mpa", "-V"]);
    let (mut frame, mut bad, mut good) = (0, Vec::new(), 0);
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Frame ") {
            frame = rest
                .split(':')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(frame);
        } else if line.contains("CRC check:") && line.contains("Bad CRC32") {
            bad.push(frame);
        } else if line.contains("CRC check:") && line.contains("Good CRC32") {
            good += 1;
        }
    }
    (bad, good)
}

/// Checks a capture; `markers` when both directions carry markers.
/// `window_cuts` where the sender does not wait for the window to fit an
/// FPDU (silly window avoidance off).
fn check(pcap: &Path, name: &str, markers: bool, window_cuts: bool) {
    let segs = segments(pcap);
    let (bad_crc, good) = crc_checks(pcap);
    assert!(good > 1000, "{name}: tshark checked only {good} FPDUs");
    // Where each direction's FPDU stream starts: right after its MPA
    // request or reply, the origin markers are counted from.
    let origin: BTreeMap<u16, u64> = segs
        .iter()
        .filter(|s| s.startup)
        .map(|s| (s.port, s.seq + s.len))
        .collect();
    assert_eq!(origin.len(), 2, "{name}: MPA request and reply");
    // With markers: from the first segment ending on a marker slot on,
    // the dissector has lost that direction (see the file's comment).
    let lost_from: BTreeMap<u16, u64> = if markers {
        origin
            .iter()
            .filter_map(|(&port, &start)| {
                segs.iter()
                    .filter(|s| s.port == port && !s.startup && !s.resent)
                    .find(|s| (s.seq + s.len - start) % 512 == 0)
                    .map(|s| (port, s.frame))
            })
            .collect()
    } else {
        BTreeMap::new()
    };
    let lost = |s: &Segment| lost_from.get(&s.port).is_some_and(|&f| s.frame >= f);
    // Segments the receive window cut, and the ones completing their FPDU.
    let mut window_cut = std::collections::BTreeSet::new();
    if window_cuts {
        for (i, s) in segs.iter().enumerate() {
            if s.window_full {
                window_cut.insert(s.frame);
                if let Some(next) = segs[i + 1..]
                    .iter()
                    .find(|n| n.port == s.port && n.seq == s.seq + s.len)
                {
                    window_cut.insert(next.frame);
                }
            }
        }
    }
    let lost = |s: &Segment| lost(s) || window_cut.contains(&s.frame);
    let unread: Vec<&Segment> = segs
        .iter()
        .filter(|s| !s.mpa && !s.resent && !lost(s))
        .collect();
    assert!(
        unread.is_empty(),
        "{name}: segments tshark cannot read as MPA: {:?}",
        &unread[..unread.len().min(5)]
    );
    let bad: Vec<u64> = bad_crc
        .into_iter()
        .filter(|&f| {
            segs.iter()
                .find(|s| s.frame == f)
                .is_some_and(|s| !s.resent && !lost(s))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{name}: tshark flags FPDUs in frames {:?}",
        &bad[..bad.len().min(5)]
    );
    if markers {
        // What the exemption leaves checked is most of a stream's start.
        let checked = segs.iter().filter(|s| !s.startup && !lost(s)).count();
        assert!(checked > 50, "{name}: only {checked} segments checked");
    }
}

fn memory_round(markers: bool) {
    if !tshark_available() {
        capture::skip::skip("tshark is not installed");
        return;
    }
    let on = if markers { "on" } else { "off" };
    let pcap = TempPath::new(&format!("memory-markers-{on}.pcap"));
    bench(&["--transport", "memory", "--markers", on], &pcap.0);
    check(
        &pcap.0,
        &format!("memory link, markers {on}"),
        markers,
        true,
    );
}

#[test]
fn memory_link_segments_carry_whole_fpdus() {
    memory_round(false);
}

#[test]
fn memory_link_segments_carry_whole_fpdus_with_markers() {
    memory_round(true);
}

/// Two smoltcp hosts on TAP devices with the kernel's offloads off: the
/// frames on the bridge are the segments smoltcp cut.
#[test]
fn tap_segments_carry_whole_fpdus() {
    if !tshark_available() {
        capture::skip::skip("tshark is not installed");
        return;
    }
    // The bench makes its own namespace; this one only proves it can.
    if capture::netns::Netns::for_test("fpdu alignment on TAP").is_none() {
        return;
    }
    let pcap = TempPath::new("tap.pcap");
    bench(&["--transport", "tap", "--offload", "off"], &pcap.0);
    check(&pcap.0, "TAP, offloads off", false, false);
}
