//! `iwarp bench`: two endpoints in one process, RDMA Write, Read and Send
//! at several sizes, beside the raw TCP goodput of the same link measured
//! in the same run.
//!
//! One thread drives both devices (caller-driven progress, the stack's
//! default): every figure is what the stack itself costs, with no thread
//! hand-offs. `--progress thread` runs each device on a progress thread
//! instead, to compare the two models.

mod baseline;
mod case;
mod cpu;
mod link;
mod linux_stream;
mod linux_tcp;
mod loss_plot;
mod loss_sweep;
mod nft_loss;
mod percentile;
mod plot;
mod raw_many;
mod report;
mod scale;
mod share;
mod svg;
mod wire;
mod wire_linux;
mod wire_report;

use std::process::ExitCode;
use std::time::Duration;

use clap::ValueEnum;
use verbs::{CrcPolicy, Device};

use baseline::Baseline;
use case::{Case, Op};
use link::{LinkOptions, TransportKind};

use super::transport_args::CcArg;
use report::{Progress, Row};

/// The most queue pairs `--qps` opens at once (each is a TCP connection
/// at each end).
const MAX_QPS: usize = 1024;

/// Which progress model drives the two devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressModel {
    /// The benchmark thread polls both devices.
    Caller,
    /// Each device runs a progress thread; the benchmark thread waits on
    /// completion queues.
    Thread,
}

/// Switch for a protocol feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

/// Measure RDMA Write, Read and Send between two endpoints in this process.
///
/// Prints, per operation and size, goodput, message rate and unloaded
/// latency percentiles, beside the raw TCP goodput over the same link
/// configuration measured in the same run, and their ratio.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Network under the two endpoints: smoltcp on an in-memory link, kernel
    /// TCP on loopback, or smoltcp on two TAP devices bridged inside a
    /// network namespace the bench creates (root only).
    #[arg(long, value_enum, default_value = "memory")]
    transport: TransportKind,
    /// Operations to measure, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "write,read,send")]
    ops: Vec<Op>,
    /// Message sizes in bytes, comma separated (suffixes k and m allowed).
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64,1k,4k,16k,64k,256k,1m")]
    sizes: Vec<usize>,
    /// Seconds per operation and size (bandwidth phase; the latency phase
    /// takes a quarter of it).
    #[arg(long, default_value_t = 1.0)]
    duration: f64,
    /// Work requests kept outstanding in the bandwidth phase; by default
    /// enough to keep about 1 MiB in flight, between 2 and 64.
    #[arg(long)]
    depth: Option<usize>,
    /// Frames lost, percent, each way (memory link, or nftables on the TAP
    /// bridge). On a lossy link, and on TAP, the bench also measures Linux
    /// kernel TCP over a veth pair dropping the same share, as a second
    /// baseline.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Extra delay per frame on the memory link, uniform in 0..=N
    /// microseconds and drawn afresh for each, so frames overtake each
    /// other: a link that reorders, with or without `--loss`. The bench
    /// then prints how much each TCP resent.
    #[arg(long, default_value_t = 0, value_name = "N")]
    jitter_us: u64,
    /// Frames corrupted on the memory link, percent (TCP checksum or MPA CRC
    /// must catch each one).
    #[arg(long, default_value_t = 0.0)]
    corrupt: f64,
    /// MPA CRC32c on FPDUs.
    #[arg(long, value_enum, default_value = "on")]
    crc: OnOff,
    /// MPA markers every 512 bytes, both directions.
    #[arg(long, value_enum, default_value = "off")]
    markers: OnOff,
    /// IP MTU of the link (memory and TAP transports).
    #[arg(long, default_value_t = 1500)]
    mtu: usize,
    /// Checksum and segmentation offloads of the TAP devices (virtio-net
    /// header, TCP super-frames the kernel cuts at the MSS); `off` moves one
    /// frame per system call. Always off with `--loss`, so the bridge drops
    /// single frames.
    #[arg(long, value_enum, default_value = "on")]
    offload: OnOff,
    /// Write what crosses the link to this pcap file.
    #[arg(long, value_name = "FILE")]
    pcap: Option<std::path::PathBuf>,
    /// Progress model.
    #[arg(long, value_enum, default_value = "caller")]
    progress: ProgressModel,
    /// Print a JSON array of rows instead of the table.
    #[arg(long)]
    json: bool,
    /// Skip the raw TCP and Linux TCP baselines.
    #[arg(long)]
    no_baseline: bool,
    /// Also measure this many queue pairs at once, comma separated (e.g.
    /// 1,8,64,256): Writes on all of them together, total goodput, CPU
    /// seconds per GB beside the raw transport's, and resident bytes per
    /// idle queue pair.
    #[arg(long, value_delimiter = ',')]
    qps: Vec<usize>,
    /// Spread the `--qps` queue pairs over this many device pairs, each
    /// with its own link and thread, sharing nothing: the way to use more
    /// than one core.
    #[arg(long, default_value_t = 1, value_name = "N")]
    devices: usize,
    /// Message size of the `--qps` runs.
    #[arg(long, value_parser = parse_size, default_value = "64k")]
    qps_size: usize,
    /// Congestion control of the smoltcp transports (memory link, TAP).
    #[arg(long, value_enum, default_value = "cubic")]
    cc: CcArg,
    /// Draw goodput and latency against message size, RDMA beside the raw
    /// transport, into this SVG file; with `--loss-sweep`, goodput against
    /// the loss rate.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<std::path::PathBuf>,
    #[command(flatten)]
    wire: wire::WireArgs,
    /// On a modelled wire, run these flows at once through its one
    /// bottleneck instead (comma separated: rdma, rdma-reno, rdma-bbr,
    /// linux-cubic, linux-bbr; Linux flows need root) and print each
    /// one's goodput, its share of the fair split and Jain's index. RDMA
    /// flows write messages of the one --sizes given (1 MiB by default).
    #[arg(long, value_delimiter = ',', value_parser = share::FlowKind::parse)]
    share: Vec<share::FlowKind>,
    /// On a modelled wire, measure goodput at each of these random loss
    /// rates (percent, comma separated, e.g. 0,1,2,5,10) for RDMA Write
    /// with Reno, Cubic and BBR and for Linux Cubic and BBR (root), one
    /// flow at a time; `--plot` draws it. RDMA writes messages of the one
    /// --sizes given (1 MiB by default).
    #[arg(long, value_delimiter = ',', value_name = "PERCENTS")]
    loss_sweep: Vec<f64>,
}

fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim().to_ascii_lowercase();
    let (digits, mult) = match s.as_bytes().last() {
        Some(b'k') => (&s[..s.len() - 1], 1024),
        Some(b'm') => (&s[..s.len() - 1], 1024 * 1024),
        _ => (&s[..], 1),
    };
    let n: usize = digits.parse().map_err(|_| format!("not a size: {s}"))?;
    let n = n
        .checked_mul(mult)
        .ok_or_else(|| format!("size too large: {s}"))?;
    if n > (1 << 30) {
        return Err(format!("size {n} is over the 1 GiB the bench allows"));
    }
    Ok(n)
}

pub fn run(args: &Args) -> ExitCode {
    match run_inner(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("iwarp bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_inner(args: &Args) -> Result<(), String> {
    if !(args.duration > 0.0 && args.duration <= 3600.0) {
        return Err("--duration must be between 0 and 3600 seconds".into());
    }
    if !(0.0..=100.0).contains(&args.loss) || !(0.0..=100.0).contains(&args.corrupt) {
        return Err("--loss and --corrupt are percentages (0..100)".into());
    }
    if args.transport == TransportKind::Kernel && args.loss > 0.0 {
        return Err("--loss needs --transport memory or tap".into());
    }
    if args.transport != TransportKind::Tap && args.offload == OnOff::Off {
        return Err("--offload off needs --transport tap".into());
    }
    if args.transport != TransportKind::Memory && args.corrupt > 0.0 {
        return Err("--corrupt needs --transport memory".into());
    }
    if args.transport != TransportKind::Memory && args.jitter_us > 0 {
        return Err("--jitter-us needs --transport memory".into());
    }
    if args.jitter_us > 1_000_000 {
        return Err("--jitter-us is at most 1000000 (one second)".into());
    }
    if !(1..=64).contains(&args.devices) {
        return Err("--devices is between 1 and 64".into());
    }
    if let Some(&n) = args.qps.iter().find(|&&n| n == 0 || n > MAX_QPS) {
        return Err(format!("--qps {n}: between 1 and {MAX_QPS}"));
    }
    if let Some(model) = args
        .wire
        .model(args.loss, Duration::from_micros(args.jitter_us))?
    {
        if !args.loss_sweep.is_empty() {
            return run_loss_sweep(args, &model);
        }
        if !args.share.is_empty() {
            return run_shared(args, &model);
        }
        return wire::run(args, &args.wire, model);
    }
    if !args.share.is_empty() {
        return Err("--share needs a modelled wire (--profile, --rtt, --rate or --queue)".into());
    }
    if !args.loss_sweep.is_empty() {
        return Err(
            "--loss-sweep needs a modelled wire (--profile, --rtt, --rate or --queue)".into(),
        );
    }
    let opts = LinkOptions {
        kind: args.transport,
        mtu: args.mtu,
        loss: args.loss / 100.0,
        corrupt: args.corrupt / 100.0,
        jitter: Duration::from_micros(args.jitter_us),
        pcap: args.pcap.clone(),
        tap_offload: tap_offload(args),
        congestion: args.cc.into(),
    };
    let duration = Duration::from_secs_f64(args.duration);
    // Linux TCP is the yardstick on a lossy link, and on TAP (the kernel's
    // own TCP at the same MTU).
    let with_linux = !args.no_baseline && (args.loss > 0.0 || args.transport == TransportKind::Tap);
    let small_wanted = !args.no_baseline;
    let progress = Progress::new(
        args.ops
            .iter()
            .map(|op| if op.is_atomic() { 1 } else { args.sizes.len() })
            .sum::<usize>()
            // Raw TCP before the RDMA cases, and again after them.
            + usize::from(!args.no_baseline) * if args.ops.is_empty() { 1 } else { 2 }
            + usize::from(with_linux)
            + usize::from(small_wanted)
            + args.qps.len(),
    );

    let baseline = if args.no_baseline {
        None
    } else {
        progress.step("raw TCP baseline");
        let m = baseline::measure(&opts, duration.max(Duration::from_millis(500)))?;
        Some(m)
    };
    let small = if small_wanted {
        progress.step("raw TCP, 64-byte records and round trips");
        let d = duration.max(Duration::from_millis(500));
        Some(baseline::measure_small(&opts, d, &args.sizes)?)
    } else {
        None
    };
    // On a lossy link smoltcp's raw TCP is no yardstick; Linux TCP over the
    // same loss is. Missing (no root, no nft) is reported, not fatal.
    let linux = with_linux.then(|| {
        progress.step("Linux TCP baseline");
        // The smoltcp side's minimum RTO, on the Linux routes too.
        let rto_min = match args.transport {
            TransportKind::Memory => transport::TcpTuning::MEMORY_LINK_RTO_MIN,
            _ => transport::TcpTuning::default().rto_min,
        };
        linux_tcp::measure(
            args.mtu,
            opts.loss,
            rto_min,
            duration.max(Duration::from_millis(500)),
        )
    });

    // A link too lossy for the RDMA phase still has its baselines to show.
    let fail = |e: String| report::with_baselines(e, baseline, linux.as_ref());
    let link = link::build(&opts).map_err(fail)?;
    let crc = if args.crc == OnOff::On {
        CrcPolicy::Required
    } else {
        CrcPolicy::Off
    };
    let markers = args.markers == OnOff::On;
    let endpoints =
        case::Endpoints::connect(link.client, link.server, link.server_addr, crc, markers)
            .map_err(fail)?;
    case::warm_up(&endpoints, ProgressModel::Caller).map_err(fail)?;
    let _threads: Vec<_> = match args.progress {
        ProgressModel::Caller => Vec::new(),
        ProgressModel::Thread => {
            vec![
                endpoints.client.spawn_progress_thread(),
                endpoints.server.spawn_progress_thread(),
            ]
        }
    };

    let mut measured = Vec::new();
    for &op in &args.ops {
        // An atomic moves one 8-byte word: one case, whatever the sizes.
        let sizes = if op.is_atomic() {
            vec![8]
        } else {
            args.sizes.clone()
        };
        for &size in &sizes {
            progress.step(&format!("{op} {size} B"));
            let case = Case {
                op,
                size,
                duration,
                depth: args.depth,
                progress: args.progress,
            };
            measured.push((op, size, case.run(&endpoints).map_err(fail)?));
        }
    }
    // What the TCP under RDMA resent, both directions (Read data flows
    // from the server).
    let rdma_tcp = [&endpoints.client, &endpoints.server]
        .iter()
        .filter_map(|d| d.with_transport(|t| t.tcp_loss_stats()))
        .reduce(|mut sum, s| {
            sum.merge(&s);
            sum
        });
    let qp_stats = endpoints.qp_stats();
    endpoints.close();
    drop(endpoints);
    drop(link.guard);

    // Raw TCP again, after the RDMA cases; the ratios use the better run.
    let baseline = match baseline {
        Some(first) if !measured.is_empty() => {
            progress.step("raw TCP baseline, again");
            let second = baseline::measure(&opts, duration.max(Duration::from_millis(500)))?;
            Some(Baseline::better_of(first, second))
        }
        other => other,
    };
    let rows: Vec<Row> = measured
        .iter()
        .map(|(op, size, m)| {
            Row::new(*op, *size, args.transport, m, baseline)
                .with_small(small.as_ref())
                .with_linux_tcp(&linux)
        })
        .collect();

    let scale = scale::Scale {
        opts: &opts,
        crc,
        markers,
        size: args.qps_size,
        duration,
        devices: args.devices,
    };
    let mut scale_rows = Vec::new();
    for &n in &args.qps {
        progress.step(&format!("{n} queue pairs at once"));
        scale_rows.push(scale.run(n).map_err(fail)?);
    }
    progress.done();

    if let Some(path) = &args.plot {
        let svg = plot::Plot {
            rows: &rows,
            baseline,
            small: small.as_ref(),
            title: describe(args),
            raw: report::raw_name(args.transport),
        }
        .svg();
        std::fs::write(path, svg).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }

    if args.json {
        println!("{}", report::json(&rows, &scale_rows));
    } else {
        report::table(&rows, baseline, small.as_ref(), linux.as_ref(), args);
        report::resent(baseline.and_then(|b| b.tcp), rdma_tcp);
        report::scale_table(&scale_rows, args);
        for (who, stats) in ["client", "server"].iter().zip(&qp_stats) {
            println!("\n{who} queue pair after the RDMA cases:\n{stats}");
        }
    }
    Ok(())
}

/// What a device pair is built from, for the report.
pub(crate) fn describe(args: &Args) -> String {
    format!(
        "transport {:?}{}, congestion control {}, MTU {}, CRC {:?}, markers {:?}, loss {}%, {}corrupt {}%, {} progress",
        args.transport,
        match (args.transport, tap_offload(args)) {
            (TransportKind::Tap, true) => " (offloads on)",
            (TransportKind::Tap, false) if args.loss > 0.0 => " (offloads off: loss per frame)",
            (TransportKind::Tap, false) => " (offloads off)",
            _ => "",
        },
        match args.transport {
            TransportKind::Kernel => "of the host",
            _ => transport::CongestionControl::from(args.cc).name(),
        },
        args.mtu,
        args.crc,
        args.markers,
        args.loss,
        match args.jitter_us {
            0 => String::new(),
            us => format!("jitter 0-{us} us, "),
        },
        args.corrupt,
        match args.progress {
            ProgressModel::Caller => "caller-driven",
            ProgressModel::Thread => "threaded",
        }
    )
    .to_lowercase()
}

/// Whether the TAP devices use the kernel's offloads: not on a lossy
/// link, where the bridge's drop would take a whole 64 KiB super-frame
/// instead of one frame (as the Linux baseline turns TSO off there).
fn tap_offload(args: &Args) -> bool {
    args.offload == OnOff::On && args.loss == 0.0
}

/// Drives both devices once; true if either moved.
/// The one message size of `--share` and `--loss-sweep`.
fn one_size(args: &Args) -> usize {
    match args.sizes[..] {
        [one] => one,
        _ => 1 << 20,
    }
}

/// `--loss-sweep`: each flow alone on the wire at each loss rate, as a
/// table and, with `--plot`, a picture.
fn run_loss_sweep(
    args: &Args,
    model: &transport::link_model::LinkModelConfig,
) -> Result<(), String> {
    if !args.share.is_empty() || args.loss > 0.0 {
        return Err("--loss-sweep sets the loss itself: leave out --share and --loss".into());
    }
    let points = loss_sweep::run(args, model, &args.loss_sweep, one_size(args))?;
    let text = loss_sweep::render(&points, model, args.json);
    if let Some(path) = &args.plot {
        let svg = loss_plot::LossPlot {
            points: &points,
            title: loss_sweep::title(model),
        }
        .svg();
        std::fs::write(path, svg).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    println!("{text}");
    Ok(())
}

/// `--share`: the flows together on the modelled wire.
fn run_shared(args: &Args, model: &transport::link_model::LinkModelConfig) -> Result<(), String> {
    let message = one_size(args);
    let crc = if args.crc == OnOff::On {
        CrcPolicy::Required
    } else {
        CrcPolicy::Off
    };
    let shared = share::run(
        &args.share,
        model,
        args.mtu,
        message,
        crc,
        wire::warm_up(model),
        Duration::from_secs_f64(args.duration),
    )?;
    println!("{}", share::render(&shared, model, args.json));
    Ok(())
}

pub(crate) fn progress_both(a: &Device, b: &Device) -> bool {
    let x = a.progress();
    let y = b.progress();
    x | y
}
