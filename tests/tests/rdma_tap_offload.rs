//! smoltcp on two TAP devices joined by a bridge, with and without the
//! kernel's checksum and segmentation offloads, inside a network namespace
//! each test creates and deletes: RDMA between two hosts that both hand the
//! kernel 64 KiB super-frames and read the frames it coalesced, between one
//! that does and one that does not, and the segments the kernel cuts from
//! super-frames start on FPDU boundaries (RFC 5044 section 4), as siw and
//! other peers behind a real link receive them. Needs root, /dev/net/tun
//! and iproute2, otherwise each test prints why it skips.

mod common;

use std::collections::BTreeSet;

use ::capture::net::tcp_segment;
use ::capture::pcap::frames;
use ::capture::reassembly::Direction;
use common::capture::fpdus;
use common::net::{in_netns, Net, Netns};
use common::suite::{guarded, holding, MakeNet, REMOTE};
use common::*;
use rdmap::Opcode;
use verbs::{wr, Access, WcStatus};

/// Runs `body` inside a fresh namespace on a TAP pair with the given
/// offloads.
fn in_namespace(test: &str, client: bool, server: bool, body: fn(MakeNet)) {
    let Some(ns) = Netns::for_test(test) else {
        return;
    };
    in_netns(&ns, || body(&|| Net::tap_pair(&ns, client, server)));
}

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        mod both_offload {
            use super::*;
            $(#[test] fn $name() {
                in_namespace(stringify!($name), true, true, common::suite::ops::$name);
            })*
        }
        mod client_offloads {
            use super::*;
            $(#[test] fn $name() {
                in_namespace(stringify!($name), true, false, common::suite::ops::$name);
            })*
        }
        mod server_offloads {
            use super::*;
            $(#[test] fn $name() {
                in_namespace(stringify!($name), false, true, common::suite::ops::$name);
            })*
        }
    };
}

cases!(
    write_every_size,
    read_every_size,
    send_every_size,
    many_outstanding,
    both_directions_at_once,
);

/// The IP MTU of the devices (Linux's default for a TAP).
const MSS: usize = 1500 - 40;
/// RDMA Write payload that fills one FPDU of one MSS: the MSS less
/// ULPDU_Length (2), the tagged DDP/RDMAP header (14) and the CRC (4).
const WRITE_PER_FPDU: usize = MSS - 2 - 14 - 4;

/// Many Writes in flight from a host with offloads to one without: the
/// latter's kernel side cuts each super-frame at the MSS, and what it
/// reads must be whole FPDUs, one per segment, when every FPDU fills the
/// MSS. A super-segment cut short of a segment by a window would shift
/// every later FPDU across segment boundaries.
#[test]
fn segments_cut_from_super_frames_start_on_fpdus() {
    let Some(ns) = Netns::for_test("segments_cut_from_super_frames_start_on_fpdus") else {
        return;
    };
    in_netns(&ns, || {
        let p = connect(Net::tap_pair(&ns, true, false), Opts::crc());
        const FPDUS_PER_WRITE: usize = 45;
        const WRITES: usize = 96;
        let size = FPDUS_PER_WRITE * WRITE_PER_FPDU;
        let data = pattern(size, 9);
        let src = holding(&p.client_pd, 0, &data, 0, Access::NONE);
        let dst = guarded(&p.server_pd, size, REMOTE);
        for i in 0..WRITES {
            p.client_qp
                .post_send(wr::write(
                    i as u64,
                    vec![src.sge(0, size).unwrap()],
                    dst.rkey(),
                    dst.addr(),
                ))
                .unwrap();
        }
        // A Send behind them arrives after every Write was placed.
        p.server_qp.post_recv(wr::recv(0, vec![])).unwrap();
        p.client_qp
            .post_send(wr::send(WRITES as u64, vec![]))
            .unwrap();
        let done = p.client_completions(WRITES + 1);
        assert!(done.iter().all(|c| c.status == WcStatus::Success));
        assert_eq!(p.server_completions(1)[0].status, WcStatus::Success);

        let capture = p.capture.as_ref().expect("server capture");
        let (events, _) = capture.decode();
        let sent: Vec<_> = fpdus(&events)
            .into_iter()
            .filter(|f| f.at.direction == Direction::ClientToServer)
            .collect();
        let writes: Vec<_> = sent
            .iter()
            .filter(|f| f.opcode == Some(Opcode::RdmaWrite))
            .collect();
        assert_eq!(writes.len(), WRITES * FPDUS_PER_WRITE);
        let odd: Vec<usize> = writes
            .iter()
            .map(|f| f.wire_len)
            .filter(|&l| l != MSS)
            .collect();
        assert!(odd.is_empty(), "Write FPDUs not one MSS long: {odd:?}");
        let starts: BTreeSet<u64> = sent.iter().map(|f| f.at.offset).collect();
        let first_fpdu = *starts.first().unwrap();

        // The client's data segments as the server read them, by stream
        // offset (0 = the byte after the SYN).
        let bytes = capture.bytes();
        let mut isn = None;
        let mut offsets = Vec::new();
        let mut largest = 0;
        for (link, frame) in frames(&bytes).unwrap() {
            let Ok(seg) = tcp_segment(link, &frame) else {
                continue;
            };
            if seg.endpoints.dst.port() != PORT {
                continue;
            }
            if seg.flags.syn() {
                isn = Some(seg.seq);
            }
            let Some(isn) = isn else { continue };
            if seg.payload_len == 0 {
                continue;
            }
            largest = largest.max(seg.payload_len);
            offsets.push((
                u64::from(seg.seq.wrapping_sub(isn).wrapping_sub(1)),
                seg.payload_len,
            ));
        }
        assert!(
            largest <= MSS,
            "a frame of {largest} bytes reached the server"
        );
        let data_segments: Vec<_> = offsets.iter().filter(|(o, _)| *o >= first_fpdu).collect();
        assert!(data_segments.len() >= WRITES * FPDUS_PER_WRITE);
        let off_grid: Vec<_> = data_segments
            .iter()
            .filter(|(o, _)| !starts.contains(o))
            .collect();
        assert!(
            off_grid.is_empty(),
            "{} of {} segments start inside an FPDU: {:?}",
            off_grid.len(),
            data_segments.len(),
            &off_grid[..off_grid.len().min(10)]
        );
    });
}
