//! Tests that need something a machine may lack — tshark, root with network
//! namespaces and TAP devices, the reference captures beside the
//! repository — skip with a printed line saying what is missing. Where
//! that thing is meant to be present (CI installs it), setting
//! `IWARP_REQUIRE_ALL=1` turns each such skip into a failure, so a broken
//! install cannot pass as a run of quietly skipped tests.

/// The environment variable that turns skips into failures.
pub const REQUIRE_ALL: &str = "IWARP_REQUIRE_ALL";

/// True when `IWARP_REQUIRE_ALL=1`.
pub fn required() -> bool {
    std::env::var(REQUIRE_ALL).is_ok_and(|v| v == "1")
}

/// Says why the calling test skips; with `IWARP_REQUIRE_ALL=1` it fails
/// instead.
#[track_caller]
pub fn skip(why: &str) {
    assert!(!required(), "{why} (and {REQUIRE_ALL}=1 forbids skipping)");
    println!("skipping: {why}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipping_follows_the_switch() {
        // Only the answer for the environment this test runs in is checked:
        // the variable is not changed, other tests read it concurrently.
        let outcome = std::panic::catch_unwind(|| skip("nothing is missing, this is a check"));
        assert_eq!(outcome.is_err(), required());
    }
}
