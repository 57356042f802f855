//! End-to-end RDMA over kernel TCP on loopback (127.0.0.1, ephemeral ports).

mod common;

use common::suite::ops;
use common::*;

fn kernel() -> Net {
    Net::kernel()
}

#[test]
fn send_every_size() {
    ops::send_every_size(&kernel);
}

#[test]
fn write_every_size() {
    ops::write_every_size(&kernel);
}

#[test]
fn read_every_size() {
    ops::read_every_size(&kernel);
}

#[test]
fn solicited_event() {
    ops::solicited_event(&kernel);
}

#[test]
fn send_with_invalidate() {
    ops::send_with_invalidate(&kernel);
}

#[test]
fn scatter_gather() {
    ops::scatter_gather(&kernel);
}

#[test]
fn many_outstanding() {
    ops::many_outstanding(&kernel);
}

#[test]
fn queue_limits() {
    ops::queue_limits(&kernel);
}

#[test]
fn reads_beyond_ord() {
    ops::reads_beyond_ord(&kernel);
}

#[test]
fn sends_queue_behind_a_large_write() {
    ops::sends_queue_behind_a_large_write(&kernel);
}

#[test]
fn both_directions_at_once() {
    ops::both_directions_at_once(&kernel);
}

#[test]
fn unsignaled_requests() {
    ops::unsignaled_requests(&kernel);
}

/// Kernel TCP with `staging` bytes of staging per stream (the bench uses
/// 64 KiB), no capture.
fn kernel_with_staging(staging: usize) -> Net {
    use std::net::{IpAddr, Ipv4Addr};
    use verbs::transport::kernel::{KernelConfig, KernelTransport};
    let cfg = KernelConfig::default()
        .bind_ip(IpAddr::V4(Ipv4Addr::LOCALHOST))
        .send_buffer(staging);
    Net {
        client: verbs::Device::new(Box::new(KernelTransport::new(cfg.clone()))),
        server: verbs::Device::new(Box::new(KernelTransport::new(cfg))),
        server_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
        listen_port: 0,
        capture: None,
        virtual_start: None,
        name: "kernel, small staging".into(),
    }
}

#[test]
fn a_responder_answers_more_reads_per_turn_than_its_staging_holds() {
    // Eight 256 KiB Reads against 64 KiB of staging (it must hold the
    // largest FPDU, up to 64 KiB on loopback): one staging buffer per turn
    // would take the responder at least 32 turns. Writing the staging out
    // whenever it fills (up to 256 KiB per poll) takes about a quarter.
    use common::suite::{assert_exactly, guarded, holding};
    use verbs::{wr, Access};
    const N: usize = 8;
    const LEN: usize = 256 << 10;
    let mut opts = Opts::default();
    opts.connect.ord = N as u16;
    opts.accept.ird = N as u16;
    let p = connect(kernel_with_staging(64 << 10), opts);
    let data = pattern(N * LEN, 7);
    let src = holding(&p.server_pd, 0, &data, 0, Access::REMOTE_READ);
    let sink = guarded(&p.client_pd, N * LEN, Access::LOCAL_WRITE);
    for i in 0..N {
        p.client_qp
            .post_send(wr::read(
                i as u64,
                sink.sge(i * LEN, LEN).unwrap(),
                src.rkey(),
                src.addr() + (i * LEN) as u64,
            ))
            .unwrap();
    }
    let start = std::time::Instant::now();
    let (mut done, mut server_turns) = (0, 0);
    while done < N {
        assert!(start.elapsed() < LIMIT, "{done} of {N} Reads in {LIMIT:?}");
        p.client.progress();
        server_turns += usize::from(p.server.progress());
        while let Some(wc) = p.client_cq.poll_one().unwrap() {
            assert!(wc.is_success(), "{wc:?}");
            assert_eq!(wc.wr_id, done as u64, "in order");
            done += 1;
        }
    }
    assert_exactly(&sink, 0, &data, "all reads");
    assert!(
        server_turns <= 16,
        "{server_turns} busy responder turns for {N} Reads of {LEN} bytes"
    );
}
