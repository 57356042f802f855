//! The bench's output: a progress line while it runs, then a table or JSON.

use std::io::{IsTerminal, Write};

use super::baseline::{Baseline, SmallBaseline};
use super::case::{Measured, Op};
use super::link::TransportKind;
use super::linux_tcp::{LinuxTcp, Offloads};
use super::percentile::percentile;
use super::scale::ScaleRow;
use super::Args;
use verbs::transport::TcpLossStats;

/// One line of results.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub op: Op,
    pub size: usize,
    pub transport: TransportKind,
    pub gbps: f64,
    pub msgs_per_s: f64,
    pub lat_us_p50: f64,
    pub lat_us_p99: f64,
    /// p99 of the latency samples no context switch interrupted, and the
    /// share of samples that were such (see `Measured::undisturbed`).
    pub lat_us_p99_undisturbed: Option<f64>,
    pub undisturbed_share: Option<f64>,
    pub baseline_gbps: Option<f64>,
    pub ratio: Option<f64>,
    /// Gbit per CPU-second of the process (see [`super::cpu`]).
    pub cpu_gbps: Option<f64>,
    pub baseline_cpu_gbps: Option<f64>,
    /// `cpu_gbps` over the baseline's: the load-independent ratio.
    pub cpu_ratio: Option<f64>,
    /// Linux kernel TCP with Cubic over the same loss and MTU (lossy links
    /// and TAP only).
    pub linux_tcp_gbps: Option<f64>,
    pub vs_linux_tcp: Option<f64>,
    /// The same with BBR.
    pub linux_bbr_gbps: Option<f64>,
    pub vs_linux_bbr: Option<f64>,
    /// Why that figure is missing, or what qualifies it.
    pub linux_tcp_note: Option<String>,
    /// The ratios compare message rates with raw TCP carrying records of
    /// this many bytes (small messages), not bulk goodput.
    pub vs_records: Option<usize>,
    /// Raw TCP round trip of a message of this size there and a 64-byte
    /// record back, median: the raw transport's latency at this size.
    pub raw_rtt_us_p50: Option<f64>,
}

impl Row {
    pub(crate) fn new(
        op: Op,
        size: usize,
        transport: TransportKind,
        m: &Measured,
        baseline: Option<Baseline>,
    ) -> Row {
        let secs = m.elapsed.as_secs_f64().max(1e-9);
        let gbps = m.bytes as f64 * 8.0 / secs / 1e9;
        let cpu_gbps = m
            .cpu
            .map(|c| c.as_secs_f64())
            .filter(|c| *c > 0.0)
            .map(|c| m.bytes as f64 * 8.0 / c / 1e9);
        let baseline_cpu_gbps = baseline.and_then(|b| b.cpu_gbps);
        let baseline = baseline.map(|b| b.gbps);
        Row {
            op,
            size,
            transport,
            gbps,
            msgs_per_s: m.messages as f64 / secs,
            lat_us_p50: percentile(&m.latencies, 50.0),
            lat_us_p99: percentile(&m.latencies, 99.0),
            lat_us_p99_undisturbed: m
                .undisturbed
                .as_deref()
                .filter(|u| !u.is_empty())
                .map(|u| percentile(u, 99.0)),
            undisturbed_share: m
                .undisturbed
                .as_ref()
                .filter(|_| !m.latencies.is_empty())
                .map(|u| u.len() as f64 / m.latencies.len() as f64),
            baseline_gbps: baseline,
            ratio: baseline.filter(|b| *b > 0.0).map(|b| gbps / b),
            cpu_gbps,
            baseline_cpu_gbps,
            cpu_ratio: match (cpu_gbps, baseline_cpu_gbps) {
                (Some(x), Some(b)) if b > 0.0 => Some(x / b),
                _ => None,
            },
            linux_tcp_gbps: None,
            vs_linux_tcp: None,
            linux_bbr_gbps: None,
            vs_linux_bbr: None,
            linux_tcp_note: None,
            vs_records: None,
            raw_rtt_us_p50: None,
        }
    }

    /// For messages no larger than the small baseline's records, compares
    /// message rates with it instead of bulk goodput: a 64-byte message
    /// cannot move bulk goodput, but it can move as many messages as TCP
    /// moves 64-byte records.
    pub(crate) fn with_small(mut self, small: Option<&SmallBaseline>) -> Row {
        let Some(b) = small else {
            return self;
        };
        self.raw_rtt_us_p50 = b
            .latency
            .iter()
            .find(|(size, _)| *size == self.size)
            .map(|(_, us)| *us);
        if self.size > b.record {
            return self;
        }
        let size = self.size.max(1) as f64;
        let cpu_msgs = self.cpu_gbps.map(|g| g * 1e9 / 8.0 / size);
        self.baseline_gbps = Some(b.msgs_per_s * b.record as f64 * 8.0 / 1e9);
        self.ratio = Some(b.msgs_per_s)
            .filter(|r| *r > 0.0)
            .map(|r| self.msgs_per_s / r);
        self.baseline_cpu_gbps = b.cpu_msgs_per_s.map(|r| r * b.record as f64 * 8.0 / 1e9);
        self.cpu_ratio = match (cpu_msgs, b.cpu_msgs_per_s) {
            (Some(x), Some(r)) if r > 0.0 => Some(x / r),
            _ => None,
        };
        self.vs_records = Some(b.record);
        self
    }

    /// Adds the Linux TCP baseline, when one was attempted.
    pub(crate) fn with_linux_tcp(mut self, linux: &Option<Result<LinuxTcp, String>>) -> Row {
        match linux {
            None => {}
            Some(Ok(l)) => {
                self.linux_tcp_gbps = Some(l.gbps);
                self.vs_linux_tcp = Some(l.gbps).filter(|b| *b > 0.0).map(|b| self.gbps / b);
                self.linux_bbr_gbps = l.bbr_gbps.as_ref().ok().copied();
                self.vs_linux_bbr = self
                    .linux_bbr_gbps
                    .filter(|b| *b > 0.0)
                    .map(|b| self.gbps / b);
                self.linux_tcp_note = linux_note(l);
            }
            Some(Err(why)) => self.linux_tcp_note = Some(why.clone()),
        }
        self
    }
}

fn linux_note(l: &LinuxTcp) -> Option<String> {
    (l.offloads == Offloads::StillOn)
        .then(|| "TSO/GSO/GRO could not be turned off: a drop may take a whole burst".into())
}

fn transport_name(t: TransportKind) -> &'static str {
    match t {
        TransportKind::Memory => "memory",
        TransportKind::Kernel => "kernel",
        TransportKind::Tap => "tap",
    }
}

/// A JSON string literal.
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.4}")
    } else {
        "null".into()
    }
}

/// A JSON array of rows (hand-written: flat numbers and short strings);
/// the `--qps` runs follow as objects with `"kind":"scale"`.
pub(crate) fn json(rows: &[Row], scale: &[ScaleRow]) -> String {
    let items: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{{\"op\":\"{}\",\"size\":{},\"transport\":\"{}\",\"gbps\":{},\"msgs_per_s\":{},\"lat_us_p50\":{},\"lat_us_p99\":{},\"lat_us_p99_undisturbed\":{},\"undisturbed_share\":{},\"baseline_gbps\":{},\"ratio\":{},\"cpu_gbps\":{},\"baseline_cpu_gbps\":{},\"cpu_ratio\":{},\"linux_tcp_gbps\":{},\"vs_linux_tcp\":{},\"linux_bbr_gbps\":{},\"vs_linux_bbr\":{},\"linux_tcp_note\":{},\"vs_records\":{},\"raw_rtt_us_p50\":{}}}",
                r.op,
                r.size,
                transport_name(r.transport),
                num(r.gbps),
                num(r.msgs_per_s),
                num(r.lat_us_p50),
                num(r.lat_us_p99),
                r.lat_us_p99_undisturbed.map_or("null".into(), num),
                r.undisturbed_share.map_or("null".into(), num),
                r.baseline_gbps.map_or("null".into(), num),
                r.ratio.map_or("null".into(), num),
                r.cpu_gbps.map_or("null".into(), num),
                r.baseline_cpu_gbps.map_or("null".into(), num),
                r.cpu_ratio.map_or("null".into(), num),
                r.linux_tcp_gbps.map_or("null".into(), num),
                r.vs_linux_tcp.map_or("null".into(), num),
                r.linux_bbr_gbps.map_or("null".into(), num),
                r.vs_linux_bbr.map_or("null".into(), num),
                r.linux_tcp_note.as_deref().map_or("null".into(), json_string),
                r.vs_records.map_or("null".into(), |n| n.to_string()),
                r.raw_rtt_us_p50.map_or("null".into(), num),
            )
        })
        .chain(scale.iter().map(|r| {
            format!(
                "{{\"kind\":\"scale\",\"op\":\"write\",\"devices\":{},\"qps\":{},\"size\":{},\"gbps\":{},\"cpu_s_per_gb\":{},\"raw_gbps\":{},\"raw_cpu_s_per_gb\":{},\"idle_bytes_per_qp\":{},\"connect_secs\":{}}}",
                r.devices,
                r.qps,
                r.size,
                num(r.gbps),
                r.cpu_s_per_gb.map_or("null".into(), num),
                r.raw.map_or("null".into(), |raw| num(raw.gbps)),
                r.raw
                    .and_then(|raw| raw.cpu_s_per_gb)
                    .map_or("null".into(), num),
                r.idle_bytes_per_qp.map_or("null".into(), num),
                num(r.connect_secs),
            )
        }))
        .collect();
    format!("[{}]", items.join(","))
}

/// The `--qps` runs, after the main table: each beside raw TCP over as
/// many connections, and how each cost grew from the first row.
pub(crate) fn scale_table(rows: &[ScaleRow], args: &Args) {
    let Some(first) = rows.first() else {
        return;
    };
    let raw = raw_name(args.transport);
    println!();
    match first.devices {
        1 => println!(
            "queue pairs at once: RDMA Write {} on each, one thread driving both endpoints",
            human_size(first.size)
        ),
        n => println!(
            "queue pairs at once: RDMA Write {} on each, spread over {n} device pairs, \
             each with its own link and thread (raw TCP not measured)",
            human_size(first.size)
        ),
    }
    println!(
        "{:>6} {:>9} {:>9} {:>7} {:>14} {:>16} {:>11} {:>22} {:>10}",
        "qps",
        "Gbit/s",
        "cpu s/GB",
        "growth",
        format!("{raw} Gbit/s"),
        format!("{raw} cpu s/GB"),
        "raw growth",
        "resident B per idle QP",
        "connect s"
    );
    let growth = |x: Option<f64>, base: Option<f64>| match (x, base) {
        (Some(x), Some(b)) if b > 0.0 => Some(x / b),
        _ => None,
    };
    for r in rows {
        println!(
            "{:>6} {:>9.3} {} {} {} {} {} {} {:>10.2}",
            r.qps,
            r.gbps,
            opt(r.cpu_s_per_gb, 9, 3),
            opt(growth(r.cpu_s_per_gb, first.cpu_s_per_gb), 7, 2),
            opt(r.raw.map(|raw| raw.gbps), 14, 3),
            opt(r.raw.and_then(|raw| raw.cpu_s_per_gb), 16, 3),
            opt(
                growth(
                    r.raw.and_then(|raw| raw.cpu_s_per_gb),
                    first.raw.and_then(|raw| raw.cpu_s_per_gb)
                ),
                11,
                2
            ),
            opt(r.idle_bytes_per_qp, 22, 0),
            r.connect_secs
        );
    }
    println!("cpu s/GB = CPU seconds of this process (both ends) per 1e9 bytes of payload moved;");
    println!("       growth = that over the first row's; raw = TCP alone over as many connections");
    println!("       (kernel: Linux TCP on loopback driven by epoll)");
    println!("resident B per idle QP = growth of the process's resident memory once all were");
    println!("       connected and idle, over the queue pairs at both ends (2 per connection)");
}

pub(crate) fn human_size(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

fn opt(x: Option<f64>, width: usize, digits: usize) -> String {
    x.map_or_else(
        || format!("{:>width$}", "-"),
        |x| format!("{x:>width$.digits$}"),
    )
}

/// What each smoltcp TCP resent, as a share of the octets it sent (both
/// ends summed): on a link that reorders without losing, every resend is
/// needless. Nothing for a transport without counters.
pub(crate) fn resent(raw: Option<TcpLossStats>, rdma: Option<TcpLossStats>) {
    for (what, stats) in [("raw TCP", raw), ("TCP under RDMA", rdma)] {
        if let Some(s) = stats {
            println!("{what}: {}", resent_line(&s));
        }
    }
}

/// `resent 0.42% of 1234567 bytes sent; retransmitted 3 segments (...)`.
fn resent_line(s: &TcpLossStats) -> String {
    format!(
        "resent {:.2}% of {} bytes sent; {}",
        s.resent_share() * 100.0,
        s.sent_bytes,
        s
    )
}

pub(crate) fn table(
    rows: &[Row],
    baseline: Option<Baseline>,
    small: Option<&SmallBaseline>,
    linux: Option<&Result<LinuxTcp, String>>,
    args: &Args,
) {
    println!("iwarp bench: {}", super::describe(args));
    let raw = raw_name(args.transport);
    match baseline {
        Some(b) => match b.runs_cpu_gbps {
            [Some(first), Some(second)] => println!(
                "{raw} goodput on the same link: {:.2} Gbit/s, {} Gbit per CPU-second \
                 (the better of a run before the RDMA cases, {first:.2}, and one after, {second:.2})",
                b.gbps,
                opt(b.cpu_gbps, 0, 2)
            ),
            _ => println!(
                "{raw} goodput on the same link: {:.2} Gbit/s, {} Gbit per CPU-second",
                b.gbps,
                opt(b.cpu_gbps, 0, 2)
            ),
        },
        None => println!("raw TCP baseline skipped"),
    }
    if let Some(b) = small {
        println!(
            "{raw} {}-byte records, {} queued: {:.0} msgs/s, {} per CPU-second; round trip p50 {:.1} us",
            b.record,
            super::baseline::RECORDS_IN_FLIGHT,
            b.msgs_per_s,
            opt(b.cpu_msgs_per_s, 0, 0),
            b.rtt_us_p50
        );
    }
    match linux {
        None => {}
        Some(Ok(l)) => {
            println!(
                "Linux TCP goodput through a router namespace, {}, MTU {}, {}, route rto_min {} ms, TCP_CONGESTION per socket: cubic {:.2} Gbit/s, bbr {}",
                if args.loss > 0.0 {
                    "same loss each way (nftables, router's forward hook)"
                } else {
                    "no loss"
                },
                args.mtu,
                match l.offloads {
                    Offloads::Off => "TSO/GSO/GRO off",
                    Offloads::StillOn => "TSO/GSO/GRO could not be turned off",
                    Offloads::Default => "TSO/GSO/GRO on (Linux's defaults)",
                },
                l.rto_min.as_millis(),
                l.gbps,
                match &l.bbr_gbps {
                    Ok(g) => format!("{g:.2} Gbit/s"),
                    Err(why) => format!("missing ({why})"),
                }
            );
            if let Some(b) = baseline.filter(|_| l.gbps > 0.0) {
                println!("{raw} / Linux cubic: {:.2}", b.gbps / l.gbps);
            }
        }
        Some(Err(why)) => println!("Linux TCP baseline missing: {why}"),
    }
    let vs_raw = format!("vs {raw}");
    println!();
    print!(
        "{:<9} {:>9} {:>10} {:>12} {:>9} {:>9} {:>9} {:>w$}",
        "op",
        "size",
        "Gbit/s",
        "msgs/s",
        "p50 us",
        "p99 us",
        "p99* us",
        vs_raw,
        w = vs_raw.len().max(8),
    );
    if small.is_some() {
        print!(" {:>10}", "raw rt us");
    }
    if linux.is_some() {
        print!(" {:>12} {:>10}", "vs Lx cubic", "vs Lx bbr");
    }
    println!(" {:>10} {:>9}", "Gb/cpu-s", "cpu ratio");
    for r in rows {
        print!(
            "{:<9} {:>9} {:>10.3} {:>12.0} {:>9.1} {:>9.1} {} {}",
            r.op.to_string(),
            human_size(r.size),
            r.gbps,
            r.msgs_per_s,
            r.lat_us_p50,
            r.lat_us_p99,
            opt(r.lat_us_p99_undisturbed, 9, 1),
            opt(r.ratio, vs_raw.len().max(8), 2),
        );
        let mark = if r.vs_records.is_some() { "r" } else { " " };
        print!("{mark}");
        if small.is_some() {
            print!("{}", opt(r.raw_rtt_us_p50, 10, 1));
        }
        if linux.is_some() {
            print!(
                " {} {}",
                opt(r.vs_linux_tcp, 12, 3),
                opt(r.vs_linux_bbr, 10, 3)
            );
        }
        println!(" {} {}", opt(r.cpu_gbps, 10, 3), opt(r.cpu_ratio, 9, 2));
    }
    println!();
    println!("{vs_raw} = RDMA goodput / {raw} goodput; latency = one request at a time, post to completion");
    if let Some(b) = small {
        println!(
            "r = messages/s over {raw} {}-byte records/s (also per CPU-second), not bulk goodput",
            b.record
        );
        println!(
            "raw rt = {raw}: a message of that size there and a {}-byte record back, p50",
            b.record
        );
    }
    if linux.is_some() {
        println!(
            "vs Lx cubic, vs Lx bbr = RDMA goodput / Linux kernel TCP goodput with that controller, same loss and MTU"
        );
    }
    println!(
        "p99* = p99 of the latency samples the scheduler did not interrupt (no context switch):"
    );
    println!(
        "       multi-millisecond p99s beside small p99*s are time other processes had the CPU"
    );
    println!("Gb/cpu-s = goodput per CPU-second of this process (both ends): unlike wall-clock");
    println!("figures it does not move with other load on the machine; cpu ratio compares those");
}

/// An error of the RDMA phase, followed by the baselines measured before
/// it.
pub(crate) fn with_baselines(
    error: String,
    baseline: Option<Baseline>,
    linux: Option<&Result<LinuxTcp, String>>,
) -> String {
    let mut out = error;
    if let Some(b) = baseline {
        out += &format!("\n  raw TCP on the same link: {:.3} Gbit/s", b.gbps);
    }
    match linux {
        Some(Ok(l)) => out += &format!("\n  Linux TCP over the same loss: {:.3} Gbit/s", l.gbps),
        Some(Err(why)) => out += &format!("\n  Linux TCP baseline missing: {why}"),
        None => {}
    }
    out
}

/// What the raw TCP baseline of a transport runs on.
pub(crate) fn raw_name(t: TransportKind) -> &'static str {
    match t {
        TransportKind::Memory | TransportKind::Tap => "smoltcp raw",
        TransportKind::Kernel => "kernel raw",
    }
}

/// A progress line on stderr: rewritten in place on a terminal, one line
/// per step otherwise.
pub(crate) struct Progress {
    total: usize,
    step: std::cell::Cell<usize>,
    tty: bool,
}

impl Progress {
    pub(crate) fn new(total: usize) -> Self {
        Progress {
            total,
            step: std::cell::Cell::new(0),
            tty: std::io::stderr().is_terminal(),
        }
    }

    pub(crate) fn step(&self, what: &str) {
        let n = self.step.get() + 1;
        self.step.set(n);
        let mut err = std::io::stderr();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K[{n}/{}] {what}", self.total);
        } else {
            let _ = writeln!(err, "[{n}/{}] {what}", self.total);
        }
        let _ = err.flush();
    }

    pub(crate) fn done(&self) {
        if self.tty {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn resent_line_gives_the_share_of_bytes_sent() {
        let mut s = TcpLossStats::default();
        s.sent_bytes = 200_000;
        s.retransmitted_bytes = 3_000;
        s.retransmitted_segments = 2;
        let line = resent_line(&s);
        assert!(
            line.starts_with("resent 1.50% of 200000 bytes sent; retransmitted 2 segments"),
            "{line}"
        );
    }

    fn measured(bytes: u64) -> Measured {
        Measured {
            bytes,
            messages: 1,
            elapsed: Duration::from_secs(1),
            cpu: None,
            latencies: vec![Duration::from_micros(5)],
            undisturbed: None,
        }
    }

    #[test]
    fn linux_baseline_gives_its_own_ratio() {
        let m = measured(125_000_000); // 1 Gbit in 1 s
        let linux = Some(Ok(LinuxTcp {
            gbps: 4.0,
            bbr_gbps: Ok(2.0),
            offloads: Offloads::StillOn,
            rto_min: Duration::from_millis(1),
        }));
        let r = Row::new(Op::Write, 4096, TransportKind::Memory, &m, None).with_linux_tcp(&linux);
        assert_eq!(r.linux_tcp_gbps, Some(4.0));
        assert_eq!(r.vs_linux_tcp, Some(0.25));
        assert_eq!(r.linux_bbr_gbps, Some(2.0));
        assert_eq!(r.vs_linux_bbr, Some(0.5));
        assert!(r.linux_tcp_note.as_deref().unwrap().contains("TSO"));
        let out = json(&[r], &[]);
        assert!(out.contains("\"linux_tcp_gbps\":4.0000"), "{out}");
        assert!(out.contains("\"vs_linux_tcp\":0.2500"), "{out}");
        assert!(out.contains("\"vs_linux_bbr\":0.5000"), "{out}");
    }

    #[test]
    fn missing_linux_baseline_says_why_in_json() {
        let m = measured(1);
        let why = Some(Err("nft: \"no\" \\ here\n".to_string()));
        let r = Row::new(Op::Read, 64, TransportKind::Tap, &m, None).with_linux_tcp(&why);
        assert_eq!(r.vs_linux_tcp, None);
        let out = json(&[r], &[]);
        assert!(out.contains("\"vs_linux_tcp\":null"), "{out}");
        assert!(
            out.contains(r#""linux_tcp_note":"nft: \"no\" \\ here\u000a""#),
            "{out}"
        );
        let lossless = Row::new(Op::Read, 64, TransportKind::Tap, &m, None).with_linux_tcp(&None);
        assert!(json(&[lossless], &[]).contains("\"linux_tcp_note\":null"));
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(human_size(64), "64 B");
        assert_eq!(human_size(4096), "4 KiB");
        assert_eq!(human_size(1 << 20), "1 MiB");
        assert_eq!(human_size(1000), "1000 B");
    }
}
