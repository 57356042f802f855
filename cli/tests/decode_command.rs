//! The `iwarp decode` binary: exit status and output on real, synthetic,
//! damaged and foreign files.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use capture::pcap::{LinkType, PcapWriter, Timestamp};

fn iwarp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iwarp"))
        .args(args)
        .output()
        .expect("run iwarp")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A file in the temp directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, bytes: &[u8]) -> TempFile {
        let path = std::env::temp_dir().join(format!("iwarp-decode-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn capture(name: &str) -> Option<PathBuf> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/captures"
    ));
    if dir.is_dir() {
        Some(dir.join(name))
    } else {
        capture::skip::skip("no ../shared/captures beside the repository");
        None
    }
}

/// Ethernet/IPv4/TCP around `payload`.
fn frame(src: SocketAddr, dst: SocketAddr, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let (SocketAddr::V4(s), SocketAddr::V4(d)) = (src, dst) else {
        panic!("IPv4 only")
    };
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&((40 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&s.ip().octets());
    f.extend_from_slice(&d.ip().octets());
    f.extend_from_slice(&s.port().to_be_bytes());
    f.extend_from_slice(&d.port().to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend_from_slice(payload);
    f
}

fn send_ulpdu(msn: u32, payload: &[u8]) -> Vec<u8> {
    let ctl = rdmap::wire::Control::new(rdmap::Opcode::Send).0;
    let ddp: ddp::wire::SegmentRepr = ddp::wire::UntaggedRepr::new(true, ctl, 0, 0, msn, 0).into();
    let mut u = vec![0; ddp.buffer_len()];
    ddp.emit(&mut u).unwrap();
    u.extend_from_slice(payload);
    u
}

/// A capture of one iWARP connection with CRC on: handshake, MPA
/// Request/Reply, two SENDs each way. `corrupt` flips a CRC bit.
fn synthetic(corrupt: bool) -> Vec<u8> {
    use mpa::wire::{FrameKind, FrameRepr};
    let c: SocketAddr = "192.0.2.3:40000".parse().unwrap();
    let s: SocketAddr = "192.0.2.2:7174".parse().unwrap();
    let frame_of = |kind| {
        FrameRepr {
            kind,
            markers: false,
            crc: true,
            reject: false,
            rev: 1,
            enhanced: None,
            private_data: &[],
            reserved: 0,
        }
        .to_vec()
        .unwrap()
    };
    let mut streams = [frame_of(FrameKind::Request), frame_of(FrameKind::Reply)];
    for stream in &mut streams {
        let mut framer = mpa::Framer::new(true, false);
        for msn in 1..=2 {
            framer
                .frame_to_vec(&send_ulpdu(msn, b"hello"), &[], stream)
                .unwrap();
        }
    }
    if corrupt {
        let n = streams[0].len();
        streams[0][n - 1] ^= 1;
    }
    let mut w = PcapWriter::new(Vec::new(), LinkType::ETHERNET).unwrap();
    let mut t = 0;
    let mut put = |f: Vec<u8>| {
        t += 1;
        w.packet(Timestamp::new(1_700_000_000, t * 1000), &f)
            .unwrap();
    };
    put(frame(c, s, 99, 0x02, &[]));
    put(frame(s, c, 499, 0x12, &[]));
    put(frame(c, s, 100, 0x18, &streams[0][..20]));
    put(frame(s, c, 500, 0x18, &streams[1][..20]));
    put(frame(c, s, 120, 0x18, &streams[0][20..]));
    put(frame(s, c, 520, 0x18, &streams[1][20..]));
    w.into_inner()
}

#[test]
fn a_clean_synthetic_capture() {
    let f = TempFile::new("clean.pcap", &synthetic(false));
    let o = iwarp(&["decode", f.path()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "connection #1 192.0.2.3:40000 -> 192.0.2.2:7174");
    assert!(
        lines[1].ends_with("3 #1 c>s MPA Request rev 1 M=0 C=1 R=0 basic private data 0 bytes"),
        "{}",
        lines[1]
    );
    assert!(
        lines.iter().any(|l| l.ends_with(
            "6 #1 s>c send       untagged L qn 0 msn 2 mo 0 ulpdu 23 payload 5 crc good"
        )),
        "{out}"
    );
    assert!(out.contains("summary: 6 packet(s), 6 TCP segment(s), 1 connection(s) (1 iWARP), 4 FPDU(s), 0 CRC error(s)"));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

#[test]
fn a_bad_crc_exits_1() {
    let f = TempFile::new("badcrc.pcap", &synthetic(true));
    let o = iwarp(&["decode", f.path()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("crc BAD"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("1 FPDU(s) with a bad CRC"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_truncated_capture_exits_2_after_decoding_what_it_has() {
    let bytes = synthetic(false);
    let f = TempFile::new("cut.pcap", &bytes[..bytes.len() - 9]);
    let o = iwarp(&["decode", f.path()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("capture unreadable: file ends inside the packet data"),
        "{}",
        stderr(&o)
    );
    // The client's FPDUs came before the cut.
    assert!(
        stdout(&o).contains("c>s send       untagged L qn 0 msn 2"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn garbage_and_missing_files_exit_2() {
    let f = TempFile::new("garbage.pcap", b"GIF89a this is a picture, not a capture");
    let o = iwarp(&["decode", f.path()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not a pcap or pcapng file"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty());

    let o = iwarp(&["decode", "/nonexistent/iwarp/capture.pcap"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/iwarp/capture.pcap"));

    let f = TempFile::new("empty.pcap", b"");
    let o = iwarp(&["decode", f.path()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("empty file"), "{}", stderr(&o));
}

#[test]
fn usage_errors() {
    let o = iwarp(&["decode"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("FILE"), "{}", stderr(&o));
    let o = iwarp(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("decode"));
}

#[test]
fn json_lines_and_summary_only() {
    let f = TempFile::new("json.pcap", &synthetic(false));
    let o = iwarp(&["decode", "--json", f.path()]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    for l in out.lines() {
        assert!(l.starts_with("{\"type\":\"") && l.ends_with('}'), "{l}");
    }
    assert_eq!(
        out.lines()
            .filter(|l| l.contains("\"type\":\"fpdu\""))
            .count(),
        4
    );
    assert!(out.lines().last().unwrap().contains("\"ok\":true"));

    let o = iwarp(&["decode", "-s", f.path()]);
    let out = stdout(&o);
    assert!(out.starts_with("summary: "), "{out}");
    assert!(!out.contains("MPA Request"));
}

#[test]
fn several_files_exit_with_the_worst_status() {
    let good = TempFile::new("multi-good.pcap", &synthetic(false));
    let bad = TempFile::new("multi-bad.pcap", &synthetic(true));
    let o = iwarp(&["decode", "-s", good.path(), bad.path()]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert_eq!(out.matches("== ").count(), 2);
}

#[test]
fn a_real_siw_capture() {
    let Some(path) = capture("rping-crc.pcap") else {
        return;
    };
    let o = iwarp(&["decode", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("#1 c>s MPA Request rev 2 M=0 C=1 R=0 enhanced ird 1 ord 1 p2p=0 rtr=- private data 4 bytes"));
    assert!(out.contains("connection #1: CRC on, markers c>s off s>c off"));
    assert!(out.contains(
        "   0.049451588       8 #1 c>s send       untagged L qn 0 msn 1 mo 0 ulpdu 34 payload 16 crc good"
    ), "{out}");
    assert!(out.contains("summary: 34 packet(s), 34 TCP segment(s), 1 connection(s) (1 iWARP), 21 FPDU(s), 0 CRC error(s)"));
    assert!(out.contains("  c>s 9 FPDU(s), 438 ULPDU byte(s), 288 payload byte(s); read_resp 3, send 6; CRC good 9 bad 0 off 0"));
}

#[test]
fn a_real_capture_cut_short() {
    let Some(path) = capture("rping-default.pcap") else {
        return;
    };
    let bytes = std::fs::read(path).unwrap();
    let f = TempFile::new("rping-cut.pcap", &bytes[..bytes.len() / 2]);
    let o = iwarp(&["decode", f.path()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("capture unreadable"), "{}", stderr(&o));
    assert!(stdout(&o).contains("MPA Reply"));
}

#[test]
fn standard_input() {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_iwarp"))
        .args(["decode", "-s", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&synthetic(false))
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("4 FPDU(s)"), "{}", stdout(&o));
}
