//! Measures FPDU framing and deframing throughput (ULPDU octets per second)
//! for the FPDU sizes that matter: a small control message, an Ethernet MSS,
//! a jumbo MSS and the largest ULPDU, with CRC and markers on and off.
//!
//! Run with `cargo run --release -p iwarp-mpa --example framing_bench`.
use std::hint::black_box;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use mpa::{Deframer, Framer};

const BUDGET: Duration = Duration::from_millis(200);
/// Bytes framed per measurement round.
const ROUND: usize = 4 << 20;

fn rate(bytes: usize, elapsed: Duration) -> f64 {
    bytes as f64 / elapsed.as_secs_f64() / 1e9
}

fn main() {
    println!(
        "{:<22}{:>10}{:>14}{:>14}",
        "GB/s of ULPDU", "ULPDU B", "frame", "deframe"
    );
    for (crc, markers) in [(false, false), (true, false), (true, true)] {
        let label = format!(
            "crc {} markers {}",
            if crc { "on" } else { "off" },
            if markers { "on" } else { "off" }
        );
        for max_fpdu in [64usize, 1460, 9000, 65544] {
            let framer = Framer::new(crc, markers);
            let ulpdu_len = framer.max_ulpdu(max_fpdu).min(65535);
            let ulpdu = vec![0x5au8; ulpdu_len];
            let count = (ROUND / ulpdu_len).max(1);
            let mut stream = vec![0u8; count * (framer.fpdu_len(ulpdu_len) + 8)];

            // Framing: `count` FPDUs into one buffer, repeated.
            let mut framed = 0;
            let mut stream_len = 0;
            let start = Instant::now();
            while start.elapsed() < BUDGET {
                let mut f = Framer::new(crc, markers);
                let mut at = 0;
                for _ in 0..count {
                    at += f
                        .frame(&ulpdu[..14], &ulpdu[14..], &mut stream[at..])
                        .expect("fits");
                }
                stream_len = at;
                framed += count * ulpdu_len;
            }
            let tx = rate(framed, start.elapsed());

            // Deframing the same stream in 1448-byte reads (TCP segments).
            let mut deframed = 0;
            let start = Instant::now();
            while start.elapsed() < BUDGET {
                let mut d = Deframer::new(crc, markers, 65535);
                for chunk in stream[..stream_len].chunks(1448) {
                    d.feed(chunk, |u| {
                        deframed += black_box(u).len();
                        ControlFlow::Continue(())
                    })
                    .expect("valid stream");
                }
            }
            let rx = rate(deframed, start.elapsed());
            println!("{label:<22}{ulpdu_len:>10}{tx:>14.2}{rx:>14.2}");
        }
    }
}
