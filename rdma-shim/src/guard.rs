//! The boundary between C callers and Rust: errno, and panics turned into
//! errors.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Sets the calling thread's `errno`.
pub fn set_errno(code: i32) {
    // SAFETY: __errno_location returns the calling thread's errno slot,
    // always valid for writes.
    unsafe { *libc::__errno_location() = code };
}

/// Runs `f` for the exported function `name`; a panic is caught, logged
/// and turned into `on_panic` with errno set to EIO, since unwinding into
/// C is undefined behaviour.
pub fn guard<R>(name: &str, on_panic: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            log(&format!(
                "{name}: internal error ({what}); returning an error"
            ));
            set_errno(libc::EIO);
            on_panic
        }
    }
}

/// One line on standard error, prefixed with the library's name.
pub fn log(msg: &str) {
    eprintln!("iwarp-rdma-shim: {msg}");
}

/// Whether `IWARP_SHIM_DEBUG` asks for a line per connection event.
pub fn debug() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("IWARP_SHIM_DEBUG").is_some_and(|v| v != "0"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_error_value_and_eio() {
        set_errno(0);
        let r = guard("test_fn", -1, || -> i32 { panic!("boom") });
        assert_eq!(r, -1);
        // SAFETY: reading this thread's errno slot.
        assert_eq!(unsafe { *libc::__errno_location() }, libc::EIO);
        assert_eq!(guard("test_fn", -1, || 7), 7);
    }
}
