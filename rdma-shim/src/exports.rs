//! The exported symbol table: each C name is a one-instruction jump to
//! its Rust implementation (an alias cannot name a symbol of another
//! codegen unit), made in assembly so the names never pass through
//! Rust's own export list (a cdylib's list would give them no version);
//! `abi/symbols.txt` gives each its version, and the link fails if a name
//! listed there is not defined here.

use crate::cm;
use crate::ibv::{cq, device, pd, qp, srq};
use crate::stubs;

macro_rules! export {
    ($($name:ident => $f:path),* $(,)?) => {
        $(
            core::arch::global_asm!(
                ".pushsection .text",
                concat!(".globl ", stringify!($name)),
                concat!(".type ", stringify!($name), ",@function"),
                ".p2align 4",
                concat!(stringify!($name), ":"),
                "jmp {0}@PLT",
                concat!(".size ", stringify!($name), ", . - ", stringify!($name)),
                ".popsection",
                sym $f,
            );
        )*
    };
}

export! {
    ibv_get_device_list => device::get_device_list,
    ibv_free_device_list => device::free_device_list,
    ibv_get_device_name => device::get_device_name,
    ibv_get_device_guid => device::get_device_guid,
    ibv_open_device => device::open_device,
    ibv_close_device => device::close_device,
    ibv_query_device => device::query_device,
    ibv_query_port => device::query_port,
    ibv_query_gid => device::query_gid,
    _ibv_query_gid_ex => device::query_gid_ex,
    ibv_query_pkey => device::query_pkey,
    ibv_alloc_pd => pd::alloc_pd,
    ibv_dealloc_pd => pd::dealloc_pd,
    ibv_reg_mr => pd::reg_mr,
    ibv_reg_mr_iova2 => pd::reg_mr_iova2,
    ibv_dereg_mr => pd::dereg_mr,
    ibv_create_comp_channel => cq::create_comp_channel,
    ibv_destroy_comp_channel => cq::destroy_comp_channel,
    ibv_create_cq => cq::create_cq,
    ibv_destroy_cq => cq::destroy_cq,
    ibv_get_cq_event => cq::get_cq_event,
    ibv_ack_cq_events => cq::ack_cq_events,
    ibv_create_qp => qp::create_qp,
    ibv_destroy_qp => qp::destroy_qp,
    ibv_modify_qp => qp::modify_qp,
    ibv_query_qp => qp::query_qp,
    ibv_create_srq => srq::create_srq,
    ibv_wc_status_str => stubs::wc_status_str,
    ibv_node_type_str => stubs::node_type_str,
    ibv_port_state_str => stubs::port_state_str,
    ibv_event_type_str => stubs::event_type_str,
    ibv_get_async_event => stubs::get_async_event,
    ibv_ack_async_event => stubs::ignore,
    ibv_fork_init => stubs::ignore,
    ibv_dontfork_range => stubs::ignore,
    ibv_dofork_range => stubs::ignore,
    ibv_rate_to_mult => stubs::rate_to_mult,
    ibv_read_sysfs_file => stubs::fail_minus_one,
    ibv_attach_mcast => stubs::fail_errno,
    ibv_detach_mcast => stubs::fail_errno,
    ibv_create_ah => stubs::fail_null,
    ibv_create_ah_from_wc => stubs::fail_null,
    ibv_destroy_ah => stubs::fail_errno,
    ibv_destroy_srq => srq::destroy_srq,
    ibv_modify_srq => srq::modify_srq,
    ibv_query_srq => srq::query_srq,
    ibv_resolve_eth_l2_from_gid => stubs::fail_errno,
    ibv_qp_to_qp_ex => stubs::fail_null,

    rdma_create_event_channel => cm::create_event_channel,
    rdma_destroy_event_channel => cm::destroy_event_channel,
    rdma_get_devices => cm::get_devices,
    rdma_free_devices => cm::free_devices,
    rdma_create_id => cm::ids::create_id,
    rdma_destroy_id => cm::ids::destroy_id,
    rdma_bind_addr => cm::ids::bind_addr,
    rdma_resolve_addr => cm::ids::resolve_addr,
    rdma_resolve_route => cm::ids::resolve_route,
    rdma_listen => cm::ids::listen,
    rdma_create_qp => cm::ids::create_qp,
    rdma_destroy_qp => cm::ids::destroy_qp,
    rdma_connect => cm::ids::connect,
    rdma_accept => cm::ids::accept,
    rdma_reject => cm::ids::reject,
    rdma_disconnect => cm::ids::disconnect,
    rdma_establish => cm::ids::establish,
    rdma_init_qp_attr => cm::ids::init_qp_attr,
    rdma_migrate_id => cm::ids::migrate_id,
    rdma_get_src_port => cm::ids::get_src_port,
    rdma_get_dst_port => cm::ids::get_dst_port,
    rdma_set_option => cm::ids::set_option,
    rdma_get_cm_event => cm::get_cm_event,
    rdma_ack_cm_event => cm::ack_cm_event,
    rdma_event_str => cm::event_str,
    rdma_getaddrinfo => cm::addrinfo::getaddrinfo,
    rdma_freeaddrinfo => cm::addrinfo::freeaddrinfo,
    rdma_create_ep => cm::sync::create_ep,
    rdma_destroy_ep => cm::sync::destroy_ep,
    rdma_get_request => cm::sync::get_request,
    rdma_create_qp_ex => stubs::fail_minus_one,
    rsocket => stubs::fail_minus_one,
    rbind => stubs::fail_minus_one,
    rlisten => stubs::fail_minus_one,
    raccept => stubs::fail_minus_one,
    rconnect => stubs::fail_minus_one,
    rshutdown => stubs::fail_minus_one,
    rclose => stubs::fail_minus_one,
    rrecv => stubs::fail_minus_one,
    rsend => stubs::fail_minus_one,
    rpoll => stubs::fail_minus_one,
    rsetsockopt => stubs::fail_minus_one,
    rgetsockopt => stubs::fail_minus_one,
    rfcntl => stubs::fail_minus_one,

    verbs_register_driver_34 => stubs::ignore,
    verbs_set_ops => stubs::ignore,
    verbs_uninit_context => stubs::ignore,
    __verbs_log => stubs::ignore,
    _verbs_init_and_alloc_context => stubs::fail_null,
    verbs_open_device => stubs::fail_null,
    verbs_init_cq => stubs::fail_errno,
    verbs_allow_disassociate_destroy => stubs::ignore,
    execute_ioctl => stubs::fail_errno,
    ibv_query_gid_type => stubs::fail_errno,
}

/// The `ibv_cmd_*` commands a kernel provider sends through uverbs: there
/// is no kernel device, so every one fails.
macro_rules! cmd_stubs {
    ($($name:ident),* $(,)?) => { export! { $($name => stubs::fail_errno),* } };
}

cmd_stubs! {
    ibv_cmd_advise_mr, ibv_cmd_alloc_dm, ibv_cmd_alloc_mw, ibv_cmd_alloc_pd, ibv_cmd_attach_mcast,
    ibv_cmd_close_xrcd, ibv_cmd_create_ah, ibv_cmd_create_counters, ibv_cmd_create_cq_ex,
    ibv_cmd_create_flow, ibv_cmd_create_flow_action_esp, ibv_cmd_create_qp_ex, ibv_cmd_create_qp_ex2,
    ibv_cmd_create_rwq_ind_table, ibv_cmd_create_srq, ibv_cmd_create_srq_ex, ibv_cmd_create_wq,
    ibv_cmd_dealloc_mw, ibv_cmd_dealloc_pd, ibv_cmd_dereg_mr, ibv_cmd_destroy_ah, ibv_cmd_destroy_counters,
    ibv_cmd_destroy_cq, ibv_cmd_destroy_flow, ibv_cmd_destroy_flow_action, ibv_cmd_destroy_qp,
    ibv_cmd_destroy_rwq_ind_table, ibv_cmd_destroy_srq, ibv_cmd_destroy_wq, ibv_cmd_detach_mcast,
    ibv_cmd_free_dm, ibv_cmd_get_context, ibv_cmd_modify_cq, ibv_cmd_modify_flow_action_esp,
    ibv_cmd_modify_qp, ibv_cmd_modify_qp_ex, ibv_cmd_modify_srq, ibv_cmd_modify_wq, ibv_cmd_open_qp,
    ibv_cmd_open_xrcd, ibv_cmd_query_context, ibv_cmd_query_device_any, ibv_cmd_query_mr,
    ibv_cmd_query_port, ibv_cmd_query_qp, ibv_cmd_query_srq, ibv_cmd_read_counters, ibv_cmd_reg_dm_mr,
    ibv_cmd_reg_dmabuf_mr, ibv_cmd_reg_mr, ibv_cmd_rereg_mr, ibv_cmd_resize_cq,
}
