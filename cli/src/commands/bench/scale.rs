//! `--qps`: many queue pairs at once between the two endpoints.
//!
//! For each count, a fresh link and device pair: the queue pairs connect
//! a few at a time (smoltcp has no kernel backlog), the process's resident
//! memory is read before and after (idle queue pairs, nothing sent yet),
//! then every client queue pair keeps Writes outstanding for the duration
//! while one thread drives both devices. The figures: total goodput, CPU
//! seconds per GB moved (set beside raw TCP's over as many connections,
//! see `raw_many`), and resident bytes per idle queue pair.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use verbs::{
    wr, AcceptParams, Access, CmEvent, ConnectParams, CrcPolicy, Device, ListenOptions, MpaOptions,
    QpInit, QueuePair,
};

use super::link::{self, LinkOptions};
use super::raw_many::{self, RawMany};
use super::{cpu, progress_both};

/// Connections started at once: within smoltcp's listen backlog.
const CONNECT_BATCH: usize = 4;
/// No connection or completion is waited for longer than this.
const STALL_LIMIT: Duration = Duration::from_secs(30);
/// Bytes the Writes of all queue pairs keep in flight together, about.
const TARGET_IN_FLIGHT: usize = 1 << 20;
/// Fewer queue pairs than this grow the resident set by less than the
/// allocator's reuse of memory earlier cases freed: no figure is given.
const MIN_QPS_FOR_MEMORY: usize = 8;
/// Writes outstanding per queue pair, at most.
const MAX_DEPTH: usize = 16;

/// What one queue-pair count measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScaleRow {
    pub qps: usize,
    pub size: usize,
    pub gbps: f64,
    /// CPU seconds of the process per GB (1e9 bytes) of payload moved.
    pub cpu_s_per_gb: Option<f64>,
    /// Resident bytes the process grew by per queue pair (one end of a
    /// connection: each connection counts twice, a queue pair at each end)
    /// once connected and idle. `None` where resident memory is unknown,
    /// or for too few queue pairs to tell from allocator noise.
    pub idle_bytes_per_qp: Option<f64>,
    /// Seconds it took to connect them all.
    pub connect_secs: f64,
    /// Raw TCP over as many connections, measured right after; with
    /// several devices, not measured.
    pub raw: Option<RawMany>,
    /// Device pairs the queue pairs were spread over, each on its thread.
    pub devices: usize,
}

/// Settings shared by every count.
pub(crate) struct Scale<'a> {
    pub opts: &'a LinkOptions,
    pub crc: CrcPolicy,
    pub markers: bool,
    pub size: usize,
    pub duration: Duration,
    /// Device pairs, each with its own link and thread (`--devices`).
    pub devices: usize,
}

/// What one device pair measured.
struct PairRun {
    writes: u64,
    elapsed: Duration,
    /// CPU time of the process, and of this thread alone, while measured.
    cpu_used: Option<Duration>,
    thread_cpu_used: Option<Duration>,
    idle_bytes_per_qp: Option<f64>,
    connect_secs: f64,
}

/// Where the threads of several device pairs wait for each other: all
/// connected before the clock starts, all measured before anyone stops.
/// A thread that failed opens every gate, so none waits forever.
struct Gate {
    arrived: AtomicUsize,
    failed: AtomicBool,
    parties: usize,
}

impl Gate {
    fn new(parties: usize) -> Gate {
        Gate {
            arrived: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
            parties,
        }
    }

    /// Waits for every party; false if one failed. Sleeps between looks,
    /// so a waiting thread takes no core from the measured ones.
    fn pass(&self) -> bool {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        let start = Instant::now();
        loop {
            if self.failed.load(Ordering::SeqCst) || start.elapsed() > STALL_LIMIT {
                return false;
            }
            if self.arrived.load(Ordering::SeqCst) >= self.parties {
                return true;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn fail(&self) {
        self.failed.store(true, Ordering::SeqCst);
    }
}

impl Scale<'_> {
    pub(crate) fn run(&self, qps: usize) -> Result<ScaleRow, String> {
        let qps = qps.max(1);
        let devices = self.devices.clamp(1, qps);
        if devices > 1 {
            return self.run_spread(qps, devices);
        }
        let pair = self.run_pair(qps, None)?;
        let raw = raw_many::measure(self.opts, qps, self.size, self.duration)?;
        let bytes = pair.writes as f64 * self.size as f64;
        Ok(ScaleRow {
            qps,
            size: self.size,
            gbps: bytes * 8.0 / pair.elapsed.as_secs_f64().max(1e-9) / 1e9,
            cpu_s_per_gb: pair
                .cpu_used
                .filter(|_| bytes > 0.0)
                .map(|c| c.as_secs_f64() / (bytes / 1e9)),
            idle_bytes_per_qp: pair.idle_bytes_per_qp,
            connect_secs: pair.connect_secs,
            raw: Some(raw),
            devices: 1,
        })
    }

    /// `qps` queue pairs spread over `devices` device pairs, each with its
    /// own link and thread and nothing shared: total goodput, and CPU
    /// seconds of the whole process per GB.
    fn run_spread(&self, qps: usize, devices: usize) -> Result<ScaleRow, String> {
        let (start, end) = (Gate::new(devices + 1), Gate::new(devices + 1));
        let results = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..devices)
                .map(|i| {
                    // The remainder goes to the first ones.
                    let share = qps / devices + usize::from(i < qps % devices);
                    let gates = (&start, &end);
                    scope.spawn(move || {
                        let r = self.run_pair(share, Some(gates));
                        if r.is_err() {
                            gates.0.fail();
                            gates.1.fail();
                        }
                        r
                    })
                })
                .collect();
            let ok = start.pass();
            let t0 = Instant::now();
            let ok = ok && end.pass();
            let elapsed = t0.elapsed();
            let runs: Vec<Result<PairRun, String>> = threads
                .into_iter()
                .map(|t| {
                    t.join()
                        .unwrap_or_else(|_| Err("a device thread panicked".into()))
                })
                .collect();
            (ok, elapsed, runs)
        });
        let (ok, elapsed, runs) = results;
        let runs: Vec<PairRun> = runs.into_iter().collect::<Result<_, _>>()?;
        if !ok {
            return Err(format!("{devices} devices: the threads did not meet"));
        }
        // Each thread's own CPU time: the process's loses a thread's time
        // once it ends, and this thread only slept.
        let cpu_used = runs
            .iter()
            .map(|r| r.thread_cpu_used)
            .sum::<Option<Duration>>();
        let bytes = runs.iter().map(|r| r.writes).sum::<u64>() as f64 * self.size as f64;
        Ok(ScaleRow {
            qps,
            size: self.size,
            gbps: bytes * 8.0 / elapsed.as_secs_f64().max(1e-9) / 1e9,
            cpu_s_per_gb: cpu_used
                .filter(|_| bytes > 0.0)
                .map(|c| c.as_secs_f64() / (bytes / 1e9)),
            idle_bytes_per_qp: None,
            connect_secs: runs.iter().map(|r| r.connect_secs).fold(0.0, f64::max),
            raw: None,
            devices,
        })
    }

    /// One device pair with `qps` queue pairs, driven by this thread; with
    /// `gates`, the measured phase starts and ends with the other pairs'.
    fn run_pair(&self, qps: usize, gates: Option<(&Gate, &Gate)>) -> Result<PairRun, String> {
        let depth = (TARGET_IN_FLIGHT / (self.size.max(1) * qps)).clamp(1, MAX_DEPTH);
        let link = link::build_with(self.opts, None)?;
        let client = Device::new(link.client);
        let server = Device::new(link.server);
        let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
        let cq_len = qps * depth + 16;
        let (ccq, scq) = (client.create_cq(cq_len), server.create_cq(cq_len));
        let mut mpa = MpaOptions::default();
        mpa.crc = self.crc;
        mpa.markers = self.markers;
        let listener = server
            .listen(
                link.server_addr.port(),
                ListenOptions::default().with_mpa(mpa.clone()),
            )
            .map_err(|e| format!("listen: {e}"))?;

        let before = resident_bytes();
        let start = Instant::now();
        let mut pairs: Vec<(QueuePair, QueuePair)> = Vec::with_capacity(qps);
        while pairs.len() < qps {
            let n = CONNECT_BATCH.min(qps - pairs.len());
            let mut batch = Vec::with_capacity(n);
            for _ in 0..n {
                let c = client
                    .create_qp(&cpd, QpInit::new(&ccq))
                    .map_err(|e| e.to_string())?;
                let s = server
                    .create_qp(&spd, QpInit::new(&scq))
                    .map_err(|e| e.to_string())?;
                c.connect(
                    link.server_addr,
                    ConnectParams::default()
                        .private_data(Vec::new())
                        .ird(16)
                        .ord(16)
                        .mpa(mpa.clone()),
                )
                .map_err(|e| format!("connect: {e}"))?;
                batch.push((c, s));
            }
            establish(&client, &server, &listener, &batch)?;
            pairs.extend(batch);
        }
        let connect_secs = start.elapsed().as_secs_f64();
        // Let the last handshakes' acknowledgements settle.
        let settle = Instant::now();
        while settle.elapsed() < Duration::from_millis(20) {
            progress_both(&client, &server);
        }
        let after = resident_bytes();
        let idle_bytes_per_qp = match (before, after) {
            (Some(b), Some(a)) if qps >= MIN_QPS_FOR_MEMORY => {
                Some(a.saturating_sub(b) as f64 / (2 * qps) as f64)
            }
            _ => None,
        };

        let access = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
        let source = cpd
            .register_vec((0..self.size).map(|i| (i % 251) as u8).collect(), access)
            .map_err(|e| e.to_string())?;
        let sink = spd
            .register(self.size.max(1), access)
            .map_err(|e| e.to_string())?;
        let post = |i: usize| -> Result<(), String> {
            let sge = source.sge(0, self.size).map_err(|e| e.to_string())?;
            pairs[i]
                .0
                .post_send(wr::write(i as u64, vec![sge], sink.rkey(), sink.addr()))
                .map_err(|e| format!("post: {e}"))
        };
        let mut outstanding = 0usize;
        for i in 0..qps {
            for _ in 0..depth {
                post(i)?;
                outstanding += 1;
            }
        }
        let mut done = 0u64;
        if let Some((start, _)) = gates {
            if !start.pass() {
                return Err("another device failed".into());
            }
        }
        let cpu_start = cpu::process_cpu();
        let thread_cpu_start = cpu::thread_cpu();
        let start = Instant::now();
        let mut last = start;
        while start.elapsed() < self.duration {
            progress_both(&client, &server);
            let mut took = false;
            // Only what is queued: polling an empty queue would run another
            // turn of progress (see `case::Driver::reap`).
            while !ccq.is_empty() {
                let Some(wc) = ccq.poll_one().map_err(|e| e.to_string())? else {
                    break;
                };
                check(&wc)?;
                done += 1;
                took = true;
                post(wc.wr_id as usize)?;
            }
            if took {
                last = Instant::now();
            } else if last.elapsed() > STALL_LIMIT {
                return Err(format!(
                    "{qps} queue pairs: no completion for {STALL_LIMIT:?}"
                ));
            }
        }
        let elapsed = start.elapsed();
        let cpu_used = cpu::since(cpu_start);
        let thread_cpu_used = cpu::thread_cpu()
            .zip(thread_cpu_start)
            .map(|(now, then)| now.saturating_sub(then));
        if let Some((_, end)) = gates {
            end.pass();
        }
        // Take the rest, so nothing is left posted when the pairs close.
        let mut left = outstanding;
        let drain = Instant::now();
        while left > 0 && drain.elapsed() < STALL_LIMIT {
            progress_both(&client, &server);
            while let Some(wc) = ccq.poll_one().map_err(|e| e.to_string())? {
                check(&wc)?;
                left -= 1;
            }
        }
        outstanding = left;
        if outstanding > 0 {
            return Err(format!(
                "{qps} queue pairs: {outstanding} Writes never completed"
            ));
        }
        for (c, _) in &pairs {
            c.disconnect();
        }
        let close = Instant::now();
        while close.elapsed() < Duration::from_millis(200) && progress_both(&client, &server) {}
        drop(link.guard);
        Ok(PairRun {
            writes: done,
            elapsed,
            cpu_used,
            thread_cpu_used,
            idle_bytes_per_qp,
            connect_secs,
        })
    }
}

/// Accepts the batch's requests on its server queue pairs and waits until
/// both ends of every connection are established.
fn establish(
    client: &Device,
    server: &Device,
    listener: &verbs::Listener,
    batch: &[(QueuePair, QueuePair)],
) -> Result<(), String> {
    let start = Instant::now();
    let mut accepted = 0;
    let mut up = vec![[false; 2]; batch.len()];
    while up.iter().any(|u| !(u[0] && u[1])) {
        if start.elapsed() > STALL_LIMIT {
            return Err("queue pairs did not connect".into());
        }
        progress_both(client, server);
        while accepted < batch.len() {
            let Some(req) = listener.try_request() else {
                break;
            };
            req.accept(
                &batch[accepted].1,
                AcceptParams::default()
                    .private_data(Vec::new())
                    .ird(16)
                    .ord(16),
            )
            .map_err(|e| format!("accept: {e}"))?;
            accepted += 1;
        }
        for ((c, s), u) in batch.iter().zip(up.iter_mut()) {
            for (qp, flag) in [c, s].into_iter().zip(u.iter_mut()) {
                match qp.try_event() {
                    Some(CmEvent::Established(_)) => *flag = true,
                    Some(other) => return Err(format!("connecting: {other:?}")),
                    None => {}
                }
            }
        }
    }
    Ok(())
}

fn check(wc: &verbs::WorkCompletion) -> Result<(), String> {
    if wc.is_success() {
        Ok(())
    } else {
        Err(format!(
            "completion failed: {:?} ({:?})",
            wc.status, wc.opcode
        ))
    }
}

/// Resident set size of the process, from `/proc/self/statm` (pages of
/// 4 KiB; the second field).
fn resident_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    parse_statm_resident(&text)
}

fn parse_statm_resident(text: &str) -> Option<u64> {
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    pages.checked_mul(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statm_resident_is_the_second_field_in_pages() {
        assert_eq!(
            parse_statm_resident("1000 25 7 1 0 30 0\n"),
            Some(25 * 4096)
        );
        assert_eq!(parse_statm_resident("1000"), None);
        assert_eq!(parse_statm_resident(""), None);
    }

    #[test]
    fn resident_memory_is_readable_here() {
        if let Some(n) = resident_bytes() {
            assert!(n > 0);
        } else {
            eprintln!("no /proc/self/statm here: skipping");
        }
    }
}
