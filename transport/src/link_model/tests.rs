//! The model on virtual time: every instant is made up, nothing sleeps.

use std::time::{Duration, Instant};

use super::*;

const GBIT: u64 = 1_000_000_000;
const FRAME: usize = 1514;

fn model(cfg: LinkModelConfig) -> LinkModel {
    cfg.validate().unwrap();
    LinkModel::new(cfg, 0x5eed)
}

fn deliver_at(v: Verdict) -> Instant {
    match v {
        Verdict::Deliver(at) => at,
        Verdict::Dropped(d) => panic!("dropped: {d:?}"),
    }
}

#[test]
fn a_clean_model_delivers_everything_at_once() {
    let mut m = model(LinkModelConfig::default());
    let t = Instant::now();
    for i in 0..1000 {
        let now = t + Duration::from_micros(i);
        assert_eq!(m.offer(now, FRAME), Verdict::Deliver(now));
    }
    let c = m.counters();
    assert_eq!((c.frames_in, c.delivered, c.dropped()), (1000, 1000, 0));
    assert_eq!(c.bytes_in, c.delivered_bytes);
}

#[test]
fn back_to_back_frames_leave_at_the_set_rate() {
    let mut m = model(LinkModelConfig {
        rate_bps: Some(GBIT),
        ..Default::default()
    });
    let t = Instant::now();
    let mut last = t;
    for _ in 0..1000 {
        last = deliver_at(m.offer(t, FRAME));
    }
    // 1514 bytes at 1 Gbit/s take exactly 12.112 us each.
    assert_eq!(last - t, Duration::from_nanos(1000 * 12_112));
    assert_eq!(m.queued_bytes(t), 1000 * FRAME as u64);
    assert_eq!(m.queued_bytes(last), 0);
}

#[test]
fn an_overloaded_bottleneck_carries_its_rate_and_drops_the_rest() {
    // A source offering twice the rate for one virtual second.
    let rate = 100_000_000;
    let mut m = model(LinkModelConfig {
        rate_bps: Some(rate),
        queue_bytes: Some(64_000),
        ..Default::default()
    });
    let t = Instant::now();
    let gap = Duration::from_nanos(FRAME as u64 * 8 * 1_000_000_000 / (2 * rate));
    let (mut now, end) = (t, t + Duration::from_secs(1));
    let mut delivered_by_end = 0u64;
    while now < end {
        if let Verdict::Deliver(at) = m.offer(now, FRAME) {
            assert!(at >= now);
            if at <= end {
                delivered_by_end += FRAME as u64;
            }
        }
        assert!(m.queued_bytes(now) <= 64_000, "the queue is bounded");
        now += gap;
    }
    let got = delivered_by_end as f64 * 8.0;
    assert!((got / rate as f64 - 1.0).abs() < 0.01, "{got} bit in 1 s");
    let c = m.counters();
    assert!(c.overflowed > c.frames_in / 3, "{c:?}");
    assert_eq!(c.lost(), 0);
    assert_eq!(c.frames_in, c.delivered + c.overflowed);
}

#[test]
fn a_full_queue_drops_the_tail_until_the_rate_makes_room() {
    let mut m = model(LinkModelConfig {
        rate_bps: Some(GBIT),
        queue_bytes: Some(10 * FRAME),
        ..Default::default()
    });
    let t = Instant::now();
    let fates: Vec<_> = (0..15).map(|_| m.offer(t, FRAME)).collect();
    assert!(fates[..10].iter().all(|v| matches!(v, Verdict::Deliver(_))));
    assert!(fates[10..]
        .iter()
        .all(|v| *v == Verdict::Dropped(Drop::QueueFull)));
    // One frame time later there is room for exactly one more.
    let later = t + Duration::from_nanos(12_112);
    assert!(matches!(m.offer(later, FRAME), Verdict::Deliver(_)));
    assert_eq!(m.offer(later, FRAME), Verdict::Dropped(Drop::QueueFull));
    let c = m.counters();
    assert_eq!((c.delivered, c.overflowed), (11, 6));
}

#[test]
fn delay_and_jitter_bound_each_delivery() {
    let (delay, jitter) = (Duration::from_millis(10), Duration::from_micros(500));
    let mut m = model(LinkModelConfig {
        delay,
        jitter,
        ..Default::default()
    });
    let t = Instant::now();
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..2000u64 {
        let now = t + Duration::from_micros(i * 10);
        let d = deliver_at(m.offer(now, 100)) - now;
        assert!(d >= delay && d <= delay + jitter, "{d:?}");
        seen.insert(d);
    }
    assert!(seen.len() > 1000, "jitter spreads the delays");
}

#[test]
fn delay_comes_after_serialization() {
    let delay = Duration::from_millis(5);
    let mut m = model(LinkModelConfig {
        delay,
        rate_bps: Some(GBIT),
        ..Default::default()
    });
    let t = Instant::now();
    assert_eq!(
        deliver_at(m.offer(t, FRAME)),
        t + Duration::from_nanos(12_112) + delay
    );
    assert_eq!(
        deliver_at(m.offer(t, FRAME)),
        t + Duration::from_nanos(24_224) + delay
    );
}

#[test]
fn reordering_holds_back_the_set_share() {
    let hold = Duration::from_millis(1);
    let mut m = model(LinkModelConfig {
        reorder: Some(Reorder {
            probability: 0.1,
            hold,
        }),
        ..Default::default()
    });
    let t = Instant::now();
    let held = (0..20_000)
        .filter(|_| deliver_at(m.offer(t, 60)) == t + hold)
        .count();
    assert!((1800..2200).contains(&held), "{held}");
}

#[test]
fn random_loss_hits_its_rate() {
    let mut m = model(LinkModelConfig {
        loss: 0.05,
        ..Default::default()
    });
    let t = Instant::now();
    for _ in 0..100_000 {
        m.offer(t, 60);
    }
    let c = m.counters();
    assert!((4_600..5_400).contains(&c.lost_random), "{c:?}");
    assert_eq!(c.delivered + c.lost_random, 100_000);
}

#[test]
fn gilbert_elliott_gives_its_stationary_rate_in_runs() {
    let (rate, burst) = (0.02, 5.0);
    let g = GilbertElliott::with_rate_and_burst(rate, burst).unwrap();
    let mut m = model(LinkModelConfig {
        burst: Some(g),
        ..Default::default()
    });
    let t = Instant::now();
    let n = 500_000;
    let lost: Vec<bool> = (0..n)
        .map(|_| m.offer(t, 60) == Verdict::Dropped(Drop::Burst))
        .collect();
    let total = lost.iter().filter(|&&l| l).count();
    let share = total as f64 / n as f64;
    assert!((share / rate - 1.0).abs() < 0.1, "{share}");
    let runs = lost.windows(2).filter(|w| w[1] && !w[0]).count().max(1);
    let mean_run = total as f64 / runs as f64;
    assert!((mean_run / burst - 1.0).abs() < 0.1, "{mean_run}");
    // Independent loss at the same rate makes runs of about one frame.
    assert!(mean_run > 4.0);
}

#[test]
fn a_seed_replays_the_same_fates() {
    let cfg = LinkModelConfig {
        delay: Duration::from_millis(2),
        jitter: Duration::from_micros(300),
        loss: 0.01,
        burst: GilbertElliott::with_rate_and_burst(0.01, 3.0),
        rate_bps: Some(GBIT),
        queue_bytes: Some(50_000),
        reorder: Some(Reorder {
            probability: 0.01,
            hold: Duration::from_micros(100),
        }),
    };
    let t = Instant::now();
    let run = |seed| {
        let mut m = LinkModel::new(cfg.clone(), seed);
        (0..20_000u64)
            .map(|i| m.offer(t + Duration::from_micros(i * 8), FRAME))
            .collect::<Vec<_>>()
    };
    let a = run(7);
    assert_eq!(a, run(7));
    assert_ne!(a, run(8));
}

#[test]
fn counters_give_a_span_and_a_drop_share() {
    let mut m = model(LinkModelConfig {
        loss: 0.25,
        ..Default::default()
    });
    let t = Instant::now();
    assert_eq!(m.counters().dropped_share(), 0.0, "nothing offered yet");
    for _ in 0..1000 {
        m.offer(t, FRAME);
    }
    let first = m.counters();
    for _ in 0..3000 {
        m.offer(t, FRAME);
    }
    let span = m.counters().since(&first);
    assert_eq!(span.frames_in, 3000);
    assert_eq!(span.bytes_in, 3000 * FRAME as u64);
    assert_eq!(span.dropped() + span.delivered, 3000);
    let share = span.dropped_share();
    assert!((0.2..0.3).contains(&share), "{share}");
    assert_eq!(m.counters().since(&m.counters()), LinkCounters::default());
}

/// A burst queued at once: the n-th frame waits n serialization times,
/// so the median frame of a burst of 101 waits 50 of them; frames that
/// find the queue empty wait nothing.
#[test]
fn the_queue_delay_of_each_frame_is_counted() {
    let mut m = model(LinkModelConfig {
        rate_bps: Some(GBIT),
        ..Default::default()
    });
    let t = Instant::now();
    for _ in 0..101 {
        m.offer(t, FRAME);
    }
    let each = Duration::from_nanos((FRAME as u64 * 8 * 1_000_000_000).div_ceil(GBIT));
    let median = m.counters().queue_delay.median().unwrap();
    let want = each * 50;
    assert!(
        median.abs_diff(want) * 20 <= want,
        "{median:?} against {want:?}"
    );
    let later = m.counters();
    m.offer(t + Duration::from_secs(1), FRAME);
    let span = m.counters().since(&later);
    assert_eq!(span.queue_delay.count(), 1);
    assert_eq!(span.queue_delay.median(), Some(Duration::ZERO));
}
