//! Results in perftest's words: its table columns and units, and its
//! `--out_json` keys (as valid JSON).

use std::fmt::Write as _;
use std::time::Duration;

use super::super::op::Op;

/// perftest's `RESULT_LINE`.
pub const RESULT_LINE: &str =
    "---------------------------------------------------------------------------------------";

/// perftest's `LAT_MEASURE_TAIL`: the largest samples left out.
const LAT_MEASURE_TAIL: usize = 2;

/// Bandwidth unit: MB/s (2^20 bytes) by default, Gb/s (10^9 bits) with
/// `--report_gbits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    MiBps,
    Gbps,
}

impl Unit {
    /// Bytes per second in this unit (perftest's `format_factor`).
    pub fn of(self, bytes_per_sec: f64) -> f64 {
        match self {
            Unit::MiBps => bytes_per_sec / 1_048_576.0,
            Unit::Gbps => bytes_per_sec / 125_000_000.0,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Unit::MiBps => "MB/sec",
            Unit::Gbps => "Gb/sec",
        }
    }
}

/// One bandwidth row.
#[derive(Debug, Clone, PartialEq)]
pub struct BwRow {
    pub size: u64,
    /// Messages counted (in duration mode: in the sample window).
    pub iters: u64,
    pub bw_peak: f64,
    pub bw_avg: f64,
    /// Millions of messages per second.
    pub msg_rate: f64,
}

impl BwRow {
    /// A row from `iters` messages of `size` bytes in `secs` seconds, with
    /// the best per-message time seen (None in duration mode, where
    /// perftest reports no peak).
    pub fn new(size: u64, iters: u64, secs: f64, best: Option<Duration>, unit: Unit) -> BwRow {
        let secs = secs.max(1e-9);
        let bytes = size as f64 * iters as f64;
        BwRow {
            size,
            iters,
            bw_peak: best
                .filter(|d| !d.is_zero())
                .map_or(0.0, |d| unit.of(size as f64 / d.as_secs_f64())),
            bw_avg: unit.of(bytes / secs),
            msg_rate: iters as f64 / secs / 1e6,
        }
    }
}

/// The header of a bandwidth table.
pub fn bw_header(unit: Unit) -> String {
    let u = unit.name();
    format!(
        "{RESULT_LINE}\n #bytes     #iterations    BW peak[{u}]    BW average[{u}]   MsgRate[Mpps]"
    )
}

/// One row as perftest prints it (`REPORT_FMT`, or `REPORT_FMT_EXT` with
/// more decimals for small Gb/s figures).
pub fn bw_line(r: &BwRow, unit: Unit) -> String {
    if unit == Unit::Gbps && r.bw_avg < 0.1 {
        format!(
            " {:<7}    {}           {:<7.6}            {:<7.6}            {:<7.6}",
            r.size, r.iters, r.bw_peak, r.bw_avg, r.msg_rate
        )
    } else {
        format!(
            " {:<7}    {:<10}       {:<7.2}            {:<7.2}\t\t   {:<7.6}",
            r.size, r.iters, r.bw_peak, r.bw_avg, r.msg_rate
        )
    }
}

/// Latency figures in microseconds, as `print_report_lat` computes them.
#[derive(Debug, Clone, PartialEq)]
pub struct LatRow {
    pub size: u64,
    pub iters: u64,
    pub min: f64,
    pub max: f64,
    pub typical: f64,
    pub avg: f64,
    pub stdev: f64,
    pub p99: f64,
    pub p999: f64,
}

impl LatRow {
    /// From the times between consecutive posts (`rtt_factor` 2 for
    /// ping-pongs, 1 for READ). perftest sorts them, drops the two
    /// largest, and takes the median as "typical".
    pub fn from_deltas(size: u64, iters: u64, deltas: &mut [Duration], rtt_factor: u32) -> LatRow {
        deltas.sort_unstable();
        let keep = deltas
            .len()
            .saturating_sub(LAT_MEASURE_TAIL)
            .max(1)
            .min(deltas.len());
        let d = &deltas[..keep];
        let f = f64::from(rtt_factor.max(1));
        let us = |x: Duration| x.as_secs_f64() * 1e6 / f;
        if d.is_empty() {
            return LatRow {
                size,
                iters,
                min: 0.0,
                max: 0.0,
                typical: 0.0,
                avg: 0.0,
                stdev: 0.0,
                p99: 0.0,
                p999: 0.0,
            };
        }
        let n = d.len();
        let typical = if (n - 1) % 2 == 1 {
            (us(d[n / 2]) + us(d[n / 2 - 1])) / 2.0
        } else {
            us(d[n / 2])
        };
        let avg = d.iter().map(|&x| us(x)).sum::<f64>() / n as f64;
        let var = d.iter().map(|&x| (avg - us(x)).powi(2)).sum::<f64>() / n as f64;
        let pct = |p: f64| us(d[((n as f64 * p).ceil() as usize).clamp(1, n) - 1]);
        LatRow {
            size,
            iters,
            min: us(d[0]),
            max: us(d[n - 1]),
            typical,
            avg,
            stdev: var.sqrt(),
            p99: pct(0.99),
            p999: pct(0.999),
        }
    }
}

pub fn lat_header() -> String {
    format!(
        "{RESULT_LINE}\n #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
    )
}

pub fn lat_line(r: &LatRow) -> String {
    format!(
        " {:<7} {}          {:<7.2}        {:<7.2}      {:<7.2}  \t       {:<7.2}     \t{:<7.2}\t\t{:<7.2} \t\t{:<7.2}",
        r.size, r.iters, r.min, r.max, r.typical, r.avg, r.stdev, r.p99, r.p999
    )
}

/// Duration-mode latency: average one-way (or READ) time and transactions
/// per second over the sample window.
#[derive(Debug, Clone, PartialEq)]
pub struct LatDurRow {
    pub size: u64,
    pub iters: u64,
    pub avg: f64,
    pub tps: f64,
}

impl LatDurRow {
    pub fn new(size: u64, iters: u64, window: Duration, rtt_factor: u32) -> LatDurRow {
        let secs = window.as_secs_f64().max(1e-9);
        let n = iters.max(1) as f64;
        LatDurRow {
            size,
            iters,
            avg: secs * 1e6 / f64::from(rtt_factor.max(1)) / n,
            tps: iters as f64 / secs,
        }
    }
}

pub fn lat_dur_header() -> String {
    format!("{RESULT_LINE}\n #bytes        #iterations       t_avg[usec]    tps average")
}

pub fn lat_dur_line(r: &LatDurRow) -> String {
    format!(
        " {:<7}       {}            {:<7.2}        {:<7.2}",
        r.size, r.iters, r.avg, r.tps
    )
}

/// perftest's test name (`testsStr` and the BW/Latency suffix).
pub fn test_name(op: Op) -> &'static str {
    match op {
        Op::Write => "RDMA_Write_BW_Test",
        Op::Read => "RDMA_Read_BW_Test",
        Op::Send => "Send_BW_Test",
        Op::WriteLat => "RDMA_Write_Latency_Test",
        Op::ReadLat => "RDMA_Read_Latency_Test",
        Op::SendLat => "Send_Latency_Test",
    }
}

/// One result row of any kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Row {
    Bw(BwRow),
    Lat(LatRow),
    LatDur(LatDurRow),
}

impl Row {
    /// perftest's `results` keys for this row.
    fn json(&self, out: &mut String) {
        match self {
            Row::Bw(r) => {
                let _ = write!(
                    out,
                    "{{\"MsgSize\":{},\"n_iterations\":{},\"BW_peak\":{:.2},\"BW_average\":{:.2},\"MsgRate\":{:.6}}}",
                    r.size, r.iters, r.bw_peak, r.bw_avg, r.msg_rate
                );
            }
            Row::Lat(r) => {
                let _ = write!(
                    out,
                    "{{\"MsgSize\":{},\"n_iterations\":{},\"t_min\":{:.2},\"t_max\":{:.2},\"t_typical\":{:.2},\"t_avg\":{:.2},\"t_stdev\":{:.2},\"percentile_99\":{:.2},\"percentile_99.9\":{:.2}}}",
                    r.size, r.iters, r.min, r.max, r.typical, r.avg, r.stdev, r.p99, r.p999
                );
            }
            Row::LatDur(r) => {
                let _ = write!(
                    out,
                    "{{\"MsgSize\":{},\"n_iterations\":{},\"t_avg\":{:.2},\"tps_average\":{:.2}}}",
                    r.size, r.iters, r.avg, r.tps
                );
            }
        }
    }
}

/// What one side ends a run with.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub op: Op,
    pub role: &'static str,
    pub unit: Unit,
    pub rows: Vec<Row>,
    /// Payload bytes this side moved (client) or saw arrive (server, when
    /// it can tell: SENDs), over the whole run, warm-up and cool-down
    /// included.
    pub payload_bytes: Option<u64>,
    /// Payload bytes the peer says it moved over the whole run, when it
    /// said so. A perftest report gives only its iterations, which in
    /// duration mode count the sample window: those are
    /// [`Outcome::report_bytes`], never this.
    pub peer_bytes: Option<u64>,
    /// TCP payload bytes this side received and sent over the run.
    pub wire_rx: u64,
    pub wire_tx: u64,
    /// Why the two sides' accounts do not fit together, if they do not.
    pub disagreement: Option<String>,
}

impl Outcome {
    /// The payload the printed bandwidth rows stand for: each row's
    /// iterations times its size. In duration mode that is the sample
    /// window only (perftest counts no warm-up or cool-down); a WRITE or
    /// READ server prints the client's report, so both ends give the same
    /// figure.
    pub fn report_bytes(&self) -> Option<u64> {
        let mut bytes = None::<u64>;
        for row in &self.rows {
            if let Row::Bw(r) = row {
                let b = r.size.checked_mul(r.iters)?;
                bytes = Some(bytes.unwrap_or(0).checked_add(b)?);
            }
        }
        bytes
    }

    /// One JSON object: perftest's `test_info` and `results` (the last
    /// size, as perftest's file holds), every size under `all_results`,
    /// and the byte accounts.
    pub fn json(&self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "{{\"test_info\":{{\"test\":\"{}\",\"role\":\"{}\",\"Number_of_qps\":1,\"Transport_type\":\"IW\",\"Connection_type\":\"RC\",\"rdma_cm_QPs\":\"ON\",\"BW_unit\":\"{}\"}},\"results\":",
            test_name(self.op),
            self.role,
            self.unit.name()
        );
        match self.rows.last() {
            Some(r) => r.json(&mut s),
            None => s.push_str("{}"),
        }
        s.push_str(",\"all_results\":[");
        for (i, r) in self.rows.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            r.json(&mut s);
        }
        s.push(']');
        let opt = |v: Option<u64>| v.map_or("null".to_string(), |b| b.to_string());
        let _ = write!(
            s,
            ",\"payload_bytes\":{},\"report_bytes\":{},\"peer_payload_bytes\":{},\"wire_rx_bytes\":{},\"wire_tx_bytes\":{},\"disagreement\":{}}}",
            opt(self.payload_bytes),
            opt(self.report_bytes()),
            opt(self.peer_bytes),
            self.wire_rx,
            self.wire_tx,
            self.disagreement
                .as_ref()
                .map_or("null".to_string(), |d| format!("\"{}\"", d.replace('"', "'")))
        );
        s
    }
}

/// Checks a payload claim against the TCP bytes that carried it: payload
/// cannot exceed them, whatever the clock says (a figure such as 48.8
/// Gbit/s over a path that moved a tenth of it shows up here).
pub fn check_accounts(who: &str, claimed: u64, carried: u64) -> Option<String> {
    (claimed > carried).then(|| {
        format!(
            "{who} reports {claimed} payload bytes, but only {carried} bytes of TCP payload carried the test"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_rows_use_perftests_units() {
        // 5000 messages of 64 KiB in one second.
        let r = BwRow::new(65536, 5000, 1.0, None, Unit::MiBps);
        assert!((r.bw_avg - 312.5).abs() < 1e-9, "{}", r.bw_avg);
        assert!((r.msg_rate - 0.005).abs() < 1e-12);
        assert_eq!(r.bw_peak, 0.0);
        let g = BwRow::new(
            65536,
            5000,
            1.0,
            Some(Duration::from_micros(100)),
            Unit::Gbps,
        );
        assert!((g.bw_avg - 2.62144).abs() < 1e-9, "{}", g.bw_avg);
        assert!((g.bw_peak - 5.24288).abs() < 1e-9, "{}", g.bw_peak);
        let line = bw_line(&r, Unit::MiBps);
        assert!(
            line.starts_with(" 65536      5000             0.00 "),
            "{line:?}"
        );
        assert!(line.contains("312.50"), "{line:?}");
        assert!(bw_header(Unit::Gbps).contains("BW average[Gb/sec]"));
    }

    #[test]
    fn latency_drops_the_tail_and_halves_ping_pongs() {
        let mut d: Vec<Duration> = (1..=10).map(|i| Duration::from_micros(i * 2)).collect();
        d.push(Duration::from_secs(1));
        d.push(Duration::from_secs(2));
        let r = LatRow::from_deltas(2, 13, &mut d, 2);
        assert_eq!(r.min, 1.0);
        assert_eq!(r.max, 10.0, "the two largest are dropped");
        assert_eq!(r.avg, 5.5);
        assert_eq!(r.typical, 5.5, "median of an even count");
        assert_eq!(r.p99, 10.0);
        let line = lat_line(&r);
        assert!(line.starts_with(" 2       13          1.00 "), "{line:?}");
    }

    #[test]
    fn json_is_one_object_with_perftest_keys() {
        let o = Outcome {
            op: Op::Write,
            role: "client",
            unit: Unit::Gbps,
            rows: vec![Row::Bw(BwRow::new(4096, 10, 1.0, None, Unit::Gbps))],
            payload_bytes: Some(40960),
            peer_bytes: None,
            wire_rx: 1,
            wire_tx: 50000,
            disagreement: None,
        };
        let j = o.json();
        assert!(
            j.starts_with("{\"test_info\":{\"test\":\"RDMA_Write_BW_Test\""),
            "{j}"
        );
        assert!(
            j.contains("\"results\":{\"MsgSize\":4096,\"n_iterations\":10,"),
            "{j}"
        );
        assert!(j.contains("\"peer_payload_bytes\":null"), "{j}");
        assert!(j.ends_with("\"disagreement\":null}"), "{j}");
    }

    #[test]
    fn report_bytes_are_the_rows_iterations_not_the_run() {
        let row = |size, iters| Row::Bw(BwRow::new(size, iters, 1.0, None, Unit::MiBps));
        let mut o = Outcome {
            op: Op::Write,
            role: "server",
            unit: Unit::MiBps,
            rows: vec![row(1 << 20, 619)],
            payload_bytes: Some(1501 << 20),
            peer_bytes: None,
            wire_rx: 0,
            wire_tx: 0,
            disagreement: None,
        };
        assert_eq!(o.report_bytes(), Some(619 << 20));
        assert!(
            o.json().contains("\"report_bytes\":649068544,"),
            "{}",
            o.json()
        );
        o.rows.push(row(2, 10));
        assert_eq!(o.report_bytes(), Some((619 << 20) + 20));
        o.rows = vec![row(u64::MAX, 2)];
        assert_eq!(o.report_bytes(), None, "overflow is no figure");
        o.rows.clear();
        assert_eq!(o.report_bytes(), None);
    }

    #[test]
    fn accounts_flag_claims_beyond_the_wire() {
        assert_eq!(check_accounts("the client", 1000, 1200), None);
        assert_eq!(check_accounts("the client", 1200, 1200), None);
        let why = check_accounts("the client", 2000, 1200).unwrap();
        assert!(
            why.contains("the client reports 2000") && why.contains("only 1200"),
            "{why}"
        );
    }
}
