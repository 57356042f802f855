//! Measures CRC32c candidates for the MPA data path and prints GB/s at the
//! sizes that matter: a small control FPDU (64 B), an FPDU sized to an
//! Ethernet MSS (1460 B) and a large FPDU over a jumbo/loopback MSS (64 KiB).
//!
//! Rates are per second of this thread's CPU time (from
//! `/proc/thread-self/schedstat`, wall clock where that cannot be read), so
//! other load on a shared machine moves them less. Each candidate runs
//! twice: over independent calls (the CPU overlaps one call with the next)
//! and chained, each call starting from the register the one before left
//! (the next call waits for the last: nearer the data path, where each
//! FPDU's CRC sits between copies and protocol work).
//!
//! Run with `cargo run --release -p iwarp-mpa --example crc_bench`.
use std::hint::black_box;
use std::time::{Duration, Instant};

const SIZES: [usize; 3] = [64, 1460, 64 * 1024];
/// Each measurement runs for at least this long.
const BUDGET: Duration = Duration::from_millis(300);

/// A named CRC32c implementation.
type Candidate = (&'static str, Box<dyn Fn(&[u8]) -> u32>);

/// Nanoseconds this thread has run on a CPU, if Linux says.
fn cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// GB/s of `f` over `data`, per second of CPU time.
fn measure(name: &str, data: &[u8], f: &dyn Fn(&[u8]) -> u32) -> f64 {
    // Warm up (and make sure every candidate agrees with the oracle).
    let expected = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI).checksum(data);
    assert_eq!(f(data), expected, "{name} disagrees with the oracle");
    let mut iterations: u64 = 0;
    let start = Instant::now();
    let cpu_start = cpu_ns();
    while start.elapsed() < BUDGET {
        for _ in 0..64 {
            black_box(f(black_box(data)));
        }
        iterations += 64;
    }
    let secs = match (cpu_start, cpu_ns()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
        _ => start.elapsed().as_secs_f64(),
    };
    (iterations as f64 * data.len() as f64) / secs / 1e9
}

/// GB/s of `update` over `data` with each call starting from the register
/// the one before left, per second of CPU time.
fn measure_chained(data: &[u8], update: &dyn Fn(u32, &[u8]) -> u32) -> f64 {
    let expected = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI).checksum(data);
    assert_eq!(!update(!0, data), expected, "chained update disagrees");
    let mut iterations: u64 = 0;
    let mut register = !0u32;
    let start = Instant::now();
    let cpu_start = cpu_ns();
    while start.elapsed() < BUDGET {
        for _ in 0..64 {
            register = update(register, black_box(data));
        }
        iterations += 64;
    }
    black_box(register);
    let secs = match (cpu_start, cpu_ns()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
        _ => start.elapsed().as_secs_f64(),
    };
    (iterations as f64 * data.len() as f64) / secs / 1e9
}

/// `crc-fast`'s register update: its state is the register, `finalize`
/// inverts it.
fn crc_fast_update(register: u32, data: &[u8]) -> u32 {
    let mut d = crc_fast::Digest::new_with_init_state(
        crc_fast::CrcAlgorithm::Crc32Iscsi,
        u64::from(register),
    );
    d.update(data);
    !(d.finalize() as u32)
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
    type Update = fn(u32, &[u8]) -> u32;
    let chained: [(&str, Update); 2] = [
        ("crc-fast, chained", crc_fast_update),
        ("crc32c-fold, chained", crc32c_fold::update),
    ];
    for (name, update) in chained {
        print!("{name:<30}");
        for size in SIZES {
            print!("{:>12.2}", measure_chained(&data[..size], &update));
        }
        println!();
    }
    // The sender's gather: payload copied into the send buffer and its CRC
    // computed, as two passes (copy, then CRC over the copy) or fused.
    let mut dst = vec![0u8; *SIZES.last().unwrap_or(&0)];
    type Copy = fn(u32, &mut [u8], &[u8]) -> u32;
    let copies: [(&str, Copy); 3] = [
        ("copy only (memcpy)", |r, d, s| {
            d.copy_from_slice(s);
            r
        }),
        ("copy, then crc32c-fold", |r, d, s| {
            d.copy_from_slice(s);
            crc32c_fold::update(r, d)
        }),
        ("copy_update (fused)", crc32c_fold::copy_update),
    ];
    for (name, copy) in copies {
        print!("{name:<30}");
        for size in SIZES {
            print!(
                "{:>12.2}",
                measure_copy(&data[..size], &mut dst[..size], copy)
            );
        }
        println!();
    }
    // One full-size FPDU as the sender builds it at an Ethernet MSS: 16
    // octets of ULPDU_Length and tagged DDP header already in place, 1440
    // octets of payload gathered behind them, the CRC over all 1456.
    println!("one 1460-byte FPDU (16-octet header, 1440-octet payload), GB/s of payload:");
    let fpdus: [(&str, Copy); 2] = [
        ("  copy, then CRC over FPDU", |r, d, s| {
            d[16..].copy_from_slice(s);
            crc32c_fold::update(r, d)
        }),
        ("  CRC of header, fused copy", |r, d, s| {
            let (head, payload) = d.split_at_mut(16);
            crc32c_fold::copy_update(crc32c_fold::update(r, head), payload, s)
        }),
    ];
    for (name, copy) in fpdus {
        let gbs = measure_copy(&data[..1440], &mut dst[..1456], copy);
        println!("{name:<30}{gbs:>12.2}");
    }
}

/// GB/s of `copy` from `src` into `dst` (which `copy` may use more of),
/// chained as [`measure_chained`] chains, per second of CPU time.
fn measure_copy(src: &[u8], dst: &mut [u8], copy: fn(u32, &mut [u8], &[u8]) -> u32) -> f64 {
    let mut iterations: u64 = 0;
    let mut register = !0u32;
    let start = Instant::now();
    let cpu_start = cpu_ns();
    while start.elapsed() < BUDGET {
        for _ in 0..64 {
            register = copy(register, black_box(&mut *dst), black_box(src));
        }
        iterations += 64;
    }
    black_box(register);
    let secs = match (cpu_start, cpu_ns()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
        _ => start.elapsed().as_secs_f64(),
    };
    (iterations as f64 * src.len() as f64) / secs / 1e9
}
