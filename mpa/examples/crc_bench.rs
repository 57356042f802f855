//! Measures CRC32c candidates for the MPA data path and prints GB/s at the
//! sizes that matter: a small control FPDU (64 B), an FPDU sized to an
//! Ethernet MSS (1460 B) and a large FPDU over a jumbo/loopback MSS (64 KiB).
//!
//! Run with `cargo run --release -p mpa --example crc_bench`.
use std::hint::black_box;
use std::time::{Duration, Instant};

const SIZES: [usize; 3] = [64, 1460, 64 * 1024];
/// Each measurement runs for at least this long.
const BUDGET: Duration = Duration::from_millis(300);

/// A named CRC32c implementation.
type Candidate = (&'static str, Box<dyn Fn(&[u8]) -> u32>);

fn measure(name: &str, data: &[u8], f: &dyn Fn(&[u8]) -> u32) -> f64 {
    // Warm up (and make sure every candidate agrees with the oracle).
    let expected = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI).checksum(data);
    assert_eq!(f(data), expected, "{name} disagrees with the oracle");
    let mut iterations: u64 = 0;
    let start = Instant::now();
    let mut elapsed = Duration::ZERO;
    while elapsed < BUDGET {
        for _ in 0..64 {
            black_box(f(black_box(data)));
        }
        iterations += 64;
        elapsed = start.elapsed();
    }
    (iterations as f64 * data.len() as f64) / elapsed.as_secs_f64() / 1e9
}

fn main() {
    let table1 = crc::Crc::<u32, crc::Table<1>>::new(&crc::CRC_32_ISCSI);
    let table16 = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI);
    let candidates: Vec<Candidate> = vec![
        (
            "crc (Table<1>)",
            Box::new(move |d: &[u8]| table1.checksum(d)),
        ),
        (
            "crc (Table<16>, slice-by-16)",
            Box::new(move |d: &[u8]| table16.checksum(d)),
        ),
        ("crc32c (SSE4.2)", Box::new(crc32c::crc32c)),
        (
            "crc-fast (SIMD)",
            Box::new(|d: &[u8]| crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, d) as u32),
        ),
        ("crc32c-fold (AVX-512)", Box::new(crc32c_fold::crc32c)),
        ("mpa::crc32c (data path)", Box::new(mpa::crc32c::crc32c)),
    ];
    let data: Vec<u8> = (0..*SIZES.last().unwrap_or(&0))
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0])
        .collect();
    print!("{:<30}", "GB/s");
    for size in SIZES {
        print!("{:>12}", format!("{size} B"));
    }
    println!();
    for (name, f) in &candidates {
        print!("{name:<30}");
        for size in SIZES {
            print!("{:>12.2}", measure(name, &data[..size], f.as_ref()));
        }
        println!();
    }
}
