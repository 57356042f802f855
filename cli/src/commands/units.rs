//! Durations, rates and sizes as a person types them.

use std::time::Duration;

/// `20ms`, `1.5ms`, `250us`, `2s`; a bare number is milliseconds.
pub(crate) fn duration(s: &str) -> Result<Duration, String> {
    let (num, scale) = split(s, &[("us", 1e-6), ("ms", 1e-3), ("s", 1.0)], 1e-3);
    let v = number(num, s)?;
    Duration::try_from_secs_f64(v * scale).map_err(|_| format!("{s:?}: not a duration"))
}

/// Bits per second: `1gbit`, `100mbit`, `64kbit`, or a bare number.
pub(crate) fn rate(s: &str) -> Result<u64, String> {
    let (num, scale) = split(
        s,
        &[("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)],
        1.0,
    );
    let v = number(num, s)? * scale;
    if !(1.0..=1e15).contains(&v) {
        return Err(format!("{s:?}: a rate from 1 bit/s to 1 Pbit/s"));
    }
    Ok(v as u64)
}

/// Bytes, in decimal units as bandwidth-delay products are: `125kb`,
/// `2.5mb`, `1gb`, or a bare number of bytes.
pub(crate) fn size(s: &str) -> Result<usize, String> {
    let (num, scale) = split(s, &[("gb", 1e9), ("mb", 1e6), ("kb", 1e3), ("b", 1.0)], 1.0);
    let v = number(num, s)? * scale;
    if !(1.0..=1e12).contains(&v) {
        return Err(format!("{s:?}: a size from 1 byte to 1 TB"));
    }
    Ok(v as usize)
}

/// A probability, as `0.01` or `1%`.
pub(crate) fn probability(s: &str) -> Result<f64, String> {
    let (num, scale) = split(s, &[("%", 0.01)], 1.0);
    let p = number(num, s)? * scale;
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("{s:?}: a probability from 0 to 1 (or 0% to 100%)"));
    }
    Ok(p)
}

/// The number before the first matching unit suffix and the unit's scale.
fn split<'a>(s: &'a str, units: &[(&str, f64)], bare: f64) -> (&'a str, f64) {
    let lower = s.trim();
    for &(u, scale) in units {
        if lower.len() > u.len() && lower.to_ascii_lowercase().ends_with(u) {
            return (&lower[..lower.len() - u.len()], scale);
        }
    }
    (lower, bare)
}

fn number(num: &str, whole: &str) -> Result<f64, String> {
    num.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("{whole:?}: not a number with a known unit"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("20ms"), Ok(Duration::from_millis(20)));
        assert_eq!(duration("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(duration("40"), Ok(Duration::from_millis(40)));
        assert!(duration("-1ms").is_err());
        assert!(duration("ms").is_err());
        assert!(duration("1e400").is_err());
    }

    #[test]
    fn rates_sizes_probabilities() {
        assert_eq!(rate("1gbit"), Ok(1_000_000_000));
        assert_eq!(rate("100Mbit"), Ok(100_000_000));
        assert_eq!(rate("64kbit"), Ok(64_000));
        assert!(rate("0").is_err());
        assert!(rate("fast").is_err());
        assert_eq!(size("125kb"), Ok(125_000));
        assert_eq!(size("2.5MB"), Ok(2_500_000));
        assert_eq!(size("1500"), Ok(1500));
        assert!(size("0").is_err());
        assert_eq!(probability("1%"), Ok(0.01));
        assert_eq!(probability("0.05"), Ok(0.05));
        assert!(probability("150%").is_err());
        assert!(probability("NaN").is_err());
    }
}
