//! The bench's output: a progress line while it runs, then a table or JSON.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use super::baseline::Baseline;
use super::case::{Measured, Op};
use super::link::TransportKind;
use super::linux_tcp::LinuxTcp;
use super::Args;

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
    /// Linux kernel TCP over the same loss and MTU (lossy links only).
    pub linux_tcp_gbps: Option<f64>,
    pub vs_linux_tcp: Option<f64>,
    /// Why that figure is missing, or what qualifies it.
    pub linux_tcp_note: Option<String>,
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
            linux_tcp_note: None,
        }
    }

    /// Adds the Linux TCP baseline, when one was attempted.
    pub(crate) fn with_linux_tcp(mut self, linux: &Option<Result<LinuxTcp, String>>) -> Row {
        match linux {
            None => {}
            Some(Ok(l)) => {
                self.linux_tcp_gbps = Some(l.gbps);
                self.vs_linux_tcp = Some(l.gbps).filter(|b| *b > 0.0).map(|b| self.gbps / b);
                self.linux_tcp_note = linux_note(l);
            }
            Some(Err(why)) => self.linux_tcp_note = Some(why.clone()),
        }
        self
    }
}

fn linux_note(l: &LinuxTcp) -> Option<String> {
    (!l.offloads_off)
        .then(|| "TSO/GSO/GRO could not be turned off: a drop may take a whole burst".into())
}

/// Nearest-rank percentile of sorted samples, in microseconds.
pub(crate) fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1e6
}

fn transport_name(t: TransportKind) -> &'static str {
    match t {
        TransportKind::Memory => "memory",
        TransportKind::Kernel => "kernel",
        TransportKind::Tap => "tap",
    }
}

/// A JSON string literal.
fn string(s: &str) -> String {
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

/// A JSON array of rows (hand-written: flat numbers and short strings).
pub(crate) fn json(rows: &[Row]) -> String {
    let items: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{{\"op\":\"{}\",\"size\":{},\"transport\":\"{}\",\"gbps\":{},\"msgs_per_s\":{},\"lat_us_p50\":{},\"lat_us_p99\":{},\"lat_us_p99_undisturbed\":{},\"undisturbed_share\":{},\"baseline_gbps\":{},\"ratio\":{},\"cpu_gbps\":{},\"baseline_cpu_gbps\":{},\"cpu_ratio\":{},\"linux_tcp_gbps\":{},\"vs_linux_tcp\":{},\"linux_tcp_note\":{}}}",
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
                r.linux_tcp_note.as_deref().map_or("null".into(), string),
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

fn human_size(n: usize) -> String {
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

pub(crate) fn table(
    rows: &[Row],
    baseline: Option<Baseline>,
    linux: Option<&Result<LinuxTcp, String>>,
    args: &Args,
) {
    println!("iwarp bench: {}", super::describe(args));
    let raw = raw_name(args.transport);
    match baseline {
        Some(b) => println!(
            "{raw} goodput on the same link: {:.2} Gbit/s, {} Gbit per CPU-second",
            b.gbps,
            opt(b.cpu_gbps, 0, 2)
        ),
        None => println!("raw TCP baseline skipped"),
    }
    match linux {
        None => {}
        Some(Ok(l)) => println!(
            "Linux TCP goodput over a veth pair, same loss each way (nftables), MTU {}, {}: {:.2} Gbit/s",
            args.mtu,
            if l.offloads_off {
                "TSO/GSO/GRO off"
            } else {
                "TSO/GSO/GRO could not be turned off"
            },
            l.gbps
        ),
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
    if linux.is_some() {
        print!(" {:>12}", "vs Linux TCP");
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
        if linux.is_some() {
            print!(" {}", opt(r.vs_linux_tcp, 12, 3));
        }
        println!(" {} {}", opt(r.cpu_gbps, 10, 3), opt(r.cpu_ratio, 9, 2));
    }
    println!();
    println!("{vs_raw} = RDMA goodput / {raw} goodput; latency = one request at a time, post to completion");
    if linux.is_some() {
        println!(
            "vs Linux TCP = RDMA goodput / Linux kernel TCP goodput over the same loss and MTU"
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
fn raw_name(t: TransportKind) -> &'static str {
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

    #[test]
    fn percentiles_use_nearest_rank() {
        let s: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile(&s, 50.0), 50.0);
        assert_eq!(percentile(&s, 99.0), 99.0);
        assert_eq!(percentile(&s[..1], 99.0), 1.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
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
            offloads_off: false,
        }));
        let r = Row::new(Op::Write, 4096, TransportKind::Memory, &m, None).with_linux_tcp(&linux);
        assert_eq!(r.linux_tcp_gbps, Some(4.0));
        assert_eq!(r.vs_linux_tcp, Some(0.25));
        assert!(r.linux_tcp_note.as_deref().unwrap().contains("TSO"));
        let out = json(&[r]);
        assert!(out.contains("\"linux_tcp_gbps\":4.0000"), "{out}");
        assert!(out.contains("\"vs_linux_tcp\":0.2500"), "{out}");
    }

    #[test]
    fn missing_linux_baseline_says_why_in_json() {
        let m = measured(1);
        let why = Some(Err("nft: \"no\" \\ here\n".to_string()));
        let r = Row::new(Op::Read, 64, TransportKind::Tap, &m, None).with_linux_tcp(&why);
        assert_eq!(r.vs_linux_tcp, None);
        let out = json(&[r]);
        assert!(out.contains("\"vs_linux_tcp\":null"), "{out}");
        assert!(
            out.contains(r#""linux_tcp_note":"nft: \"no\" \\ here\u000a""#),
            "{out}"
        );
        let lossless = Row::new(Op::Read, 64, TransportKind::Tap, &m, None).with_linux_tcp(&None);
        assert!(json(&[lossless]).contains("\"linux_tcp_note\":null"));
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(human_size(64), "64 B");
        assert_eq!(human_size(4096), "4 KiB");
        assert_eq!(human_size(1 << 20), "1 MiB");
        assert_eq!(human_size(1000), "1000 B");
    }
}
