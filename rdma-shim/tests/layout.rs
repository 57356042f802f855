//! The checked-in C types (src/sys.rs) against the installed rdma-core
//! headers: a C program built with the system compiler prints the size
//! of every struct the shim uses and the offset of every field it
//! touches, and each must equal the Rust side's.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write;
use std::mem::{offset_of, size_of};
use std::process::Command;

use iwarp_rdma_shim::sys;

/// (C type, its size in Rust, [(field, offset in Rust)]).
type Layout = Vec<(&'static str, usize, Vec<(&'static str, usize)>)>;

macro_rules! layouts {
    ($($kind:literal $s:ident { $($f:ident),* $(,)? })*) => {
        vec![$((
            concat!($kind, " ", stringify!($s)),
            size_of::<sys::$s>(),
            vec![$((stringify!($f), offset_of!(sys::$s, $f))),*],
        )),*]
    };
}

fn rust_side() -> Layout {
    layouts! {
        "struct" ibv_device { node_type, transport_type, name, dev_name, dev_path, ibdev_path }
        "struct" ibv_context { device, ops, cmd_fd, async_fd, num_comp_vectors, mutex, abi_compat }
        "struct" ibv_context_ops { poll_cq, req_notify_cq, post_srq_recv, post_send, post_recv }
        "struct" verbs_context { query_port, create_cq_ex, priv_, query_device_ex, create_qp_ex, sz, context }
        "struct" ibv_pd { context, handle }
        "struct" ibv_mr { context, pd, addr, length, handle, lkey, rkey }
        "struct" ibv_comp_channel { context, fd, refcnt }
        "struct" ibv_cq { context, channel, cq_context, handle, cqe, mutex, cond,
                          comp_events_completed, async_events_completed }
        "struct" ibv_qp { context, qp_context, pd, send_cq, recv_cq, srq, handle, qp_num, state,
                          qp_type, mutex, cond, events_completed }
        "struct" ibv_wc { wr_id, status, opcode, vendor_err, byte_len, qp_num, src_qp, wc_flags,
                          pkey_index, slid, sl, dlid_path_bits }
        "struct" ibv_sge { addr, length, lkey }
        "struct" ibv_send_wr { wr_id, next, sg_list, num_sge, opcode, send_flags, wr }
        "struct" ibv_recv_wr { wr_id, next, sg_list, num_sge }
        "struct" ibv_qp_cap { max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data }
        "struct" ibv_qp_init_attr { qp_context, send_cq, recv_cq, srq, cap, qp_type, sq_sig_all }
        "struct" ibv_qp_attr { qp_state, cur_qp_state, path_mtu, qp_access_flags, cap, pkey_index,
                               port_num, max_rd_atomic, max_dest_rd_atomic }
        "struct" ibv_device_attr { fw_ver, node_guid, sys_image_guid, max_mr_size, vendor_id, max_qp,
                                   max_qp_wr, max_sge, max_cqe, max_mr, max_qp_rd_atom, atomic_cap,
                                   max_srq_sge, phys_port_cnt }
        "struct" ibv_port_attr { state, max_mtu, active_mtu, gid_tbl_len, max_msg_sz, pkey_tbl_len,
                                 active_width, active_speed, phys_state, link_layer, flags,
                                 port_cap_flags2 }
        "struct" ibv_gid_entry { gid, gid_index, port_num, gid_type, ndev_ifindex }
        "struct" rdma_event_channel { fd }
        "struct" rdma_cm_id { verbs, channel, context, qp, route, ps, port_num, event,
                              send_cq_channel, send_cq, recv_cq_channel, recv_cq, srq, pd, qp_type }
        "struct" rdma_cm_event { id, listen_id, event, status, param }
        "struct" rdma_conn_param { private_data, private_data_len, responder_resources,
                                   initiator_depth, flow_control, retry_count, rnr_retry_count,
                                   srq, qp_num }
        "struct" rdma_route { addr, path_rec, num_paths }
        "struct" rdma_addr { addr }
        "union" ibv_gid { raw }
    }
}

/// The C field name of a Rust one (bindgen escapes C's `priv`).
fn c_field(f: &str) -> &str {
    f.strip_suffix('_').unwrap_or(f)
}

#[test]
fn checked_in_types_match_the_installed_headers() {
    let layouts = rust_side();
    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <infiniband/verbs.h>\n\
         #include <rdma/rdma_cma.h>\nint main(void) {\n",
    );
    let mut want = BTreeMap::new();
    for (ty, size, fields) in &layouts {
        writeln!(c, "printf(\"{ty} %zu\\n\", sizeof({ty}));").unwrap();
        want.insert(ty.to_string(), *size);
        for (f, off) in fields {
            let f = c_field(f);
            writeln!(c, "printf(\"{ty}.{f} %zu\\n\", offsetof({ty}, {f}));").unwrap();
            want.insert(format!("{ty}.{f}"), *off);
        }
    }
    c.push_str("return 0;\n}\n");
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let src = dir.join("layout.c");
    std::fs::write(&src, c).unwrap();
    let Some(cc) = common::tool("cc", "gcc") else {
        return;
    };
    if !std::path::Path::new("/usr/include/rdma/rdma_cma.h").exists() {
        capture::skip::skip("rdma-core headers missing (libibverbs-dev, librdmacm-dev)");
        return;
    }
    let exe = dir.join("layout");
    let st = Command::new(cc)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "cc failed on {}", src.display());
    let out = Command::new(&exe).output().unwrap();
    let got: BTreeMap<String, usize> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect();
    let wrong: Vec<String> = want
        .iter()
        .filter(|(k, v)| got.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: Rust {v}, C {:?}", got.get(k)))
        .collect();
    assert_eq!(got.len(), want.len(), "one line per size and offset");
    assert!(wrong.is_empty(), "layouts differ:\n{}", wrong.join("\n"));
}
