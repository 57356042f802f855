//! The memory link as a long path: a rate limit, a queue and delay, on
//! virtual time (the clock jumps to each deadline, so the figures are the
//! model's, not the machine's).

use super::tests::{connected, transfer};
use super::*;
use crate::link_model::{LinkModelConfig, Profile};
use crate::TcpTuning;

const MIB: u64 = 1 << 20;

/// A link of `model` in both directions with `ring`-byte TCP rings.
fn path(model: &LinkModelConfig, ring: usize) -> MemoryLinkConfig {
    MemoryLinkConfig {
        faults: FaultConfig::from_link_model(model),
        tuning: TcpTuning {
            rx_buffer: ring,
            tx_buffer: ring,
            // One ACK per segment opens the window a few bytes at a time in
            // congestion avoidance: without sender-side silly window
            // avoidance those few bytes would leave as tiny segments.
            segment_aligned: true,
            ..TcpTuning::default()
        },
        ..MemoryLinkConfig::default()
    }
}

struct Run {
    gbit_per_s: f64,
    a: LinkStats,
    b: LinkStats,
}

/// Sends `warm_up` bytes A→B over `cfg` on virtual time, then measures
/// sending `bytes` more on the same connection.
fn run(cfg: MemoryLinkConfig, warm_up: u64, bytes: u64) -> Run {
    let (mut net, mut now, ca, cb) = connected(cfg);
    if warm_up > 0 {
        transfer(&mut net, &mut now, (ca, cb), warm_up, 0);
    }
    let out = transfer(&mut net, &mut now, (ca, cb), bytes, 0);
    assert_eq!(out.at_b.bad_bytes, 0);
    let counters = net.a.device().link_counters();
    let a = net.a.device().stats();
    assert_eq!(counters.frames_in, a.frames_sent);
    assert_eq!(counters.lost(), a.lost);
    assert_eq!(counters.overflowed, a.overflowed);
    assert_eq!(counters.frames_in, counters.delivered + counters.dropped());
    Run {
        gbit_per_s: bytes as f64 * 8.0 / out.virtual_time.as_secs_f64() / 1e9,
        a,
        b: net.b.device().stats(),
    }
}

#[test]
fn a_window_that_fits_the_path_fills_the_rate() {
    // Rings above one bandwidth-delay product and below the product plus
    // the queue: the window covers the pipe and never overflows the queue.
    // Measured after slow start, which takes a few round trips.
    for (profile, ring) in [(Profile::Lan, 160 << 10), (Profile::Wan, 3 << 20)] {
        let r = run(path(&profile.config(), ring), 32 * MIB, 64 * MIB);
        let rate = profile.rate_bps() as f64 / 1e9;
        println!("{}: {:.3} of {rate} Gbit/s", profile.name(), r.gbit_per_s);
        assert_eq!(r.a.overflowed + r.a.lost, 0, "{}", profile.name());
        assert!(
            r.gbit_per_s >= 0.9 * rate,
            "{}: {:.3} Gbit/s",
            profile.name(),
            r.gbit_per_s
        );
        assert!(r.gbit_per_s <= rate, "never above the rate");
    }
}

#[test]
fn behind_a_rate_limit_each_arrival_is_acknowledged() {
    let r = run(path(&Profile::Lan.config(), 160 << 10), 0, 8 * MIB);
    // Frames leave the bottleneck one by one, arrive at their own
    // instants, and each meets a receiver poll of its own.
    assert!(
        r.b.frames_sent * 10 >= r.a.frames_sent * 9,
        "{:?} {:?}",
        r.a,
        r.b
    );
}

#[test]
fn delay_alone_hands_over_a_flight_at_one_instant() {
    let model = LinkModelConfig {
        delay: Duration::from_millis(5),
        ..LinkModelConfig::default()
    };
    let r = run(path(&model, 1 << 20), 0, 8 * MIB);
    // Without a rate, every frame of a poll shares one delivery instant:
    // the receiver answers a whole flight with one ACK, and a sender that
    // grows its window by one segment per ACK grows it slowly.
    assert!(r.b.frames_sent * 4 < r.a.frames_sent, "{:?} {:?}", r.a, r.b);
}

#[test]
fn slow_start_into_a_small_queue_overflows_it() {
    // A window far above the path plus its queue: the queue drops the tail
    // and the TCP has to recover, as on a real bottleneck.
    let model = LinkModelConfig {
        queue_bytes: Some(30_000),
        ..Profile::Lan.config()
    };
    let r = run(path(&model, 1 << 20), 0, 8 * MIB);
    assert!(r.a.overflowed > 0);
    assert_eq!(r.a.lost, 0);
}

/// BBR on the lan and wan profiles, on virtual time: Startup measures the
/// rate and ProbeBW holds it, with queues of one BDP (its probes above the
/// rate overflow them now and then; the model keeps the losses from
/// costing rate).
#[test]
fn bbr_fills_the_rate_of_each_profile() {
    for (profile, ring) in [(Profile::Lan, 1 << 20), (Profile::Wan, 8 << 20)] {
        let mut cfg = path(&profile.config(), ring);
        cfg.tuning.congestion = crate::CongestionControl::Bbr;
        let r = run(cfg, 32 * MIB, 64 * MIB);
        let rate = profile.rate_bps() as f64 / 1e9;
        println!(
            "BBR, {}: {:.3} of {rate} Gbit/s, {} frames overflowed",
            profile.name(),
            r.gbit_per_s,
            r.a.overflowed
        );
        assert!(
            r.gbit_per_s >= 0.9 * rate,
            "{}: {:.3} Gbit/s",
            profile.name(),
            r.gbit_per_s
        );
    }
}

/// Random loss on the lan profile, on virtual time: the TCP carries what
/// the loss allows by Mathis et al.'s estimate, MSS / RTT * sqrt(3/2) /
/// sqrt(p), so whatever the bench measures below that on the real clock
/// is the driving of the hosts, not the congestion control. At 5% the
/// estimate ignores timeouts, which Padhye et al.'s model adds: half of
/// it is asked there.
#[test]
fn random_loss_on_lan_costs_what_the_loss_allows() {
    let model = Profile::Lan.config();
    let mss = 1448.0 * 8.0;
    let rtt = 2.0 * model.delay.as_secs_f64();
    for (loss, share) in [(0.001, 0.9), (0.01, 0.9), (0.05, 0.5)] {
        let model = LinkModelConfig {
            loss,
            ..model.clone()
        };
        // Rings as `iwarp bench` sizes them: one BDP plus the queue.
        let r = run(path(&model, 256 << 10), 4 * MIB, 32 * MIB);
        let mathis = mss / rtt * 1.5f64.sqrt() / loss.sqrt() / 1e9;
        println!(
            "lan, {}% loss: {:.3} Gbit/s, Mathis' estimate {mathis:.3}",
            loss * 100.0,
            r.gbit_per_s
        );
        assert!(r.a.lost > 0);
        assert!(
            r.gbit_per_s >= share * mathis,
            "{}% loss: {:.3} Gbit/s",
            loss * 100.0,
            r.gbit_per_s
        );
    }
}
