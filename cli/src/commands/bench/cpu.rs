//! CPU time the process spent, next to wall-clock time.
//!
//! On a shared machine the scheduler takes the CPU away for milliseconds at
//! a time, and wall-clock goodput swings with the load. With caller-driven
//! progress the bench never sleeps (it spins until something completes),
//! so CPU time counts every turn the stack needed, stalled or not, and
//! leaves out only the time other processes had the CPU: goodput per
//! CPU-second is the figure that stays put from run to run. Both the RDMA
//! cases and the raw TCP baseline are measured this way.

use std::time::Duration;

/// Nanoseconds every thread of this process has run on a CPU, from
/// `/proc/self/task/*/schedstat`; `None` where that is not available.
pub(crate) fn process_cpu() -> Option<Duration> {
    let mut total = 0u64;
    let mut any = false;
    for entry in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path().join("schedstat")) else {
            // The thread ended between listing and reading.
            continue;
        };
        total = total.checked_add(parse_schedstat(&text)?)?;
        any = true;
    }
    any.then(|| Duration::from_nanos(total))
}

/// Nanoseconds the calling thread has run on a CPU; `None` where unknown.
/// (The process's figure loses a thread's time once the thread ends.)
pub(crate) fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    parse_schedstat(&text).map(Duration::from_nanos)
}

/// The first field of a schedstat line: nanoseconds on a CPU.
fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// How many times the calling thread has been switched onto a CPU (the
/// third schedstat field): it moves whenever the scheduler took the CPU
/// away in between, or the thread slept. `None` where unknown.
pub(crate) fn thread_switches() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().nth(2)?.parse().ok()
}

/// CPU time between two readings, if both were taken.
pub(crate) fn since(start: Option<Duration>) -> Option<Duration> {
    Some(process_cpu()?.saturating_sub(start?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_lines_parse() {
        assert_eq!(
            parse_schedstat("150239797 280130205 354\n"),
            Some(150_239_797)
        );
        assert_eq!(parse_schedstat(""), None);
        assert_eq!(parse_schedstat("x 1 2"), None);
    }

    #[test]
    fn sleeping_counts_as_a_switch() {
        let Some(before) = thread_switches() else {
            eprintln!("no /proc/thread-self/schedstat here: skipping");
            return;
        };
        std::thread::sleep(Duration::from_millis(2));
        let after = thread_switches().expect("readable twice");
        assert!(after > before, "{before} -> {after}");
    }

    #[test]
    fn spinning_shows_up_as_cpu_time() {
        let Some(start) = process_cpu() else {
            eprintln!("no /proc/self/task/*/schedstat here: skipping");
            return;
        };
        let wall = std::time::Instant::now();
        let mut x = 0u64;
        while wall.elapsed() < Duration::from_millis(60) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
        }
        let used = since(Some(start)).expect("readable twice");
        // The scheduler may have lent the CPU to others, and the running
        // thread's figure lags by up to a tick, but some of it was ours.
        assert!(used > Duration::from_millis(1), "{used:?}");
        assert!(used <= wall.elapsed() * 2 + Duration::from_millis(20));
    }
}
