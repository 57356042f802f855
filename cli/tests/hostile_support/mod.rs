//! Running the hostile-peer catalogue against a persistent `iwarp rping`
//! server: each case on its own connections, judged, then a legitimate
//! rping exchange to show the server still serves, with the server's
//! resident memory read from /proc before and after.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::thread;
use std::time::Duration;

use hostile::{driver, Case, Target};

/// Pings of the legitimate exchange after each case.
pub const PINGS: &str = "3";

/// How long the target waits for an MPA Request: the server runs with
/// `--mpa-timeout` set to this, so the silent cases end soon.
pub const MPA_TIMEOUT_SECS: u64 = 2;

/// The catalogue's view of `iwarp rping -s -P` with default MPA options.
pub fn target() -> Target {
    Target {
        request_timeout: Duration::from_secs(MPA_TIMEOUT_SECS),
        ..Target::default()
    }
}

/// Resident set size of process `pid`, in bytes (0 where /proc is absent).
pub fn resident_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/statm"))
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// Runs `case` against `addr` while `legit` runs a legitimate client:
/// after the case for single connections, during it for a flood (the
/// server must keep serving while hundreds of connections sit idle).
/// Panics with the judge's reasons if a connection missed its
/// expectation or the legitimate client failed.
pub fn run_case(addr: SocketAddr, case: &Case, legit: impl FnOnce() -> Result<(), String>) {
    let (report, served) = if case.connections > 1 {
        let c = case.clone();
        let flood = thread::spawn(move || driver::run(addr, &c));
        // Let the flood's connections open first.
        thread::sleep(Duration::from_millis(300));
        let served = legit();
        let report = flood.join().expect("flood thread");
        (report, served)
    } else {
        let report = driver::run(addr, case);
        (report, legit())
    };
    let report = report.unwrap_or_else(|e| panic!("{}: cannot run: {e}", case.name));
    println!(
        "{:28} {} connection(s) ({} refused at connect), {:?}: {}",
        case.name,
        report.verdicts.len(),
        report.refused_at_connect,
        report.elapsed,
        if report.passed() {
            "as the RFCs assign"
        } else {
            "MISMATCH"
        }
    );
    if let Some(f) = report.failure() {
        panic!("{f}");
    }
    if let Err(e) = served {
        panic!("{}: the next legitimate client failed: {e}", case.name);
    }
}

/// One `#[test]` per case of the catalogue, each calling `$check(NAME)`,
/// and a test that the list covers the whole catalogue: every transport's
/// suite runs the same list.
macro_rules! catalogue_tests {
    ($check:ident) => {
        catalogue_tests!(@cases $check;
            garbage_request => "garbage-request",
            bad_key => "bad-key",
            unknown_revision => "unknown-revision",
            huge_private_data => "huge-private-data",
            silence => "silence",
            bad_crc => "bad-crc",
            write_to_an_unknown_stag => "write-unknown-stag",
            read_larger_than_any_region => "read-larger-than-any-region",
            bad_queue_number => "bad-queue-number",
            msn_gap => "msn-gap",
            wrong_ddp_version => "wrong-ddp-version",
            wrong_rdmap_version => "wrong-rdmap-version",
            unknown_opcode => "unknown-opcode",
            immediate_data_not_agreed => "immediate-data-not-agreed",
            atomic_request_not_agreed => "atomic-request-not-agreed",
            ulpdu_too_short => "ulpdu-too-short",
            huge_ulpdu_then_silence => "huge-ulpdu-then-silence",
            idle_flood => "idle-flood",
            random_fpdus => "random-fpdus",
            unsolicited_read_response => "unsolicited-read-response",
            terminate_mid_transfer => "terminate-mid-transfer",
            fin_mid_fpdu => "fin-mid-fpdu",
            write_beyond_a_valid_region => "write-beyond-region",
            read_beyond_a_valid_region => "read-beyond-region",
            opcode_changes_inside_a_send => "opcode-changes-inside-a-send",
            invalidate_a_shared_region => "invalidate-a-shared-region",
        );
    };
    (@cases $check:ident; $($test:ident => $name:literal,)*) => {
        $( #[test] fn $test() { $check($name); } )*

        #[test]
        fn every_case_of_the_catalogue_has_a_test() {
            let mut listed = vec![$($name),*];
            let mut all: Vec<_> = hostile::catalogue::catalogue(&hostile_support::target())
                .iter()
                .map(|c| c.name)
                .collect();
            listed.sort_unstable();
            all.sort_unstable();
            assert_eq!(listed, all);
        }
    };
}
