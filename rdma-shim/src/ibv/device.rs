//! `iwarp0`: the device list, opening a context (a real `struct
//! verbs_context`, so the header's inline verbs and `verbs_get_ctx_op`
//! reach this library), and the device, port and GID queries.

use std::ffi::c_void;
use std::mem::{offset_of, size_of};
use std::sync::OnceLock;

use libc::{c_char, c_int};

use super::context::{context, Context};
use super::limits::{MAX_CQE, MAX_QP_WR, MAX_RD_ATOM, MAX_SGE};
use crate::guard::{guard, log, set_errno};
use crate::stack::stack;
use crate::sys;

/// The device's name, as iWARP devices are named.
pub const DEVICE_NAME: &str = "iwarp0";
/// The vendor id siw reports ("bmt"), so tools print something familiar.
const VENDOR_ID: u32 = 0x626d74;
/// The node GUID (and system image GUID): a locally administered MAC,
/// 02:49:57:00:00:02 ("IW"), in the EUI-64 shape siw builds from the MAC.
const GUID: [u8; 8] = [0x02, 0x49, 0x57, 0xff, 0xfe, 0x00, 0x00, 0x02];

/// `struct ibv_device` as the first field of rdma-core's private `struct
/// verbs_device`, whose next field (the provider's ops) stays null: the
/// mlx5 and efa libraries' `*_is_supported` compare it with their own.
#[repr(C)]
struct DeviceBlock {
    dev: sys::ibv_device,
    provider_ops: *const c_void,
    /// The rest of `verbs_device`, zero, for anything reading past `ops`.
    _rest: [usize; 16],
}

struct DevicePtr(*mut sys::ibv_device);
// SAFETY: the device block is written once, before it is published, and
// only read afterwards.
unsafe impl Send for DevicePtr {}
// SAFETY: as above.
unsafe impl Sync for DevicePtr {}

fn copy_name(dst: &mut [c_char], s: &str) {
    let room = dst.len().saturating_sub(1);
    for (d, b) in dst.iter_mut().zip(s.bytes().take(room)) {
        *d = b as c_char;
    }
}

/// The one device, made on first use and never freed.
pub fn device() -> *mut sys::ibv_device {
    static DEV: OnceLock<DevicePtr> = OnceLock::new();
    DEV.get_or_init(|| {
        // SAFETY: every field of the block is an integer, an array of them,
        // a nullable pointer or an `Option` of a function pointer: all zero
        // is valid.
        let mut b: Box<DeviceBlock> = Box::new(unsafe { std::mem::zeroed() });
        b.dev.node_type = sys::IBV_NODE_RNIC;
        b.dev.transport_type = sys::IBV_TRANSPORT_IWARP;
        copy_name(&mut b.dev.name, DEVICE_NAME);
        copy_name(&mut b.dev.dev_name, "uverbs0");
        copy_name(&mut b.dev.dev_path, "/sys/class/infiniband_verbs/uverbs0");
        copy_name(&mut b.dev.ibdev_path, "/sys/class/infiniband/iwarp0");
        DevicePtr(Box::leak(b) as *mut DeviceBlock as *mut sys::ibv_device)
    })
    .0
}

fn is_ours(dev: *mut sys::ibv_device) -> bool {
    !dev.is_null() && dev == device()
}

/// `ibv_get_device_list`: a calloc'd, NULL-terminated array with `iwarp0`.
pub extern "C" fn get_device_list(num: *mut c_int) -> *mut *mut sys::ibv_device {
    guard("ibv_get_device_list", std::ptr::null_mut(), || {
        // SAFETY: calloc of two pointers; freed by ibv_free_device_list.
        let list = unsafe { libc::calloc(2, size_of::<*mut sys::ibv_device>()) }
            as *mut *mut sys::ibv_device;
        if list.is_null() {
            set_errno(libc::ENOMEM);
            return list;
        }
        // SAFETY: `list` has room for two entries; the second stays NULL.
        unsafe { *list = device() };
        if !num.is_null() {
            // SAFETY: the caller passes a valid int or NULL.
            unsafe { *num = 1 };
        }
        list
    })
}

/// `ibv_free_device_list`.
pub extern "C" fn free_device_list(list: *mut *mut sys::ibv_device) {
    // SAFETY: `list` came from `get_device_list`'s calloc (or is NULL).
    guard("ibv_free_device_list", (), || unsafe {
        libc::free(list as *mut c_void)
    })
}

/// `ibv_get_device_name`.
pub extern "C" fn get_device_name(dev: *mut sys::ibv_device) -> *const c_char {
    guard("ibv_get_device_name", std::ptr::null(), || {
        if !is_ours(dev) {
            set_errno(libc::EINVAL);
            return std::ptr::null();
        }
        // SAFETY: our device block lives for the whole process.
        unsafe { (*dev).name.as_ptr() }
    })
}

/// `ibv_get_device_guid`: network byte order, as rdma-core returns it.
pub extern "C" fn get_device_guid(dev: *mut sys::ibv_device) -> u64 {
    guard("ibv_get_device_guid", 0, || {
        if is_ours(dev) {
            u64::from_ne_bytes(GUID)
        } else {
            0
        }
    })
}

fn new_context() -> *mut sys::ibv_context {
    // SAFETY: `verbs_context` holds integers, nullable pointers, `Option`s
    // of function pointers and a pthread mutex, for all of which zero is
    // valid (a zero mutex is PTHREAD_MUTEX_INITIALIZER on glibc).
    let mut c: Box<Context> = Box::new(unsafe { std::mem::zeroed() });
    let v = &mut c.vctx;
    v.sz = size_of::<sys::verbs_context>();
    v.query_port = Some(query_port_ex);
    let ctx = &mut v.context;
    ctx.device = device();
    ctx.cmd_fd = -1;
    ctx.async_fd = -1;
    ctx.num_comp_vectors = 1;
    // __VERBS_ABI_IS_EXTENDED: verbs_get_ctx() accepts the context.
    ctx.abi_compat = usize::MAX as *mut c_void;
    let ops = &mut ctx.ops;
    ops.poll_cq = Some(super::cq::poll_cq);
    ops.req_notify_cq = Some(super::cq::req_notify_cq);
    ops.post_send = Some(super::qp::post_send);
    ops.post_recv = Some(super::qp::post_recv);
    ops.post_srq_recv = Some(super::srq::post_srq_recv);
    let p = Box::leak(c);
    p.as_c()
}

/// The context librdmacm's ids use (`id->verbs`), opened once.
pub fn shared_context() -> *mut sys::ibv_context {
    struct Ctx(*mut sys::ibv_context);
    // SAFETY: written once, then only read.
    unsafe impl Send for Ctx {}
    // SAFETY: as above.
    unsafe impl Sync for Ctx {}
    static CTX: OnceLock<Ctx> = OnceLock::new();
    CTX.get_or_init(|| Ctx(new_context())).0
}

/// `ibv_open_device`: makes the stack on first use.
pub extern "C" fn open_device(dev: *mut sys::ibv_device) -> *mut sys::ibv_context {
    guard("ibv_open_device", std::ptr::null_mut(), || {
        if !is_ours(dev) {
            set_errno(libc::ENODEV);
            return std::ptr::null_mut();
        }
        if let Err(e) = stack() {
            log(&format!("cannot start the stack: {e}"));
            set_errno(libc::ENODEV);
            return std::ptr::null_mut();
        }
        new_context()
    })
}

/// `ibv_close_device`. The context is kept: rdma-core frees it, but an
/// object a program leaks may still name it, and a context is small.
pub extern "C" fn close_device(ctx: *mut sys::ibv_context) -> c_int {
    guard("ibv_close_device", -1, || {
        // SAFETY: checked by `context`.
        if unsafe { context(ctx) }.is_none() {
            set_errno(libc::EINVAL);
            return -1;
        }
        0
    })
}

fn fw_ver() -> [c_char; 64] {
    let mut v = [0; 64];
    copy_name(
        &mut v,
        concat!("iwarp-rdma-shim ", env!("CARGO_PKG_VERSION")),
    );
    v
}

/// `ibv_query_device`.
pub extern "C" fn query_device(
    ctx: *mut sys::ibv_context,
    attr: *mut sys::ibv_device_attr,
) -> c_int {
    guard("ibv_query_device", libc::EIO, || {
        // SAFETY: the caller passes a context of ours and a writable struct.
        let (Some(_), Some(attr)) = (unsafe { context(ctx) }, unsafe { attr.as_mut() }) else {
            return libc::EINVAL;
        };
        let Ok(st) = stack() else { return libc::ENODEV };
        let d = st.device.query();
        // SAFETY: plain integers and arrays: zero is valid.
        *attr = unsafe { std::mem::zeroed() };
        attr.fw_ver = fw_ver();
        attr.node_guid = u64::from_ne_bytes(GUID);
        attr.sys_image_guid = attr.node_guid;
        attr.max_mr_size = d.max_msg_size;
        attr.page_size_cap = 4096;
        attr.vendor_id = VENDOR_ID;
        attr.max_qp = 1 << 16;
        attr.max_qp_wr = MAX_QP_WR;
        attr.max_sge = MAX_SGE;
        attr.max_sge_rd = 1;
        attr.max_cq = 1 << 16;
        attr.max_cqe = MAX_CQE;
        attr.max_mr = d.max_mr.min(c_int::MAX as usize) as c_int;
        attr.max_pd = 1 << 16;
        attr.max_qp_rd_atom = MAX_RD_ATOM;
        attr.max_qp_init_rd_atom = MAX_RD_ATOM;
        attr.max_res_rd_atom = MAX_RD_ATOM * (1 << 16);
        attr.atomic_cap = if st.mpa.rfc7306 {
            sys::IBV_ATOMIC_HCA
        } else {
            sys::IBV_ATOMIC_NONE
        };
        attr.max_srq = 1 << 10;
        attr.max_srq_wr = d.max_srq_wr.min(c_int::MAX as usize) as c_int;
        attr.max_srq_sge = d.max_srq_sge.min(c_int::MAX as usize) as c_int;
        attr.max_pkeys = 1;
        attr.phys_port_cnt = 1;
        0
    })
}

fn fill_port(attr: &mut sys::ibv_port_attr) {
    // SAFETY: plain integers: zero is valid.
    *attr = unsafe { std::mem::zeroed() };
    attr.state = sys::IBV_PORT_ACTIVE;
    attr.max_mtu = sys::IBV_MTU_4096;
    attr.active_mtu = sys::IBV_MTU_4096;
    attr.gid_tbl_len = 1;
    attr.max_msg_sz = u32::MAX;
    attr.pkey_tbl_len = 1;
    attr.active_width = 1; // 1X
    attr.active_speed = 32; // EDR (25 Gb/s a lane): a software link has no fixed rate
    attr.phys_state = 5; // LinkUp
    attr.link_layer = sys::IBV_LINK_LAYER_ETHERNET as u8;
}

/// `ibv_query_port`, the exported symbol: programs built against older
/// headers pass the struct of their day, which ended at `link_layer` (and
/// a reserved byte), so only that prefix is written. (The `_compat` type
/// is opaque in the header.)
pub extern "C" fn query_port(
    ctx: *mut sys::ibv_context,
    port: u8,
    attr: *mut sys::_compat_ibv_port_attr,
) -> c_int {
    query_port_ex(
        ctx,
        port,
        attr as *mut sys::ibv_port_attr,
        offset_of!(sys::ibv_port_attr, link_layer) + 1,
    )
}

/// The context's `query_port` op, which the header's `ibv_query_port`
/// calls with the size of the caller's struct.
extern "C" fn query_port_ex(
    ctx: *mut sys::ibv_context,
    port: u8,
    attr: *mut sys::ibv_port_attr,
    len: usize,
) -> c_int {
    guard("ibv_query_port", libc::EIO, || {
        // SAFETY: the caller passes a context of ours.
        if unsafe { context(ctx) }.is_none() || attr.is_null() || port != 1 {
            return libc::EINVAL;
        }
        // SAFETY: plain integers: zero is valid.
        let mut full: sys::ibv_port_attr = unsafe { std::mem::zeroed() };
        fill_port(&mut full);
        let n = len.min(size_of::<sys::ibv_port_attr>());
        // SAFETY: the caller's struct has `len` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(&full as *const _ as *const u8, attr as *mut u8, n)
        };
        0
    })
}

/// The port's one GID: the MAC in the first six bytes, as siw reports.
fn gid() -> sys::ibv_gid {
    // SAFETY: a union of byte arrays and integers.
    let mut g: sys::ibv_gid = unsafe { std::mem::zeroed() };
    // SAFETY: writing the raw byte view of the union.
    unsafe { g.raw[..6].copy_from_slice(&[0x02, 0x49, 0x57, 0x00, 0x00, 0x02]) };
    g
}

/// `ibv_query_gid`.
pub extern "C" fn query_gid(
    ctx: *mut sys::ibv_context,
    port: u8,
    index: c_int,
    out: *mut sys::ibv_gid,
) -> c_int {
    guard("ibv_query_gid", -1, || {
        // SAFETY: the caller passes a context of ours and a writable gid.
        if unsafe { context(ctx) }.is_none() || out.is_null() || port != 1 || index != 0 {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: checked non-null above.
        unsafe { *out = gid() };
        0
    })
}

/// `_ibv_query_gid_ex`.
pub extern "C" fn query_gid_ex(
    ctx: *mut sys::ibv_context,
    port: u32,
    index: u32,
    entry: *mut sys::ibv_gid_entry,
    flags: u32,
    size: usize,
) -> c_int {
    guard("ibv_query_gid_ex", libc::EIO, || {
        // SAFETY: the caller passes a context of ours.
        if unsafe { context(ctx) }.is_none() || entry.is_null() || flags != 0 {
            return libc::EINVAL;
        }
        if port != 1 || index != 0 {
            return libc::ENODATA;
        }
        // SAFETY: plain data: zero is valid.
        let mut e: sys::ibv_gid_entry = unsafe { std::mem::zeroed() };
        e.gid = gid();
        e.port_num = 1;
        e.gid_type = 0; // IBV_GID_TYPE_IB, what rdma-core reports for iWARP
        let n = size.min(size_of::<sys::ibv_gid_entry>());
        // SAFETY: the caller's entry has `size` bytes.
        unsafe { std::ptr::copy_nonoverlapping(&e as *const _ as *const u8, entry as *mut u8, n) };
        0
    })
}

/// `ibv_query_pkey`: the default P_Key, as iWARP providers report.
pub extern "C" fn query_pkey(
    ctx: *mut sys::ibv_context,
    port: u8,
    index: c_int,
    pkey: *mut u16,
) -> c_int {
    guard("ibv_query_pkey", -1, || {
        // SAFETY: the caller passes a context of ours.
        if unsafe { context(ctx) }.is_none() || pkey.is_null() || port != 1 || index != 0 {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: checked non-null.
        unsafe { *pkey = 0xffff_u16.to_be() };
        0
    })
}
