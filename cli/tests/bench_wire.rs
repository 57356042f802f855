//! `iwarp bench` on a modelled wire: a short run on a small made-up path,
//! read back from its JSON. The RDMA rows need nothing; the Linux rows
//! need root and network namespaces (skipped otherwise, through the
//! capture crate's skip helper).

use std::process::Command;

/// A small path that drops about one frame in a hundred and has a queue
/// it can overflow: everything the report counts moves in a short run.
const WIRE: [&str; 8] = [
    "--rtt", "2ms", "--rate", "200mbit", "--queue", "50kb", "--loss", "1",
];

fn bench(extra: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_iwarp"))
        .arg("bench")
        .args(WIRE)
        .args([
            "--ops",
            "write",
            "--sizes",
            "64k",
            "--duration",
            "0.3",
            "--json",
        ])
        .args(extra)
        .output()
        .expect("run iwarp bench");
    assert!(
        out.status.success(),
        "iwarp bench failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The rows of the JSON array, each as its `"field":value` text.
fn rows(json: &str) -> Vec<String> {
    let json = json.trim();
    assert!(json.starts_with("[{") && json.ends_with("}]"), "{json}");
    json[2..json.len() - 2]
        .split("},{")
        .map(str::to_owned)
        .collect()
}

/// The raw value of `field` in `row` (`null`, a number, or a string).
fn field<'a>(row: &'a str, field: &str) -> &'a str {
    let key = format!("\"{field}\":");
    let at = row
        .find(&key)
        .unwrap_or_else(|| panic!("no {field} in {row}"))
        + key.len();
    let rest = &row[at..];
    &rest[..rest.find(',').unwrap_or(rest.len())]
}

fn number(row: &str, name: &str) -> f64 {
    let v = field(row, name);
    v.parse()
        .unwrap_or_else(|_| panic!("{name} is {v}, not a number, in {row}"))
}

/// What every flow's row must say of itself.
fn check_flow(row: &str) {
    assert_eq!(field(row, "kind"), "\"wire\"");
    assert_eq!(field(row, "error"), "null", "{row}");
    assert!(number(row, "gbps") > 0.0, "{row}");
    let resent = number(row, "resent_share");
    assert!((0.0..=1.0).contains(&resent), "{row}");
    number(row, "timeouts");
    let frames = number(row, "link_frames");
    let dropped = number(row, "link_dropped");
    assert!(frames > 0.0 && dropped <= frames, "{row}");
    let share = number(row, "link_drop_share");
    assert!((share - dropped / frames).abs() < 1e-5, "{row}");
    assert_eq!(number(row, "rtt_ms"), 2.0);
    assert_eq!(number(row, "rate_bps"), 200e6);
    assert_eq!(number(row, "queue_bytes"), 50e3);
    assert_eq!(number(row, "mtu"), 1500.0);
}

#[test]
fn rdma_rows_carry_the_link_counters() {
    let json = bench(&["--no-baseline"]);
    let rows = rows(&json);
    assert_eq!(rows.len(), 1, "{json}");
    let r = &rows[0];
    assert_eq!(field(r, "flow"), "\"rdma write\"");
    assert_eq!(number(r, "size"), 65536.0);
    check_flow(r);
    // Random loss of 1% each way over thousands of frames: some dropped.
    assert!(number(r, "link_dropped") > 0.0, "{r}");
    assert!(number(r, "cpu_gbps") > 0.0, "{r}");
    assert_eq!(field(r, "vs_linux_cubic"), "null", "no baseline to compare");
    // How late the thread driving both hosts was: frames were taken both
    // ways, and it slept between them on a 2 ms path.
    for late in ["data_late", "ack_late", "sleep_late"] {
        let (p50, p99) = (
            number(r, &format!("{late}_p50_us")),
            number(r, &format!("{late}_p99_us")),
        );
        assert!(p50 >= 0.0 && p99 >= p50, "{late}: {r}");
    }
}

#[test]
fn linux_cubic_and_bbr_cross_the_same_wire() {
    let Some(probe) = capture::netns::Netns::for_test("linux_cubic_and_bbr_cross_the_same_wire")
    else {
        return;
    };
    drop(probe);
    let json = bench(&[]);
    let rows = rows(&json);
    let flows: Vec<&str> = rows.iter().map(|r| field(r, "flow")).collect();
    assert_eq!(
        flows,
        ["\"rdma write\"", "\"linux cubic\"", "\"linux bbr\""],
        "{json}"
    );
    for r in &rows {
        check_flow(r);
    }
    let (rdma, cubic, bbr) = (&rows[0], &rows[1], &rows[2]);
    let ratio = number(rdma, "gbps") / number(cubic, "gbps");
    assert!((number(rdma, "vs_linux_cubic") - ratio).abs() < 1e-3 * ratio.max(1.0));
    let ratio = number(rdma, "gbps") / number(bbr, "gbps");
    assert!((number(rdma, "vs_linux_bbr") - ratio).abs() < 1e-3 * ratio.max(1.0));
    for linux in [cubic, bbr] {
        assert_eq!(field(linux, "vs_linux_cubic"), "null");
        assert_eq!(field(linux, "cpu_gbps"), "null");
        // The forwarder's lateness writing data frames to the TAP device.
        assert!(number(linux, "data_late_p99_us") >= number(linux, "data_late_p50_us"));
        assert_eq!(field(linux, "sleep_late_p50_us"), "null");
    }
    assert_eq!(number(rdma, "rto_min_ms"), number(cubic, "rto_min_ms"));
}

#[test]
fn text_states_both_sides_settings() {
    let out = Command::new(env!("CARGO_BIN_EXE_iwarp"))
        .arg("bench")
        .args(WIRE)
        .args(["--ops", "write", "--sizes", "64k", "--duration", "0.2"])
        .arg("--no-baseline")
        .output()
        .expect("run iwarp bench");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("RTT 2ms, rate 0.200 Gbit/s, queue 50000 B, loss 1.000%"),
        "{text}"
    );
    assert!(text.contains("minimum RTO 200 ms"), "{text}");
    assert!(text.contains("Linux: skipped"), "{text}");
    assert!(text.contains("rdma write"), "{text}");
}

#[test]
fn bad_wire_flags_are_errors() {
    for args in [
        &["--profile", "moon"][..],
        &["--profile", "lan", "--transport", "kernel"],
        &["--rounds", "2"],
        &["--profile", "lan", "--rounds", "0"],
        &["--burst", "4"],
        &["--rate", "0"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_iwarp"))
            .arg("bench")
            .args(args)
            .args(["--duration", "0.1", "--no-baseline"])
            .output()
            .expect("run iwarp bench");
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(!out.stderr.is_empty(), "{args:?}: no reason given");
    }
}
