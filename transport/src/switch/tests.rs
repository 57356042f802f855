//! The switch with memory-link hosts on virtual time, and with TAP ports
//! between two namespaces of Linux hosts on the real clock.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use super::*;
use crate::link_model::LinkModelConfig;
use crate::memory::{MemoryHost, MemoryLink, MemoryLinkConfig};
use crate::testutil::{Receiver, Sender};
use crate::{StreamId, StreamState, Transport};

const PORT: u16 = 7174;
const MBIT: u64 = 1_000_000;

fn addr(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 88, 0, last)
}

/// Hosts at `left` on the left and `right` on the right of a switch of
/// `model`, in that order.
fn hosts(model: &LinkModelConfig, left: &[u8], right: &[u8]) -> (Switch, Vec<MemoryHost>) {
    let cfg = MemoryLinkConfig::default();
    let mut sw = Switch::new(model, 3);
    let mut all = Vec::new();
    for (side, lasts) in [(Side::Left, left), (Side::Right, right)] {
        for &l in lasts {
            let (h, p) = MemoryLink::host_and_port(&cfg, addr(l)).unwrap();
            sw.add_port(side, Port::Memory(p));
            all.push(h);
        }
    }
    (sw, all)
}

/// One virtual-time step: poll everything at `now`, then jump to the next
/// deadline of any host or the switch.
fn step(sw: &mut Switch, hosts: &mut [MemoryHost], now: &mut Instant) {
    let mut moved = sw.step(*now).unwrap();
    for h in hosts.iter_mut() {
        moved |= h.poll(*now);
    }
    moved |= sw.step(*now).unwrap();
    if moved {
        return;
    }
    let host_due = hosts
        .iter_mut()
        .filter_map(|h| h.poll_delay(*now))
        .map(|d| *now + d);
    let next = host_due.chain(sw.next_due()).min();
    *now = match next {
        Some(t) if t > *now => t,
        _ => *now + Duration::from_micros(100),
    };
}

/// Connects host `a` to a listener on host `b`; the instant it took.
fn connect(
    sw: &mut Switch,
    hs: &mut [MemoryHost],
    now: &mut Instant,
    (a, b): (usize, usize),
    to: Ipv4Addr,
) -> (StreamId, StreamId, Duration) {
    let l = hs[b].listen(PORT).unwrap();
    let start = *now;
    let c = hs[a].connect((to, PORT).into()).unwrap();
    let mut s = None;
    for _ in 0..100_000 {
        s = s.or_else(|| hs[b].accept(l));
        if let Some(s) = s.filter(|_| hs[a].state(c) == StreamState::Established) {
            return (c, s, *now - start);
        }
        step(sw, hs, now);
    }
    panic!("no connection");
}

#[test]
fn memory_hosts_cross_the_model_at_its_delay_and_rate() {
    let model = LinkModelConfig {
        delay: Duration::from_millis(2),
        rate_bps: Some(100 * MBIT),
        queue_bytes: Some(50_000),
        ..Default::default()
    };
    let (mut sw, mut hs) = hosts(&model, &[1], &[2]);
    let mut now = Instant::now();
    let (c, s, handshake) = connect(&mut sw, &mut hs, &mut now, (0, 1), addr(2));
    // ARP, then SYN / SYN-ACK: at least two round trips of 4 ms.
    assert!(handshake >= Duration::from_millis(8), "{handshake:?}");
    let total = 2 << 20;
    let (mut tx, mut rx) = (Sender::new(9, total), Receiver::new(9, total));
    let start = now;
    for _ in 0..2_000_000 {
        if rx.done() {
            break;
        }
        tx.pump(&mut hs[0], c).unwrap();
        rx.drain(&mut hs[1], s).unwrap();
        step(&mut sw, &mut hs, &mut now);
    }
    assert!(rx.done() && rx.bad_bytes == 0);
    let bits = total as f64 * 8.0;
    let rate = bits / (now - start).as_secs_f64();
    assert!(rate <= 100e6, "{rate} bit/s beats the link");
    let stream = c;
    let c = sw.counters(Side::Left);
    assert!(c.delivered_bytes >= total);
    assert_eq!(c.frames_in, c.delivered + c.dropped());
    assert!(sw.counters(Side::Right).frames_in > 0, "ACKs crossed back");
    // Stepped at each deadline: every frame left the instant it fell due.
    let late = c.taken_late;
    assert!(late.count() > 0 && late.count() <= c.delivered);
    assert_eq!(late.quantile(1.0), Some(Duration::ZERO));
    // Stepped a millisecond after the next frame fell due: counted so.
    hs[0].send_with(stream, &mut |b| b.len().min(100)).unwrap();
    hs[0].poll(now);
    sw.step(now).unwrap();
    let due = sw.next_due().expect("the frame is on its way");
    sw.step(due + Duration::from_millis(1)).unwrap();
    let worst = [Side::Left, Side::Right]
        .map(|side| sw.counters(side).taken_late.quantile(1.0).unwrap())
        .into_iter()
        .max()
        .unwrap();
    assert!(worst >= Duration::from_micros(900), "{worst:?}");
}

#[test]
fn two_flows_share_one_bottleneck_queue() {
    let model = LinkModelConfig {
        delay: Duration::from_millis(1),
        rate_bps: Some(50 * MBIT),
        queue_bytes: Some(25_000),
        ..Default::default()
    };
    let (mut sw, mut hs) = hosts(&model, &[1, 3], &[2, 4]);
    let mut now = Instant::now();
    let (c1, s1, _) = connect(&mut sw, &mut hs, &mut now, (0, 2), addr(2));
    let (c2, s2, _) = connect(&mut sw, &mut hs, &mut now, (1, 3), addr(4));
    let total = 4 << 20;
    let mut tx = [Sender::new(1, total), Sender::new(2, total)];
    let mut rx = [Receiver::new(1, total), Receiver::new(2, total)];
    let start = now;
    let mut first_done = None;
    for _ in 0..4_000_000 {
        if rx.iter().all(Receiver::done) {
            break;
        }
        tx[0].pump(&mut hs[0], c1).unwrap();
        tx[1].pump(&mut hs[1], c2).unwrap();
        rx[0].drain(&mut hs[2], s1).unwrap();
        rx[1].drain(&mut hs[3], s2).unwrap();
        if first_done.is_none() && rx.iter().any(Receiver::done) {
            first_done = Some(rx.iter().map(|r| r.received).collect::<Vec<_>>());
        }
        step(&mut sw, &mut hs, &mut now);
    }
    assert!(rx.iter().all(|r| r.done() && r.bad_bytes == 0));
    // Both flows went through the one left-to-right model...
    let c = sw.counters(Side::Left);
    assert!(c.delivered_bytes >= 2 * total);
    // ...whose rate they shared.
    let rate = 2.0 * total as f64 * 8.0 / (now - start).as_secs_f64();
    assert!(rate <= 50e6, "{rate}");
    // When one finished, the other had moved too: neither starved.
    let when = first_done.unwrap();
    assert!(when.iter().all(|&r| r > total / 8), "{when:?}");
}

#[test]
fn frames_reach_only_the_learned_port() {
    let (mut sw, mut hs) = hosts(&LinkModelConfig::default(), &[1], &[2, 4]);
    let mut now = Instant::now();
    connect(&mut sw, &mut hs, &mut now, (0, 1), addr(2));
    // Host 4 saw the first ARP broadcast only, nothing of the connection.
    let seen = hs[2].device().stats().frames_received;
    assert!(seen <= 1, "{seen}");
    assert!(hs[1].device().stats().frames_received >= 2);
}

#[test]
fn linux_tcp_crosses_the_forwarder_at_its_delay() {
    use capture::netns::Netns;
    use std::io::{Read, Write};
    use std::sync::Arc;

    let test = "linux_tcp_crosses_the_forwarder_at_its_delay";
    let Some(na) = Netns::for_test(test) else {
        return;
    };
    let Some(nb) = Netns::for_test(test) else {
        return;
    };
    let delay = Duration::from_millis(5);
    let rate = 20 * MBIT;
    let model = LinkModelConfig {
        delay,
        rate_bps: Some(rate),
        queue_bytes: Some(64_000),
        ..Default::default()
    };
    let mut sw = Switch::new(&model, 1);
    for (ns, side, ip) in [
        (&na, Side::Left, "10.89.0.1/24"),
        (&nb, Side::Right, "10.89.0.2/24"),
    ] {
        let tap = TapPort::open("lnk%d", Some(ns.name())).unwrap();
        ns.ip(&["link", "set", tap.name(), "up"]).unwrap();
        ns.ip(&["addr", "add", ip, "dev", tap.name()]).unwrap();
        sw.add_port(side, Port::Tap(tap));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let forwarder = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            sw.run(&stop, Duration::from_millis(10)).unwrap();
            sw
        })
    };
    let listener =
        crate::tap::netns::in_netns(nb.name(), || std::net::TcpListener::bind("10.89.0.2:5201"))
            .unwrap()
            .unwrap();
    let bulk = 1u64 << 20;
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut b = [0u8; 1];
        for _ in 0..10 {
            s.read_exact(&mut b).unwrap();
            s.write_all(&b).unwrap();
        }
        let mut buf = vec![0u8; 64 << 10];
        let mut got = 0u64;
        while got < bulk {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "closed early");
            got += n as u64;
        }
        s.write_all(b"k").unwrap();
    });
    let mut c = crate::tap::netns::in_netns(na.name(), || {
        std::net::TcpStream::connect_timeout(
            &"10.89.0.2:5201".parse().unwrap(),
            Duration::from_secs(10),
        )
    })
    .unwrap()
    .unwrap();
    c.set_nodelay(true).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut b = [7u8; 1];
    let mut min_rtt = Duration::MAX;
    for _ in 0..10 {
        let t = Instant::now();
        c.write_all(&b).unwrap();
        c.read_exact(&mut b).unwrap();
        min_rtt = min_rtt.min(t.elapsed());
    }
    let t = Instant::now();
    let chunk = vec![1u8; 64 << 10];
    for _ in 0..bulk / chunk.len() as u64 {
        c.write_all(&chunk).unwrap();
    }
    c.read_exact(&mut b).unwrap();
    let bulk_time = t.elapsed();
    server.join().unwrap();
    stop.store(true, Ordering::Release);
    let sw = forwarder.join().unwrap();
    println!(
        "Linux TCP across the forwarder: min RTT {min_rtt:?} (model {:?}), {bulk} bytes in {bulk_time:?}",
        2 * delay
    );
    // Properties of the model, not of the machine's speed: no frame
    // crosses faster than the delay, no byte faster than the rate.
    assert!(min_rtt >= 2 * delay, "{min_rtt:?}");
    let floor = Duration::from_secs_f64(bulk as f64 * 8.0 / rate as f64);
    assert!(bulk_time >= floor, "{bulk_time:?} < {floor:?}");
    let c = sw.counters(Side::Left);
    assert!(c.delivered_bytes >= bulk, "{c:?}");
}
