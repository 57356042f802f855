//! Symbols that must exist because Debian's binaries and the mlx5/efa
//! providers perftest links import them (BIND_NOW resolves every import
//! at load), but that this device does not offer. Each fails the way a
//! provider without the feature does.

use std::ffi::{c_char, c_long, c_void, CStr};

use crate::guard::set_errno;

/// Fails with -1 and errno EOPNOTSUPP (rsocket calls, `ibv_read_sysfs_file`,
/// `rdma_create_ep`...). Returned as a full register so callers reading
/// an `int` or an `ssize_t` both see -1.
pub extern "C" fn fail_minus_one() -> c_long {
    set_errno(libc::EOPNOTSUPP);
    -1
}

/// Returns EOPNOTSUPP as the value (the `ibv_cmd_*` family and verbs that
/// return an errno: multicast, address handles).
pub extern "C" fn fail_errno() -> c_long {
    set_errno(libc::EOPNOTSUPP);
    libc::EOPNOTSUPP as c_long
}

/// Returns NULL with errno EOPNOTSUPP (verbs that make an object).
pub extern "C" fn fail_null() -> *mut c_void {
    set_errno(libc::EOPNOTSUPP);
    std::ptr::null_mut()
}

/// Accepts and does nothing: a provider library registering its driver
/// (it never sees one of its devices here), fork protection (buffers are
/// never pinned), acknowledging events.
pub extern "C" fn ignore() -> c_long {
    0
}

/// `ibv_get_async_event`: no asynchronous events are produced; fails
/// rather than block forever.
pub extern "C" fn get_async_event(_ctx: *mut c_void, _event: *mut c_void) -> libc::c_int {
    set_errno(libc::EOPNOTSUPP);
    -1
}

/// `ibv_rate_to_mult`: no static rate applies to a software link.
pub extern "C" fn rate_to_mult(_rate: libc::c_int) -> libc::c_int {
    -1
}

fn str_of(names: &'static [&'static CStr], i: libc::c_int) -> *const c_char {
    names
        .get(i as usize)
        .copied()
        .unwrap_or(c"unknown")
        .as_ptr() as *const c_char
}

/// `ibv_wc_status_str`: rdma-core's strings.
pub extern "C" fn wc_status_str(s: libc::c_int) -> *const c_char {
    const N: [&CStr; 23] = [
        c"success",
        c"local length error",
        c"local QP operation error",
        c"local EE context operation error",
        c"local protection error",
        c"Work Request Flushed Error",
        c"memory management operation error",
        c"bad response error",
        c"local access error",
        c"remote invalid request error",
        c"remote access error",
        c"remote operation error",
        c"transport retry counter exceeded",
        c"RNR retry counter exceeded",
        c"local RDD violation error",
        c"remote invalid RD request",
        c"aborted error",
        c"invalid EE context number",
        c"invalid EE context state",
        c"fatal error",
        c"response timeout error",
        c"general error",
        c"TM error",
    ];
    str_of(&N, s)
}

/// `ibv_node_type_str`.
pub extern "C" fn node_type_str(t: libc::c_int) -> *const c_char {
    const N: [&CStr; 7] = [
        c"unknown",
        c"InfiniBand channel adapter",
        c"InfiniBand switch",
        c"InfiniBand router",
        c"iWARP NIC",
        c"usNIC",
        c"usNIC UDP",
    ];
    str_of(&N, t.max(0))
}

/// `ibv_port_state_str`.
pub extern "C" fn port_state_str(s: libc::c_int) -> *const c_char {
    const N: [&CStr; 6] = [
        c"PORT_NOP",
        c"PORT_DOWN",
        c"PORT_INIT",
        c"PORT_ARMED",
        c"PORT_ACTIVE",
        c"PORT_ACTIVE_DEFER",
    ];
    str_of(&N, s)
}

/// `ibv_event_type_str`.
pub extern "C" fn event_type_str(_e: libc::c_int) -> *const c_char {
    c"unknown".as_ptr() as *const c_char
}
