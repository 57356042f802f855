//! RDMA over an impaired in-memory link, on virtual time (the clock jumps
//! over smoltcp's 1 s retransmission timeouts, so lossy runs are quick and
//! a seed replays exactly): loss and checksum-caught corruption are
//! repaired by TCP; corruption that only the MPA CRC can catch ends the
//! connection with a TERMINATE, and nothing wrong is ever placed or
//! reported as a success.

mod common;

use std::time::Duration;

use common::capture::terminates;
use common::suite::{guarded, holding, REMOTE};
use common::*;
use ddp::error::TermCode;
use verbs::transport::SplitMix64;
use verbs::{
    wr, Access, CmEvent, DisconnectReason, MemoryRegion, WcOpcode, WcStatus, WorkCompletion,
};

fn link(faults: FaultConfig, seed: u64) -> MemoryLinkConfig {
    MemoryLinkConfig::default().faults(faults).seed(seed)
}

fn loss(rate: f64) -> FaultConfig {
    FaultConfig::default().loss(rate)
}

/// What a workload expects where, to check against afterwards.
struct Expect {
    /// (wr_id, region, offset, bytes) for each receive.
    recvs: Vec<(u64, MemoryRegion, usize, Vec<u8>)>,
    /// (wr_id, sink, bytes) for each READ.
    reads: Vec<(u64, MemoryRegion, Vec<u8>)>,
    /// Write targets and what they hold once every Write landed.
    writes: Vec<(MemoryRegion, Vec<u8>)>,
    /// Every request posted, by side.
    client_ids: Vec<u64>,
    server_ids: Vec<u64>,
}

const SIZES: &[usize] = &[1, 1000, 1432, 5000, 65536, 300_000, 1 << 20];

/// Sends, Writes and Reads of several sizes in both directions, all posted
/// before anything is driven.
fn post_workload(p: &Pair) -> Expect {
    let mut e = Expect {
        recvs: Vec::new(),
        reads: Vec::new(),
        writes: Vec::new(),
        client_ids: Vec::new(),
        server_ids: Vec::new(),
    };
    for (dir, (from, to)) in [(Side::Client, Side::Server), (Side::Server, Side::Client)]
        .into_iter()
        .enumerate()
    {
        let total: usize = SIZES.iter().sum();
        let seed = 10 * dir as u8;
        let src_bytes = pattern(total, seed);
        let src = holding(p.pd(from), 0, &src_bytes, 0, REMOTE);
        let rx = guarded(p.pd(to), total, Access::LOCAL_WRITE);
        let target = guarded(p.pd(to), total, REMOTE);
        let read_src_bytes = pattern(total, seed + 1);
        let read_src = holding(p.pd(to), 0, &read_src_bytes, 0, REMOTE);
        let sink = guarded(p.pd(from), total, Access::LOCAL_WRITE);
        let mut off = 0;
        for (i, &n) in SIZES.iter().enumerate() {
            let base = (dir as u64) * 1000 + i as u64 * 10;
            p.qp(to)
                .post_recv(wr::recv(base, vec![rx.sge(off, n).unwrap()]))
                .unwrap();
            p.qp(from)
                .post_send(wr::send(base + 1, vec![src.sge(off, n).unwrap()]))
                .unwrap();
            p.qp(from)
                .post_send(wr::write(
                    base + 2,
                    vec![src.sge(off, n).unwrap()],
                    target.rkey(),
                    target.addr() + off as u64,
                ))
                .unwrap();
            p.qp(from)
                .post_send(wr::read(
                    base + 3,
                    sink.sge(off, n).unwrap(),
                    read_src.rkey(),
                    read_src.addr() + off as u64,
                ))
                .unwrap();
            e.recvs
                .push((base, rx.clone(), off, src_bytes[off..off + n].to_vec()));
            e.reads.push((
                base + 3,
                sink.clone(),
                read_src_bytes[off..off + n].to_vec(),
            ));
            let (to_ids, from_ids) = if to == Side::Server {
                (&mut e.server_ids, &mut e.client_ids)
            } else {
                (&mut e.client_ids, &mut e.server_ids)
            };
            to_ids.push(base);
            from_ids.extend([base + 1, base + 2, base + 3]);
            off += n;
        }
        e.writes.push((target, src_bytes));
    }
    e
}

/// Every request of `ids` completes once on `cq`, within the limits.
fn all_completions(p: &Pair, side: Side, ids: &[u64]) -> Vec<WorkCompletion> {
    let got = p.completions(p.cq(side), ids.len());
    let mut seen: Vec<u64> = got.iter().map(|w| w.wr_id).collect();
    seen.sort_unstable();
    let mut want = ids.to_vec();
    want.sort_unstable();
    assert_eq!(seen, want, "{side:?}: each request completes once");
    got
}

/// How a run's completions square with memory.
#[derive(Debug, Default)]
struct Verdict {
    /// Successful receives and READs.
    ok: usize,
    /// Failed (flushed, terminated) receives and READs.
    failed: usize,
    /// Successes whose buffer does not hold exactly the message, and Write
    /// target bytes that are neither untouched nor right.
    lies: usize,
}

/// No completion lies: a successful receive or READ holds exactly its
/// message; every byte of a Write target is either untouched or right.
fn judge(e: &Expect, wcs: &[WorkCompletion]) -> Verdict {
    let by_id = |id| wcs.iter().find(|w| w.wr_id == id);
    let mut v = Verdict::default();
    for (id, mr, off, want) in &e.recvs {
        let w = by_id(*id).expect("receive completed");
        if w.is_success() {
            v.ok += 1;
            let got = mr.with_bytes(|b| b[*off..*off + want.len()].to_vec());
            if w.byte_len as usize != want.len() || got != *want {
                v.lies += 1;
            }
        } else {
            v.failed += 1;
            assert_eq!(w.byte_len, 0);
        }
    }
    for (id, mr, want) in &e.reads {
        let w = by_id(*id).expect("read completed");
        let off = e
            .recvs
            .iter()
            .find(|r| r.0 + 3 == *id)
            .map(|r| r.2)
            .unwrap_or_else(|| unreachable!());
        if w.is_success() {
            v.ok += 1;
            assert_eq!(w.opcode, WcOpcode::RdmaRead);
            let got = mr.with_bytes(|b| b[off..off + want.len()].to_vec());
            if got != *want {
                v.lies += 1;
            }
        } else {
            v.failed += 1;
        }
    }
    for (mr, want) in &e.writes {
        v.lies += mr.with_bytes(|b| {
            b.iter()
                .zip(want)
                .filter(|&(&got, &w)| got != GUARD && got != w)
                .count()
        });
    }
    v
}

/// Runs the workload over `cfg` on virtual time; everything must succeed.
/// What a run came to: its virtual time, the client's completions, and
/// the size of the client's capture (what it sent, resends included, and
/// what reached it; its timestamps are the wall clock's).
type Survived = (Duration, Vec<(u64, WcStatus)>, usize);

fn survives(cfg: MemoryLinkConfig) -> Survived {
    let corrupting = cfg.faults.corrupt > 0.0;
    let p = connect(Net::memory_virtual(&cfg), Opts::crc());
    let e = post_workload(&p);
    let mut c = all_completions(&p, Side::Client, &e.client_ids);
    let s = all_completions(&p, Side::Server, &e.server_ids);
    let mut all = c.clone();
    all.extend(s);
    let v = judge(&e, &all);
    assert_eq!(
        v.failed,
        0,
        "{:?}",
        all.iter().filter(|w| !w.is_success()).collect::<Vec<_>>()
    );
    assert_eq!(v.lies, 0);
    assert_eq!(v.ok, e.recvs.len() + e.reads.len());
    for (mr, want) in &e.writes {
        assert!(mr.with_bytes(|b| b == &want[..]), "every Write landed");
    }
    assert!(p.client_qp.try_event().is_none() && p.server_qp.try_event().is_none());
    let cap = p.capture.as_ref().unwrap();
    let (events, summary) = cap.decode();
    assert!(terminates(&events).is_empty());
    // The client records what it sends before the link drops it, and what
    // it receives after the damage (the decoder does not check TCP
    // checksums, so frames TCP dropped show as bad CRCs there).
    if !corrupting {
        assert_eq!(summary.crc_errors(), 0);
    }
    c.sort_by_key(|w| w.wr_id);
    (
        p.virtual_elapsed(),
        c.iter().map(|w| (w.wr_id, w.status)).collect(),
        cap.bytes().len(),
    )
}

#[test]
fn clean_link_on_virtual_time() {
    let (t, _, _) = survives(link(FaultConfig::default(), 1));
    assert!(t < Duration::from_secs(1), "{t:?}");
}

#[test]
fn one_percent_loss() {
    let (t, _, _) = survives(link(loss(0.01), 2));
    println!("1% loss: {t:?} of virtual time");
}

#[test]
fn five_percent_loss() {
    let (t, _, _) = survives(link(loss(0.05), 3));
    println!("5% loss: {t:?} of virtual time");
}

#[test]
fn latency_jitter_and_reordering() {
    let faults = FaultConfig::default()
        .latency(Duration::from_millis(5))
        .jitter(Duration::from_millis(3))
        .loss(0.005);
    survives(link(faults, 4));
}

/// Corruption the TCP checksum catches is just loss to RDMA.
#[test]
fn corruption_caught_by_tcp_checksums() {
    let faults = FaultConfig::default().corrupt(0.02);
    survives(link(faults, 5));
}

#[test]
fn same_seed_replays_exactly() {
    let a = survives(link(loss(0.02), 6));
    let b = survives(link(loss(0.02), 6));
    assert_eq!(a, b);
    // Losses are repaired without a timer here, so virtual time may not
    // move at all; the frames lost, and so what was resent, differ.
    let c = survives(link(loss(0.02), 7));
    assert_ne!(a.2, c.2, "another seed, another run");
}

/// What one run over a link that corrupts TCP payloads (checksums fixed
/// up, so only the MPA CRC can tell) came to.
enum Corrupted {
    /// Start-up itself was hit and failed.
    StartupFailed,
    /// No FPDU was hit: everything succeeded.
    Clean,
    /// The CRC caught it: the connection was terminated.
    Terminated,
}

/// A link that corrupts payload and fixes the TCP checksum after, so
/// only the FPDU CRC can catch it.
fn payload_corruption() -> FaultConfig {
    FaultConfig::default().corrupt(0.003).fix_tcp_checksum(true)
}

fn corrupted_run(seed: u64) -> Corrupted {
    let faults = payload_corruption();
    let p = match try_connect(Net::memory_virtual(&link(faults, seed)), Opts::crc()) {
        Ok(p) => p,
        Err(e) => match *e {
            (_, CmEvent::ConnectFailed(_) | CmEvent::Rejected { .. }) => {
                return Corrupted::StartupFailed
            }
            (name, ev) => panic!("{name}: {ev:?}"),
        },
    };
    let e = post_workload(&p);
    let c = all_completions(&p, Side::Client, &e.client_ids);
    let s = all_completions(&p, Side::Server, &e.server_ids);
    let mut all = c.clone();
    all.extend(s);
    let v = judge(&e, &all);
    assert_eq!(v.lies, 0, "seed {seed}: a completion lied: {v:?}");
    let ev = [p.client_qp.try_event(), p.server_qp.try_event()];
    if v.failed == 0 && ev.iter().all(Option::is_none) {
        return Corrupted::Clean;
    }
    let crc = |by_peer| DisconnectReason::Terminated {
        by_peer,
        layer: TermCode::LLP_CRC.layer.bits(),
        etype: TermCode::LLP_CRC.etype,
        code: TermCode::LLP_CRC.code,
    };
    let reason = |ev: &Option<CmEvent>, side| match ev {
        Some(CmEvent::Disconnected { reason }) => reason.clone(),
        Some(other) => panic!("seed {seed}: {side:?}: {other:?}"),
        None => p.disconnected(side),
    };
    let reasons = [reason(&ev[0], Side::Client), reason(&ev[1], Side::Server)];
    // One side caught a bad CRC; the other was told (or caught one of its
    // own, if the TERMINATE itself was hit).
    assert!(reasons.contains(&crc(false)), "seed {seed}: {reasons:?}");
    for r in &reasons {
        assert!(
            *r == crc(false) || *r == crc(true),
            "seed {seed}: {reasons:?}"
        );
    }
    // The client's capture holds what it received after the damage: the
    // decoder sees a bad CRC wherever our side said so.
    let (_, summary) = p.capture.as_ref().unwrap().decode();
    if reasons[0] == crc(false) {
        assert!(
            summary.crc_errors() > 0,
            "seed {seed}: the client's bad FPDU is in its capture"
        );
    }
    Corrupted::Terminated
}

/// Flipped payload bits with valid TCP checksums: the MPA CRC catches
/// every one, each connection it hits ends in a TERMINATE (LLP layer, CRC
/// error), and no completion reports wrong data as a success.
#[test]
fn corruption_only_the_crc_catches() {
    let mut terminated = 0;
    let mut clean = 0;
    let mut startup = 0;
    for seed in 0..12 {
        match corrupted_run(seed) {
            Corrupted::Terminated => terminated += 1,
            Corrupted::Clean => clean += 1,
            Corrupted::StartupFailed => startup += 1,
        }
    }
    println!("terminated {terminated}, clean {clean}, start-up failed {startup}");
    assert!(terminated >= 6, "the damage mostly reaches FPDUs");
}

/// The control experiment: the same damage with CRC off on both sides
/// goes unseen, and wrong bytes are placed or reported as received (or a
/// damaged header breaks the stream some other way). This is what the
/// CRC test above is worth.
#[test]
fn without_crc_the_same_damage_goes_unseen() {
    let mut lies = 0;
    let mut other_breaks = 0;
    for seed in 0..4 {
        let mut opts = Opts::default();
        opts.connect.mpa.crc = verbs::CrcPolicy::Never;
        opts.listen.mpa.crc = verbs::CrcPolicy::Never;
        let Ok(p) = try_connect(Net::memory_virtual(&link(payload_corruption(), seed)), opts)
        else {
            continue;
        };
        assert!(!p.client_info.crc);
        let e = post_workload(&p);
        let mut all = all_completions(&p, Side::Client, &e.client_ids);
        all.extend(all_completions(&p, Side::Server, &e.server_ids));
        let v = judge(&e, &all);
        lies += v.lies;
        if let Some(CmEvent::Disconnected {
            reason: DisconnectReason::Terminated { layer, .. },
        }) = p.client_qp.try_event()
        {
            assert_ne!(layer, TermCode::LLP_CRC.layer.bits(), "no CRC to fail");
            other_breaks += 1;
        }
    }
    println!("wrong bytes accepted: {lies}, streams broken otherwise: {other_breaks}");
    assert!(
        lies > 0,
        "payload damage reaches memory when nothing checks it"
    );
}

/// An idle connection outlives the TCP user timeout (30 s): smoltcp
/// applies that timeout to idle connections too, so the transport sends
/// keep-alives, and work after two idle minutes still goes through. (The
/// initiator's first FPDU goes first: a responder gives up on one that
/// never comes, `MpaOptions::first_fpdu_timeout`.)
#[test]
fn idle_connection_outlives_the_tcp_user_timeout() {
    let p = connect(
        Net::memory_virtual(&MemoryLinkConfig::default()),
        Opts::default(),
    );
    let first = guarded(&p.server_pd, 8, Access::LOCAL_WRITE);
    p.server_qp
        .post_recv(wr::recv(3, vec![first.sge_all()]))
        .unwrap();
    p.client_qp.post_send(wr::send(4, vec![])).unwrap();
    assert!(p.server_completions(1)[0].is_success());
    let start = p.virtual_elapsed();
    p.drive_until(|p| p.virtual_elapsed() > start + Duration::from_secs(120));
    assert_eq!(p.client_qp.try_event(), None);
    assert_eq!(p.server_qp.try_event(), None);
    let rx = guarded(&p.server_pd, 8, Access::LOCAL_WRITE);
    p.server_qp
        .post_recv(wr::recv(1, vec![rx.sge_all()]))
        .unwrap();
    p.client_qp.post_send(wr::send(2, vec![])).unwrap();
    assert!(p.server_completions(1)[0].is_success());
}

/// A small deterministic generator for the randomized workloads.
struct SplitMix(SplitMix64);

impl SplitMix {
    fn below(&mut self, n: u64) -> u64 {
        self.0.below_by_remainder(n.max(1))
    }

    /// Sizes spread over every scale: mostly small, sometimes large.
    fn size(&mut self) -> usize {
        let scale = [16u64, 1500, 9000, 70_000, 400_000][self.below(5) as usize];
        self.below(scale + 1) as usize
    }

    /// Splits `len` into 1..=4 SGE lengths.
    fn split(&mut self, len: usize) -> Vec<usize> {
        let parts = 1 + self.below(4) as usize;
        let mut cuts: Vec<usize> = (1..parts)
            .map(|_| self.below(len as u64 + 1) as usize)
            .collect();
        cuts.push(0);
        cuts.push(len);
        cuts.sort_unstable();
        cuts.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

/// Randomized workloads over randomly lossy, jittery links: random
/// operations, sizes and scatter/gather lists in both directions, all
/// outstanding at once; every completion succeeds, every byte lands.
#[test]
fn random_workloads_over_random_links() {
    for seed in 0..6u64 {
        let mut rng = SplitMix(SplitMix64::new(seed.wrapping_mul(0x1234_5678_9abc)));
        let faults = FaultConfig::default()
            .loss(rng.below(30) as f64 / 1000.0)
            .latency(Duration::from_micros(rng.below(2000)))
            .jitter(Duration::from_micros(rng.below(500)));
        let p = connect(
            Net::memory_virtual(&link(faults.clone(), seed)),
            Opts::crc(),
        );
        let mut expect: Vec<(MemoryRegion, usize, Vec<u8>)> = Vec::new();
        let mut ids = [Vec::new(), Vec::new()];
        for op in 0..60u64 {
            let (from, to, fi) = if rng.below(2) == 0 {
                (Side::Client, Side::Server, 0)
            } else {
                (Side::Server, Side::Client, 1)
            };
            let n = rng.size();
            let data = pattern(n, op as u8);
            let parts = rng.split(n);
            // Each part in a region of its own, at a random offset.
            let mut sgl = Vec::new();
            let mut at = 0;
            for len in &parts {
                let off = rng.below(64) as usize;
                let mr = holding(p.pd(from), off, &data[at..at + len], 7, REMOTE);
                sgl.push(mr.sge(off, *len).unwrap());
                at += len;
            }
            let off = rng.below(100) as usize;
            match rng.below(3) {
                0 => {
                    let rx = guarded(p.pd(to), off + n + 8, Access::LOCAL_WRITE);
                    p.qp(to)
                        .post_recv(wr::recv(op, vec![rx.sge(off, n).unwrap()]))
                        .unwrap();
                    p.qp(from).post_send(wr::send(op, sgl)).unwrap();
                    ids[1 - fi].push(op);
                    expect.push((rx, off, data));
                }
                1 => {
                    let target = guarded(p.pd(to), off + n + 8, REMOTE);
                    p.qp(from)
                        .post_send(wr::write(
                            op,
                            sgl,
                            target.rkey(),
                            target.addr() + off as u64,
                        ))
                        .unwrap();
                    expect.push((target, off, data));
                }
                _ => {
                    let src = holding(p.pd(to), off, &data, 8, REMOTE);
                    let sink = guarded(p.pd(from), n + 8, Access::LOCAL_WRITE);
                    p.qp(from)
                        .post_send(wr::read(
                            op,
                            sink.sge(4, n).unwrap(),
                            src.rkey(),
                            src.addr() + off as u64,
                        ))
                        .unwrap();
                    expect.push((sink, 4, data));
                }
            }
            ids[fi].push(op);
        }
        for (side, ids) in [(Side::Client, &ids[0]), (Side::Server, &ids[1])] {
            let wcs = all_completions(&p, side, ids);
            assert!(wcs.iter().all(|w| w.is_success()), "seed {seed}: {wcs:?}");
        }
        // Writes are placed before later Sends of the same direction; a
        // final empty Send each way makes sure the last ones landed.
        for (from, to) in [(Side::Client, Side::Server), (Side::Server, Side::Client)] {
            p.qp(to).post_recv(wr::recv(999, vec![])).unwrap();
            p.qp(from).post_send(wr::send(999, vec![])).unwrap();
        }
        p.completions(&p.client_cq, 2);
        p.completions(&p.server_cq, 2);
        for (i, (mr, off, data)) in expect.iter().enumerate() {
            common::suite::assert_exactly(
                mr,
                *off,
                data,
                &format!("seed {seed} op {i} ({faults:?})"),
            );
        }
        println!(
            "seed {seed}: {:?} of virtual time over {faults:?}",
            p.virtual_elapsed()
        );
    }
}
